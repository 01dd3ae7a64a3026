import json, sys
from collections import Counter, defaultdict
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from lastknown_graph.pipeline.answer_checks import (answer_or_unknown, asks_two_things, quote_backs,
                                                    adds_nothing_the_memory_holds)
from lastknown_graph.memory import UNKNOWN_ANSWER
qmap = {q.id: q for u in load_users() for q in u.questions}
TYPES = ['single', 'updated', 'history', 'across', 'never_said']

def flows(r):
    raw, ctx, q, quote = r['raw'], r['context'], r['question'], r['quote']
    checked = answer_or_unknown(raw, ctx)
    out = {'raw': raw, 'copycheck': checked}
    out['addcheck'] = UNKNOWN_ANSWER if checked == raw and adds_nothing_the_memory_holds(q, raw, ctx) else checked
    if asks_two_things(q):
        out['grounded'] = checked
    elif not quote_backs(quote, ctx):
        out['grounded'] = UNKNOWN_ANSWER
    else:
        out['grounded'] = out['addcheck']
    return out

def table(path, show=None):
    rows = [json.loads(l) for l in open(path)]
    score = defaultdict(Counter); n = Counter(); byuser = defaultdict(Counter)
    for r in rows:
        q = qmap[r['question_id']]; n[q.type] += 1
        for name, ans in flows(r).items():
            ok = grade(q, ans).passed
            score[name][q.type] += ok; byuser[name][r['user']] += ok
            if show == name and not ok:
                print(r['question_id'], q.question, '->', ans[:100].replace('\n', ' '))
    print(path, len(rows), 'answers')
    for name, c in score.items():
        print(f"  {name:10s} {sum(c.values()):3d}/{sum(n.values())}  " + "  ".join(f"{t[:6]} {c[t]}/{n[t]}" for t in TYPES) + "  " + str(dict(byuser[name])))
    return rows

for p in sys.argv[1:]:
    if p.startswith('show='): continue
    table(p, show=next((a[5:] for a in sys.argv if a.startswith('show=')), None))
