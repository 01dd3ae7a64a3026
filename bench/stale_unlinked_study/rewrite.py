"""STALE's unlinked changes re-read: each scenario's M_old, then its M_new, written alone (no fillers) into a fresh
in-memory memory with the real model; what each write added, refused and retired, one JSON line per scenario.

    python -m bench.stale_unlinked_study.rewrite UID8,UID8,... bench/results/stale-unlinked-diagnosis.jsonl
"""
import json
import sys

from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore

SKELETONS = "../shared/data/stale/skeletons-dev.jsonl"


def main() -> None:
    uids, out_path = sys.argv[1].split(","), sys.argv[2]
    skeletons = {json.loads(line)["uid"][:8]: json.loads(line) for line in open(SKELETONS)}
    llm = LLM(base_url="http://127.0.0.1:8081/v1", model="qwen2.5-coder-1.5b", api_key="none", timeout_s=600,
              max_retries=2)
    embedder = LocalEmbedder()
    with open(out_path, "a") as out:
        for uid in uids:
            s = skeletons[uid]
            days = s["timestamps"]
            old_index, new_index = s["relevant_session_index"]
            memory = Memory(llm, embedder, user="u-" + uid, store=EmbeddedStore(None))
            record = {"uid": uid, "type": s["type"], "M_old": s["M_old"], "M_new": s["M_new"], "expl": s["explanation"]}
            for name, message, day in (("old", s["M_old"], days[old_index][:10]), ("new", s["M_new"], days[new_index][:10])):
                report = memory.write([message], day, name)
                record[name] = {
                    "added": [(a.text, a.topic, a.kind, a.inferred) for a in report.added],
                    "retired": [x.model_dump(mode="json") for x in report.retired],
                    "kept": [x.model_dump(mode="json") for x in report.kept],
                    "confirmed": [x.model_dump(mode="json") for x in report.confirmed],
                    "rejected": [(x.text, x.reason) for x in report.rejected],
                    "calls": report.usage.model_dump(mode="json"),
                }
            out.write(json.dumps(record) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
