"""What all-or-nothing writes cost, on embedded Chroma: the plugin's multi-step verbs against the raw
backend calls they are made of, measured in the same run.

    python -m benchmarks.writes [--rows 5000] [--scopes 10] [--per-scope 100] [--repeats 3] [--out r.json]

Scenarios (each on a fresh Chroma ``PersistentClient`` in a temporary folder, in-memory KV,
``HashingEmbedder`` so that the embedder's cost does not hide the write path's):

- ``bulk_delete``: ``MemoryService.bulk_delete`` of ``--rows`` rows of one scope (one backend call per
  2,000 ids, journal, read-back, one audit entry) vs the baseline: ``ChromaIndex.delete`` of the same
  ids in the same chunks, nothing else;
- ``bulk_delete_taken_back``: the same delete with the LAST chunk refused by the backend: the time
  until the error reaches the caller, i.e. the chunks already deleted written back (re-embedded and
  upserted), vs the successful delete;
- ``document_ingest``: ``MemoryService.ingest_document`` of ``--scopes`` x ``--per-scope`` episodes
  (document index, one upsert per scope, one audit entry per scope, every scope locked in one
  order) vs the baseline: the same rows as one ``ChromaIndex.upsert`` per scope, vectors precomputed;
- ``remember``: one ``MemoryService.remember`` (one step: journal, upsert, audit) vs one raw upsert.

Host calls are counted by wrapping the KV store and the index (every call is one host round trip
inside LangBot). Times are medians over ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ltm.adapters.chroma_index import ChromaIndex
from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.errors import LtmError
from ltm.domain.filters import Criteria, scope_filter
from ltm.domain.timefields import to_iso
from ltm.ports import VectorRecord
from ltm.service.memory_service import Actor, MemoryService
from ltm.service.writes import DELETE_BATCH

from . import git_commit

log = logging.getLogger("benchmarks.writes")

KB = "kb-writes"
BOT = "bot1"
ADMIN = Actor(surface="benchmark", sender_id="admin", privilege=2)


class Counted:
    """Counts the calls made through it (each is one host round trip inside LangBot)."""

    def __init__(self, inner: Any, counts: dict[str, int], prefix: str) -> None:
        self._inner, self._counts, self._prefix = inner, counts, prefix
        self.refuse: Callable[[str, int], bool] = lambda method, n: False

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            key = f"{self._prefix}.{name}"
            self._counts[key] = self._counts.get(key, 0) + 1
            if self.refuse(name, self._counts[key]):
                raise RuntimeError(f"{key} #{self._counts[key]} refused (benchmark)")
            return await target(*args, **kwargs)

        return call


class Setup:
    def __init__(self, root: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-", dir=root))
        self.index = ChromaIndex(str(self.dir / "chroma"))
        self.counts: dict[str, int] = {}
        self.cindex = Counted(self.index, self.counts, "vector")
        self.embedder = HashingEmbedder()
        self.svc = MemoryService(
            kv=Counted(MemoryKeyValueStore(), self.counts, "kv"),
            vectors=self.cindex,  # type: ignore[arg-type]
            embedder_for=lambda c, kb: self.embedder,
        )

    async def start(self) -> Setup:
        await self.svc.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
        return self

    def close(self) -> None:
        close = getattr(self.index, "close", None)
        if close:
            close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def reset_counts(self) -> None:
        self.counts.clear()


def _doc(scopes: int, per_scope: int, tag: str = "") -> dict[str, Any]:
    return {
        "episodes": [
            {
                "session_name": f"group_g{s}",
                "bot_uuid": BOT,
                "sender_id": f"u{s}",
                "content": f"scope {s} fact {n} about hiking coffee and the lake {tag}",
                "tags": ["bulk"],
            }
            for s in range(scopes)
            for n in range(per_scope)
        ]
    }


async def _timed(aw: Awaitable[Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = await aw
    return (time.perf_counter() - t0) * 1000, out


async def _bulk_delete(root: Path, rows: int, repeats: int) -> dict[str, Any]:
    ours, base, back, calls, back_calls = [], [], [], {}, {}
    for r in range(repeats):
        for mode in ("ours", "baseline", "taken_back"):
            st = await Setup(root).start()
            try:
                scope = await st.svc.scope_for(kb_id=KB, session_name="group_g0", bot_uuid=BOT, sender_id="u0")
                await st.svc.ingest_document(KB, f"seed-{r}", _doc(1, rows), ADMIN)
                victims = await st.svc.fetch(scope, Criteria(statuses=None), limit=rows)
                assert len(victims) == rows
                chunks = -(-rows // DELETE_BATCH)
                st.reset_counts()
                if mode == "ours":
                    ms, n = await _timed(st.svc.bulk_delete(scope, Criteria(statuses=None), ADMIN, tag="bulk"))
                    assert n == rows
                    ours.append(ms)
                    calls = dict(st.counts)
                elif mode == "baseline":
                    ids = [e.id for e in victims]
                    t0 = time.perf_counter()
                    for i in range(0, rows, DELETE_BATCH):
                        chunk = tuple(ids[i : i + DELETE_BATCH])
                        await st.index.delete(KB, scope_filter(scope.user_key, Criteria(statuses=None, ids=chunk)))
                    base.append((time.perf_counter() - t0) * 1000)
                else:
                    st.cindex.refuse = lambda method, n, last=chunks: method == "delete" and n == last
                    t0 = time.perf_counter()
                    try:
                        await st.svc.bulk_delete(scope, Criteria(statuses=None), ADMIN, tag="bulk")
                        raise AssertionError("the refused chunk did not fail the delete")
                    except LtmError:
                        pass
                    back.append((time.perf_counter() - t0) * 1000)
                    back_calls = dict(st.counts)
                    st.cindex.refuse = lambda method, n: False
                    left = await st.svc.fetch(scope, Criteria(statuses=None), limit=rows + 1)
                    assert len(left) == rows, f"taking back left {len(left)} of {rows} rows"
            finally:
                st.close()
    o, b, t = statistics.median(ours), statistics.median(base), statistics.median(back)
    return {
        "rows": rows,
        "chunks": -(-rows // DELETE_BATCH),
        "ours_ms": round(o, 1),
        "baseline_ms": round(b, 1),
        "ratio": round(o / b, 2),
        "host_calls": calls,
        "taken_back_ms": round(t, 1),
        "taken_back_vs_delete": round(t / o, 2),
        "taken_back_host_calls": back_calls,
    }


async def _document(root: Path, scopes: int, per_scope: int, repeats: int) -> dict[str, Any]:
    ours, base, calls = [], [], {}
    for r in range(repeats):
        st = await Setup(root).start()
        try:
            doc = _doc(scopes, per_scope, tag=str(r))
            st.reset_counts()
            ms, n = await _timed(st.svc.ingest_document(KB, f"doc-{r}", doc, ADMIN))
            assert n == scopes * per_scope
            ours.append(ms)
            calls = dict(st.counts)
        finally:
            st.close()
        st = await Setup(root).start()
        try:
            by_scope: dict[int, list[VectorRecord]] = {}
            eps = _doc(scopes, per_scope, tag=str(r))["episodes"]
            vectors = await st.embedder.embed([e["content"] for e in eps])
            for i, (e, v) in enumerate(zip(eps, vectors, strict=True)):
                md = {"user_key": f"{BOT}:{e['session_name']}", "status": "active", "text": e["content"]}
                by_scope.setdefault(i // per_scope, []).append(VectorRecord(f"b{r}_{i}", list(v), md, e["content"]))
            t0 = time.perf_counter()
            for records in by_scope.values():
                await st.index.upsert(KB, records)
            base.append((time.perf_counter() - t0) * 1000)
        finally:
            st.close()
    o, b = statistics.median(ours), statistics.median(base)
    return {
        "scopes": scopes,
        "per_scope": per_scope,
        "ours_ms": round(o, 1),
        "baseline_ms_vectors_precomputed": round(b, 1),
        "ratio": round(o / b, 2),
        "host_calls": calls,
    }


async def _remember(root: Path, repeats: int) -> dict[str, Any]:
    st = await Setup(root).start()
    ours, base, calls = [], [], {}
    try:
        scope = await st.svc.scope_for(kb_id=KB, session_name="group_g0", bot_uuid=BOT, sender_id="u0")
        for n in range(max(20, repeats * 10)):
            st.reset_counts()
            ms, _ = await _timed(st.svc.remember(scope, {"content": f"remembered fact {n} about tea"}, ADMIN))
            ours.append(ms)
            calls = dict(st.counts)
            v = (await st.embedder.embed([f"raw fact {n}"]))[0]
            md = {"user_key": scope.user_key, "status": "active", "text": f"raw fact {n}"}
            t0 = time.perf_counter()
            await st.index.upsert(KB, [VectorRecord(f"raw{n}", list(v), md, f"raw fact {n}")])
            base.append((time.perf_counter() - t0) * 1000)
    finally:
        st.close()
    o, b = statistics.median(ours), statistics.median(base)
    return {"ours_ms": round(o, 2), "baseline_ms": round(b, 2), "ratio": round(o / b, 2), "host_calls": calls}


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="ltm-writes-"))
    try:
        results = {
            "bulk_delete": await _bulk_delete(root, args.rows, args.repeats),
            "document_ingest": await _document(root, args.scopes, args.per_scope, args.repeats),
            "remember": await _remember(root, args.repeats),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _print(results)
    return {
        "results": results,
        "config": vars(args) | {"delete_batch": DELETE_BATCH, "embedder": "HashingEmbedder", "index": "chroma"},
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "created_at": to_iso(datetime.now(UTC)),
    }


def _calls(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))


def _print(r: dict[str, Any]) -> None:
    d, doc, rem = r["bulk_delete"], r["document_ingest"], r["remember"]
    lines = [
        f"bulk delete of {d['rows']} rows ({d['chunks']} backend calls): ours {d['ours_ms']} ms, "
        f"raw deletes {d['baseline_ms']} ms, ratio {d['ratio']}x; host calls: {_calls(d['host_calls'])}",
        f"  last chunk refused -> earlier chunks written back: {d['taken_back_ms']} ms "
        f"({d['taken_back_vs_delete']}x the delete); host calls: {_calls(d['taken_back_host_calls'])}",
        f"document over {doc['scopes']} scopes x {doc['per_scope']}: ours {doc['ours_ms']} ms, raw upserts "
        f"(vectors precomputed) {doc['baseline_ms_vectors_precomputed']} ms, ratio {doc['ratio']}x; "
        f"host calls: {_calls(doc['host_calls'])}",
        f"remember: ours {rem['ours_ms']} ms, raw upsert {rem['baseline_ms']} ms, ratio {rem['ratio']}x; "
        f"host calls: {_calls(rem['host_calls'])}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.writes", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5000, help="rows of the bulk delete (default 5000: 3 calls)")
    ap.add_argument("--scopes", type=int, default=10, help="scopes one document reaches")
    ap.add_argument("--per-scope", type=int, default=100, help="episodes per scope in the document")
    ap.add_argument("--repeats", type=int, default=3)
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
