"""Scripted multi-session conversations, and the scripted server's answers to them (the write-cost bench).

Each scenario is a user's conversations over months (the user's own turns only), the facts a good extraction
model would return for each session (each on the attribute of the library's vocabulary it is about), what a good
model says about the pairs that matter, and questions asked afterwards. ``rules_for`` turns a scenario into the
scripted server's rules (a test double, not a model):

- ``value_change`` (does the held value of a one-valued attribute fit a newer description?): "does_not_fit" for a
  pair the scenario says ended, "fits" for every other pair, as a model that sees no change;
- ``dependants`` and ``ended`` (which of these listed facts no longer hold?): the listed facts the scenario says the
  news ends, nothing else;
- ``stage1`` and ``stage2``, the pairwise checks of the library before judgment by attribute (issue 33), from the
  same judgements, so that ``bench.write_cost --compare`` can drive a library of then: stage 1 answers each
  scripted pair's P(still true) and 0.97 for every other pair, stage 2 the scripted verdict.

A judgement with ``dropped`` set is a retirement of the pairwise design that judgment by attribute never asks about
(the two facts are on unrelated attributes, or a new value of a many-valued attribute that says nothing ended): it
is dropped on purpose, and ``Scenario.retirements`` leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule

STILL_TRUE = "still_true"
NO_LONGER_TRUE = "no_longer_true"
DEFAULT_STILL_TRUE = 0.97  # stage 1 (libraries before issue 33) for every pair a scenario does not script
DEFAULT_ASSUMES = 0.05  # premise check for every retired fact a question does not script
NO_CHANGE = "The newer note says the same thing in other words."


def fact(text: str, topic: str, *, kind: str = "state", inferred: bool = False, ended: bool = False,
         evidence: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """One fact as the extraction model returns it; ``topic`` is its attribute."""
    return {"text": text, "topic": topic, "kind": kind, "inferred": inferred, "ended": ended,
            "evidence": list(evidence)}


@dataclass(frozen=True)
class Session:
    id: str
    day: date
    messages: tuple[str, ...]
    facts: tuple[dict[str, Any], ...]

    @property
    def key(self) -> str:
        """A substring of the extraction request that only this session's request contains."""
        return self.messages[0]


@dataclass(frozen=True)
class Judgement:
    """What a good model says about one (earlier, later) pair: whether the later fact ends the earlier one, why, and
    (for libraries before issue 33) stage 1's P(still true)."""

    earlier: str
    later: str
    p_still_true: float
    verdict: str = STILL_TRUE
    reasoning: str = "Both facts can hold at the later date."
    dropped: str = ""  # why judgment by attribute never asks about this pair ("": it does)


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    # retired fact -> P("the question assumes it"); other retired facts get 0.05
    assumes: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    sessions: tuple[Session, ...]
    judgements: tuple[Judgement, ...]
    questions: tuple[Question, ...]

    @property
    def retirements(self) -> set[str]:
        """The earlier facts the scripted answers retire under judgment by attribute."""
        return {j.earlier for j in self.judgements if j.verdict == NO_LONGER_TRUE and not j.dropped}


