"""The active rows of one scope, held in the plugin process for recall: a row store with no I/O.

Per scope (collection, user key) a :class:`ScopeIndex` holds what ranking needs of the scope's
**active** rows:

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
no vector answer: the caller asks the host's vector search instead.

Which scopes are held, how they are built, kept current and stored is :mod:`.recall_index`'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain.filters import filter_conditions, matches_conditions
from ..domain.lexical import BM25Index
from ..domain.refs import RefTable
from . import index_snapshot
from .row_codec import NUMERIC, VECTOR_KEY, decode_vector, numeric_row, pack_metadata, unpack_metadata

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
    # told when the index grew by itself (a reference table built, a vector filled in): the
    # recall index that holds it keeps its byte budget's running total exact
    on_grow: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def _grew(self) -> None:
        if self.on_grow is not None:
            self.on_grow()

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
        grew = False
        if audience is None:
            if self.ref_table is None:
                self.ref_table, grew = RefTable(self.pos.keys()), True
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
                self.reader_refs[key], grew = table, True
        if grew:
            self._grew()
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
        self._grew()
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
        self.version += 1  # the slots moved: what was read by slot (a scan, the gist's tables) is void

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

    def vector_search(
        self,
        query: Sequence[float],
        top_k: int,
        where: dict[str, Any],
        scan: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> list[Row] | None:
        """The ``top_k`` rows nearest ``query`` (cosine of float16 vectors) among those matching
        ``where``, best first; None when this scope cannot answer (see :attr:`vector_ready`).
        ``scan``: when given, receives the scanned slots and their similarities (a superset of
        the rows ``where`` selects; the session gist reads them instead of scanning again)."""
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
        if scan is not None:
            scan.append((slots, sims))
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
