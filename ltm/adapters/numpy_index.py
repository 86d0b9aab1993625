"""In-memory brute-force :class:`~ltm.ports.VectorIndex` over numpy.

Used as the fast unit-test backend and as the benchmark baseline. Filters follow
:func:`ltm.domain.filters.matches` exactly; they are evaluated column-wise (one numpy mask per
condition) over a snapshot that is rebuilt lazily after each write (O(n): about 0.3 s at 100k x 384,
paid by the first read after a write; a filtered top-5 then takes well under a millisecond). ``list`` returns records in
insertion order (re-upserting an id keeps its position) and an exact ``total``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain.filters import filter_conditions
from ..ports import ListPage, VectorHit, VectorItem, VectorRecord
from ._common import clean_metadata, require_where

logger = logging.getLogger(__name__)

_RANGE_OPS = ("$gt", "$gte", "$lt", "$lte")
_EMPTY = np.zeros(0, dtype=np.intp)


@dataclass
class _Row:
    vector: np.ndarray
    metadata: dict[str, Any]
    document: str


@dataclass
class _Column:
    values: list[Any]
    numeric: np.ndarray  # float64, NaN where absent / not a number / bool
    groups: dict[Any, np.ndarray] | None = None  # hashable value -> row indices (None values left out)

    def rows_equal_to(self, value: Any) -> np.ndarray:
        """Indices of rows whose value ``== value`` (Python equality, as in ``matches``)."""
        try:
            hash(value)
        except TypeError:
            return np.array([i for i, v in enumerate(self.values) if v is not None and v == value], dtype=np.intp)
        if self.groups is None:
            self.groups = _group(self.values)
        return self.groups.get(value, _EMPTY)


@dataclass
class _Snapshot:
    ids: list[str]
    matrix: np.ndarray  # float32, rows L2-normalised (zero rows stay zero)
    rows: list[_Row]
    columns: dict[str, _Column] = field(default_factory=dict)

    def column(self, name: str) -> _Column:
        col = self.columns.get(name)
        if col is None:
            col = _build_column([r.metadata.get(name) for r in self.rows])
            self.columns[name] = col
        return col


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _build_column(raw: list[Any]) -> _Column:
    numeric = np.fromiter((float(v) if _is_number(v) else np.nan for v in raw), dtype=np.float64, count=len(raw))
    return _Column(values=raw, numeric=numeric)


def _group(values: list[Any]) -> dict[Any, np.ndarray]:
    """Group row indices by value. Equal values share a group (``1 == 1.0 == True``), as ``==`` does."""
    groups: dict[Any, list[int]] = {}
    unhashable: list[int] = []
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            groups.setdefault(v, []).append(i)
        except TypeError:
            unhashable.append(i)
    if unhashable:
        logger.debug("numpy index: %d unhashable metadata values never match $eq/$in", len(unhashable))
    return {k: np.asarray(v, dtype=np.intp) for k, v in groups.items()}


def _equal(col: _Column, value: Any) -> np.ndarray:
    mask = np.zeros(len(col.values), dtype=bool)
    mask[col.rows_equal_to(value)] = True
    return mask


def _condition_mask(snap: _Snapshot, fname: str, op: str, val: Any) -> np.ndarray:
    col = snap.column(fname)
    if op == "$eq":
        return _equal(col, val)
    if op == "$ne":
        return ~_equal(col, val)
    if op in ("$in", "$nin"):
        hit = np.zeros(len(col.values), dtype=bool)
        for item in val:
            hit |= _equal(col, item)
        return hit if op == "$in" else ~hit
    if op in _RANGE_OPS:
        with np.errstate(invalid="ignore"):
            nums = col.numeric
            target = float(val)
            return {"$gt": nums > target, "$gte": nums >= target, "$lt": nums < target, "$lte": nums <= target}[op]
    raise ValueError(f"unsupported operator {op}")


def filter_mask(snap: _Snapshot, where: dict[str, Any] | None) -> np.ndarray:
    """Boolean mask of the rows matching ``where`` (``None``/empty matches every row)."""
    mask = np.ones(len(snap.ids), dtype=bool)
    if not where:
        return mask
    for fname, op, val in filter_conditions(where):
        mask &= _condition_mask(snap, fname, op, val)
        if not mask.any():
            break
    return mask


def _normalised(vector: Sequence[float]) -> np.ndarray:
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


class NumpyIndex:
    """Brute-force cosine index held in process memory (nothing persists)."""

    name = "numpy"
    keeps_metadata = True  # an engine the plugin drives itself: no backend probe needed

    def __init__(self) -> None:
        self._collections: dict[str, dict[str, _Row]] = {}
        self._snapshots: dict[str, _Snapshot] = {}

    # -- internals ------------------------------------------------------------------------

    def _snapshot(self, collection: str) -> _Snapshot | None:
        rows = self._collections.get(collection)
        if not rows:
            return None
        snap = self._snapshots.get(collection)
        if snap is None:
            ids = list(rows)
            row_list = [rows[i] for i in ids]
            matrix = np.vstack([r.vector for r in row_list]) if row_list else np.zeros((0, 0), np.float32)
            snap = _Snapshot(ids=ids, matrix=matrix, rows=row_list)
            self._snapshots[collection] = snap
        return snap

    def _touch(self, collection: str) -> None:
        self._snapshots.pop(collection, None)

    # -- VectorIndex ----------------------------------------------------------------------

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        rows = self._collections.setdefault(collection, {})
        dims = {len(r.vector) for r in records}
        if rows:
            dims.add(len(next(iter(rows.values())).vector))
        if len(dims) != 1:
            raise ValueError(f"vector dimensions differ within collection {collection!r}: {sorted(dims)}")
        for rec in records:
            rows[rec.id] = _Row(
                vector=_normalised(rec.vector), metadata=clean_metadata(rec.metadata), document=rec.document or ""
            )
        self._touch(collection)

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        snap = self._snapshot(collection)
        if snap is None or top_k <= 0:
            return []
        candidates = np.flatnonzero(filter_mask(snap, where))
        if candidates.size == 0:
            return []
        scores = snap.matrix[candidates] @ _normalised(vector)
        k = min(top_k, candidates.size)
        top = np.argpartition(-scores, k - 1)[:k] if k < candidates.size else np.arange(candidates.size)
        order = top[np.lexsort((candidates[top], -scores[top]))]
        hits = []
        for pos in order:
            row_idx = int(candidates[pos])
            sim = float(scores[pos])
            hits.append(
                VectorHit(
                    id=snap.ids[row_idx], metadata=dict(snap.rows[row_idx].metadata), similarity=sim, distance=1.0 - sim
                )
            )
        return hits

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        snap = self._snapshot(collection)
        if snap is None:
            return ListPage(items=[], total=0)
        matching = np.flatnonzero(filter_mask(snap, where))
        start = max(0, int(offset))
        page = matching[start : start + max(0, int(limit))]
        items = [
            VectorItem(id=snap.ids[i], metadata=dict(snap.rows[i].metadata), document=snap.rows[i].document)
            for i in page
        ]
        return ListPage(items=items, total=int(matching.size))

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        require_where(where, "delete")
        snap = self._snapshot(collection)
        if snap is None:
            return
        rows = self._collections[collection]
        for i in np.flatnonzero(filter_mask(snap, where)):
            rows.pop(snap.ids[i], None)
        self._touch(collection)

    async def drop_collection(self, collection: str) -> None:
        self._collections.pop(collection, None)
        self._touch(collection)

    # -- extras ---------------------------------------------------------------------------

    def count(self, collection: str) -> int:
        return len(self._collections.get(collection, {}))
