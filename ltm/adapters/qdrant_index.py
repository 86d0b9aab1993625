"""A :class:`~ltm.ports.VectorIndex` on ``qdrant-client`` (local mode, or any ``QdrantClient``).

Local mode (``QdrantClient(path=...)`` / ``":memory:"``) is a pure-Python brute force: it stands in
for a Qdrant server in tests; the scale path is a real server (pass ``client=``).

Offline rules: never ``add()``/``query()``/``models.Document`` (they need fastembed, which
downloads models); vectors are always given explicitly.

Mapping:

- Point ids must be integers or UUIDs: a point's id is ``uuid5(<namespace>, our id)``; our id is kept
  in the payload under ``_id`` and the document under ``_document`` (both stripped on read).
- Filters built by :func:`ltm.domain.filters.scope_filter` are flattened with
  :func:`ltm.domain.filters.filter_conditions` and translated: strings/bools ``$eq`` -> ``MatchValue``,
  numbers ``$eq`` -> ``Range(gte=v, lte=v)`` (ints and floats compare equal, as in ``matches``),
  ``$in`` -> ``MatchAny`` (or a nested ``should``), ``$ne``/``$nin`` -> ``must_not`` (so a record
  without the field passes, as in ``matches``), ``$gt/$gte/$lt/$lte`` -> ``Range``.
  Payload keys containing ``.`` would be read as nested paths by Qdrant: our metadata has none.
- Collections are created on first upsert with cosine distance; ``similarity = score``.
- ``list`` scrolls in point-id order (stable: ids are deterministic UUIDs) and pages by
  fetching ``offset + limit`` points and slicing. That is O(offset) per page: fine at the
  scale of one scope, not for deep paging over a server. ``total`` is an exact ``count``.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models

from ..domain.filters import filter_conditions
from ..ports import ListPage, VectorHit, VectorItem, VectorRecord
from ._common import ThreadedIndex, as_float_list, batched, clean_metadata, physical_name

logger = logging.getLogger(__name__)

ID_KEY = "_id"
DOC_KEY = "_document"
_RESERVED = (ID_KEY, DOC_KEY)
_POINT_NAMESPACE = uuid.UUID("6f1c0a4e-5b1d-5d8a-9a57-3c1f0e6b7d21")
_UPSERT_BATCH = 256


def point_id(record_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, record_id))


class _MatchesNothing(Exception):
    """The filter can match no record (e.g. ``$in`` with an empty list)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _eq_condition(key: str, value: Any) -> models.Condition:
    if _is_number(value):
        return models.FieldCondition(key=key, range=models.Range(gte=float(value), lte=float(value)))
    if isinstance(value, (str, bool)):
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))
    raise ValueError(f"unsupported filter value for {key!r}: {value!r}")


def _in_condition(key: str, values: Sequence[Any]) -> models.Condition:
    vals = list(values)
    if not vals:
        raise _MatchesNothing
    if all(isinstance(v, str) for v in vals) or all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return models.FieldCondition(key=key, match=models.MatchAny(any=vals))
    return models.Filter(should=[_eq_condition(key, v) for v in vals])


def _range_condition(key: str, op: str, value: Any) -> models.Condition:
    if not _is_number(value):
        raise ValueError(f"range filter on {key!r} needs a number, got {value!r}")
    bound = {op.lstrip("$"): float(value)}
    return models.FieldCondition(key=key, range=models.Range(**bound))


def to_qdrant_filter(where: dict[str, Any] | None) -> models.Filter | None:
    """Translate a ``scope_filter`` dict. Raises :class:`_MatchesNothing` for an impossible filter."""
    if not where:
        return None
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []
    for key, op, val in filter_conditions(where):
        if op == "$eq":
            must.append(_eq_condition(key, val))
        elif op == "$ne":
            must_not.append(_eq_condition(key, val))
        elif op == "$in":
            must.append(_in_condition(key, val))
        elif op == "$nin":
            if list(val):
                must_not.append(_in_condition(key, val))
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            must.append(_range_condition(key, op, val))
        else:
            raise ValueError(f"unsupported operator {op}")
    return models.Filter(must=must or None, must_not=must_not or None)


