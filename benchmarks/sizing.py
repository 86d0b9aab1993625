"""What 1,000 memories cost a deployment, measured in a real LangBot 4.11.2 (the e2e stack).

    python -m benchmarks.sizing [--memories 1000] [--warmup 200] [--batch 250] [--out s.json]
    LTM_E2E_DB=postgresql LTM_E2E_VDB=seekdb python -m benchmarks.sizing   # on another backend

One session's chat first gets ``--warmup`` memories and two turns (so that one-time costs, lazy imports
and the first heap growth, are not counted), then ``--memories`` more through the host's knowledge-base
file flow (upload, add, the engine's ``ingest``; ``--batch`` episodes per document) and two more chat
turns in that session (auto-recall rebuilds the scope's recall index; the snapshot is written in the
background 2 s after the scope's last write and after a served turn). Measured before and after the
second round, the difference divided by the number of memories and scaled to 1,000:

- **plugin storage**: the plugin's rows in LangBot's ``binary_storages`` table (plugin storage): the
  bytes of keys and values, and the row count;
- **LangBot database on disk**: ``pg_total_relation_size('binary_storages')`` on PostgreSQL, the file
  size of ``langbot.db`` on SQLite;
- **vector store on disk**: LangBot's embedded vector store folder (``data/chroma``, ``data/seekdb``,
  ``data/milvus.db``);
- **plugin RSS**: the plugin process's resident memory (``VmRSS``): the recall index plus whatever the
  ingest and the turns left on the heap (the index alone: ``benchmarks.latency``'s index memory).

The texts are synthetic first-person statements of 60-110 characters, MiniLM (384-d) embeddings from
the stack's stand-in model server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

from e2e.stack import WEBCHAT_BOT_UUID, ChatSession, Stack

from . import git_commit

log = logging.getLogger("benchmarks.sizing")

SUBJECTS = ["my sister", "my landlord", "our team lead", "the neighbour", "my cousin", "my dentist", "the coach"]
VERBS = ["prefers", "keeps", "booked", "borrowed", "painted", "ordered", "forgot", "repaired"]
OBJECTS = ["a teal bicycle", "the attic key", "two concert tickets", "a cast-iron pan", "the blue notebook"]
PLACES = ["in Lisbon", "near the station", "at the office", "by the river", "in the garden shed", "on Fridays"]


def statements(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        out.append(
            f"I noted that {rnd.choice(SUBJECTS)} {rnd.choice(VERBS)} {rnd.choice(OBJECTS)} "
            f"{rnd.choice(PLACES)} (item {i}, week {rnd.randint(1, 52)})."
        )
    return out


def dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(stack: Stack) -> dict[str, int]:
    owner = stack.plugin.plugin_id
    rows = stack.db_query(
        "SELECT count(*), coalesce(sum(length(value) + length(unique_key) + length(key)), 0) "
        f"FROM binary_storages WHERE owner LIKE '%{owner.split('/')[-1]}%'"
    )
    data = stack.langbot_data_dir
    if stack.backends.db == "postgresql":
        on_disk = int(stack.db_query("SELECT pg_total_relation_size('binary_storages')")[0][0])
    else:
        on_disk = (data / "langbot.db").stat().st_size
    vdb_path = {"chroma": data / "chroma", "seekdb": data / "seekdb", "milvus": data / "milvus.db"}[stack.backends.vdb]
    proc = stack.processes.get(f"plugin:{owner}")
    return {
        "plugin_storage_rows": int(rows[0][0]),
        "plugin_storage_bytes": int(rows[0][1]),
        "langbot_db_bytes_on_disk": on_disk,
        "vector_store_bytes_on_disk": dir_bytes(vdb_path),
        "plugin_rss_bytes": rss_bytes(proc.pid) if proc and proc.pid else 0,
    }


def add_and_ask(stack: Stack, chat: ChatSession, texts: list[str], batch: int, tag: str) -> float:
    """Ingest ``texts`` into ``chat``'s scope in documents of ``batch``, then two turns; return the ingest time."""
    t0 = time.monotonic()
    for start in range(0, len(texts), batch):
        doc = {
            "bot_uuid": WEBCHAT_BOT_UUID,
            "episodes": [
                {"session_name": chat.session_name, "sender_id": chat.sender_id, "content": text}
                for text in texts[start : start + batch]
            ],
        }
        row = stack.kb_add_document(json.dumps(doc).encode(), filename=f"sizing-{tag}-{start}.json", timeout=600)
        if row.get("status") != "completed":
            raise RuntimeError(f"ingest of batch {tag}/{start} did not complete: {row}")
    seconds = time.monotonic() - t0
    for question in ("Who keeps the attic key?", "What did my sister book?"):
        chat.send(question)
        time.sleep(4)  # the snapshot write follows a served turn
    return seconds


def run(memories: int, batch: int, warmup: int) -> dict[str, Any]:
    texts = statements(warmup + memories)
    with Stack() as stack, stack.connect() as chat:
        chat.send("Hello, this is the first turn.")
        if warmup:
            add_and_ask(stack, chat, texts[:warmup], batch, "warmup")
        before = measure(stack)
        ingest_s = add_and_ask(stack, chat, texts[warmup:], batch, "measured")
        after = measure(stack)
        per_1000 = {k: round((after[k] - before[k]) * 1000 / memories) for k in before}
        return {
            "memories": memories,
            "warmup": warmup,
            "batch": batch,
            "backends": {"database": stack.backends.db, "vdb": stack.backends.vdb},
            "ingest_seconds": round(ingest_s, 1),
            "before": before,
            "after": after,
            "per_1000": per_1000,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "load_average": os.getloadavg(),
            **git_commit(),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    result = run(args.memories, args.batch, args.warmup)
    mib = 1024 * 1024
    p = result["per_1000"]
    sys.stdout.write(
        f"{result['backends']['database']}+{result['backends']['vdb']}: {args.memories} memories "
        f"in {result['ingest_seconds']} s; per 1,000 memories: "
        f"plugin storage {p['plugin_storage_bytes'] / mib:.2f} MiB "
        f"in {p['plugin_storage_rows']} rows (LangBot DB on disk {p['langbot_db_bytes_on_disk'] / mib:.2f} MiB), "
        f"vector store on disk {p['vector_store_bytes_on_disk'] / mib:.2f} MiB, "
        f"plugin RSS {p['plugin_rss_bytes'] / mib:.1f} MiB\n"
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
