"""A :class:`~ltm.ports.VectorIndex` over the LangBot host's vector API (plugin-wide SDK calls).

Host semantics followed here (shared/reference/langbot-host-4.11.md §4, measured on 4.11.2 with
its default embedded Chroma; SDK calls from shared/reference/langbot-plugin-sdk.md §4.1):

- The text is kept in ``metadata["text"]`` (search results carry no document) and is also passed
  as ``documents=`` (the host's full-text/hybrid search needs it).
- Filters are passed verbatim: :func:`ltm.domain.filters.scope_filter` already emits ``$and`` for
  several conditions and a bare condition for one (Chroma rejects two top-level keys).
- Search distances are raw engine distances. On the host's Chroma they are **squared L2** (its
  collections use Chroma's default space), so for L2-normalised vectors ``similarity = 1 - d/2``.
  ``distance="cosine"`` / ``"ip"`` use ``1 - d``.
- The host adds ``_langbot_instance_uuid`` / ``_langbot_workspace_uuid`` /
  ``_langbot_knowledge_base_uuid`` to every record's metadata: stripped on read.
- ``vector_delete`` counts are not trusted (``file_ids`` -> ``len(file_ids)``; ``filters`` on
  Chroma -> always 0): :meth:`delete` returns nothing, callers verify by reading back.
- Chroma's upsert *merges* metadata into an existing record (a key absent from the new metadata
  survives; ``None`` deletes it). Keys named in ``clear_keys`` that the new metadata lacks are
  therefore sent as ``None`` so a replaced record does not keep stale optional fields.
- Host errors (unknown knowledge base, bad filter...) arrive as
  ``langbot_plugin.entities.io.errors.ActionCallError`` and propagate: the service maps them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from langbot_plugin.entities.io.errors import ActionCallError

from ..domain.models import SCHEMA
from ..ports import ListPage, VectorHit, VectorItem, VectorRecord, note_host_call
from ._common import as_float_list, batched, clean_metadata, require_where

logger = logging.getLogger(__name__)

Distance = Literal["l2sq", "cosine", "ip"]
HOST_KEY_PREFIX = "_langbot_"
# Optional keys of Episode.to_metadata(): present only when set, so a replacement must clear them.
DEFAULT_CLEAR_KEYS: tuple[str, ...] = ("event_at", "valid_from", "valid_until", "extra")
UPSERT_BATCH = 256


def strip_host_keys(metadata: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (metadata or {}).items() if not str(k).startswith(HOST_KEY_PREFIX)}


def similarity_of(distance: float, metric: Distance) -> float:
    if metric == "l2sq":
        return 1.0 - distance / 2.0
    return 1.0 - distance


class HostVectorIndex:
    """Vectors stored in a LangBot knowledge base through ``plugin.vector_*``."""

    name = "host"

    def __init__(
        self,
        plugin: Any,
        *,
        distance: Distance = "l2sq",
        clear_keys: Sequence[str] = DEFAULT_CLEAR_KEYS,
        batch_size: int = UPSERT_BATCH,
    ) -> None:
        if distance not in ("l2sq", "cosine", "ip"):
            raise ValueError(f"unknown distance {distance!r}")
        self._plugin = plugin
        self.distance: Distance = distance
        self._clear_keys = tuple(clear_keys)
        self._batch = batch_size

    def _host_metadata(self, record: VectorRecord) -> dict[str, Any]:
        md = clean_metadata(record.metadata)
        if "text" not in md:
            md["text"] = record.document or ""
        for key in self._clear_keys:
            md.setdefault(key, None)
        return md

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        for batch in batched(list(records), self._batch):
            metas = [self._host_metadata(r) for r in batch]
            note_host_call()
            await self._plugin.vector_upsert(
                collection,
                [as_float_list(r.vector) for r in batch],
                [r.id for r in batch],
                metas,
                documents=[r.document or str(md.get("text") or "") for r, md in zip(batch, metas, strict=True)],
            )

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        if top_k <= 0:
            return []
        note_host_call()
        results = await self._plugin.vector_search(
            collection, as_float_list(vector), top_k=int(top_k), filters=where or None
        )
        hits = []
        for item in results or []:
            dist = float(item.get("distance") or 0.0)
            hits.append(
                VectorHit(
                    id=str(item["id"]),
                    metadata=strip_host_keys(item.get("metadata")),
                    similarity=similarity_of(dist, self.distance),
                    distance=dist,
                )
            )
        return hits

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        if limit <= 0:
            return ListPage(items=[], total=-1)
        note_host_call()
        res = await self._plugin.vector_list(collection, filters=where or None, limit=int(limit), offset=max(0, offset))
        items = []
        for item in res.get("items") or []:
            md = strip_host_keys(item.get("metadata"))
            items.append(
                VectorItem(id=str(item["id"]), metadata=md, document=item.get("document") or str(md.get("text") or ""))
            )
        total = res.get("total")
        return ListPage(items=items, total=int(total) if isinstance(total, int) else -1)

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        require_where(where, "delete")
        note_host_call()
        count = await self._plugin.vector_delete(collection, filters=where)
        logger.debug("host vector_delete returned %r (not trusted)", count)

    async def drop_collection(self, collection: str) -> None:
        """Best effort: the host has no drop; delete every record this plugin wrote."""
        try:
            note_host_call()
            await self._plugin.vector_delete(collection, filters={"schema": {"$eq": SCHEMA}})
        except ActionCallError as exc:
            logger.warning("drop_collection %s: host refused the delete (%s)", collection, exc)
