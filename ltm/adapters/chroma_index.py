"""A :class:`~ltm.ports.VectorIndex` on a real local Chroma (``chromadb`` 1.5.x).

Offline rules (see shared/reference/embedded-backends.md): collections are created with
``embedding_function=None`` and every call passes vectors explicitly (``embeddings=`` /
``query_embeddings=``), so Chroma's default ONNX embedder is never loaded.

Chroma semantics this adapter papers over:

- ``upsert`` *merges* metadata into an existing record and ``None`` deletes a key (measured on
  1.5.9). The port promises replacement, so keys the old record had and the new one lacks are sent
  as ``None``.
- Collection names are limited to 3-63 characters of ``[a-zA-Z0-9._-]``: ids are mapped with
  :func:`ltm.adapters._common.physical_name`; the original id is kept in the collection metadata.
- Batches above ``max_batch_size`` (5,461 on 1.5.9) are rejected: writes are split.
- The HNSW space is set to cosine; if a collection was created with another space, distances are
  converted with that space's formula (vectors are expected L2-normalised).

``list`` pages with ``get(where, limit, offset)``. Chroma returns records in internal insertion
order (a re-upserted id keeps its place; deletes do not reorder the rest), which is stable across
pages as long as nothing is inserted concurrently. ``total`` is exact: a filtered ``get`` of ids.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import chromadb
import chromadb.errors

from ..ports import ListPage, VectorHit, VectorItem, VectorRecord
from ._common import ThreadedIndex, as_float_list, batched, clean_metadata, physical_name

logger = logging.getLogger(__name__)

MAX_BATCH = 5000  # below chromadb's max_batch_size (5,461 on 1.5.9)


def similarity_from_distance(distance: float, space: str) -> float:
    """Cosine-like similarity from a Chroma distance (vectors L2-normalised)."""
    if space == "l2":  # squared L2: |a-b|^2 = 2 - 2cos
        return 1.0 - distance / 2.0
    return 1.0 - distance  # cosine: 1 - cos ; ip: 1 - <a,b>


class ChromaIndex(ThreadedIndex):
    """Chroma-backed index: ``PersistentClient(path)``, or the process-wide in-memory store when
    ``path`` is ``None`` (Chroma's ``EphemeralClient``s share one store per process, so callers
    must use distinct collection ids)."""

    name = "chroma"
    keeps_metadata = True  # an engine the plugin drives itself: no backend probe needed

    def __init__(self, path: str | None = None, *, batch_size: int = MAX_BATCH) -> None:
        self.path = path
        self._client = chromadb.PersistentClient(path=path) if path else chromadb.EphemeralClient()
        limit = self._client.get_max_batch_size()
        self._batch = max(1, min(batch_size, limit))
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- collections ----------------------------------------------------------------------

    def _open(self, collection: str, create: bool) -> Any | None:
        cname = physical_name(collection)
        with self._lock:
            col = self._cache.get(cname)
            if col is not None:
                return col
            if create:
                col = self._client.get_or_create_collection(
                    cname,
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"ltm_collection": collection},
                )
            else:
                try:
                    col = self._client.get_collection(cname, embedding_function=None)
                except chromadb.errors.NotFoundError:
                    return None
            self._cache[cname] = col
            return col

    @staticmethod
    def _space(col: Any) -> str:
        try:
            return str(col.configuration_json["hnsw"]["space"])
        except (KeyError, TypeError):
            return str((col.metadata or {}).get("hnsw:space", "l2"))

    # -- sync bodies (run in a worker thread) -------------------------------------------

    def _upsert_sync(self, collection: str, records: Sequence[VectorRecord]) -> None:
        col = self._open(collection, create=True)
        for batch in batched(records, self._batch):
            ids = [r.id for r in batch]
            if len(set(ids)) != len(ids):
                raise ValueError("duplicate ids in one upsert batch")
            metas = [clean_metadata(r.metadata) for r in batch]
            for rec, md in zip(batch, metas, strict=True):
                if not md:
                    raise ValueError(f"record {rec.id!r}: Chroma rejects empty metadata")
            previous = col.get(ids=ids, include=["metadatas"])
            old_by_id = dict(zip(previous["ids"], previous["metadatas"] or [], strict=False))
            for rid, md in zip(ids, metas, strict=True):
                for stale in set(old_by_id.get(rid) or {}) - set(md):
                    md[stale] = None  # Chroma merges on upsert; None removes the key
            col.upsert(
                ids=ids,
                embeddings=[as_float_list(r.vector) for r in batch],
                metadatas=metas,
                documents=[r.document or "" for r in batch],
            )

    def _search_sync(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        col = self._open(collection, create=False)
        if col is None or top_k <= 0:
            return []
        res = col.query(
            query_embeddings=[as_float_list(vector)],
            n_results=int(top_k),
            where=where or None,
            include=["metadatas", "distances"],
        )
        space = self._space(col)
        ids = res["ids"][0] if res["ids"] else []
        dists = res["distances"][0] if res.get("distances") else [0.0] * len(ids)
        metas = res["metadatas"][0] if res.get("metadatas") else [{}] * len(ids)
        return [
            VectorHit(
                id=i, metadata=dict(m or {}), similarity=similarity_from_distance(float(d), space), distance=float(d)
            )
            for i, d, m in zip(ids, dists, metas, strict=True)
        ]

    def _list_sync(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        col = self._open(collection, create=False)
        if col is None:
            return ListPage(items=[], total=0)
        if limit <= 0:
            items: list[VectorItem] = []
        else:
            res = col.get(
                where=where or None, limit=int(limit), offset=max(0, int(offset)), include=["metadatas", "documents"]
            )
            docs = res.get("documents") or [""] * len(res["ids"])
            metas = res.get("metadatas") or [{}] * len(res["ids"])
            items = [
                VectorItem(id=i, metadata=dict(m or {}), document=d or "")
                for i, m, d in zip(res["ids"], metas, docs, strict=True)
            ]
        total = len(col.get(where=where, include=[])["ids"]) if where else col.count()
        return ListPage(items=items, total=total)

    def _delete_sync(self, collection: str, where: dict[str, Any]) -> None:
        col = self._open(collection, create=False)
        if col is not None:
            col.delete(where=where)

    def _drop_sync(self, collection: str) -> None:
        cname = physical_name(collection)
        with self._lock:
            self._cache.pop(cname, None)
            try:
                self._client.delete_collection(cname)
            except chromadb.errors.NotFoundError:
                logger.debug("chroma: collection %s already absent", cname)
