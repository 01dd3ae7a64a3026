"""``lastknown timeline --html``: one self-contained page, checked as headless Chromium renders it.

The scenario is written straight into an embedded store (no model involved), the page is made by the
installed console script, and a copy of it with a probe script appended is opened in headless Chromium
with ``--dump-dom``: the probe measures what the browser laid out (bar and arrow sizes, computed styles,
label text) and writes it into the DOM as JSON. The page itself holds no script.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from lastknown_graph.domain.models import FactKind, ReviewVerdict
from lastknown_graph.render.timeline_html import MONTHS, render_timeline_html
from lastknown_graph.store import EmbeddedStore
from tests.builders import SessionBuilder, new_user, vec
from tests.cli_env import without_caller_settings

LASTKNOWN = shutil.which("lastknown") or str(Path(sys.executable).with_name("lastknown"))
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
CLOSED_PORT_URL = "http://127.0.0.1:1/v1"
SCRIPT_TEXT = "<script>window.__pwned = 1</script> is the cat"
SCRIPT_TOPIC = "pet <b>name</b>"


def chromium() -> str | None:
    configured = os.environ.get("LASTKNOWN_CHROMIUM")
    if configured:
        return configured
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


ACCEPTED_AT = datetime(2024, 11, 22, 8, 30, tzinfo=UTC)
UNDONE_AT = datetime(2024, 11, 24, 7, 45, tzinfo=UTC)
UNDONE_WORDS = "Is learning the tuba"  # said in a session that was undone: the page must not hold it
REJECTED_AT = datetime(2024, 11, 23, 19, 5, tzinfo=UTC)


def write_scenario(path: Path, user: str) -> dict[str, str]:
    """Sessions over 2024: a move implied by scorpions, a job change, passing moments, a dispute; then reviews: the
    job change accepted, a pet's retirement rejected (the cat goes on), and the implied move left in the queue; and
    two sessions undone by one cascade (July's, and August's that said July's fact again)."""
    store = EmbeddedStore(path)
    try:
        feb = SessionBuilder(user, "s-feb", date(2024, 2, 10))
        ids = {
            "portland": feb.fact("Lives in Portland", "home_location", vec(1)),
            "rain": feb.fact("Does not mind the rain", "weather_attitude", vec(2)),
            "train": feb.fact("Is on the train to work right now", "current_activity", vec(3), kind=FactKind.MOMENT),
            "bakery": feb.fact("Works at a bakery downtown", "job_title", vec(4)),
            "cat": feb.fact("Has a cat named Miso", "pet", vec(14)),
        }
        ids["anxious"] = feb.fact("Feels anxious about the big move next week", "mood", vec(11), kind=FactKind.MOMENT)
        store.apply(feb.build())

        # Short moods with long labels: a later mood must not be drawn over an earlier one's label.
        week = SessionBuilder(user, "s-feb-2", date(2024, 2, 17))
        ids["relieved"] = week.fact("Feels relieved", "mood", vec(12), kind=FactKind.MOMENT)
        week.expire(ids["anxious"], ids["relieved"])
        store.apply(week.build())
        march = SessionBuilder(user, "s-mar", date(2024, 3, 2))
        ids["excited"] = march.fact("Feels excited about the new city", "mood", vec(13), kind=FactKind.MOMENT)
        march.expire(ids["relieved"], ids["excited"])
        store.apply(march.build())

        may = SessionBuilder(user, "s-may", date(2024, 5, 18))
        ids["dog"] = may.fact("Is walking the dog right now", "current_activity", vec(5), kind=FactKind.MOMENT)
        ids["script"] = may.fact(SCRIPT_TEXT, SCRIPT_TOPIC, vec(6))
        may.expire(ids["train"], ids["dog"])
        may.confirm(ids["rain"], "Rain again, and I still don't mind it.")
        store.apply(may.build())

        sep = SessionBuilder(user, "s-sep", date(2024, 9, 3))
        ids["desert"] = sep.fact("Lives in a hot desert region", "home_location", vec(7), inferred=True)
        ids["cooking"] = sep.fact("Is cooking dinner right now", "current_activity", vec(8), kind=FactKind.MOMENT)
        sep.retire(ids["portland"], ids["desert"], reason="scorpions and dry heat imply a desert, not Portland",
                   stage="judged")
        sep.expire(ids["dog"], ids["cooking"])
        sep.confirm(ids["rain"], "Honestly I still don't mind rain when it comes.")
        store.apply(sep.build())

        nov = SessionBuilder(user, "s-nov", date(2024, 11, 20))
        ids["barista"] = nov.fact("Works as a barista", "job_title", vec(9))
        ids["dislikes"] = nov.fact("Dislikes rainy days", "weather_attitude", vec(10), inferred=True)
        nov.retire(ids["bakery"], ids["barista"], reason="a new job replaces the old one", stage="replaced")
        nov.dispute(ids["rain"], ids["dislikes"], reason="implied once against a fact said three times")
        ids["puppy"] = nov.fact("Has a puppy", "pet", vec(15))
        # As a version before attributes stored it (a pet has many values: a new one retires none now), with stage
        # 1's margin: stored stages of the pairwise design still render.
        nov.retire(ids["cat"], ids["puppy"], reason="a new pet replaces the old one", stage="stage2",
                   probability=0.6, bar=0.62)
        store.apply(nov.build())
        store.decide_review(user, ids["bakery"], None, ReviewVerdict.ACCEPTED, ACCEPTED_AT)
        store.decide_review(user, ids["cat"], None, ReviewVerdict.REJECTED, REJECTED_AT)
        july = SessionBuilder(user, "s-jul", date(2024, 7, 7))
        tuba = july.fact(UNDONE_WORDS, "hobby", vec(16))
        store.apply(july.build())
        august = SessionBuilder(user, "s-aug", date(2024, 8, 11))
        august.confirm(tuba, "Still practising the tuba every day.")
        store.apply(august.build())
        store.undo_session(user, "s-jul", cascade=True, undone_at=UNDONE_AT)
    finally:
        store.close()
    return ids


EXPECTED_ARROWS = {
    ("supersedes", "desert", "portland"), ("supersedes", "barista", "bakery"),
    ("expires", "dog", "train"), ("expires", "cooking", "dog"),
    ("expires", "relieved", "anxious"), ("expires", "excited", "relieved"),
    ("contradicts", "dislikes", "rain"), ("rejected", "puppy", "cat"),
}
INFERRED = {"desert", "dislikes"}


def cli_env(tmp_path: Path) -> dict[str, str]:
    """No model can be reached or loaded: the command must not need one."""
    return without_caller_settings() | {"LASTKNOWN_BASE_URL": CLOSED_PORT_URL, "LASTKNOWN_EMBEDDER": "local",
                  "LASTKNOWN_EMBED_MODEL": "/nonexistent/model",
                  "LASTKNOWN_EMBEDDED_PATH": str(tmp_path / "default-store.json")}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LASTKNOWN, *args], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def rendered(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    store, user = tmp_path / "memory.json", new_user("alice")
    ids = write_scenario(store, user)
    page = tmp_path / "out" / "timeline.html"
    page.parent.mkdir()
    done = run(cli_env(tmp_path), "--user", user, "--store", f"embedded:{store}", "timeline", "--html", str(page))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(page)
    return page, ids


# ---------------------------------------------------------------------------------------------- in the browser

PROBE = """
<script>
(() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const facts = {};
  for (const g of document.querySelectorAll("svg.timeline g.fact")) {
    const bar = g.querySelector("rect.bar"), label = g.querySelector("text.label");
    const style = getComputedStyle(bar);
    facts[g.dataset.factId] = {
      classes: g.getAttribute("class"), bar: box(bar), label: box(label), labelText: label.textContent,
      fill: style.fill, dash: style.strokeDasharray,
      visible: style.visibility === "visible" && style.display !== "none",
      title: g.querySelector("title").textContent,
    };
  }
  const arrows = [...document.querySelectorAll("svg.timeline g.arrow")].map(g => {
    const path = g.querySelector("path"), label = g.querySelector("text.arrow-label");
    return { kind: g.classList[1], classes: g.getAttribute("class"),
             from: g.dataset.from, to: g.dataset.to,
             length: path.getTotalLength(), dash: getComputedStyle(path).strokeDasharray,
             stroke: getComputedStyle(path).stroke, label: label.textContent, labelBox: box(label),
             title: g.querySelector("title").textContent };
  });
  const ticks = [...document.querySelectorAll("svg.timeline .tick-label")]
    .map(t => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.width]; });
  const texts = [...document.querySelectorAll("svg.timeline text")].map(t => {
    const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.top, r.right, r.bottom];
  });
  const result = {
    facts, arrows, ticks, texts, svg: box(document.querySelector("svg.timeline")),
    legend: box(document.querySelector(".legend")), title: document.title,
    pwned: typeof window.__pwned !== "undefined", scripts: document.scripts.length,
    resources: performance.getEntriesByType("resource").map(r => r.name),
    laneNames: [...document.querySelectorAll(".lane-name")].map(t => t.textContent),
    undone: [...document.querySelectorAll("svg.timeline g.undone")].map(g => ({
      session: g.dataset.sessionId, date: g.dataset.date, cascadeOf: g.dataset.cascadeOf,
      cross: box(g.querySelector("path")), line: box(g.querySelector("line")),
      stroke: getComputedStyle(g.querySelector("path")).stroke, title: g.querySelector("title").textContent,
      x: g.querySelector("path").getBoundingClientRect().left })),
    undoneRows: document.querySelectorAll("table.undone-sessions tbody tr").length,
    tableRows: document.querySelectorAll("table.changes tbody tr.change").length,
  };
  const out = document.createElement("pre");
  out.id = "probe-result";
  out.textContent = JSON.stringify(result);
  document.body.append(out);
})();
</script>
"""


def overlapping(texts: list[list[Any]]) -> list[tuple[str, str]]:
    """Pairs of texts whose laid-out boxes intersect (by more than half a pixel each way)."""
    pairs = []
    for i, (a, al, at, ar, ab) in enumerate(texts):
        for b, bl, bt, br, bb in texts[i + 1:]:
            if min(ar, br) - max(al, bl) > 0.5 and min(ab, bb) - max(at, bt) > 0.5:
                pairs.append((a, b))
    return pairs


def probe(browser: str, page: Path, work: Path) -> dict[str, Any]:
    source = page.read_text(encoding="utf-8")
    assert source.count("</body>") == 1
    probed = work / "probed.html"
    probed.write_text(source.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={work / 'chromium-profile'}", "--window-size=1280,1000",
         "--dump-dom", probed.as_uri()],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    found = re.search(r'<pre id="probe-result">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, f"the probe did not run (exit {done.returncode}): {done.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


def test_the_page_renders_every_fact_arrow_and_marker_in_chromium(
    rendered: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium binary found (apt-get install -y chromium, or set LASTKNOWN_CHROMIUM)")
    page, ids = rendered
    name = {fact_id: key for key, fact_id in ids.items()}
    seen = probe(browser, page, tmp_path)

    assert set(seen["facts"]) == set(ids.values())
    for fact_id, fact in seen["facts"].items():
        width, height = fact["bar"]
        assert width >= 5 and height >= 10, (name[fact_id], fact["bar"])
        assert fact["visible"] and fact["fill"] not in ("none", "rgba(0, 0, 0, 0)"), name[fact_id]
        assert fact["label"][0] > 0 and fact["label"][1] > 0, name[fact_id]
    statuses = {name[i]: f["classes"].split()[1] for i, f in seen["facts"].items()}
    assert statuses == {"portland": "retired", "bakery": "retired", "train": "expired", "dog": "expired",
                        "rain": "current", "script": "current", "desert": "current", "cooking": "current",
                        "barista": "current", "dislikes": "disputed", "anxious": "expired",
                        "relieved": "expired", "excited": "current", "cat": "current", "puppy": "current"}
    # The bars of two different statuses are drawn in different colours.
    assert seen["facts"][ids["portland"]]["fill"] != seen["facts"][ids["rain"]]["fill"]

    for fact_id, fact in seen["facts"].items():
        inferred = name[fact_id] in INFERRED
        assert ("inferred" in fact["classes"].split()) is inferred, name[fact_id]
        assert (fact["dash"] != "none") is inferred, (name[fact_id], fact["dash"])
        assert fact["labelText"].endswith("· inferred") is inferred, fact["labelText"]
        assert ("inferred (implied, never said)" in fact["title"]) is inferred

    arrows = {(a["kind"], name[a["from"]], name[a["to"]]) for a in seen["arrows"]}
    assert len(seen["arrows"]) == len(EXPECTED_ARROWS) and arrows == EXPECTED_ARROWS
    for arrow in seen["arrows"]:
        assert arrow["length"] > 10, arrow
        assert arrow["labelBox"][0] > 0, arrow
    by_kind = {a["kind"]: a for a in seen["arrows"]}
    assert by_kind["contradicts"]["dash"] != "none" and by_kind["supersedes"]["dash"] == "none"
    portland = next(a for a in seen["arrows"] if a["to"] == ids["portland"])
    # Judged by the model for a new fact only implied: the review queue lists it, and the page says so.
    assert portland["label"] == "retires · judged · awaiting review"
    assert "awaiting review" in portland["title"]
    assert "scorpions and dry heat imply a desert, not Portland" in portland["title"]
    assert "stage judged" in portland["title"] and "session s-sep" in portland["title"]
    assert seen["tableRows"] == len(EXPECTED_ARROWS)

    # Reviews: the accepted retirement says so; the rejected one is a dashed arrow of its own, and the cat's bar
    # runs on to the right end with the current facts (the puppy's, which starts later, is shorter).
    bakery = next(a for a in seen["arrows"] if a["to"] == ids["bakery"])
    assert bakery["label"] == "retires · replaced · accepted"
    assert "accepted this retirement on review 2024-11-22T08:30+00:00" in bakery["title"]
    assert "accepted" in bakery["classes"].split() and "awaiting-review" not in bakery["classes"].split()
    [rejected] = [a for a in seen["arrows"] if a["kind"] == "rejected"]
    assert (rejected["from"], rejected["to"], rejected["label"]) == (ids["puppy"], ids["cat"], "retirement rejected")
    assert rejected["dash"] != "none" and rejected["stroke"] != portland["stroke"]
    assert "rejected this retirement on review 2024-11-23T19:05+00:00" in rejected["title"]
    cat, puppy, barista = (seen["facts"][ids[k]]["bar"][0] for k in ("cat", "puppy", "barista"))
    assert cat > puppy and abs(puppy - barista) < 1  # the puppy and the barista start on one day, both still true
    assert "awaiting review" not in {a["label"] for a in seen["arrows"] if a["to"] != ids["portland"]}

    # The undone sessions: a cross on each one's day, with a line down the lanes, and a row each; no words.
    marks = {u["session"]: u for u in seen["undone"]}
    assert set(marks) == {"s-jul", "s-aug"} and seen["undoneRows"] == 2
    assert (marks["s-jul"]["date"], marks["s-jul"]["cascadeOf"]) == ("2024-07-07", "")
    assert (marks["s-aug"]["date"], marks["s-aug"]["cascadeOf"]) == ("2024-08-11", "s-jul")
    for mark in marks.values():
        assert mark["cross"][0] >= 6 and mark["cross"][1] >= 6 and mark["line"][1] > 100, mark
        assert mark["stroke"] not in ("none", "rgba(0, 0, 0, 0)")
        assert "undone at 2024-11-24T07:45+00:00" in mark["title"]
    assert "by the cascade of session s-jul" in marks["s-aug"]["title"]
    assert "1 fact removed" in marks["s-jul"]["title"]
    # August's confirmation was of July's fact, which the same undo removed: it counts only its own turn.
    assert "0 facts removed, 0 restored, 0 confirmations" in marks["s-aug"]["title"]
    assert "1 message deleted" in marks["s-aug"]["title"]
    assert marks["s-jul"]["x"] < marks["s-aug"]["x"]
    tick_left = {label: left for label, left, _ in seen["ticks"]}
    assert tick_left["Jul 2024"] < marks["s-jul"]["x"] < tick_left["Sep 2024"]

    # The fact with a <script> tag shows it as text, and it never ran.
    assert seen["facts"][ids["script"]]["labelText"] == SCRIPT_TEXT
    assert SCRIPT_TOPIC in seen["laneNames"]
    assert seen["pwned"] is False and seen["scripts"] == 1  # only the probe
    assert seen["title"].startswith("Timeline of alice-")

    # A date axis with ticks in date order, a legend, no two texts of the chart on top of each other.
    labels = [label for label, _, _ in seen["ticks"]]
    assert len(labels) >= 4 and set(labels) <= {f"{month} 2024" for month in MONTHS}, labels
    assert [MONTHS.index(label.split()[0]) for label in labels] == sorted(MONTHS.index(x.split()[0]) for x in labels)
    assert all(width > 0 for _, _, width in seen["ticks"])
    lefts = [left for _, left, _ in seen["ticks"]]
    assert lefts == sorted(lefts)
    assert seen["svg"][0] > 600 and seen["legend"][1] > 0
    assert overlapping(seen["texts"]) == []
    assert seen["resources"] == []


# ---------------------------------------------------------------------------------------------- the file itself


def test_the_page_is_self_contained_and_escapes_user_text(rendered: tuple[Path, dict[str, str]]) -> None:
    page, ids = rendered
    source = page.read_text(encoding="utf-8")
    assert not re.search(r"https?:", source), "the page must not reference anything on the network"
    assert not re.search(r"\b(src|href)=", source)
    assert "@import" not in source and "@font-face" not in source
    assert "<script" not in source
    assert html.escape(SCRIPT_TEXT) in source and html.escape(SCRIPT_TOPIC) in source
    assert UNDONE_WORDS not in source and "tuba" not in source  # an undone session leaves no words
    for fact_id in ids.values():
        assert f'data-fact-id="{fact_id}"' in source


def test_json_output_names_the_file_and_an_unknown_user_fails(tmp_path: Path) -> None:
    store, user = tmp_path / "memory.json", new_user("bob")
    write_scenario(store, user)
    env, target = cli_env(tmp_path), tmp_path / "bob.html"
    done = run(env, "timeline", "--user", user, "--store", f"embedded:{store}", "--html", str(target), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"user": user, "html": str(target)}
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

    missing = run(env, "timeline", "--user", "nobody", "--store", f"embedded:{store}",
                  "--html", str(tmp_path / "x.html"))
    assert missing.returncode == 6 and missing.stdout == ""
    assert not (tmp_path / "x.html").exists()

    unwritable = run(env, "timeline", "--user", user, "--store", f"embedded:{store}",
                     "--html", str(tmp_path / "no-such-dir" / "t.html"))
    assert unwritable.returncode == 1 and unwritable.stderr.startswith("lastknown: error: cannot write")


def test_an_empty_history_renders_a_page_that_says_so() -> None:
    page = render_timeline_html("carol <x>", [], [])
    assert "No facts are remembered about carol &lt;x&gt;." in page
    assert "<svg" not in page and "carol <x>" not in page


def test_the_same_memory_renders_the_same_page(tmp_path: Path) -> None:
    store_path, user = tmp_path / "memory.json", new_user("dave")
    write_scenario(store_path, user)
    store = EmbeddedStore(store_path)
    try:
        history, events = store.history(user), store.timeline(user)
    finally:
        store.close()
    first = render_timeline_html(user, history, events)
    assert first == render_timeline_html(user, list(reversed(history)), list(reversed(events)))


def test_a_dream_is_listed_change_by_change() -> None:
    """A dream's merge (with the text kept), resolution, classification and expiry each get a row of the Dreams table;
    a conversation's own expiry (a newer moment) does not."""
    from lastknown_graph import MemoryReader

    store, user = EmbeddedStore(None), new_user("dream")
    store.ensure_schema(len(vec(1)))
    first = SessionBuilder(user, "s-1", date(2024, 1, 5))
    first.fact("Lives in Lyon", "location", vec(1))
    first.fact("Is vegan", "diet", vec(2))
    train = first.fact("Is on the train", "current_activity", vec(3), kind=FactKind.MOMENT)
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 3, 1))
    second.fact("Lives in Porto", "home_location", vec(4))
    second.fact("Follows a strict vegan diet", "diet", vec(5), inferred=True)
    bus = second.fact("Is on the bus", "current_activity", vec(6), kind=FactKind.MOMENT)
    second.expire(train, bus)  # the conversation's expiry: no dream's
    store.apply(second.build())
    third = SessionBuilder(user, "s-3", date(2024, 4, 2))
    third.fact("Is at the dentist", "current_activity", vec(7), kind=FactKind.MOMENT)
    store.apply(third.build())
    reader = MemoryReader(store, user)
    plan = reader.dream()
    assert plan.session_id is not None

    page = render_timeline_html(user, reader.history(), reader.timeline())

    table = page.split("<h2>Dreams</h2>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr class="dream-change"[^>]*>(.*?)</tr>', table)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    assert sorted((c[2], html.unescape(c[3]), html.unescape(c[4])) for c in cells) == [
        ("classified", "Lives in Lyon", ""), ("expired", "Is on the bus", ""),
        ("merged", "Follows a strict vegan diet", "Is vegan"), ("resolved", "Lives in Lyon", "Lives in Porto")]
    assert {c[1] for c in cells} == {plan.session_id}


def test_a_dream_shows_what_its_validator_refused_struck_through_with_the_reason() -> None:
    from lastknown_graph import MemoryReader
    from lastknown_graph.cli.render import timeline_text
    from lastknown_graph.domain.dream import DreamPlan, DreamProposal, ProposalKind, ProposedBy
    from lastknown_graph.domain.models import Fact
    from lastknown_graph.pipeline.dream import plan_dream

    store, user = EmbeddedStore(None), new_user("dream")
    store.ensure_schema(len(vec(1)))
    first = SessionBuilder(user, "s-1", date(2024, 1, 5))
    first.fact("Lives in Lyon", "home_location", vec(1))
    first.fact("Kiwi learned to whistle", "other", vec(2))
    first.fact("Has a parrot named Kiwi", "pet", vec(3))
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 3, 1))
    second.fact("Lives in Porto", "home_location", vec(4))
    store.apply(second.build())
    ids = {f.text: f.id for f in store.current_facts(user)}
    trap = DreamProposal(kind=ProposalKind.MERGE, fact_ids=(ids["Kiwi learned to whistle"],),
                         keep_fact_id=ids["Has a parrot named Kiwi"], proposed_by=ProposedBy.MODEL, reason="same")

    class ProposingReader(MemoryReader):
        """A reader whose dream also weighs a model's proposal, as a ``Memory``'s does."""

        def _dream_plan_of(self, current: list[Fact]) -> DreamPlan:
            return plan_dream(self.user, current, self.attributes, model_proposals=[trap])

    reader = ProposingReader(store, user)
    plan = reader.dream()
    [refused] = [d for d in plan.decisions if d.verdict.value == "reject"]
    assert plan.session_id is not None  # the later home resolved the earlier one

    page = render_timeline_html(user, reader.history(), reader.timeline())

    table = page.split("<h2>Dreams</h2>", 1)[1].split("</table>", 1)[0]
    [row] = re.findall(r'<tr class="dream-refused"[^>]*>(.*?)</tr>', table)
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert cells[2:] == ["refused merge", "<s>Kiwi learned to whistle</s>", "<s>Has a parrot named Kiwi</s>",
                         refused.reason]
    assert (f"~~Kiwi learned to whistle~~  <- ~~Has a parrot named Kiwi~~  (a merge the validator refused: "
            f"{refused.reason})") in timeline_text(reader.timeline())
