"""QA paired: HEAD's notes (beside every sentence of a turn) against the notes beside their own sentence, on the
recorded stores of the memory and the dreaming memory (3 runs). Only questions whose context differs are asked;
HEAD's side reuses the recorded answer where HEAD's context is the recorded one."""
import json, sys, collections
sys.path.insert(0, "/tmp/var")
from oldnotes import use_old
from pathlib import Path
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from bench.qa.records import read_answers
from lastknown_graph import LocalEmbedder, Memory
from lastknown_graph.llm import LLM
from lastknown_graph.pipeline.answer_context import answer_context, AnswerSettings
qa = Path("/work/main/bench/results/qa/qwen2.5-coder-1.5b-closest")
systems = sys.argv[1:] or ["memory-dream", "memory"]
llm = LLM(base_url="http://127.0.0.1:8081/v1", model="qwen2.5-coder-1.5b", api_key="x", timeout_s=900)
e = LocalEmbedder()
outp = Path("/tmp/var/sent.jsonl")
done = {json.loads(l)["key"]: json.loads(l) for l in outp.open()} if outp.exists() else {}
out = outp.open("a")
def asked(key, mem, q, old):
    if key in done: return done[key]["answer"]
    use_old(old)
    try: text = mem.ask(q.question, grounded=True, max_tokens=128).text
    finally: use_old(False)
    out.write(json.dumps({"key": key, "answer": text}) + "\n"); out.flush()
    return text
for system in systems:
    recs = read_answers(qa, system); t = collections.Counter()
    for run in (1, 2, 3):
        for u in load_users():
            name = f"{u.id}-r{run}.json" if system == "memory" else f"memory-dream-{u.id}-r{run}.json"
            mem = Memory.load(qa / "stores" / name, llm, e)
            hist = mem.store.history(mem.user)
            for q in u.questions:
                r = recs[(u.id, run, q.id)]
                [emb] = e.embed([q.question])
                args = dict(store=mem.store, user_id=mem.user, embedding=emb, history=hist, settings=AnswerSettings())
                use_old(True); old = answer_context(**args); use_old(False); new = answer_context(**args)
                if old == new: continue
                key = f"{system}/{run}/{u.id}/{q.id}"
                old_text = r.answer if old == r.context else asked(key + "/old", mem, q, True)
                new_text = asked(key + "/new", mem, q, False)
                b, a = grade(q, old_text or "").passed, grade(q, new_text or "").passed
                t["changed"] += 1; t["old"] += b; t["new"] += a; t[(q.type, "old")] += b; t[(q.type, "new")] += a
                if b != a: print(system, run, u.id, q.id, q.type, b, "->", a, "| old:", (old_text or "")[:70], "| new:", (new_text or "")[:70], flush=True)
        print(system, "after run", run, dict(t), flush=True)
    print("DONE", system, dict(t), flush=True)
