"""python -m bench.dream_replay_study.paired (resumable; the answers in bench/results/answer-context/dream-paired-replay.jsonl).

Paired QA stores (the two memories wrote the same facts; they differ by the dream only): every question whose
ask() context differs at HEAD is answered on both stores at HEAD (grounded, 128 tokens, as bench.qa), and graded."""
import collections, json
from pathlib import Path
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from lastknown_graph import LocalEmbedder, Memory
from lastknown_graph.llm import LLM
from lastknown_graph.pipeline.answer_context import answer_context, AnswerSettings
qa = Path("/work/main/bench/results/qa/qwen2.5-coder-1.5b-closest")
e = LocalEmbedder(); llm = LLM(base_url="http://127.0.0.1:8081/v1", model="qwen2.5-coder-1.5b", api_key="x", timeout_s=900, max_retries=2)
users = {u.id: u for u in load_users()}
outp = Path("bench/results/answer-context/dream-paired-replay.jsonl")
done = {json.loads(l)["key"]: json.loads(l) for l in outp.open()} if outp.exists() else {}
out = outp.open("a")
tot = collections.Counter()
for uid, run in (("marta", 2), ("marta", 3), ("jonas", 3), ("keiko", 3)):
    mems = {s: Memory.load(qa / "stores" / (f"{uid}-r{run}.json" if s == "memory" else f"memory-dream-{uid}-r{run}.json"), llm, e) for s in ("memory", "memory-dream")}
    hist = {s: m.store.history(m.user) for s, m in mems.items()}
    for q in users[uid].questions:
        [emb] = e.embed([q.question])
        ctx = {s: answer_context(store=m.store, user_id=m.user, embedding=emb, history=hist[s], settings=AnswerSettings()) for s, m in mems.items()}
        if ctx["memory"] == ctx["memory-dream"]:
            continue
        passed = {}
        for s, m in mems.items():
            key = f"{uid}/{run}/{q.id}/{s}"
            if key not in done:
                a = m.ask(q.question, grounded=True, max_tokens=128)
                done[key] = {"key": key, "answer": a.text, "context": a.context}
                out.write(json.dumps(done[key]) + "\n"); out.flush()
            passed[s] = grade(q, done[key]["answer"] or "").passed
        tot["changed"] += 1; tot["memory"] += passed["memory"]; tot["dream"] += passed["memory-dream"]
        tot[(q.type, "memory")] += passed["memory"]; tot[(q.type, "dream")] += passed["memory-dream"]
        if passed["memory"] != passed["memory-dream"]:
            print(uid, run, q.id, q.type, passed, "| mem:", done[f"{uid}/{run}/{q.id}/memory"]["answer"][:80], "| dream:", done[f"{uid}/{run}/{q.id}/memory-dream"]["answer"][:80], flush=True)
print("DONE", dict(tot), flush=True)