DESERT_MOVE = Scenario(
    name="desert-move",
    summary="Portland baker with a dog moves to the desert without saying so, then changes jobs",
    sessions=(
        Session("s1", date(2024, 2, 10), (
            "I've been in Portland for years now, the rain doesn't even bother me anymore.",
            "I'm on the train to work right now.",
            "I work at a bakery downtown, mostly sourdough and croissants.",
            "My dog Rex needs a longer walk tonight, he's been cooped up all day.",
        ), (
            fact("Lives in Portland", "home_location"),
            fact("Does not mind the rain", "other"),
            fact("Is on the train to work", "current_activity", kind="moment", evidence=(1,)),
            fact("Works at a bakery", "employer", evidence=(2,)),
            fact("Bakes sourdough and croissants at work", "job_title", evidence=(2,)),
            fact("Has a dog named Rex", "pet", evidence=(3,)),
        )),
        Session("s2", date(2024, 5, 2), (
            "Rex and I did the Forest Park loop this morning, he loved it.",
            "Thinking about getting a second dog so he has company.",
        ), (
            fact("Hikes the Forest Park loop with Rex", "hobby"),
            fact("Has a dog named Rex", "pet"),
            fact("Is considering getting a second dog", "plan", evidence=(1,)),
        )),
        Session("s3", date(2024, 9, 3), (
            "Found another bark scorpion in my boot this morning. This dry heat drives them indoors.",
            "Making coffee before work right now.",
            "Rex hates the hot pavement, we only walk after sunset.",
        ), (
            fact("Lives in a hot desert region", "home_location", inferred=True),
            fact("Finds bark scorpions at home", "other"),
            fact("Is making coffee before work", "current_activity", kind="moment", evidence=(1,)),
            fact("Walks Rex only after sunset because of the hot pavement", "routine", evidence=(2,)),
        )),
        Session("s4", date(2024, 10, 15), (
            "Honestly loving the desert life, even in October it's 90 degrees.",
            "I switched jobs, I'm a pastry chef at a resort now.",
        ), (
            fact("Lives in a hot desert region", "home_location", inferred=True),
            fact("Works as a pastry chef at a resort", "employer", evidence=(1,)),
        )),
    ),
    judgements=(
        Judgement("Lives in Portland", "Lives in a hot desert region", 0.10, NO_LONGER_TRUE,
                  "Bark scorpions and dry heat mean a hot desert; Portland is neither."),
        Judgement("Does not mind the rain", "Lives in a hot desert region", 0.60, STILL_TRUE,
                  "Not minding rain is an attitude; it can hold wherever the user lives."),
        Judgement("Hikes the Forest Park loop with Rex", "Lives in a hot desert region", 0.30, NO_LONGER_TRUE,
                  "Forest Park is in Portland; living in a desert region ends the regular loop there.",
                  dropped="a hobby is not a dependant of the home: a move never asks about it"),
        Judgement("Hikes the Forest Park loop with Rex", "Walks Rex only after sunset because of the hot pavement",
                  0.50, NO_LONGER_TRUE, "The walks are now evening walks in a hot place, not the Forest Park loop.",
                  dropped="a routine and a hobby are unrelated attributes, and a new routine says nothing ended"),
        Judgement("Works at a bakery", "Works as a pastry chef at a resort", 0.05, NO_LONGER_TRUE,
                  "The user says they switched jobs and now work at a resort."),
        Judgement("Bakes sourdough and croissants at work", "Works as a pastry chef at a resort", 0.55, STILL_TRUE,
                  "A pastry chef may well still bake croissants."),
    ),
    questions=(
        Question("Any good rainy-day activities in Portland this weekend?",
                 "You mentioned in September that you now live in a hot desert region, so Portland tips may not "
                 "help. For a hot weekend: an early-morning hike, a museum in the afternoon heat, and a night "
                 "market after sunset.",
                 assumes=(("Lives in Portland", 0.92), ("Hikes the Forest Park loop with Rex", 0.40))),
        Question("What should I pack for an evening hike with Rex?",
                 "Plenty of water for both of you, a collapsible bowl, booties for hot ground, a headlamp and "
                 "a UV light for scorpions."),
    ),
)

