"""The classes of the unlinked changes in bench/results/stale-unlinked-diagnosis.jsonl, by the attribute each
side was filed under. python -m bench.stale_unlinked_study.classify"""
import json, collections
from lastknown_graph.domain.attributes import AttributeTable
t = AttributeTable()
rows = [json.loads(l) for l in open('bench/results/stale-unlinked-diagnosis.jsonl')]
c = collections.Counter(); out = []
for r in rows:
    old = [a for a in r['old']['added'] if a[2] == 'state']
    oldm = [a for a in r['old']['added'] if a[2] == 'moment']
    new = r['new']['added']
    if r['new']['retired']:
        cls = 'linked in this rerun'
    elif not r['old']['added']:
        cls = 'A: the old statement gave no fact (' + (r['old']['rejected'][0][1] if r['old']['rejected'] else 'nothing') + ')'
    elif not old:
        cls = 'A2: the old statement stored as a moment, which no later state ends'
    else:
        oa = t.resolve(old[0][1])
        if not oa.one_valued:
            cls = f'B: the old state filed under a many-valued attribute ({oa.name})'
        else:
            na = [t.resolve(a[1]) for a in new]
            if any(a is oa or (a.family and a.family == oa.family) for a in na):
                cls = 'D: the new fact on the same attribute or family, not a change by the rules'
            else:
                cls = 'C: the new fact on another attribute (' + ', '.join(a.name for a in na) + f') than the old ({oa.name})'
    key = cls.split(':')[0] + (':other' if '(other)' in cls else '')
    c[key] += 1
    out.append((r['uid'], r['type'], cls, old or oldm, new))
for o in out: print(o[0], o[1], '|', o[2], '|', [x[:2] for x in o[3]], '->', [x[:2] for x in o[4]])
print(c)
