"""A host whose answers come late, in the order the test chooses (issue 24's concurrency tests).

:class:`HeldIndex` and :class:`HeldKV` wrap a real vector index (numpy, Chroma, Qdrant) and a
key-value store. Each call is **applied when it is sent** (the engine's own synchronous call, in
the event loop's thread: no worker thread, so a run is deterministic) and its **answer** is then
held, when the calling task is marked slow (:data:`SLOW`, a context variable that tasks created by
a slow task inherit: a slow turn's index build is slow too), until the test releases it
(:meth:`Held.release`), in any order. That is the window of the issue's findings: a host listing
whose rows were read before a forget, answered after it.

Calls held: every vector call, and the storage calls on the recall snapshot keys (``recall/``).
The rest of storage (journal, audit, fences, settings) answers at once: holding it adds steps,
not windows on the recall index.

:class:`HeldWorld` is one host (the stores) and the processes of the plugin over it; a restart
is a new :class:`MemoryService` over the same stores.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ltm.adapters._common import require_where
from ltm.adapters.embedders import HashingEmbedder
from ltm.ports import ListPage, VectorHit, VectorRecord
from ltm.service import MemoryService, Settings
from ltm.service.sealing import SEAL_PREFIX, is_sealed, unseal
from tests.support import KB, HostLimitedKeyValueStore, chroma_clients, make_index, seal_keys

SLOW: contextvars.ContextVar[bool] = contextvars.ContextVar("ltm_test_slow", default=False)


class Held:
    """The answers held so far, oldest first."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, asyncio.Future[None]]] = []
        self.log: list[str] = []  # every held call, for a failing example's story

    async def answer(self, label: str) -> None:
        if not SLOW.get():
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (label, fut)
        self.pending.append(entry)
        self.log.append(label)
        try:
            await fut
        finally:
            if entry in self.pending:
                self.pending.remove(entry)

    def release(self, i: int = 0) -> str | None:
        """Answer the ``i``-th held call (modulo the number held); its label, or None."""
        if not self.pending:
            return None
        label, fut = self.pending.pop(i % len(self.pending))
        if not fut.done():
            fut.set_result(None)
        return label

    def labels(self) -> list[str]:
        return [label for label, _ in self.pending]


class HeldIndex:
    """A VectorIndex applying each call at once and answering it when released."""

    def __init__(self, inner: Any, held: Held) -> None:
        self.inner, self.held = inner, held
        self.name = getattr(inner, "name", "index")

    async def _run(self, op: str, *args: Any) -> Any:
        # the embedded engines' blocking call, here in the loop's thread: applied at once, and
        # nothing a test waits for runs in a worker thread
        sync = getattr(self.inner, f"_{op}_sync", None)
        result = sync(*args) if sync is not None else await getattr(self.inner, op)(*args)
        await self.held.answer(f"vector.{op}")
        return result

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if records:
            await self._run("upsert", collection, list(records))

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        require_where(where, "delete")
        await self._run("delete", collection, where)

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        return await self._run("search", collection, vector, top_k, where)  # type: ignore[no-any-return]

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        return await self._run("list", collection, where, limit, offset)  # type: ignore[no-any-return]

    async def drop_collection(self, collection: str) -> None:
        sync = getattr(self.inner, "_drop_sync", None)
        if sync is not None:
            sync(collection)
        else:
            await self.inner.drop_collection(collection)


class HeldKV:
    """A key-value store applying each call at once; the answers on ``recall/`` keys are held."""

    def __init__(self, inner: Any, held: Held) -> None:
        self.inner, self.held = inner, held

    async def _answer(self, op: str, key: str) -> None:
        if key.startswith("recall/"):
            await self.held.answer(f"kv.{op} {key.rsplit('/', 1)[-1]}")

    async def get(self, key: str) -> bytes | None:
        value = await self.inner.get(key)
        await self._answer("get", key)
        return value  # type: ignore[no-any-return]

    async def set(self, key: str, value: bytes) -> None:
        await self.inner.set(key, value)
        await self._answer("set", key)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)
        await self._answer("delete", key)

    async def keys(self, prefix: str = "") -> list[str]:
        found = await self.inner.keys(prefix)
        await self._answer("keys", prefix)
        return found  # type: ignore[no-any-return]


class HeldWorld:
    """One host (a vector engine and a key-value store) and the processes of the plugin over it."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind = kind
        self._clients = chroma_clients.opened()
        self.inner_vectors = make_index(kind, tmp)
        self.inner_kv = HostLimitedKeyValueStore()
        self.held = Held()
        self.emb = HashingEmbedder()
        self.mono = 1000.0  # the recall index's monotonic clock (its TTL), moved by the test

    async def process(self, *, ttl: int = 120) -> MemoryService:
        settings = lambda: Settings(recall_index_ttl_seconds=ttl)  # noqa: E731
        svc = MemoryService(
            kv=HeldKV(self.inner_kv, self.held),
            vectors=HeldIndex(self.inner_vectors, self.held),
            embedder_for=lambda c, kb: self.emb,
            settings=settings,
            monotonic=lambda: self.mono,
        )
        svc.index.snapshot_delay = 3600.0  # flushes are the test's steps (and a write's reschedule)
        await svc.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
        return svc

    def snapshot_values(self) -> dict[str, bytes]:
        """Every stored recall snapshot value (the stamps left out), read from the store itself."""
        keys = [k for k in now(self.inner_kv.keys("recall/")) if k.endswith("/snap")]
        return {k: v for k in keys if (v := now(self.inner_kv.get(k))) is not None}

    def rows(self, where: dict[str, Any]) -> dict[str, str]:
        """id -> text of the rows ``where`` selects, read from the engine itself (not through the plugin)."""
        sync = getattr(self.inner_vectors, "_list_sync", None)
        page = sync(KB, where, 10_000, 0) if sync is not None else now(self.inner_vectors.list(KB, where, 10_000, 0))
        keys = seal_keys({k: v for k in now(self.inner_kv.keys(SEAL_PREFIX)) if (v := now(self.inner_kv.get(k)))})
        out = {}
        for item in page.items:  # a sealed row opened with the key storage holds (ltm/service/sealing.py)
            md = unseal(item.metadata, item.id, keys.get(item.id)) if is_sealed(item.metadata) else item.metadata
            out[item.id] = str(md.get("text") or item.document)
        return out

    def close(self) -> None:
        close = getattr(self.inner_vectors, "close", None)
        if close:
            close()
        chroma_clients.close_since(self._clients)  # a stateful test opens one world per example


def now(coro: Any) -> Any:
    """The result of a coroutine that never suspends (the in-memory store's and numpy's calls), run
    outside the event loop: reading the stores this way lets no task of the plugin advance."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise AssertionError("the call suspended")


async def settle(rounds: int = 200) -> None:
    """Let every task run until it waits on a held answer (nothing here waits on real time)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
