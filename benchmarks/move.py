"""What moving memory costs: ``ltm-backup/1`` backup, restore and readback per 1,000 memories.

    python -m benchmarks.move [--memories 2000] [--chunk 200] [--out r.json]

A source installation (the plugin's numpy index, as a SQLite + Chroma LangBot's plugin sees it
through the service) is seeded with ``--memories`` memories over two chats (a private chat and a
group; seeded by a restore of a generated document, i.e. the same write engine and content gate
path as any restore, not one chat turn per memory); then the whole installation is backed up,
restored into a second one on Chroma under another knowledge base id in chunks of ``--chunk``
lines, and every record read back. Timed: backup, restore, verify; reported per 1,000 memories.
The LangBot e2e (``tests/e2e/test_move_e2e.py``) measures the same through the real host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ltm.adapters.chroma_index import ChromaIndex
from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.numpy_index import NumpyIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.audience import audience_of
from ltm.domain.models import Episode, content_hash, new_episode_id
from ltm.domain.scope import derive_scope
from ltm.domain.timefields import to_iso
from ltm.service import backup as bk
from ltm.service.memory_service import Actor, MemoryService

from . import git_commit

OPERATOR = Actor.console("benchmark")
BOT = "websocket-proxy-bot"
CHATS = ("person_websocket_alice", "group_websocketgroup")
CITIES = ("Lisbon", "Porto", "Kyoto", "Lagos", "Quito", "Hanoi", "Oslo", "Perth", "Tunis", "Lima")


def pier(chat: int, n: int) -> str:
    """The number only the n-th memory of a chat holds (the chat is its first digit)."""
    return f"{chat + 1}{n:05d}"


def fact(chat: int, n: int) -> str:
    """The n-th seeded memory of a chat: a number of its own, so each can be recalled by itself."""
    who = "I" if chat == 0 else "The team"
    return f"{who} noted item {n}: the {CITIES[n % len(CITIES)]} ferry leaves from pier {pier(chat, n)}"


def seed_document(kb: str, memories: int, bot: str = BOT, isolation: str = "session") -> list[str]:
    """A valid ``ltm-backup/1`` document of ``memories`` memories over the two chats (header, records,
    trailer): what a backup of such an installation holds, without its audit log."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    lines: list[str] = []
    for i in range(memories):
        chat = i % 2
        scope = derive_scope(
            session_name=CHATS[chat], bot_uuid=bot, isolation=isolation, collection=kb, sender_id="websocket_alice"
        )
        text = fact(chat, i // 2)
        ep = Episode(
            id=new_episode_id(),
            content=text,
            user_key=scope.user_key,
            scope_key=scope.scope_key,
            session_name=scope.session_name,
            bot_uuid=bot,
            sender_id="websocket_alice" if chat == 0 else f"websocket_member{i % 7}",
            tags=["seed"],
            timestamp=to_iso(start + timedelta(seconds=i)),
            claim_type="user_statement",
            confidence="stated",
            origin="import",
            content_hash=content_hash(text),
            audience=audience_of(scope),
        )
        lines.append(bk.record_line("episode", kb, scope.user_key, ep.id, asdict(ep)))
    shas = [json.loads(x)["sha"] for x in lines]
    header = {"format": bk.FORMAT, "created_at": to_iso(start), "kbs": [{"id": kb, "isolation": isolation}]}
    trailer = {"end": True, "counts": {"episode": memories, "kv": 0, "audit": 0}, "digest": bk.digest(shas)}
    return [bk.canonical(header), *lines, bk.canonical(trailer)]


async def restore_all(svc: MemoryService, lines: Sequence[str], kb_map: dict[str, str], chunk: int) -> dict[str, int]:
    head, body = lines[0], list(lines[1:-1])
    written = 0
    for i in range(0, len(body), chunk):
        r = await bk.restore(svc, OPERATOR, [head, *body[i : i + chunk]], kb_map)
        written += sum(r.written.values())
    return {"written": written}


async def verify_all(svc: MemoryService, lines: Sequence[str], kb_map: dict[str, str], chunk: int) -> dict[str, Any]:
    head, body = lines[0], list(lines[1:-1])
    verified: dict[str, int] = {}
    missing = differing = 0
    for i in range(0, len(body), chunk):
        r = await bk.restore(svc, OPERATOR, [head, *body[i : i + chunk]], kb_map, verify=True)
        for k, v in r.verified.items():
            verified[k] = verified.get(k, 0) + v
        missing += len(r.missing)
        differing += len(r.differing)
    return {"verified": verified, "missing": missing, "differing": differing}


def _service(vectors: Any) -> MemoryService:
    emb = HashingEmbedder()
    return MemoryService(kv=MemoryKeyValueStore(), vectors=vectors, embedder_for=lambda c, kb: emb)


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="ltm-move-"))
    try:
        src = _service(NumpyIndex())
        await src.register_kb("kb-source", {"embedding_model": "hash", "isolation": "session"})
        t = time.perf_counter()
        await restore_all(src, seed_document("kb-source", args.memories), {}, args.chunk)
        seed_s = time.perf_counter() - t
        t = time.perf_counter()
        lines = await bk.backup(src, OPERATOR)
        backup_s = time.perf_counter() - t
        dst = _service(ChromaIndex(str(root / "chroma")))
        await dst.register_kb("kb-target", {"embedding_model": "hash", "isolation": "session"})
        t = time.perf_counter()
        written = await restore_all(dst, lines, {}, args.chunk)
        restore_s = time.perf_counter() - t
        t = time.perf_counter()
        check = await verify_all(dst, lines, {}, args.chunk)
        verify_s = time.perf_counter() - t
    finally:
        shutil.rmtree(root, ignore_errors=True)
    per_k = 1000 / args.memories
    counts = json.loads(lines[-1])["counts"]
    results = {
        "memories": args.memories,
        "records": counts,
        "bytes": sum(len(x.encode()) + 1 for x in lines),
        "seed_s": round(seed_s, 3),
        "backup_s": round(backup_s, 3),
        "restore_s": round(restore_s, 3),
        "verify_s": round(verify_s, 3),
        "per_1000": {
            "backup_s": round(backup_s * per_k, 3),
            "restore_s": round(restore_s * per_k, 3),
            "verify_s": round(verify_s * per_k, 3),
            "move_s": round((backup_s + restore_s + verify_s) * per_k, 3),
        },
        **written,
        **check,
        "ok": check["missing"] == 0 and check["differing"] == 0 and check["verified"] == counts,
    }
    p = results["per_1000"]
    sys.stdout.write(
        f"{args.memories} memories ({results['bytes']} bytes, {counts}): backup {results['backup_s']} s, "
        f"restore {results['restore_s']} s, verify {results['verify_s']} s; per 1,000: backup {p['backup_s']} s, "
        f"restore {p['restore_s']} s, verify {p['verify_s']} s, move {p['move_s']} s; ok={results['ok']}\n"
    )
    return {
        "results": results,
        "config": vars(args) | {"embedder": "HashingEmbedder", "source": "numpy", "target": "chroma"},
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "created_at": to_iso(datetime.now(UTC)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.move", description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    result = asyncio.run(amain(args))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        sys.stdout.write(f"wrote {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