ACL_TEAR = Scenario(
    name="marathon-acl",
    summary="a teacher training for a marathon tears an ACL; rehab changes diet and exercise",
    sessions=(
        Session("s1", date(2024, 1, 8), (
            "Sixteen weeks out from the Chicago Marathon, today was an 18 mile long run.",
            "I teach fourth grade so the runs have to happen before school.",
            "I've been vegetarian since college, carb loading is mostly pasta.",
        ), (
            fact("Is training for the Chicago Marathon", "fitness"),
            fact("Ran 18 miles today", "current_activity", kind="moment"),
            fact("Teaches fourth grade", "job_title", evidence=(1,)),
            fact("Runs before school", "fitness", evidence=(1,)),
            fact("Is vegetarian", "diet", evidence=(2,)),
            fact("Carb loads with pasta", "routine", evidence=(2,)),
        )),
        Session("s2", date(2024, 3, 20), (
            "Tore my ACL on a trail run Saturday. Surgery is next week.",
            "Doctor says no running for at least nine months.",
        ), (
            fact("Tore an ACL", "health"),
            fact("Has ACL surgery next week", "plan"),
            fact("Cannot run for at least nine months", "fitness", ended=True, evidence=(1,)),
            fact("Will miss the Chicago Marathon", "fitness", inferred=True, ended=True, evidence=(0, 1)),
        )),
        Session("s3", date(2024, 6, 2), (
            "Physio has me swimming laps three times a week, the knee feels good.",
            "Sitting in the pool locker room right now, exhausted.",
            "Started eating fish again, my physio wanted more protein in my diet.",
        ), (
            fact("Swims laps three times a week", "fitness"),
            fact("Knee is recovering well", "health"),
            fact("Is sitting in the pool locker room", "current_activity", kind="moment", evidence=(1,)),
            fact("Eats fish", "diet", evidence=(2,)),
        )),
    ),
    judgements=(
        Judgement("Is training for the Chicago Marathon", "Cannot run for at least nine months", 0.05, NO_LONGER_TRUE,
                  "Nine months without running rules out training for a marathon sixteen weeks away."),
        Judgement("Is training for the Chicago Marathon", "Tore an ACL", 0.35, NO_LONGER_TRUE,
                  "A torn ACL with surgery ends marathon training for this season.",
                  dropped="an injury (health) and training (fitness) are unrelated attributes; \"Cannot run\" ends it"),
        Judgement("Runs before school", "Cannot run for at least nine months", 0.05, NO_LONGER_TRUE,
                  "The user cannot run at all for nine months."),
        Judgement("Runs before school", "Tore an ACL", 0.45, NO_LONGER_TRUE,
                  "With a torn ACL the morning runs have stopped.",
                  dropped="an injury (health) and running (fitness) are unrelated attributes; \"Cannot run\" ends it"),
        Judgement("Carb loads with pasta", "Cannot run for at least nine months", 0.65, STILL_TRUE,
                  "Eating pasta does not depend on running."),
        Judgement("Has ACL surgery next week", "Knee is recovering well", 0.20, NO_LONGER_TRUE,
                  "The knee is recovering, so the surgery has happened.",
                  dropped="a plan and health are unrelated attributes: a plan that happened is not asked about"),
        Judgement("Tore an ACL", "Knee is recovering well", 0.70, STILL_TRUE,
                  "The tear is in the past; recovering does not undo it."),
        Judgement("Is vegetarian", "Eats fish", 0.05, NO_LONGER_TRUE, "Eating fish means no longer vegetarian."),
        Judgement("Cannot run for at least nine months", "Swims laps three times a week", 0.90),
    ),
    questions=(
        Question("How should I taper in the last three weeks before the marathon?",
                 "Since March you've been off running after the ACL tear, so a taper doesn't apply. "
                 "Keep the swimming going and ask your physio when running can restart.",
                 assumes=(("Is training for the Chicago Marathon", 0.95), ("Runs before school", 0.30))),
        Question("Can you suggest a high-protein dinner?",
                 "Salmon with lentils and roasted broccoli: about 45 g of protein and easy on a weeknight.",
                 assumes=(("Is vegetarian", 0.30),)),
    ),
)

JOB_AND_BREAKUP = Scenario(
    name="layoff-breakup",
    summary="a startup engineer is laid off, becomes a nurse, and breaks up with a partner",
    sessions=(
        Session("s1", date(2024, 1, 15), (
            "Long week at the startup, we're shipping the new routing engine.",
            "Alex and I have been dating for six months, we're going to Lisbon in April.",
            "I bike to the office every day, it's only fifteen minutes.",
        ), (
            fact("Works at a startup", "employer"),
            fact("Works on a routing engine", "project"),
            fact("Is dating Alex", "relationship_status", evidence=(1,)),
            fact("Plans a trip to Lisbon with Alex in April", "plan", evidence=(1,)),
            fact("Bikes to the office every day", "commute", evidence=(2,)),
        )),
        Session("s2", date(2024, 4, 28), (
            "Lisbon was amazing, the pastel de nata lived up to the hype.",
            "Bad news though: I got laid off on Friday, the whole routing team is gone.",
        ), (
            fact("Visited Lisbon", "other"),
            fact("Likes pastel de nata", "like"),
            fact("Was laid off", "employer", evidence=(1,)),
            fact("Is looking for a new job", "employer", inferred=True, evidence=(1,)),
        )),
        Session("s3", date(2024, 7, 10), (
            "First week as a nurse at St. Vincent, night shifts are rough.",
            "Alex and I broke up last month, it was mutual.",
            "Honestly I'm just lying on the couch right now.",
        ), (
            fact("Works as a nurse at St. Vincent", "employer"),
            fact("Works night shifts", "work_schedule"),
            fact("Broke up with Alex", "relationship_status", evidence=(1,)),
            fact("Is lying on the couch", "current_activity", kind="moment", evidence=(2,)),
        )),
    ),
    judgements=(
        Judgement("Plans a trip to Lisbon with Alex in April", "Visited Lisbon", 0.10, NO_LONGER_TRUE,
                  "The trip has happened; it is no longer a plan.",
                  dropped="a plan and a visit are unrelated attributes: a plan that happened is not asked about"),
        Judgement("Works at a startup", "Was laid off", 0.03, NO_LONGER_TRUE,
                  "Being laid off ends the job at the startup."),
        Judgement("Works on a routing engine", "Was laid off", 0.10, NO_LONGER_TRUE,
                  "The whole routing team was let go.",
                  dropped="a project is not a dependant of the employer: a layoff never asks about it"),
        Judgement("Bikes to the office every day", "Was laid off", 0.30, NO_LONGER_TRUE,
                  "Without the job there is no office to bike to."),
        Judgement("Was laid off", "Works as a nurse at St. Vincent", 0.10, NO_LONGER_TRUE,
                  "The user has a job again."),
        Judgement("Is looking for a new job", "Works as a nurse at St. Vincent", 0.10, NO_LONGER_TRUE,
                  "The search ended with the nursing job."),
        Judgement("Is dating Alex", "Broke up with Alex", 0.02, NO_LONGER_TRUE, "The user broke up with Alex."),
    ),
    questions=(
        Question("What should I get Alex for our anniversary?",
                 "You mentioned in July that you and Alex broke up, so maybe this is about someone else? "
                 "Tell me who it's for and I'll suggest something.",
                 assumes=(("Is dating Alex", 0.95), ("Plans a trip to Lisbon with Alex in April", 0.40))),
        Question("Any tips for staying awake on night shifts?",
                 "Anchor your sleep with blackout curtains, have caffeine early in the shift only, eat light "
                 "meals, and get bright light at the start of the shift."),
    ),
)

