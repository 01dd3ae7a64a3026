"""Mature users for the benches: a synthetic but realistic history of N facts, imported in one step.

Real users who have talked to an assistant for two years know hundreds of things about themselves, in many
domains: where they live and work (one at a time, replaced now and then), and many hobbies, tastes, people, skills
and plans (which pile up). Writing that history through ``Memory.write()`` would cost a model call per pair; here
it is built directly as a ``UserExport`` (the format ``lastknown export`` writes) and imported with
``Store.import_user``, with each fact embedded by the bench's embedder, so a new conversation meets a user whose
memory looks like a real user's.

How the N facts are made, deterministically (a fixed seed):

- each of the topics below has a first-person sentence and the fact it states ("I live in Lisbon now." ->
  "Lives in Lisbon"), filled from a pool of values; every fact is a different text. A topic is an attribute of the
  library's vocabulary, with that attribute's domain and cardinality (``lastknown_graph/domain/attributes.py``;
  written out here, not imported, so that ``bench.write_cost --compare`` can build these users for a library from
  before the vocabulary; a test checks that they agree);
- topics are drawn with the weights below, so a mature user has one current home and job but dozens of hobbies;
- on a topic whose attribute holds one value (a home, a job, a diet, ...), a new fact retires the current one, as
  the write path does (a ``supersedes`` link from the new fact, stage ``replaced``): about one fact in ten ends up
  retired (11 of 100, 86 of 1,000), which the premise guard of an answer then meets;
- sessions of five facts each (the user's five sentences are its messages, each fact linked to its sentence),
  spread evenly over the two years before the scenarios' conversations start (2022-01-01 to 2023-12-01), or over
  the same span ending on another ``last_day`` (STALE's scenarios start between 2020 and 2024).

The same N gives the same history; the first facts of a larger user are not those of a smaller one (each N is
spread over the same two years).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from lastknown_graph.domain.models import (
    ExportedFact,
    ExportedMessage,
    ExportedReplacement,
    ExportedSession,
    FactKind,
    FactStatus,
    UserExport,
)

FIRST_DAY = date(2022, 1, 1)
LAST_DAY = date(2023, 12, 1)  # the scenarios' first conversations are in 2024
FACTS_PER_SESSION = 5
SEED = 17
RETIREMENT_STAGE = "replaced"  # a stated new value of a one-valued attribute (domain/stages.py)
RETIREMENT_REASON = "The later statement replaces the earlier one."

CITIES = ("Lisbon", "Denver", "Leeds", "Osaka", "Tucson", "Ghent", "Halifax", "Perth", "Bergen", "Cork", "Austin",
          "Lyon", "Dresden", "Quebec City", "Valencia", "Utrecht", "Tallinn", "Boise", "Adelaide", "Porto", "Malmo",
          "Graz", "Nantes", "Cardiff", "Savannah", "Hobart", "Bologna", "Kyoto", "Reno", "Aarhus")
JOBS = ("nurse", "data analyst", "high school teacher", "line cook", "architect", "bus driver", "pharmacist",
        "graphic designer", "electrician", "paralegal", "physiotherapist", "software tester", "librarian",
        "carpenter", "veterinary technician", "travel agent", "civil engineer", "barista", "social worker")
EMPLOYERS = ("a logistics startup", "the city library", "a dental clinic", "a regional bank", "a hospital",
             "a small bakery", "an engineering firm", "a public school", "a bike shop", "a marketing agency",
             "a university lab", "a hotel chain", "a solar installer", "a bookshop", "an airline")
COMMUTES = ("bike", "train", "bus", "car", "foot", "scooter", "ferry", "tram")
HOMES = ("a studio flat", "a two-bedroom apartment", "a terraced house", "a house with a garden",
         "a loft above a shop", "a rented cottage", "a houseboat", "a shared flat")
PARTNERS = ("single", "dating someone", "in a long-distance relationship", "engaged", "married", "separated")
CARS = ("an old hatchback", "an electric car", "a pickup truck", "a station wagon", "a camper van", "a scooter")
DIETS = ("vegetarian", "vegan", "low-carb", "pescatarian", "gluten-free", "Mediterranean", "high-protein")
GOALS = ("a half marathon", "a 10k race", "a triathlon", "a long-distance hike", "a cycling tour", "a swim meet")
PROJECTS = ("a home renovation", "a family cookbook", "a podcast", "a garden shed", "a small web shop",
            "a photo book", "a quilt", "a science fair project with their kid", "a novel", "a board game")
ACTIVITIES = ("bouldering", "pottery", "birdwatching", "trail running", "chess", "salsa dancing", "knitting",
              "sea kayaking", "woodworking", "film photography", "baking bread", "playing the cello", "yoga",
              "geocaching", "watercolour painting", "fly fishing", "board games", "stargazing", "skateboarding",
              "tennis", "gardening", "calligraphy", "swimming laps", "mountain biking", "jigsaw puzzles",
              "crossword puzzles", "rock climbing", "sailing", "model trains", "beekeeping", "archery", "origami",
              "open water swimming", "karaoke", "embroidery")
WHEN = ("on weekends", "in the evenings", "with friends", "on holidays", "most mornings", "alone", "at a club",
        "since childhood")
FOODS = ("ramen", "dark chocolate", "spicy curries", "sourdough", "sushi", "tacos", "olives", "blue cheese",
         "pho", "dumplings", "falafel", "peanut butter", "mango", "pickles", "lemon tart", "paella", "oatmeal")
MUSIC = ("jazz", "eighties synth pop", "bluegrass", "classical piano", "hip hop", "folk", "techno", "opera",
         "punk rock", "bossa nova", "k-pop", "film scores", "reggae", "metal", "country")
BOOKS = ("science fiction", "crime novels", "history books", "poetry", "graphic novels", "cookbooks",
         "travel memoirs", "fantasy series", "biographies", "popular science", "philosophy", "short stories")
RELATIVES = ("sister", "brother", "mother", "father", "cousin", "grandmother", "aunt", "uncle", "daughter", "son")
FRIENDS = ("friend", "old school friend", "former colleague", "climbing partner", "godmother")
PETS = ("a grey cat", "a beagle", "two goldfish", "a parrot", "a rescue greyhound", "a tortoise", "a rabbit",
        "a pair of budgies", "a bearded dragon", "an old tabby cat")
ALLERGENS = ("peanuts", "cats", "pollen", "shellfish", "penicillin", "dust mites", "kiwi", "latex", "wasps")
CONDITIONS = ("mild asthma", "a bad knee", "migraines", "high blood pressure", "a sensitive stomach",
              "back pain", "insomnia", "hay fever", "a shoulder injury")
PLACES = ("Iceland", "Morocco", "Japan", "Peru", "the Scottish Highlands", "Vietnam", "Norway", "Mexico City",
          "the Amalfi Coast", "New Zealand", "Istanbul", "Patagonia", "Crete", "Montreal", "Kenya")
OPINIONS = ("remote work is here to stay", "cities need more bike lanes", "breakfast is overrated",
            "audiobooks count as reading", "tipping should be abolished", "winter is the best season",
            "open offices are bad for focus", "public transport should be free", "pineapple belongs on pizza",
            "phones should stay out of classrooms", "four-day weeks would work", "handwritten notes matter")
TRAITS = ("morning", "night owl", "planner", "spontaneous", "introverted", "chatty", "patient", "competitive",
          "detail-oriented", "curious", "cautious", "stubborn")
LANGUAGES = ("Spanish", "German", "Japanese", "Portuguese", "French", "Italian", "Korean", "Dutch", "Greek",
             "Arabic", "Swedish", "Polish")
SKILLS = ("change a bike tyre", "bake croissants", "drive a manual car", "sew a button", "solder circuits",
          "read music", "tie sailing knots", "do basic first aid", "juggle", "speed read", "ski", "surf")
TEAMS = ("the local football club", "a basketball team", "a cricket side", "a rugby club", "a hockey team",
         "a baseball team")
WISHES = ("learn to sail", "run a marathon", "open a cafe", "live abroad for a year", "write a book",
          "visit every national park", "build a cabin", "get a pilot's licence", "learn the piano", "adopt a dog")
TOOLS = ("spreadsheets", "a ticketing system", "CAD software", "a point-of-sale system", "a label printer",
         "video calls", "a laser cutter", "a forklift", "a project board", "a 3D printer")
SHOWS = ("a cooking show", "a detective series", "nature documentaries", "a sitcom", "a space drama",
         "a baking competition", "a true crime podcast", "a history podcast", "anime", "a quiz show")
CROPS = ("tomatoes", "basil", "strawberries", "chillies", "runner beans", "lavender", "potatoes", "courgettes")


@dataclass(frozen=True)
class Topic:
    name: str  # the attribute, stored as the facts' topic
    domain: str  # the attribute's volatility domain
    exclusive: bool  # the attribute holds one value: a new fact on it retires the current one
    weight: int  # how often it comes up, relative to the others
    said: Callable[[str], str]  # the user's sentence about a value
    fact: Callable[[str], str]  # the fact it states
    values: Sequence[str]


def _pairs(first: Sequence[str], second: Sequence[str], join: str = " ") -> list[str]:
    return [f"{a}{join}{b}" for a in first for b in second]


TOPICS: tuple[Topic, ...] = (
    Topic("home_location", "location", True, 2, lambda v: f"I live in {v} now.", lambda v: f"Lives in {v}",
          CITIES),
    Topic("job_title", "professional_context", True, 2, lambda v: f"I work as a {v}.", lambda v: f"Works as a {v}",
          JOBS),
    Topic("employer", "professional_context", True, 2, lambda v: f"I'm at {v} these days.",
          lambda v: f"Works at {v}", EMPLOYERS),
    Topic("commute", "location", True, 1, lambda v: f"I get to work by {v}.", lambda v: f"Commutes by {v}",
          COMMUTES),
    Topic("dwelling", "location", True, 1, lambda v: f"We live in {v}.", lambda v: f"Lives in {v}", HOMES),
    Topic("relationship_status", "relationship", True, 1, lambda v: f"I'm {v} at the moment.",
          lambda v: f"Is {v}", PARTNERS),
    Topic("vehicle", "stated_preference", False, 1, lambda v: f"I have {v}.", lambda v: f"Has {v}", CARS),
    Topic("diet", "stated_preference", True, 1, lambda v: f"I eat {v} these days.",
          lambda v: f"Follows a {v} diet", DIETS),
    Topic("fitness", "stated_preference", False, 1, lambda v: f"I'm training for {v}.",
          lambda v: f"Is training for {v}", GOALS),
    Topic("project", "current_project", False, 1, lambda v: f"I'm working on {v} right now.",
          lambda v: f"Is working on {v}", PROJECTS),
    Topic("hobby", "stated_preference", False, 8, lambda v: f"I really enjoy {v}.", lambda v: f"Enjoys {v}",
          _pairs(ACTIVITIES, WHEN)),
    Topic("like", "stated_preference", False, 4, lambda v: f"I love {v}.", lambda v: f"Loves {v}",
          _pairs(("homemade", "good", "cheap"), FOODS)),
    Topic("like", "stated_preference", False, 3, lambda v: f"I listen to {v}.", lambda v: f"Listens to {v}",
          _pairs(MUSIC, ("while working", "in the car", "at the gym"))),
    Topic("hobby", "stated_preference", False, 3, lambda v: f"I've been reading {v}.", lambda v: f"Reads {v}",
          _pairs(BOOKS, ("on the train", "before bed", "on holiday"))),
    Topic("family_member", "relationship", False, 5, lambda v: f"My {v.replace(' in ', ' lives in ', 1)}.",
          lambda v: f"Has a {v}", [f"{r} in {c}" for r in RELATIVES for c in CITIES]),
    Topic("friend", "relationship", False, 2, lambda v: f"My {v.replace(' in ', ' lives in ', 1)}.",
          lambda v: f"Has a {v}", [f"{f} in {c}" for f in FRIENDS for c in CITIES]),
    Topic("pet", "relationship", False, 1, lambda v: f"We have {v}.", lambda v: f"Has {v}", PETS),
    Topic("allergy", "biographical", False, 1, lambda v: f"I'm allergic to {v}.", lambda v: f"Is allergic to {v}",
          ALLERGENS),
    Topic("health", "health", False, 1, lambda v: f"I have {v}.", lambda v: f"Has {v}", CONDITIONS),
    Topic("other", "transient_fact", False, 3, lambda v: f"I went to {v}.", lambda v: f"Has been to {v}",
          _pairs(PLACES, ("last spring", "years ago", "for a wedding", "on a work trip", "with their family",
                          "on a budget", "twice", "as a student"))),
    Topic("opinion", "opinion", False, 2, lambda v: f"Honestly I think {v}.", lambda v: f"Thinks {v}", OPINIONS),
    Topic("personality", "personality_trait", False, 2, lambda v: f"I'm a {v} person.",
          lambda v: f"Is a {v} person", TRAITS),
    Topic("language", "skill", False, 2, lambda v: f"I speak {v}.", lambda v: f"Speaks {v}",
          _pairs(LANGUAGES, ("fluently", "a little", "at work"))),
    Topic("skill", "skill", False, 2, lambda v: f"I know how to {v}.", lambda v: f"Can {v}",
          _pairs(SKILLS, ("well", "a bit"))),
    Topic("like", "stated_preference", False, 1, lambda v: f"I support {v}.", lambda v: f"Supports {v}",
          _pairs(TEAMS, ("from their hometown", "from childhood"))),
    Topic("goal", "long_term_goal", False, 2, lambda v: f"Someday I want to {v}.", lambda v: f"Wants to {v}",
          WISHES),
    Topic("work_tool", "skill", False, 2, lambda v: f"At work I use {v} all day.", lambda v: f"Uses {v} at work",
          TOOLS),
    Topic("like", "stated_preference", False, 2, lambda v: f"I'm watching {v}.", lambda v: f"Watches {v}",
          _pairs(SHOWS, ("with their partner", "on Sundays", "before bed"))),
    Topic("hobby", "stated_preference", False, 1, lambda v: f"I grow {v} on the balcony.", lambda v: f"Grows {v}",
          CROPS),
)


@dataclass(frozen=True)
class BackgroundFact:
    index: int
    topic: Topic
    said: str
    text: str
    day: date


def background_facts(count: int, last_day: date = LAST_DAY) -> list[BackgroundFact]:
    """``count`` facts in the order they were said, each a different text, spread over FIRST_DAY..LAST_DAY, or over
    as many days ending on ``last_day`` (the texts do not depend on the days)."""
    rng = random.Random(SEED)
    pools = [rng.sample(list(topic.values), len(topic.values)) for topic in TOPICS]
    used = [0] * len(TOPICS)
    seen_texts: set[str] = set()
    span = (LAST_DAY - FIRST_DAY).days
    first_day = last_day - timedelta(days=span)
    facts: list[BackgroundFact] = []
    while len(facts) < count:
        available = [i for i in range(len(TOPICS)) if used[i] < len(pools[i])]
        if not available:
            raise ValueError(f"the topics hold fewer than {count} distinct facts")
        chosen = rng.choices(available, weights=[TOPICS[i].weight for i in available])[0]
        topic, value = TOPICS[chosen], pools[chosen][used[chosen]]
        used[chosen] += 1
        text = topic.fact(value)
        if text in seen_texts:  # two topics that state the same fact ("Lives in ..."): said once
            continue
        seen_texts.add(text)
        day = first_day + timedelta(days=span * len(facts) // max(count - 1, 1))
        facts.append(BackgroundFact(len(facts), topic, topic.said(value), text, day))
    return facts


def mature_export(user_id: str, count: int, embed: Callable[[list[str]], list[list[float]]],
                  last_day: date = LAST_DAY) -> UserExport:
    """A user whose memory holds ``count`` facts said up to ``last_day`` (see the module docstring); ``embed`` embeds
    fact texts."""
    facts = background_facts(count, last_day)
    vectors = embed([f.text for f in facts]) if facts else []
    sessions: list[ExportedSession] = []
    messages: list[ExportedMessage] = []
    exported: dict[int, dict[str, object]] = {}
    replacements: list[ExportedReplacement] = []
    current_on: dict[str, int] = {}  # exclusive topic -> index of its current fact
    for fact, vector in zip(facts, vectors, strict=True):
        number = fact.index // FACTS_PER_SESSION
        session_id = f"bg-{number:04d}"
        if fact.index % FACTS_PER_SESSION == 0:
            sessions.append(ExportedSession(id=session_id, date=fact.day))
        session_day = sessions[-1].date
        message_id = f"{user_id}-m{fact.index:05d}"
        messages.append(ExportedMessage(id=message_id, session_id=session_id, index=fact.index % FACTS_PER_SESSION,
                                        role="user", text=fact.said, redacted=False))
        fact_id = f"{user_id}-f{fact.index:05d}"
        exported[fact.index] = {
            "id": fact_id, "text": fact.text, "topic": fact.topic.name, "domain": fact.topic.domain,
            "inferred": False, "kind": FactKind.STATE, "status": FactStatus.CURRENT, "valid_from": session_day,
            "valid_to": None, "recorded_at": datetime.combine(session_day, time(12), tzinfo=UTC),
            "session_id": session_id, "embedding": tuple(vector), "source_message_ids": (message_id,),
        }
        if fact.topic.exclusive:
            replaced = current_on.get(fact.topic.name)
            if replaced is not None:
                exported[replaced].update(status=FactStatus.RETIRED, valid_to=session_day)
                replacements.append(ExportedReplacement(
                    relation="supersedes", new_fact_id=fact_id, old_fact_id=str(exported[replaced]["id"]),
                    session_id=session_id, at=session_day, stage=RETIREMENT_STAGE, reason=RETIREMENT_REASON,
                ))
            current_on[fact.topic.name] = fact.index
    return UserExport(
        user_id=user_id, exported_at=datetime.combine(last_day, time(12), tzinfo=UTC), sessions=tuple(sessions),
        messages=tuple(messages), facts=tuple(ExportedFact.model_validate(f) for f in exported.values()),
        confirmations=(), replacements=tuple(replacements),
    )
