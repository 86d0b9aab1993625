"""The scope-local recall index: both legs of recall answered in the plugin process.

A read-through cache of the host's knowledge base, which stays the durable store and the source of
truth: every scope's :class:`~.scope_index.ScopeIndex` (its active rows, their BM25 index, vectors
and metadata), built on first use from one paged list of the scope's rows, under one byte budget.
This module is the cache's life: build, share, refresh, keep current, evict.

Kept current by every write of this process (:meth:`RecallIndex.on_upsert`,
:meth:`RecallIndex.on_delete`; a write whose outcome is unknown calls :meth:`RecallIndex.invalidate`).
A build that a write of the same scope overlaps is dirty: it is not kept (it may predate the
write), and no turn that starts after the write answered joins it (retirement is linearizable:
``docs/recall.md``).
Writes of another process are picked up by age: an index older than ``ttl`` seconds is rebuilt
in the background while the current one keeps answering.

Cold scopes: with a key-value store, a scope's index is also kept in plugin storage, written in the
background after a build or a write and read on the scope's first use (:mod:`.snapshot_flush`).
Rows stored without a vector get one in the background (:mod:`.vector_fill`).

Memory: one byte budget over every scope's vector and lexical data, least recently used scopes
evicted first; the sizes are estimates of what the objects hold (see ``benchmarks/README.md`` for
the measured RSS). The budget is held against a running total of the held scopes' sizes, each
scope's size read again whenever it changes (a build, a write, a turn's use, and what a scope
grows by itself: its short-reference tables, vectors filled in, which it tells through
``ScopeIndex.on_grow``), and every size read again once per as many enforcements as scopes held:
installing a scope costs the same with 10 or 10,000 scopes held (summing every held scope at each
install made it grow with them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain.filters import Criteria, filter_conditions, matches_conditions, scope_filter
from ..domain.lexical import BM25Index
from ..ports import KeyValueStore, VectorIndex
from .background import Background
from .index_snapshot import SnapshotStore
from .row_codec import VECTOR_KEY, decode_vector, number
from .scope_index import ScopeIndex
from .settings import Settings
from .snapshot_flush import SnapshotFlusher
from .vector_fill import VectorFill

log = logging.getLogger(__name__)

PAGE = 2000  # rows per list call: most scopes come in one call (an empty page costs a scan too)
WAVE = 2  # pages read together once the first page came back full


@dataclass
class _Build:
    task: asyncio.Future[ScopeIndex]
    dirty: bool = False
    generation: int = 0  # the scope's write generation when the build started


class RecallIndex:
    """Every scope's :class:`ScopeIndex`, under one byte budget (least recently used evicted);
    with ``kv``, each scope's index is also kept in plugin storage for the next process."""

    def __init__(
        self,
        vectors: VectorIndex,
        *,
        kv: KeyValueStore | None = None,
        budget_bytes: int = 256 << 20,
        ttl: float = 120.0,
        max_docs: int = 5000,
        background: Background | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        settings: Callable[[], Settings] | None = None,
    ) -> None:
        self.vectors = vectors
        self.background = background or Background()  # where refreshes, fills and snapshots run
        self.budget_bytes = budget_bytes
        self.ttl = ttl
        self.max_docs = max_docs
        # the budget, TTL and row limit, read from ``settings`` once, at the first use (the host
        # restarts the plugin when its config changes); :meth:`configure` sets them outright
        self._settings = settings
        self.clock = clock  # ages (the TTL refresh)
        self.wall = wall  # when a content was read from the host (kept in its snapshot)
        self._scopes: OrderedDict[tuple[str, str], ScopeIndex] = OrderedDict()
        self._builds: dict[tuple[str, str], _Build] = {}
        self._refresh: dict[tuple[str, str], _Build] = {}
        self._generation: dict[tuple[str, str], int] = {}  # writes of this process begun, per scope
        self._writes: dict[tuple[str, str], int] = {}  # writes in flight, per scope
        self.builds = 0  # counters for diagnostics and benchmarks
        self.evictions = 0
        # each held scope's size when last read, and their sum (see the module's docstring)
        self._sizes: dict[tuple[str, str], int] = {}
        self._total = 0
        self._since_recount = 0
        self.fill = VectorFill(self.background)
        # the scopes' copies in plugin storage (none without a key-value store)
        self.flusher = SnapshotFlusher(kv, self.background, self) if kv is not None else None

    # -------------------------------------------------------------- the stored copies
    @property
    def snapshots(self) -> SnapshotStore | None:
        """Where the scopes' copies are stored (None: no key-value store)."""
        return self.flusher.store if self.flusher is not None else None

    @property
    def snapshot_counts(self) -> dict[str, int]:
        """Copies read, used, written, discarded, failed and rejected (diagnostics)."""
        return self.flusher.counts if self.flusher is not None else {}

    @property
    def snapshot_delay(self) -> float:
        """Seconds after the last change before the copies are written."""
        return self.flusher.delay if self.flusher is not None else 0.0

    @snapshot_delay.setter
    def snapshot_delay(self, value: float) -> None:
        if self.flusher is not None:
            self.flusher.delay = value

    async def flush_snapshots(self) -> int:
        """Write the copies of every scope changed since the last flush, now
        (:meth:`.snapshot_flush.SnapshotFlusher.flush`); 0 without a key-value store."""
        return await self.flusher.flush() if self.flusher is not None else 0

    def busy(self, key: tuple[str, str]) -> bool:
        """Whether a write, build or refresh of the scope is in flight."""
        return bool(self._writes.get(key)) or key in self._builds or key in self._refresh

    def current(self, key: tuple[str, str]) -> ScopeIndex | None:
        return self._scopes.get(key)

    def _schedule(self, key: tuple[str, str]) -> None:
        if self.flusher is not None:
            self.flusher.schedule(key)

    def configure(self, *, budget_bytes: int, ttl: float, max_docs: int) -> None:
        """Set the byte budget (enforced at once), the refresh age and the rows held per scope."""
        self._settings = None  # set outright: the settings are not read again
        self.budget_bytes, self.ttl, self.max_docs = budget_bytes, ttl, max_docs
        self._enforce_budget(None)

    def _configure_once(self) -> None:
        if self._settings is not None:
            s = self._settings()
            self.configure(
                budget_bytes=s.recall_index_mb << 20, ttl=float(s.recall_index_ttl_seconds), max_docs=s.lexical_max_docs
            )

    # -------------------------------------------------------------- reads
    async def get(
        self, collection: str, user_key: str, embed: Callable[[list[str]], Awaitable[list[list[float]]]] | None = None
    ) -> ScopeIndex:
        """The scope's index, built on first use (concurrent callers share one build). ``embed``
        fills, in the background and bounded, the vectors of rows stored without one."""
        self._configure_once()
        key = (collection, user_key)
        idx = self._scopes.get(key)
        if idx is not None:
            self._scopes.move_to_end(key)
            self._resize(key)
            if self.clock() - idx.built_at > self.ttl and key not in self._refresh and key not in self._builds:
                self._refresh[key] = _Build(
                    self.background.submit(
                        ("recall-refresh", key), lambda key=key: self._build(key, snapshot=False), interruptible=True
                    ),
                    generation=self._generation.get(key, 0),
                )
                self._refresh[key].task.add_done_callback(lambda t, key=key: self._refreshed(key, t))
            return idx
        build = self._builds.get(key)
        if build is None or build.dirty:
            # a dirty build may predate a write that has answered: a turn starting now never
            # joins it (it would serve the retired row); it starts its own, and the dirty one
            # only answers the turns that were already waiting for it
            build = self._builds[key] = _Build(
                asyncio.create_task(self._build(key)), generation=self._generation.get(key, 0)
            )
            build.task.add_done_callback(lambda t, key=key, b=build: self._built(key, b, t))
        idx = await asyncio.shield(build.task)
        if embed is not None and idx.complete and not idx.vector_ready:
            self.fill.later(key, idx, embed, self.max_docs)
        return idx

    def _built(self, key: tuple[str, str], build: _Build, task: asyncio.Task[ScopeIndex]) -> None:
        if self._builds.get(key) is build:
            del self._builds[key]
        if task.cancelled() or task.exception() is not None or build.dirty:
            if build.dirty:  # a write of this scope overlapped the build: it answered its turns, kept nothing
                log.debug("recall index of %s/%s not kept: a write overlapped its build", *key)
            self._schedule(key)  # a flush skipped while it ran: the stored copy is written or discarded now
            return
        self._install(key, task.result(), build)

    def _refreshed(self, key: tuple[str, str], task: asyncio.Future[ScopeIndex]) -> None:
        build = self._refresh.pop(key, None)
        if task.cancelled() or task.exception() is not None:
            if not task.cancelled():
                log.warning("recall index refresh of %s/%s failed: %s", *key, task.exception())
            self._schedule(key)
            return
        if build is None or build.dirty or key not in self._scopes:
            self._schedule(key)  # not kept: the index it would replace is current (or gone)
            return
        if self.flusher is not None:
            self.flusher.replaced(key, self._scopes[key], task.result())
        self._install(key, task.result(), build)

    def _install(self, key: tuple[str, str], idx: ScopeIndex, build: _Build | None = None) -> None:
        old = self._scopes.get(key)
        if old is not None and old is not idx:
            old.on_grow = None
        self._scopes[key] = idx
        self._scopes.move_to_end(key)
        idx.on_grow = lambda key=key, idx=idx: self._grew(key, idx)
        self._resize(key)
        self._enforce_budget(key)
        if self.flusher is not None:
            # the stamp is current when no write of this process began since it was read
            current = build is not None and build.generation == self._generation.get(key, 0)
            self.flusher.installed(key, idx, current and not self._writes.get(key))

    async def _build(self, key: tuple[str, str], *, snapshot: bool = True) -> ScopeIndex:
        """The scope's index: from its snapshot in storage when one is valid (``snapshot``), else
        from the host (a refresh always reads the host: it is what picks up other writers)."""
        stamp: str | None = None
        if self.flusher is not None and (not snapshot or self.flusher.known_absent(key)):
            # nothing to load: the stamp (the tag of the snapshot to write) is read with the host's list
            stamp, idx = await asyncio.gather(self.flusher.read_stamp(key), self._build_from_host(key))
            idx.stamp = stamp
            return idx
        if self.flusher is not None:
            stamp, loaded = await self.flusher.read(key, self.max_docs)
            if loaded is not None and stamp is not None:
                idx = ScopeIndex.of_snapshot(*key, loaded, stamp)
                # its age counts from when its content was read from the host: the TTL refresh applies
                idx.built_at = self.clock() - max(0.0, self.wall() - loaded.base)
                log.debug("recall index of %s/%s loaded from its snapshot: %d rows", *key, len(idx))
                return idx
        idx = await self._build_from_host(key)
        idx.stamp = stamp
        return idx

    async def _build_from_host(self, key: tuple[str, str]) -> ScopeIndex:
        collection, user_key = key
        # The scope's rows of every status, the active ones kept here: a single-condition filter is
        # several times cheaper for the host's Chroma than the scope-and-status one (measured 22 vs
        # 100 ms for 100 of 10k rows), and retired rows are few.
        where = scope_filter(user_key, Criteria(statuses=None))
        active = filter_conditions(scope_filter(user_key, Criteria()))
        started, base = self.clock(), self.wall()
        rows: list[tuple[float, str, str, dict[str, Any]]] = []
        offset, wave = 0, 1
        while True:
            if wave == 1:  # the first page alone (most scopes end here), sent at once
                pages = [await self.vectors.list(collection, where, PAGE, offset)]
            else:
                pages = await asyncio.gather(
                    *(self.vectors.list(collection, where, PAGE, offset + n * PAGE) for n in range(wave))
                )
            for page in pages:
                for item in page.items:
                    md = item.metadata
                    if matches_conditions(md, active):  # exactly what the scope-and-status filter selects
                        rows.append((number(md.get("ts")), item.id, str(md.get("text") or item.document), md))
            if len(pages[-1].items) < PAGE:
                break
            offset += wave * PAGE
            wave = WAVE
        rows.sort(key=lambda r: (np.nan_to_num(r[0]), r[1]))
        idx = ScopeIndex(collection, user_key, BM25Index(max_docs=self.max_docs), built_at=started, base=base)
        if len(rows) > self.max_docs:  # the newest max_docs rows; the vector leg stays with the host
            rows = rows[-self.max_docs :]
            idx.complete = False
        unique = {r[1]: r for r in rows}  # an unstable page order may repeat a row: keep its last copy
        idx.load([(rid, text, md) for _, rid, text, md in unique.values()])
        self.builds += 1
        log.debug("recall index built for %s/%s: %d rows (%d bytes)", collection, user_key, len(idx), idx.bytes)
        return idx

    # -------------------------------------------------------------- writes of this process
    @contextlib.asynccontextmanager
    async def writing(self, collection: str, user_key: str) -> AsyncIterator[None]:
        """Around one host write of the scope: the scope's snapshot stamp moves first (a stamp that
        cannot be moved refuses the write: :class:`BackendError`, nothing sent), the snapshot is
        rewritten in the background after it, and a write that fails leaves no snapshot of the
        scope until the next one (its outcome may be unknown)."""
        key = (collection, user_key)
        self._writes[key] = self._writes.get(key, 0) + 1
        self._generation[key] = self._generation.get(key, 0) + 1
        try:
            if self.flusher is not None:
                await self.flusher.before_write(key)
            try:
                yield
            except BaseException:
                if self.flusher is not None:
                    self.flusher.write_failed(key)
                raise
        finally:
            self._writes[key] -= 1
            if not self._writes[key]:
                del self._writes[key]
            # whatever its outcome, the write ended while any build or refresh of the scope ran:
            # none of them is joined or kept (the write's own on_upsert/on_delete marked them
            # already; a write that failed may still have landed)
            self._touch(key)
            self._schedule(key)

    def _touch(self, key: tuple[str, str]) -> None:
        for builds in (self._builds, self._refresh):
            if key in builds:
                builds[key].dirty = True

    def on_upsert(self, collection: str, user_key: str, rid: str, text: str, metadata: dict[str, Any]) -> None:
        key = (collection, user_key)
        self._touch(key)
        idx = self._scopes.get(key)
        if idx is None:
            return
        if (metadata.get("status") or "active") == "active":
            idx.put(rid, text, metadata, decode_vector(metadata.get(VECTOR_KEY)))
            self._resize(key)
            self._enforce_budget(key)
        else:
            idx.remove(rid)
            self._resize(key)

    def on_delete(self, collection: str, user_key: str, rid: str) -> None:
        key = (collection, user_key)
        self._touch(key)
        idx = self._scopes.get(key)
        if idx is not None:
            idx.remove(rid)
            self._resize(key)

    def invalidate(self, collection: str, user_key: str | None = None) -> None:
        """Drop the scope (every scope of the collection without ``user_key``, whose snapshots are
        then deleted from storage in the background: its knowledge base is gone): the next read
        rebuilds."""
        for key in [*self._scopes, *self._builds, *self._refresh]:
            if key[0] == collection and (user_key is None or key[1] == user_key):
                self._touch(key)
                dropped = self._scopes.pop(key, None)
                if dropped is not None:
                    dropped.on_grow = None
                self._resize(key)
        if user_key is not None:
            self._schedule((collection, user_key))  # its snapshot may hold rows that changed: discarded
        elif self.flusher is not None:
            self.flusher.drop_collection(collection)

    # -------------------------------------------------------------- budget
    @property
    def nbytes(self) -> int:
        """The held scopes' sizes, each read now (for diagnostics, benchmarks and tests)."""
        return sum(i.bytes for i in self._scopes.values())

    @property
    def held_bytes(self) -> int:
        """The running total the budget is held against (:attr:`nbytes` reads every size)."""
        return self._total

    def _grew(self, key: tuple[str, str], idx: ScopeIndex) -> None:
        """A held scope grew by itself: counted now, and the budget kept."""
        if self._scopes.get(key) is idx:
            self._resize(key)
            self._enforce_budget(key)

    def _resize(self, key: tuple[str, str]) -> None:
        """Read the scope's size again into the running total (0 when it is not held)."""
        idx = self._scopes.get(key)
        size = idx.bytes if idx is not None else 0
        self._total += size - self._sizes.pop(key, 0)
        if idx is not None:
            self._sizes[key] = size

    def _recount(self) -> None:
        self._sizes = {key: idx.bytes for key, idx in self._scopes.items()}
        self._total = sum(self._sizes.values())
        self._since_recount = 0

    def held(self) -> list[tuple[str, str]]:
        return list(self._scopes)

    def rows_held(self) -> int:
        """Rows held over every scope's index (for diagnostics and benchmarks)."""
        return sum(len(i) for i in self._scopes.values())

    def _enforce_budget(self, keep: tuple[str, str] | None) -> None:
        """Evict the least recently used scopes (never ``keep``) until the held ones fit the budget.
        Against the running total; every size is read again when no scope is named (a new budget)
        and once per as many calls as scopes held (what a scope grew by outside the index's view,
        e.g. a background fill of its vectors, counts by then): amortised, one size read a call."""
        self._since_recount += 1
        if keep is None or self._since_recount >= max(16, len(self._scopes)):
            self._recount()
        while self._total > self.budget_bytes and self._scopes:
            key = next(iter(self._scopes))
            if key == keep:
                if len(self._scopes) == 1:
                    break
                self._scopes.move_to_end(key)
                continue
            self._scopes.pop(key).on_grow = None
            self._total -= self._sizes.pop(key, 0)
            self.evictions += 1