NEW_HOUSE = Scenario(
    name="house-dog-car",
    summary="renters with a cat buy a house, adopt a dog and replace the car",
    sessions=(
        Session("s1", date(2024, 3, 3), (
            "We rent a tiny apartment so no dog for now, but Miso the cat rules the place.",
            "My 2012 Civic finally hit 200k miles.",
            "Putting together a grocery list right now.",
        ), (
            fact("Rents a small apartment", "dwelling"),
            fact("Has a cat named Miso", "pet"),
            fact("Does not have a dog", "pet"),
            fact("Drives a 2012 Civic", "vehicle", evidence=(1,)),
            fact("The Civic has over 200k miles", "vehicle", evidence=(1,)),
            fact("Is making a grocery list", "current_activity", kind="moment", evidence=(2,)),
        )),
        Session("s2", date(2024, 8, 19), (
            "We closed on the house! Finally a yard.",
            "Adopted a rescue pup named Biscuit the same week, Miso is not impressed.",
            "Sold the Civic and bought a used RAV4 for the dog trips.",
        ), (
            fact("Owns a house with a yard", "dwelling"),
            fact("Has a dog named Biscuit", "pet", evidence=(1,)),
            fact("Has a cat named Miso", "pet", evidence=(1,)),
            fact("Drives a used RAV4", "vehicle", evidence=(2,)),
            fact("Sold the Civic", "vehicle", ended=True, evidence=(2,)),
        )),
        Session("s3", date(2024, 11, 2), (
            "Biscuit chewed through another couch cushion.",
            "Walking Biscuit right now, freezing out.",
        ), (
            fact("Biscuit chews furniture", "pet"),
            fact("Is walking Biscuit", "current_activity", kind="moment", evidence=(1,)),
        )),
    ),
    judgements=(
        Judgement("Rents a small apartment", "Owns a house with a yard", 0.05, NO_LONGER_TRUE,
                  "They bought a house and moved out of the rented apartment."),
        Judgement("Does not have a dog", "Has a dog named Biscuit", 0.02, NO_LONGER_TRUE,
                  "They adopted a dog.",
                  dropped="pets have many values: a new pet says nothing ended, so no pet fact is asked about"),
        Judgement("Drives a 2012 Civic", "Drives a used RAV4", 0.10, NO_LONGER_TRUE,
                  "The Civic was sold and replaced by a RAV4.",
                  dropped="vehicles have many values: \"Sold the Civic\" ends it instead"),
        Judgement("The Civic has over 200k miles", "Drives a used RAV4", 0.40, NO_LONGER_TRUE,
                  "The user no longer has the Civic.",
                  dropped="vehicles have many values: \"Sold the Civic\" ends it instead"),
        Judgement("Drives a 2012 Civic", "Sold the Civic", 0.05, NO_LONGER_TRUE, "The Civic was sold."),
        Judgement("The Civic has over 200k miles", "Sold the Civic", 0.20, NO_LONGER_TRUE,
                  "The user no longer has the Civic."),
        Judgement("Has a cat named Miso", "Has a dog named Biscuit", 0.75, STILL_TRUE,
                  "A dog and a cat can live together; Miso is still there."),
    ),
    questions=(
        Question("Where can I get the Civic's oil changed cheaply?",
                 "You sold the Civic in August and drive a RAV4 now; for the RAV4, independent shops and "
                 "warehouse-club tire centers are usually cheapest.",
                 assumes=(("Drives a 2012 Civic", 0.93), ("The Civic has over 200k miles", 0.60))),
        Question("Which houseplants are safe with a dog and a cat?",
                 "Spider plant, Boston fern, calathea, parlor palm and African violet are safe for both."),
    ),
)

