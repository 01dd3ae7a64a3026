"""The name check replayed with no call on recorded answers (as run on 2026-12-06, after a97aec5's rule)."""
import json, collections
from pathlib import Path
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from bench.qa.records import read_answers
from lastknown_graph import LocalEmbedder, Memory
from lastknown_graph.testing import ScriptedModel
from lastknown_graph.pipeline.answer_context import answer_context, AnswerSettings
from lastknown_graph.pipeline.answer_checks import names_no_one_the_memory_holds, UNKNOWN_ANSWER, asks_two_things, _ASKS_FOR_A_VALUE, _NAME_WORDS
qa = Path("bench/results/qa/qwen2.5-coder-1.5b-closest"); e = LocalEmbedder()
users = {u.id: u for u in load_users()}
for system in ("memory", "memory-dream"):
    recs = read_answers(qa, system); c = collections.Counter()
    for (uid, run, qid), r in recs.items():
        q = [q for q in users[uid].questions if q.id == qid][0]
        if asks_two_things(q.question) or r.quote is None: continue
        ans = r.answer or ""
        if ans == UNKNOWN_ANSWER: continue
        c["checked"] += 1
        isname = bool(_ASKS_FOR_A_VALUE.match(q.question) and _NAME_WORDS.search(q.question))
        flagged = names_no_one_the_memory_holds(q.question, ans, r.context or "")
        before = grade(q, ans).passed; after = grade(q, UNKNOWN_ANSWER).passed if flagged else before
        c["name_q"] += isname; c["name_q_right"] += isname and before
        c["flagged"] += flagged; c["lost"] += before and not after; c["gained"] += after and not before
        if flagged: print(system, run, uid, qid, q.type, before, "->", after, "|", ans[:80])
    print(system, dict(c))
sent = {json.loads(l)["key"]: json.loads(l)["answer"] for l in open("/tmp/var/sent.jsonl")}
tot = collections.Counter()
for key, ans in sent.items():
    system, run, uid, qid, side = key.split("/")
    if side != "new" or not ans or ans == UNKNOWN_ANSWER: continue
    q = [q for q in users[uid].questions if q.id == qid][0]
    if asks_two_things(q.question): continue
    name = f"{uid}-r{run}.json" if system == "memory" else f"memory-dream-{uid}-r{run}.json"
    mem = Memory.load(qa/"stores"/name, ScriptedModel([]), e)
    [emb] = e.embed([q.question])
    ctx = answer_context(store=mem.store, user_id=mem.user, embedding=emb, history=mem.store.history(mem.user), settings=AnswerSettings())
    tot["checked"] += 1
    if names_no_one_the_memory_holds(q.question, ans, ctx):
        b = grade(q, ans).passed; a = grade(q, UNKNOWN_ANSWER).passed
        tot["flagged"] += 1; tot["lost"] += b and not a; tot["gained"] += a and not b
        print("replay", key, b, "->", a, "|", ans[:70])
print("replay", dict(tot))
