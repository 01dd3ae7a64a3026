"""Run from the repository root: python -m bench.dream_replay_study.no_age_notes (no model call)."""
"""How many of the paired questions' contexts become the no-dream memory's when a moment a dream expired by age
(no later fact behind its end) gets no note."""
import collections
from pathlib import Path
from bench.qa.dataset import load_users
from lastknown_graph import LocalEmbedder, Memory
from lastknown_graph.llm import LLM
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.pipeline import answer_context as ac
from lastknown_graph.pipeline.answer_context import answer_context, AnswerSettings
qa = Path("/work/main/bench/results/qa/qwen2.5-coder-1.5b-closest")
e = LocalEmbedder(); llm = LLM(base_url="http://127.0.0.1:8081/v1", model="x", api_key="x")
users = {u.id: u for u in load_users()}
orig = ac.ended_notes
def variant(store, user_id, history, ids):
    kept = [h for h in history if not (h.fact.status is FactStatus.EXPIRED and not h.replaced_by)]
    return orig(store, user_id, kept, ids)
tot = collections.Counter()
for uid, run in (("marta", 2), ("marta", 3), ("jonas", 3), ("keiko", 3)):
    mems = {s: Memory.load(qa / "stores" / (f"{uid}-r{run}.json" if s == "memory" else f"memory-dream-{uid}-r{run}.json"), llm, e) for s in ("memory", "memory-dream")}
    hist = {s: m.store.history(m.user) for s, m in mems.items()}
    for q in users[uid].questions:
        [emb] = e.embed([q.question])
        args = {s: dict(store=m.store, user_id=m.user, embedding=emb, history=hist[s], settings=AnswerSettings()) for s, m in mems.items()}
        base = {s: answer_context(**a) for s, a in args.items()}
        if base["memory"] == base["memory-dream"]: continue
        ac.ended_notes = variant
        try: var = {s: answer_context(**a) for s, a in args.items()}
        finally: ac.ended_notes = orig
        tot["changed"] += 1
        tot["memory ctx changed by variant"] += var["memory"] != base["memory"]
        tot["dream ctx changed by variant"] += var["memory-dream"] != base["memory-dream"]
        tot["now equal"] += var["memory"] == var["memory-dream"]
        if var["memory-dream"] != base["memory-dream"] and var["memory"] != var["memory-dream"]:
            print("still differs, needs a call:", uid, run, q.id)
print(dict(tot))