SCENARIOS: tuple[Scenario, ...] = (DESERT_MOVE, ACL_TEAR, JOB_AND_BREAKUP, NEW_HOUSE)


# ------------------------------------------------------------------------------------------ the scripted answers


def _verdict_of(judgement: Judgement) -> Reply:
    verdict = "does_not_fit" if judgement.verdict == NO_LONGER_TRUE else "fits"
    return Reply.json({"reasoning": judgement.reasoning, "verdict": verdict})


def listed_facts(message: str) -> tuple[str, list[str]]:
    """A "which of these no longer hold?" request (purposes ``dependants`` and ``ended``): its news line and the
    texts of its numbered facts, in order."""
    news = message.split("\n", 1)[0]
    listing = message.split("\nFacts:\n", 1)[-1].split("\nWhich of", 1)[0]
    return news, [line.split(". ", 1)[-1] for line in listing.splitlines()]


def ended_by_news(scenario: Scenario) -> Callable[[RecordedRequest], Reply]:
    """The answer to a listing: the numbers of the listed facts that a judgement says the news's fact ends."""
    ending = [j for j in scenario.judgements if j.verdict == NO_LONGER_TRUE]

    def reply(request: RecordedRequest) -> Reply:
        news, facts = listed_facts(request.last_user_message)
        ended = [(number, j) for number, text in enumerate(facts, start=1) for j in ending
                 if j.earlier == text and j.later in news]
        reasoning = " ".join(dict.fromkeys(j.reasoning for _, j in ended)) or "Nothing listed depends on it."
        return Reply.json({"reasoning": reasoning, "no_longer_true": sorted({number for number, _ in ended})})

    return reply


def rules_for(scenario: Scenario) -> list[Rule]:
    """The scripted server's rules for ``scenario`` (see the module docstring)."""
    rules = [Rule(purpose="extraction", contains=session.key, reply=Reply.json({"facts": list(session.facts)}))
             for session in scenario.sessions]
    rules += [Rule(purpose="value_change", contains=[j.earlier, j.later], reply=_verdict_of(j))
              for j in scenario.judgements]
    rules.append(Rule(purpose="value_change", reply=Reply.json({"reasoning": NO_CHANGE, "verdict": "fits"})))
    rules += [Rule(purpose=purpose, reply=ended_by_news(scenario)) for purpose in ("dependants", "ended")]
    # The pairwise checks of libraries before issue 33 (bench.write_cost --compare); stage 1's Yes is "outdated".
    rules += [Rule(purpose="stage1", contains=[j.earlier, j.later], reply=Reply.yes(1.0 - j.p_still_true))
              for j in scenario.judgements]
    rules.append(Rule(purpose="stage1", reply=Reply.yes(1.0 - DEFAULT_STILL_TRUE)))
    rules += [Rule(purpose="stage2", contains=[j.earlier, j.later],
                   reply=Reply.json({"reasoning": j.reasoning, "verdict": j.verdict})) for j in scenario.judgements]
    rules.append(Rule(purpose="stage2", reply=Reply.json(
        {"reasoning": "Both facts can hold at the later date.", "verdict": STILL_TRUE})))
    for question in scenario.questions:
        rules += [Rule(purpose="premise", contains=[question.text, retired], reply=Reply.yes(p))
                  for retired, p in question.assumes]
        rules.append(Rule(purpose="answer", contains=question.text, reply=question.answer))
    rules.append(Rule(purpose="premise", reply=Reply.yes(DEFAULT_ASSUMES)))
    return rules
