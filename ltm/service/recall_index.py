"""The scope-local recall index: both legs of recall answered in the plugin process.

A read-through cache of the host's knowledge base, which stays the durable store and the source of
truth. Per scope (collection, user key) it holds what ranking needs of the scope's **active** rows:

- the BM25 index of their texts (:class:`ltm.domain.lexical.BM25Index`);
- their vectors as float16 (the plugin embeds every row it writes and stores that vector, base64
  float16, in the row's metadata under :data:`VECTOR_KEY`, so the one paged list that builds the
  lexical index also yields the vectors: the host never has to return vectors, nothing is
  re-embedded);
- their metadata, marshalled to bytes (decoded only for the few candidates of a query) plus the
  numeric columns and the sender the vector leg pre-filters on.

Answers follow the one filter builder: every row returned has passed
:func:`ltm.domain.filters.matches` against the query's ``where``; the numeric/sender columns only
narrow the scan first (they reject nothing ``matches`` would accept). A scope whose rows are not all
held (more than ``max_docs`` active rows) or not all carry a vector of the query's dimension gives
no vector answer: the caller asks the host's vector search instead, as before the index existed.

Kept current by every write of this process (:meth:`RecallIndex.on_upsert`,
:meth:`RecallIndex.on_delete`; a write whose outcome is unknown calls :meth:`RecallIndex.invalidate`).
A build that a write of the same scope overlaps is dirty: it is not kept (it may predate the
write), and no turn that starts after the write answered joins it (retirement is linearizable:
``docs/recall.md``).
Writes of another process are picked up by age: an index older than ``ttl`` seconds is rebuilt
in the background while the current one keeps answering.

Cold scopes: with a key-value store, a scope's index is also kept in plugin storage
(:mod:`ltm.service.index_snapshot`), written in the background a little after a build or a write
(never on a turn's or a write's path; a failed snapshot write is only logged) and read, with the
scope's stamp, in one round trip on the scope's first use. Every write of this process moves the
stamp first (:meth:`RecallIndex.writing`), so a snapshot older than any write is never used.

Memory: one byte budget over every scope's vector and lexical data, least recently used scopes
evicted first; the sizes are estimates of what the objects hold (see ``benchmarks/README.md`` for
the measured RSS).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain.errors import BackendError
from ..domain.filters import Criteria, filter_conditions, matches_conditions, scope_filter
from ..domain.lexical import BM25Index
from ..domain.refs import RefTable
from ..ports import KeyValueStore, VectorIndex, is_connection_lost
from . import index_snapshot
from .background import Background
from .row_codec import (
    NUMERIC,
    VECTOR_KEY,
    decode_vector,
    number,
    numeric_row,
    pack_metadata,
    unpack_metadata,
)
from .row_codec import encode_vector as encode_vector  # imported from here by its tests

log = logging.getLogger(__name__)

PAGE = 2000  # rows per list call: most scopes come in one call (an empty page costs a scan too)
WAVE = 2  # pages read together once the first page came back full
_ROW_OVERHEAD = 300  # bytes per row beyond metadata and arrays: ids, slots, BM25 bookkeeping
_TERM_BYTES = 60  # bytes per distinct term of a row in the BM25 postings

Row = tuple[str, float, dict[str, Any]]  # (id, score, metadata)


# Reader tables kept per scope index (each reader audience of a bot-isolation scope has its own).
READER_REF_TABLES = 8


@dataclass
class ScopeIndex:
    """The active rows of one scope. Slots are appended; a removed row leaves a dead slot
    (compacted once half the slots are dead)."""

    collection: str
    user_key: str
    bm25: BM25Index
    complete: bool = True  # every active row of the scope is held
    built_at: float = 0.0
    dim: int = 0
    ids: list[str | None] = field(default_factory=list)
    blobs: list[bytes | None] = field(default_factory=list)
    senders: list[Any] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float16))
    has_vec: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    numeric: np.ndarray = field(default_factory=lambda: np.zeros((0, len(NUMERIC)), dtype=np.float64))
    nterms: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    nbytes: int = 0
    missing: int = 0  # held rows without a usable vector
    only_active: bool = True  # holds the active rows only (False: whatever rows it was given)
    stamp: str | None = None  # the storage stamp its content matches when built or loaded (None: unknown)
    base: float = 0.0  # wall-clock time its content was read from the host
    from_snapshot: bool = False
    version: int = 0  # counts changes (a snapshot of an unchanged index is not written again)
    ref_table: RefTable | None = field(default=None, repr=False)  # short references, of ``ref_version``
    ref_version: int = -1
    # per reader audience (bot isolation): references unique among the rows that reader can read
    reader_refs: dict[tuple[str, ...], RefTable] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.pos)

    @property
    def bytes(self) -> int:
        """Estimated size: the rows (:attr:`nbytes`) and the arrays' used slots. Spare capacity is
        left out: the arrays grow by doubling into zeroed memory, whose pages stay unmapped until a
        row is written there."""
        per_slot = self.vectors.itemsize * self.dim + self.numeric.itemsize * len(NUMERIC) + self.nterms.itemsize + 1
        refs = self.ref_table.nbytes if self.ref_table is not None else 0
        refs += sum(t.nbytes for t in self.reader_refs.values())
        return self.nbytes + len(self.ids) * per_slot + refs

    @property
    def vector_ready(self) -> bool:
        """Whether the vector leg can be answered here: every active row held, each with a vector."""
        return self.complete and self.missing == 0

    @classmethod
    def of_rows(cls, rows: Sequence[tuple[str, str, dict[str, Any]]], max_docs: int) -> ScopeIndex:
        """A one-off index over given (id, text, metadata) rows of any status, oldest first (e.g. an
        as-of read, which also sees superseded rows). Never cached."""
        idx = cls("", "", BM25Index(max_docs=max(1, max_docs)), only_active=False)
        idx.load(list(rows[-max(1, max_docs) :]))
        idx.complete = len(rows) <= max_docs
        return idx

    def holds(self, where: dict[str, Any]) -> bool:
        """Whether every row ``where`` can select is held: a filter on the active status only (a
        filter naming other statuses, or none, selects rows this index never holds)."""
        if not self.only_active:
            return True
        status = [(op, val) for fname, op, val in filter_conditions(where) if fname == "status"]
        return bool(status) and all(
            (op == "$eq" and val == "active") or (op == "$in" and list(val) == ["active"]) for op, val in status
        )

    def same_rows(self, other: ScopeIndex) -> bool:
        """Whether ``other`` holds the same rows with the same metadata (a refresh that found
        nothing new need not be written to storage again)."""
        if len(self.pos) != len(other.pos) or (self.complete, self.missing) != (other.complete, other.missing):
            return False
        return all(other.blobs[j] == self.blobs[self.pos[rid]] for rid, j in other.pos.items() if rid in self.pos) and (
            self.pos.keys() == other.pos.keys()
        )

    def short_refs(self, shown: Sequence[str], audience: Sequence[str] | None = None) -> dict[str, str]:
        """Short references for ``shown`` (:mod:`ltm.domain.refs`), unique among the held rows a
        reader of ``audience`` (:func:`ltm.domain.audience.reader_audience`; None: every row) can
        read, so a reference is never lengthened by a row hidden from its reader (its length
        would say that a hidden id starts with the same digits). The whole ids when not every
        active row is held (uniqueness could not be known)."""
        if not self.complete:
            return {eid: eid for eid in shown}
        if self.ref_version != self.version:
            self.ref_table, self.ref_version = None, self.version
            self.reader_refs.clear()
        if audience is None:
            if self.ref_table is None:
                self.ref_table = RefTable(self.pos.keys())
            table = self.ref_table
        else:
            key = tuple(audience)
            table = self.reader_refs.get(key)
            if table is None:
                allowed = set(key)
                readable = [
                    rid
                    for rid, i in self.pos.items()
                    if str(unpack_metadata(self.blobs[i]).get("audience") or "") in allowed  # type: ignore[arg-type]
                ]
                table = RefTable(readable)
                while len(self.reader_refs) >= READER_REF_TABLES:  # the oldest reader's goes first
                    self.reader_refs.pop(next(iter(self.reader_refs)))
                self.reader_refs[key] = table
        return {eid: table.short(eid) for eid in shown}

    def missing_vectors(self) -> list[str]:
        return [rid for rid, i in self.pos.items() if not self.has_vec[i]]

    def metadata(self, rid: str) -> dict[str, Any] | None:
        i = self.pos.get(rid)
        blob = self.blobs[i] if i is not None else None
        return unpack_metadata(blob) if blob is not None else None

    # -------------------------------------------------------------- mutation (no I/O)
    def load(self, rows: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        """Fill an empty index with ``rows`` (id, text, metadata), oldest first: what :meth:`put`
        does row by row, with the vectors decoded and the columns written in one pass each."""
        if self.ids or not rows:
            for rid, text, md in rows:
                self.put(rid, text, md, decode_vector(md.get(VECTOR_KEY)))
            return
        n = len(rows)
        vecs = [decode_vector(md.get(VECTOR_KEY)) for _, _, md in rows]
        dim = next((int(v.shape[0]) for v in vecs if v is not None), 0)  # the first usable vector's, as put
        ok = np.array([v is not None and v.shape[0] == dim for v in vecs], dtype=bool)
        self.has_vec = np.zeros(n, dtype=bool)
        self.numeric = np.array([numeric_row(md) for _, _, md in rows], dtype=np.float64)
        self.nterms = np.zeros(n, dtype=np.int32)
        if dim:
            self._set_dim(dim)
            good = np.flatnonzero(ok)
            self.vectors[good] = np.stack([vecs[i] for i in good])
        self.has_vec[:] = ok
        self.missing = int(n - ok.sum())
        self.ids = [r[0] for r in rows]
        self.blobs = [pack_metadata(md) for _, _, md in rows]
        self.senders = [md.get("sender_id") for _, _, md in rows]
        self.pos = {rid: i for i, rid in enumerate(self.ids)}
        for i, (rid, text, _) in enumerate(rows):
            self.bm25.add(rid, text)  # the caller keeps at most max_docs rows: nothing is evicted
            self.nterms[i] = self.bm25.term_count(rid)
        self.nbytes = sum(self._row_size(i) for i in range(n))
        self.version += 1

    @classmethod
    def of_snapshot(cls, collection: str, user_key: str, snap: index_snapshot.Loaded, stamp: str) -> ScopeIndex:
        """The index a snapshot restores (its rows already checked by :func:`index_snapshot.decode`)."""
        n = len(snap.ids)
        idx = cls(collection, user_key, snap.bm25, complete=snap.complete, stamp=stamp, base=snap.base)
        idx.from_snapshot = True
        idx.ids, idx.blobs, idx.senders = list(snap.ids), list(snap.blobs), list(snap.senders)
        idx.pos = {rid: i for i, rid in enumerate(idx.ids)}
        idx.has_vec, idx.numeric, idx.nterms = snap.has_vec, snap.numeric, snap.nterms
        if snap.dim:
            idx.dim, idx.vectors = snap.dim, snap.vectors
        else:
            idx.vectors = np.zeros((n, 0), dtype=np.float16)
        idx.missing = int(n - int(snap.has_vec.sum()))
        idx.nbytes = sum(idx._row_size(i) for i in range(n))
        return idx

    def snapshot(self, stamp: str) -> bytes:
        """This index as one storage value taken at ``stamp`` (see :mod:`ltm.service.index_snapshot`)."""
        if len(self.pos) != len(self.ids):
            self._compact()
        return index_snapshot.encode(
            collection=self.collection,
            user_key=self.user_key,
            stamp=stamp,
            base=self.base,
            dim=self.dim,
            complete=self.complete,
            ids=[r for r in self.ids if r is not None],
            blobs=[b for b in self.blobs if b is not None],
            senders=self.senders,
            vectors=self.vectors,
            has_vec=self.has_vec,
            numeric=self.numeric,
            nterms=self.nterms,
            bm25=self.bm25,
        )

    def put(self, rid: str, text: str, metadata: dict[str, Any], vector: np.ndarray | None) -> None:
        """Insert or replace one active row. A vector of another dimension than the scope's is
        kept as missing (the host answers the vector leg for this scope)."""
        self.remove(rid)
        self.version += 1
        blob = pack_metadata(metadata)
        if vector is not None and self.dim == 0:
            self._set_dim(int(vector.shape[0]))
        ok = vector is not None and self.dim > 0 and vector.shape[0] == self.dim
        i = len(self.ids)
        self._grow(i + 1)
        self.missing += not ok
        self.ids.append(rid)
        self.blobs.append(blob)
        self.senders.append(metadata.get("sender_id"))
        self.pos[rid] = i
        self.has_vec[i] = ok
        if ok:
            self.vectors[i] = vector
        self.numeric[i] = numeric_row(metadata)
        evicted = self.bm25.add(rid, text)
        self.nterms[i] = self.bm25.term_count(rid)
        self.nbytes += self._row_size(i)
        for gone in evicted:  # past max_docs the oldest rows leave: the scope is no longer whole
            self._drop_slot(gone)
            self.complete = False

    def set_vector(self, rid: str, vector: np.ndarray) -> bool:
        """Give a held row the vector it was stored without."""
        i = self.pos.get(rid)
        if i is None:
            return False
        if self.dim == 0 and self.missing == len(self.pos):
            self._set_dim(int(vector.shape[0]))
        if vector.shape[0] != self.dim:
            return False
        self.vectors[i] = vector
        self.missing -= not self.has_vec[i]
        self.has_vec[i] = True
        self.version += 1
        return True

    def _set_dim(self, dim: int) -> None:
        self.dim = dim
        self.vectors = np.zeros((self.has_vec.shape[0], dim), dtype=np.float16)

    def remove(self, rid: str) -> bool:
        if rid not in self.pos:
            return False
        self.bm25.remove(rid)
        self._drop_slot(rid)
        self.version += 1
        return True

    def _drop_slot(self, rid: str) -> None:
        i = self.pos.get(rid)
        if i is None:
            return
        self.nbytes -= self._row_size(i)
        del self.pos[rid]
        self.ids[i] = None
        self.blobs[i] = None
        self.senders[i] = None
        self.missing -= not self.has_vec[i]
        self.has_vec[i] = False
        if len(self.ids) > 64 and len(self.pos) < len(self.ids) // 2:
            self._compact()

    def _row_size(self, i: int) -> int:
        """Estimated bytes the row in slot ``i`` costs beyond the arrays (metadata, slots, BM25 postings)."""
        return len(self.blobs[i] or b"") + _ROW_OVERHEAD + _TERM_BYTES * int(self.nterms[i])

    def _grow(self, n: int) -> None:
        cap = self.has_vec.shape[0]
        if n <= cap:
            return
        new = max(n, 2 * cap, 16)
        has = np.zeros(new, dtype=bool)
        has[:cap] = self.has_vec
        num = np.full((new, len(NUMERIC)), np.nan)
        num[:cap] = self.numeric
        nt = np.zeros(new, dtype=np.int32)
        nt[:cap] = self.nterms
        self.has_vec, self.numeric, self.nterms = has, num, nt
        if self.dim:
            vec = np.zeros((new, self.dim), dtype=np.float16)
            vec[: self.vectors.shape[0]] = self.vectors
            self.vectors = vec

    def _compact(self) -> None:
        keep = [i for i, rid in enumerate(self.ids) if rid is not None]
        self.ids = [self.ids[i] for i in keep]
        self.blobs = [self.blobs[i] for i in keep]
        self.senders = [self.senders[i] for i in keep]
        self.has_vec = self.has_vec[keep].copy()
        self.numeric = self.numeric[keep].copy()
        self.nterms = self.nterms[keep].copy()
        if self.dim:
            self.vectors = self.vectors[keep].copy()
        self.pos = {rid: n for n, rid in enumerate(self.ids) if rid is not None}

    # -------------------------------------------------------------- queries (no I/O)
    def _accept(self, rid: str, conditions: list[tuple[str, str, Any]]) -> dict[str, Any] | None:
        md = self.metadata(rid)
        return md if md is not None and matches_conditions(md, conditions) else None

    def _prefilter(self, where: dict[str, Any]) -> np.ndarray:
        """Slots that may match ``where``: live, with a vector, and passing the numeric and sender
        conditions (a superset of what :func:`matches` accepts; it has the final word)."""
        n = len(self.ids)
        mask = self.has_vec[:n].copy()
        for fname, op, val in filter_conditions(where):
            if fname in NUMERIC and op in ("$gt", "$gte", "$lt", "$lte") and isinstance(val, (int, float)):
                col = self.numeric[:n, NUMERIC.index(fname)]
                with np.errstate(invalid="ignore"):
                    mask &= {"$gt": col > val, "$gte": col >= val, "$lt": col < val, "$lte": col <= val}[op]
            elif fname == "sender_id" and op == "$eq":
                mask &= np.fromiter((s is not None and s == val for s in self.senders), dtype=bool, count=n)
        return mask

    def vector_search(self, query: Sequence[float], top_k: int, where: dict[str, Any]) -> list[Row] | None:
        """The ``top_k`` rows nearest ``query`` (cosine of float16 vectors) among those matching
        ``where``, best first; None when this scope cannot answer (see :attr:`vector_ready`)."""
        q = np.asarray(query, dtype=np.float32)
        if not self.vector_ready or not self.holds(where):
            return None
        if not self.pos:
            return []
        if q.shape != (self.dim,):
            return None
        slots = np.flatnonzero(self._prefilter(where))
        if not slots.size or top_k <= 0:
            return []
        sims = self.vectors[slots].astype(np.float32) @ q
        out: list[Row] = []
        conditions = filter_conditions(where)
        order = np.argsort(-sims, kind="stable")
        for j in order:
            rid = self.ids[int(slots[j])]
            md = self._accept(rid, conditions) if rid is not None else None
            if md is not None:
                out.append((rid, float(sims[j]), md))
                if len(out) >= top_k:
                    break
        return out

    def lexical_search(self, query: str, top_k: int, where: dict[str, Any]) -> list[Row]:
        """The best BM25 rows matching ``where`` among the index's ``3 * top_k`` best (the caller
        checks :meth:`holds` first: rows this index does not hold cannot be returned)."""
        out: list[Row] = []
        conditions = filter_conditions(where)
        for rid, score in self.bm25.search(query, top_k * 3):
            md = self._accept(rid, conditions)
            if md is not None:
                out.append((rid, score, md))
                if len(out) >= top_k:
                    break
        return out

    def lexical_scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        return self.bm25.scores(query, ids)

    def matching_ids(self, where: dict[str, Any]) -> list[str]:
        """The held rows matching ``where``, newest first by (stored timestamp, id)."""
        keyed = []
        conditions = filter_conditions(where)
        for rid, i in self.pos.items():
            md = unpack_metadata(self.blobs[i])  # type: ignore[arg-type]
            if matches_conditions(md, conditions):
                keyed.append((str(md.get("timestamp") or ""), rid))
        keyed.sort(reverse=True)
        return [rid for _, rid in keyed]


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
    ) -> None:
        self.vectors = vectors
        self.background = background or Background()  # where refreshes, fills and snapshots run
        self.budget_bytes = budget_bytes
        self.ttl = ttl
        self.max_docs = max_docs
        self._scopes: OrderedDict[tuple[str, str], ScopeIndex] = OrderedDict()
        self._builds: dict[tuple[str, str], _Build] = {}
        self._refresh: dict[tuple[str, str], _Build] = {}
        self._fills: dict[tuple[str, str], asyncio.Future[None]] = {}
        self.clock: Callable[[], float] = time.monotonic
        self.wall: Callable[[], float] = time.time
        self.builds = 0  # counters for diagnostics and benchmarks
        self.evictions = 0
        # snapshots in plugin storage (see index_snapshot): the stamp this process last set or read
        # per scope (None: unknown, no snapshot is written until the next write moves it), writes
        # in flight, scopes whose write outcome was unknown, scopes waiting for a snapshot write
        self.snapshots = index_snapshot.SnapshotStore(kv) if kv is not None else None
        self.snapshot_delay = 2.0  # seconds after the last change: a burst of writes costs one snapshot
        self.snapshot_counts = {"read": 0, "used": 0, "written": 0, "discarded": 0, "failed": 0, "rejected": 0}
        self._rejected: set[tuple[tuple[str, str], str]] = set()  # malformed snapshots already logged
        self._stamps: dict[tuple[str, str], str | None] = {}
        self._generation: dict[tuple[str, str], int] = {}
        self._writes: dict[tuple[str, str], int] = {}
        self._bumps: dict[tuple[str, str], int] = {}
        self._overlap: set[tuple[str, str]] = set()
        self._tainted: set[tuple[str, str]] = set()
        self._pending: set[tuple[str, str]] = set()
        self._void: set[tuple[str, str]] = set()  # stored copy voided by a write, not yet replaced
        self._written: dict[tuple[str, str], tuple[str, int, int]] = {}
        self._flush_job: asyncio.Future[int] | None = None
        self._flush_lock = asyncio.Lock()  # one flush at a time (see flush_snapshots)

    def configure(self, *, budget_bytes: int, ttl: float, max_docs: int) -> None:
        """Apply the current settings (read per call: the host may change them live)."""
        self.budget_bytes, self.ttl, self.max_docs = budget_bytes, ttl, max_docs
        self._enforce_budget(None)

    # -------------------------------------------------------------- reads
    async def get(
        self, collection: str, user_key: str, embed: Callable[[list[str]], Awaitable[list[list[float]]]] | None = None
    ) -> ScopeIndex:
        """The scope's index, built on first use (concurrent callers share one build). ``embed``
        fills, in the background and bounded, the vectors of rows stored without one."""
        key = (collection, user_key)
        idx = self._scopes.get(key)
        if idx is not None:
            self._scopes.move_to_end(key)
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
            self._fill_later(key, idx, embed)
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
        old, new, w = self._scopes[key], task.result(), self._written.get(key)
        if w is not None and w[1:] == (id(old), old.version) and old.same_rows(new):
            self._written[key] = (w[0], id(new), new.version)  # the stored copy still holds these rows
        self._install(key, new, build)

    def _install(self, key: tuple[str, str], idx: ScopeIndex, build: _Build | None = None) -> None:
        self._scopes[key] = idx
        self._scopes.move_to_end(key)
        self._enforce_budget(key)
        if build is not None and build.generation == self._generation.get(key, 0) and not self._writes.get(key):
            self._stamps[key] = idx.stamp  # no write of this process since the stamp was read
        if idx.from_snapshot:
            self._written[key] = (idx.stamp or "", id(idx), idx.version)  # storage holds this already
        else:
            self._schedule(key)

    async def _build(self, key: tuple[str, str], *, snapshot: bool = True) -> ScopeIndex:
        """The scope's index: from its snapshot in storage when one is valid (``snapshot``), else
        from the host (a refresh always reads the host: it is what picks up other writers)."""
        stamp: str | None = None
        if self.snapshots is not None and (not snapshot or self.snapshots.known_absent(*key)):
            # nothing to load: the stamp (the tag of the snapshot to write) is read with the host's list
            stamp, idx = await asyncio.gather(self._read_stamp(key), self._build_from_host(key))
            idx.stamp = stamp
            return idx
        if self.snapshots is not None:
            raw: bytes | None = None
            try:
                stamp, raw = await self.snapshots.read(*key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the snapshot is a cache: the host answers instead
                log.warning("recall snapshot of %s/%s could not be read: %s", *key, exc)
                stamp, raw = None, None
            loaded = self._loaded(key, raw, stamp)
            self.snapshot_counts["read"] += 1
            if loaded is not None and stamp is not None:
                self.snapshot_counts["used"] += 1
                idx = ScopeIndex.of_snapshot(*key, loaded, stamp)
                # its age counts from when its content was read from the host: the TTL refresh applies
                idx.built_at = self.clock() - max(0.0, self.wall() - loaded.base)
                log.debug("recall index of %s/%s loaded from its snapshot: %d rows", *key, len(idx))
                return idx
        idx = await self._build_from_host(key)
        idx.stamp = stamp
        return idx

    def _loaded(self, key: tuple[str, str], raw: bytes | None, stamp: str | None) -> index_snapshot.Loaded | None:
        """The stored snapshot when it decodes completely and consistently for ``stamp``; else None
        (the host is listed and the next flush replaces the value). A malformed one is logged once
        per scope and stamp: it is a fault, where a snapshot of an older stamp is routine."""
        if not raw or stamp is None:
            return None
        try:
            return index_snapshot.load(raw, *key, stamp, self.max_docs)
        except index_snapshot.Rejected as exc:
            if exc.stale:
                log.debug("recall snapshot of %s/%s is older than its stamp: rebuilt from the host", *key)
            elif (key, stamp) not in self._rejected:
                self._rejected.add((key, stamp))
                self.snapshot_counts["rejected"] += 1
                log.warning("recall snapshot of %s/%s ignored (%s): rebuilt from the host", *key, exc)
            return None

    async def _read_stamp(self, key: tuple[str, str]) -> str | None:
        assert self.snapshots is not None
        try:
            return await self.snapshots.read_stamp(*key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # unknown stamp: this build is not snapshotted
            log.warning("recall snapshot stamp of %s/%s could not be read: %s", *key, exc)
            return None

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

    def _fill_later(
        self, key: tuple[str, str], idx: ScopeIndex, embed: Callable[[list[str]], Awaitable[list[list[float]]]]
    ) -> None:
        missing = idx.missing_vectors()[: self.max_docs]
        if not missing or key in self._fills:
            return

        async def fill() -> None:
            for i in range(0, len(missing), 64):
                batch = [(rid, idx.metadata(rid)) for rid in missing[i : i + 64]]
                batch = [(rid, md) for rid, md in batch if md is not None]
                if not batch:
                    continue
                vecs = await embed([str(md.get("text") or "") for _, md in batch])
                for (rid, md), v in zip(batch, vecs, strict=True):
                    now = idx.metadata(rid)  # still the same row: a write meanwhile carried its own vector
                    if now is not None and now.get("content_hash") == md.get("content_hash"):
                        idx.set_vector(rid, np.asarray(v, dtype=np.float16))

        task = self._fills[key] = self.background.submit(("recall-fill", key), fill, interruptible=True)
        task.add_done_callback(lambda t, key=key: self._filled(key, t))

    def _filled(self, key: tuple[str, str], task: asyncio.Future[None]) -> None:
        self._fills.pop(key, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("re-embedding rows stored without a vector failed: %s", task.exception())

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
            if self.snapshots is not None:
                await self._bump(key)
                self._void.add(key)
            try:
                yield
            except BaseException:
                self._tainted.add(key)
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

    async def _bump(self, key: tuple[str, str]) -> None:
        assert self.snapshots is not None
        if self._bumps.get(key):
            self._overlap.add(key)  # two bumps in flight: which token the store keeps is unknown
        self._bumps[key] = self._bumps.get(key, 0) + 1
        token: str | None = None
        try:
            token = await self.snapshots.bump(*key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("recall snapshot stamp of %s/%s could not be moved: %s", *key, exc)
            raise BackendError(f"recall snapshot stamp: {exc}", key="error.backend", what="storage write") from exc
        finally:
            self._bumps[key] -= 1
            overlapped = key in self._overlap
            if not self._bumps[key]:
                del self._bumps[key]
                self._overlap.discard(key)
            self._stamps[key] = None if token is None or overlapped else token
        self._tainted.discard(key)

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
            self._enforce_budget(key)
        else:
            idx.remove(rid)

    def on_delete(self, collection: str, user_key: str, rid: str) -> None:
        key = (collection, user_key)
        self._touch(key)
        idx = self._scopes.get(key)
        if idx is not None:
            idx.remove(rid)

    def invalidate(self, collection: str, user_key: str | None = None) -> None:
        """Drop the scope (every scope of the collection without ``user_key``, whose snapshots are
        then deleted from storage in the background: its knowledge base is gone): the next read
        rebuilds."""
        for key in [*self._scopes, *self._builds, *self._refresh]:
            if key[0] == collection and (user_key is None or key[1] == user_key):
                self._touch(key)
                self._scopes.pop(key, None)
        if user_key is not None:
            self._schedule((collection, user_key))  # its snapshot may hold rows that changed: discarded
        elif self.snapshots is not None:
            for key in [k for k in self._stamps if k[0] == collection]:
                self._stamps[key] = None
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to run it on
                asyncio.get_running_loop()
                snapshots = self.snapshots
                task = self.background.submit(
                    ("recall-drop", collection), lambda: snapshots.drop_collection(collection)
                )
                task.add_done_callback(self._logged("dropping the recall snapshots of a knowledge base"))

    # -------------------------------------------------------------- snapshots in storage
    def _schedule(self, key: tuple[str, str]) -> None:
        """Write (or discard) the scope's snapshot a little later, in the background."""
        if self.snapshots is None:
            return
        self._pending.add(key)
        self._arm()

    def _arm(self) -> None:
        if self._flush_job is not None and not self._flush_job.done():
            return  # a flush is due, or running (it arms the next one for keys added meanwhile)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        job = self._flush_job = self.background.submit(
            "recall-snapshots", self._flush_pending, delay=max(0.0, self.snapshot_delay)
        )
        job.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Future[int]) -> None:
        self._logged("writing recall snapshots")(task)
        if self._flush_job is task:
            self._flush_job = None
        if self._pending:
            self._arm()

    @staticmethod
    def _logged(what: str) -> Callable[[asyncio.Task[Any]], None]:
        def done(task: asyncio.Task[Any]) -> None:
            if not task.cancelled() and task.exception() is not None:
                log.warning("%s failed: %s", what, task.exception())

        return done

    async def flush_snapshots(self) -> int:
        """Write the snapshot of every scope changed since the last flush, now (normally run
        :attr:`snapshot_delay` seconds after a change). Failures are logged, never raised: the
        snapshot is a cache. A scope with a write or build in flight waits for its end (a copy a
        write voided is deleted at once). Flushes run one at a time: one that starts while another
        runs waits for it, so when it returns every change before it started has been flushed.
        Returns the number of snapshots written."""
        if self._flush_job is not None:
            self.background.cancel_queued(self._flush_job)  # due but not running: this call writes it
        return await self._flush_pending()

    async def _flush_pending(self) -> int:
        async with self._flush_lock:
            keys, written = list(self._pending), 0
            self._pending.clear()
            for key in keys:
                if self.snapshots is None:
                    break
                try:
                    written += await self._flush_one(key)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.snapshot_counts["failed"] += 1
                    if is_connection_lost(exc):  # a restart of the plugin: the next instance builds its own
                        log.info("recall snapshots not written: the host connection is closed (%s)", exc)
                        break
                    log.warning("recall snapshot of %s/%s not written: %s", *key, exc)
            return written

    async def _flush_one(self, key: tuple[str, str]) -> int:
        assert self.snapshots is not None
        if self._writes.get(key) or key in self._builds or key in self._refresh:
            # no new copy while a write or build runs (it schedules the scope again when it ends),
            # but a copy a write voided goes now: its text must not outlast this flush
            if key in self._void:
                await self._discard(key)
            return 0
        idx, stamp = self._scopes.get(key), self._stamps.get(key)
        if idx is not None and stamp is not None and key not in self._tainted and idx.only_active:
            if self._written.get(key) == (stamp, id(idx), idx.version):
                return 0
            value = idx.snapshot(stamp)  # taken synchronously: the content matches ``stamp``
            if len(value) <= index_snapshot.MAX_BYTES:
                self._written[key] = (stamp, id(idx), idx.version)
                self._void.discard(key)
                await self.snapshots.write(*key, value)
                self.snapshot_counts["written"] += 1
                return 1
        if key in self._void:  # a write of this process voided the stored copy: delete what it holds
            await self._discard(key)
        return 0

    async def _discard(self, key: tuple[str, str]) -> None:
        assert self.snapshots is not None
        self._void.discard(key)
        self._written.pop(key, None)
        try:
            await self.snapshots.discard(*key)
        except BaseException:
            self._void.add(key)  # still stored: the next flush of the scope tries again
            raise
        self.snapshot_counts["discarded"] += 1

    # -------------------------------------------------------------- budget
    @property
    def nbytes(self) -> int:
        return sum(i.bytes for i in self._scopes.values())

    def held(self) -> list[tuple[str, str]]:
        return list(self._scopes)

    def rows_held(self) -> int:
        """Rows held over every scope's index (for diagnostics and benchmarks)."""
        return sum(len(i) for i in self._scopes.values())

    def _enforce_budget(self, keep: tuple[str, str] | None) -> None:
        total = self.nbytes
        while total > self.budget_bytes and self._scopes:
            key = next(iter(self._scopes))
            if key == keep:
                if len(self._scopes) == 1:
                    break
                self._scopes.move_to_end(key)
                continue
            total -= self._scopes.pop(key).bytes
            self.evictions += 1
