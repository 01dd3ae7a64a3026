"""Replay the answer step on run 1's stores at HEAD: raw (ungrounded) answer and the quote call, for every question."""
import json, sys, time
from pathlib import Path
from bench.qa.dataset import load_users
from lastknown_graph.llm import LLM
from lastknown_graph.embedders.local import LocalEmbedder
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.answer_context import AnswerSettings
from lastknown_graph.prompts.answer_quote import quote_messages
from lastknown_graph.llm import UsageMeter

D = Path('/work/main/bench/results/qa/qwen2.5-coder-1.5b-grounded/stores')
out = Path(sys.argv[1]); system = sys.argv[2]
done = set()
if out.exists():
    done = {(json.loads(l)['user'], json.loads(l)['question_id']) for l in out.open()}
llm = LLM(base_url='http://127.0.0.1:8081/v1', model='qwen2.5-coder-1.5b', api_key=None, timeout_s=900, max_retries=2, temperature=0.0)
emb = LocalEmbedder()
for user in load_users():
    prefix = '' if system == 'memory' else 'memory-dream-'
    mem = Memory.load(D / f'{prefix}{user.id}-r1.json', llm, emb); mem.answer_settings = AnswerSettings(min_similarity=float(sys.argv[3]))
    for q in user.questions:
        if (user.id, q.id) in done: continue
        t = time.time()
        a = mem.ask(q.question, max_tokens=128, grounded=False)
        quote = llm.text(quote_messages(a.context, q.question), purpose='answer_quote', meter=UsageMeter(), max_tokens=80)
        rec = dict(user=user.id, question_id=q.id, type=q.type, question=q.question, raw=a.text, replaced=a.replaced,
                   notes=list(a.premise_notes), context=a.context, quote=quote, seconds=time.time() - t)
        with out.open('a') as f: f.write(json.dumps(rec) + '\n')
        print(user.id, q.id, round(time.time() - t, 1), a.text[:80].replace('\n', ' '), '| Q:', quote[:60].replace('\n',' '), flush=True)
