"""python -m bench.dream_replay_study.aged_out [--answer] (resumable; answers in
bench/results/answer-context/dream-aged-out-replay.jsonl).

The full everyday-questions run's stores (library 9a5c898), both memories, every user-run: each question's ask()
prompt (context and premise notes) is built at HEAD for both stores. Counted: how many differ. With --answer, each
distinct prompt is answered once (ask(grounded=True, max_tokens=128), as bench.qa asks) and graded (bench.qa.grading,
no judge); a prompt both memories build is one answer for both."""
import collections, hashlib, json, sys
from pathlib import Path
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from lastknown_graph import LocalEmbedder, Memory
from lastknown_graph.llm import LLM
from lastknown_graph.pipeline.answer_context import answer_context, AnswerSettings

answer = "--answer" in sys.argv
qa = Path("/work/main/bench/results/qa/qwen2.5-coder-1.5b-closest")
e = LocalEmbedder()
llm = LLM(base_url="http://127.0.0.1:8081/v1", model="qwen2.5-coder-1.5b", api_key="x", timeout_s=900, max_retries=2)
users = {u.id: u for u in load_users()}
outp = Path("/work/main/bench/results/answer-context/dream-aged-out-replay.jsonl")
done = {}
if outp.exists():
    for line in outp.open():
        row = json.loads(line)
        done[row["key"]] = row
out = outp.open("a") if answer else None
from lastknown_graph.llm import UsageMeter
tot = collections.Counter()
todo = []  # (differs, uid, run, question, {system: (memory, prompt)})
for uid in ("marta", "jonas", "keiko"):
    for run in (1, 2, 3):
        mems = {s: Memory.load(qa / "stores" / (f"{uid}-r{run}.json" if s == "memory" else f"memory-dream-{uid}-r{run}.json"), llm, e)
                for s in ("memory", "memory-dream")}
        hist = {s: m.store.history(m.user) for s, m in mems.items()}
        aged = {s: sum(1 for h in hist[s] if h.aged_out) for s in mems}
        same = 0
        for q in users[uid].questions:
            [emb] = e.embed([q.question])
            prompt = {s: (answer_context(store=m.store, user_id=m.user, embedding=emb, history=hist[s], attributes=m.attributes, settings=AnswerSettings()),
                          tuple(m._premise_notes(q.question, UsageMeter(), hist[s], emb))) for s, m in mems.items()}
            same += prompt["memory"] == prompt["memory-dream"]
            todo.append((prompt["memory"] != prompt["memory-dream"], uid, run, q, {s: (mems[s], prompt[s]) for s in mems}))
        print(uid, run, "aged-out moments", aged, "prompts the same", same, "of", len(users[uid].questions), flush=True)
        tot["same"] += same; tot["questions"] += len(users[uid].questions)
print("COUNTED", dict(tot), flush=True)
if answer:
    for pass_differs in (True, False):
        for differs, uid, run, q, sides in todo:
            if differs != pass_differs:
                continue
            passed = {}
            for s, (m, prompt) in sides.items():
                key = hashlib.sha256(json.dumps([q.question, prompt[0], list(prompt[1])]).encode()).hexdigest()[:16]
                if key not in done:
                    a = m.ask(q.question, grounded=True, max_tokens=128)
                    assert a.context == prompt[0] and tuple(a.premise_notes) == prompt[1]
                    done[key] = {"key": key, "user": uid, "run": run, "question": q.id, "type": q.type,
                                 "answer": a.text, "context": a.context, "notes": list(a.premise_notes)}
                    out.write(json.dumps(done[key]) + "\n"); out.flush()
                passed[s] = grade(q, done[key]["answer"] or "").passed
                tot[(s, "all")] += passed[s]; tot[(s, q.type)] += passed[s]
                tot[(s, "differs" if differs else "same")] += passed[s]
            if passed["memory"] != passed["memory-dream"]:
                print(uid, run, q.id, q.type, passed, flush=True)
        print("PASS", "differing" if pass_differs else "same", sorted(tot.items(), key=str), flush=True)
print("DONE", sorted(tot.items(), key=str), flush=True)
