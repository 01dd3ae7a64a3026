"""Answer-prompt variants for messages with premise notes, replayed on recorded contexts (STALE 30 at 9cb83bd, QA r1-r3)."""
import json, sys, re, collections
from pathlib import Path
from bench.stale.records import ScenarioResult
from bench.stale import deterministic as d
from lastknown_graph.llm import LLM
from lastknown_graph.prompts import answer as ap

def head(ctx, notes, q):
    return ap.answer_messages(ctx, notes, q)

YN = " A yes-or-no question gets Yes or No first, then one reason."
def yn(ctx, notes, q):
    m = ap.answer_messages(ctx, notes, q)
    if notes: m[0]["content"] += "\n" + YN.strip()
    return m

def plain_note(n):
    # 'The message may assume "X", which is no longer true (since D: Y).' -> '"X" is no longer true (since D: Y).'
    return re.sub(r'^The message may assume (".*"), which is no longer true', r'\1 is no longer true', n)

def user(ctx, notes, q):
    m = ap.answer_messages(ctx, [], q)
    if notes:
        m[1]["content"] = q + "\n\n(Note from the memory: " + " ".join(plain_note(n) for n in notes) + " Say briefly what changed, then answer for what is true now.)"
    return m

def useryn(ctx, notes, q):
    m = user(ctx, notes, q)
    if notes: m[1]["content"] = m[1]["content"][:-2] + YN.rstrip() + ")"
    return m

VARIANTS = {"head": head, "yn": yn, "user": user, "useryn": useryn}
name = sys.argv[1]; variant = VARIANTS[name]
llm = LLM(base_url="http://127.0.0.1:8081/v1", model="qwen2.5-coder-1.5b", api_key="x", timeout_s=900)
outp = Path(f"/tmp/var/{name}.jsonl")
done = {json.loads(l)["key"]: json.loads(l) for l in outp.open()} if outp.exists() else {}
out = outp.open("a")
def answer(key, ctx, notes, q, max_tokens):
    if key in done: return done[key]["answer"]
    text = llm.text(variant(ctx, notes, q), purpose="answer", max_tokens=max_tokens)
    out.write(json.dumps({"key": key, "answer": text}) + "\n"); out.flush()
    return text
# STALE
rows = [ScenarioResult.model_validate_json(l) for l in open("/work/main/bench/results/stale/qwen2.5-coder-1.5b-attr30/memory.jsonl")]
b = collections.Counter(); a = collections.Counter()
for r in rows:
    if r.status != "ok" or not any(p.premise_notes for p in r.probes.values()): continue
    probes = dict(r.probes)
    for pn, p in r.probes.items():
        if p.premise_notes:
            probes[pn] = p.model_copy(update={"answer": answer(f"stale/{r.uid}/{pn}", p.context, list(p.premise_notes), p.question, 64)})
    new = r.model_copy(update={"probes": probes})
    b["scen"] += 1; b["sr"] += d.sr_passed(r); b["keeps"] += d.keeps_new_passed(r); b["both"] += d.sr_passed(r) and d.keeps_new_passed(r)
    a["sr"] += d.sr_passed(new); a["keeps"] += d.keeps_new_passed(new); a["both"] += d.sr_passed(new) and d.keeps_new_passed(new)
print(name, "STALE scenarios with notes", b["scen"], "recorded", dict(b), "variant", dict(a), flush=True)
# QA
from bench.qa.dataset import load_users
from bench.qa.grading import grade
from bench.qa.records import read_answers
from lastknown_graph import EmbeddedStore, LocalEmbedder
from lastknown_graph.domain.models import UserExport
from lastknown_graph.llm.usage import UsageMeter
from lastknown_graph.pipeline.answer_checks import (UNKNOWN_ANSWER, adds_nothing_the_memory_holds, answer_or_unknown, asks_two_things, quote_backs)
from lastknown_graph.pipeline.premise import PremiseSettings, premise_notes
from lastknown_graph.testing import ScriptedModel
qa = Path("/work/main/bench/results/qa/qwen2.5-coder-1.5b-closest")
e = LocalEmbedder(); recs = read_answers(qa, "memory"); tally = collections.Counter()
for run in (1, 2, 3):
    for u in load_users():
        ex = UserExport.model_validate_json((qa / "stores" / f"{u.id}-r{run}.json").read_text())
        st = EmbeddedStore(None); st.ensure_schema(e.dimension); st.import_user(ex)
        for q in u.questions:
            notes = premise_notes(llm=ScriptedModel([]), embedder=e, store=st, user_id=ex.user_id, message=q.question, settings=PremiseSettings(), meter=UsageMeter())
            if not notes: continue
            r = recs[(u.id, run, q.id)]
            before = grade(q, r.answer or "").passed
            grounded = not asks_two_things(q.question)
            if grounded and not quote_backs(r.quote or "", r.context or ""):
                after_text = r.answer
            else:
                written = answer(f"qa/{run}/{u.id}/{q.id}", r.context, list(notes), q.question, 128)
                after_text = answer_or_unknown(written, r.context)
                if grounded and adds_nothing_the_memory_holds(q.question, written, r.context):
                    after_text = UNKNOWN_ANSWER
            after = grade(q, after_text or "").passed
            tally["n"] += 1; tally["before"] += before; tally["after"] += after
            if before != after: print(name, "QA moved", run, u.id, q.id, q.type, before, "->", after, "|", (after_text or "")[:90], flush=True)
print(name, "QA with notes", dict(tally), flush=True)
