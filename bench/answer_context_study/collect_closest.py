"""Variant W: the user's closest sentences first-class (as naive RAG, with the no-longer-true notes), the 5 current
facts closest to the question, a short prompt. Raw answer and quote per question, on run 1's stores at HEAD."""
import json, sys, time
from pathlib import Path
from bench.qa.dataset import load_users
from lastknown_graph.llm import LLM, UsageMeter
from lastknown_graph.embedders.local import LocalEmbedder
from lastknown_graph.memory import Memory
from lastknown_graph.prompts.answer_quote import quote_messages
from lastknown_graph.pipeline.user_words import UserWordsSettings, closest_sentences, ended_notes
from lastknown_graph.pipeline.context import _fact_line

SYSTEM = ("You are a helpful assistant with a memory of the user. Below is what the memory holds as true about the "
          "user now, and the user's own earlier messages most related to this request, with their dates; a note in "
          "brackets says what stopped being true. A later message replaces an earlier one about the same thing. "
          "Answer the user's request from them, briefly. If they do not say what the request asks about the user, "
          "say you do not know.")
D = Path('/work/main/bench/results/qa/qwen2.5-coder-1.5b-grounded/stores')
out = Path(sys.argv[1]); nfacts = int(sys.argv[2]); nsent = int(sys.argv[3])
done = set()
if out.exists():
    done = {(json.loads(l)['user'], json.loads(l)['question_id']) for l in out.open()}
llm = LLM(base_url='http://127.0.0.1:8081/v1', model='qwen2.5-coder-1.5b', api_key=None, timeout_s=900, max_retries=2, temperature=0.0)
emb = LocalEmbedder()
settings = UserWordsSettings(sentences=nsent, min_similarity=0.0)
for user in load_users():
    mem = Memory.load(D / f'{user.id}-r1.json', llm, emb)
    store, uid = mem.store, mem.user
    for q in user.questions:
        if (user.id, q.id) in done: continue
        t = time.time()
        history = store.history(uid)
        [e] = emb.embed([q.question])
        facts = [s.fact for s in store.similar_facts(uid, e, nfacts) if s.similarity >= 0.2]
        facts.sort(key=lambda f: f.valid_from, reverse=True)
        said = closest_sentences(store=store, user_id=uid, embedding=e, settings=settings, quoted=set())
        notes = ended_notes(store, uid, history, {s.message_id for s in said})
        parts = []
        if facts:
            parts.append("What is true about the user now:\n" + "\n".join(_fact_line(f) for f in facts))
        lines = ["The user's earlier messages most related to this request (oldest first):"]
        for s in said:
            marks = "".join(f" [{n}]" for n in notes.get(s.message_id, ()))
            lines.append(f'- [{s.day.isoformat()}] "{s.text}"{marks}')
        parts.append("\n".join(lines))
        context = "\n\n".join(parts)
        raw = llm.text([{"role": "system", "content": f"{SYSTEM}\n\n{context}"}, {"role": "user", "content": q.question}],
                       purpose='answer', meter=UsageMeter(), max_tokens=128)
        quote = llm.text(quote_messages(context, q.question), purpose='answer_quote', meter=UsageMeter(), max_tokens=80)
        rec = dict(user=user.id, question_id=q.id, type=q.type, question=q.question, raw=raw, context=context,
                   quote=quote, seconds=time.time() - t)
        with out.open('a') as f: f.write(json.dumps(rec) + '\n')
        print(user.id, q.id, round(time.time() - t, 1), raw[:80].replace('\n', ' '), '| Q:', quote[:60].replace('\n',' '), flush=True)
