"""HEAD's grounded flow on run 1's recorded (e4318df) answers: the add check applied to each written answer."""
import json, sys
from collections import Counter
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from lastknown_graph.pipeline.answer_checks import adds_nothing_the_memory_holds
from lastknown_graph.memory import UNKNOWN_ANSWER
qmap = {q.id: q for u in load_users() for q in u.questions}
users = set(sys.argv[1:]) or {'jonas', 'keiko', 'marta'}
c = Counter(); n = Counter(); rec = Counter()
for l in open('bench/results/qa/qwen2.5-coder-1.5b-grounded/' + 'memory.answers.jsonl'):
    r = json.loads(l)
    if r['run'] != 1 or r['user'] not in users: continue
    q = qmap[r['question_id']]; a = r['answer']
    rec[q.type] += grade(q, a).passed
    if r['quote'] is not None and a != UNKNOWN_ANSWER and adds_nothing_the_memory_holds(q.question, a, r['context']):
        a = UNKNOWN_ANSWER
    c[q.type] += grade(q, a).passed; n[q.type] += 1
print('recorded', sum(rec.values()), dict(rec)); print('HEAD-grounded', sum(c.values()), '/', sum(n.values()), dict(c))