def _metadata_of(payload: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (payload or {}).items() if k not in _RESERVED}


class QdrantIndex(ThreadedIndex):
    """Qdrant-backed index. ``path=None`` keeps everything in memory."""

    name = "qdrant"
    keeps_metadata = True  # an engine the plugin drives itself: no backend probe needed

    def __init__(self, path: str | None = None, *, client: QdrantClient | None = None) -> None:
        self.path = path
        if client is not None:
            self._client = client
        elif path:
            self._client = QdrantClient(path=path)
        else:
            self._client = QdrantClient(location=":memory:")
        self._lock = threading.Lock()  # local mode is not thread-safe

    def close(self) -> None:
        with self._lock:
            self._client.close()

    # -- sync bodies (run in a worker thread under the lock) -----------------------------

    def _exists(self, cname: str) -> bool:
        return bool(self._client.collection_exists(cname))

    def _upsert_sync(self, collection: str, records: Sequence[VectorRecord]) -> None:
        cname = physical_name(collection)
        dims = {len(r.vector) for r in records}
        if len(dims) != 1:
            raise ValueError(f"vector dimensions differ within one upsert: {sorted(dims)}")
        with self._lock:
            if not self._exists(cname):
                self._client.create_collection(
                    cname, vectors_config=models.VectorParams(size=dims.pop(), distance=models.Distance.COSINE)
                )
            for batch in batched(records, _UPSERT_BATCH):
                points = [
                    models.PointStruct(
                        id=point_id(r.id),
                        vector=as_float_list(r.vector),
                        payload={**clean_metadata(r.metadata), ID_KEY: r.id, DOC_KEY: r.document or ""},
                    )
                    for r in batch
                ]
                self._client.upsert(cname, points=points, wait=True)

    def _search_sync(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        cname = physical_name(collection)
        try:
            flt = to_qdrant_filter(where)
        except _MatchesNothing:
            return []
        with self._lock:
            if top_k <= 0 or not self._exists(cname):
                return []
            res = self._client.query_points(
                cname, query=as_float_list(vector), query_filter=flt, limit=int(top_k), with_payload=True
            )
        return [
            VectorHit(
                id=str((p.payload or {}).get(ID_KEY, p.id)),
                metadata=_metadata_of(p.payload),
                similarity=float(p.score),
                distance=1.0 - float(p.score),
            )
            for p in res.points
        ]

    def _list_sync(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        cname = physical_name(collection)
        try:
            flt = to_qdrant_filter(where)
        except _MatchesNothing:
            return ListPage(items=[], total=0)
        start = max(0, int(offset))
        want = start + max(0, int(limit))
        with self._lock:
            if not self._exists(cname):
                return ListPage(items=[], total=0)
            points: list[Any] = []
            if want > start:
                points, _next = self._client.scroll(
                    cname, scroll_filter=flt, limit=want, with_payload=True, with_vectors=False
                )
            total = self._client.count(cname, count_filter=flt, exact=True).count
        items = [
            VectorItem(
                id=str((p.payload or {}).get(ID_KEY, p.id)),
                metadata=_metadata_of(p.payload),
                document=str((p.payload or {}).get(DOC_KEY) or ""),
            )
            for p in points[start:want]
        ]
        return ListPage(items=items, total=int(total))

    def _delete_sync(self, collection: str, where: dict[str, Any]) -> None:
        cname = physical_name(collection)
        try:
            flt = to_qdrant_filter(where)
        except _MatchesNothing:
            return
        with self._lock:
            if self._exists(cname):
                self._client.delete(cname, points_selector=models.FilterSelector(filter=flt), wait=True)

    def _drop_sync(self, collection: str) -> None:
        cname = physical_name(collection)
        with self._lock:
            if self._exists(cname):
                self._client.delete_collection(cname)
