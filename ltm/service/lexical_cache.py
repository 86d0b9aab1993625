"""Per-scope lexical (BM25) indexes kept in the plugin process, bounded and updated on writes.

An index is built lazily on the first recall of a scope by paging the scope's active episodes
through the one filter builder, then kept in step by every write of this process. Only active
rows are indexed; a status change or delete removes the row. At most ``max_scopes`` indexes are
kept (least recently used evicted), each with at most ``max_docs`` rows (oldest evicted), so the
process never holds a whole large collection.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..domain.lexical import BM25Index
from ..domain.scope import Criteria, scope_filter
from ..ports import VectorIndex

log = logging.getLogger(__name__)

PAGE = 1000


@dataclass
class ScopeIndex:
    bm25: BM25Index
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)


class LexicalCache:
    def __init__(self, vectors: VectorIndex, *, max_scopes: int = 256) -> None:
        self._vectors = vectors
        self._max_scopes = max_scopes
        self._indexes: OrderedDict[tuple[str, str], ScopeIndex] = OrderedDict()

    async def get(self, collection: str, user_key: str, max_docs: int) -> ScopeIndex:
        key = (collection, user_key)
        idx = self._indexes.get(key)
        if idx is not None:
            self._indexes.move_to_end(key)
            return idx
        idx = ScopeIndex(bm25=BM25Index(max_docs=max_docs))
        where = scope_filter(user_key, Criteria())
        offset = 0
        rows: list[tuple[float, str, str, dict[str, Any]]] = []
        while True:
            page = await self._vectors.list(collection, where, PAGE, offset)
            for item in page.items:
                md = item.metadata
                rows.append((float(md.get("ts") or 0.0), item.id, str(md.get("text") or item.document), md))
            if len(page.items) < PAGE:
                break
            offset += PAGE
        rows.sort(key=lambda r: r[0])
        for _, rid, text, md in rows[-max_docs:]:
            self._add(idx, rid, text, md)
        self._indexes[key] = idx
        while len(self._indexes) > self._max_scopes:
            self._indexes.popitem(last=False)
        log.debug("lexical index built for %s/%s: %d rows", collection, user_key, len(idx.metadata))
        return idx

    @classmethod
    def transient(cls, rows: list[tuple[str, str, dict[str, Any]]], max_docs: int) -> ScopeIndex:
        """A one-off index over given ``(id, text, metadata)`` rows (an as-of recall, which also
        sees superseded rows; the cached indexes hold active rows only). Not cached."""
        idx = ScopeIndex(bm25=BM25Index(max_docs=max(1, max_docs)))
        for rid, text, md in rows[-max_docs:]:
            cls._add(idx, rid, text, md)
        return idx

    @staticmethod
    def _add(idx: ScopeIndex, rid: str, text: str, md: dict[str, Any]) -> None:
        evicted = idx.bm25.add(rid, text)
        idx.metadata[rid] = md
        for gone in evicted or ():
            idx.metadata.pop(gone, None)

    def on_upsert(self, collection: str, user_key: str, rid: str, text: str, md: dict[str, Any]) -> None:
        idx = self._indexes.get((collection, user_key))
        if idx is None:
            return
        if (md.get("status") or "active") == "active":
            if rid in idx.metadata:
                idx.bm25.remove(rid)
            self._add(idx, rid, text, md)
        else:
            self.on_delete(collection, user_key, rid)

    def on_delete(self, collection: str, user_key: str, rid: str) -> None:
        idx = self._indexes.get((collection, user_key))
        if idx is not None and rid in idx.metadata:
            idx.bm25.remove(rid)
            idx.metadata.pop(rid, None)

    def invalidate(self, collection: str, user_key: str | None = None) -> None:
        for key in list(self._indexes):
            if key[0] == collection and (user_key is None or key[1] == user_key):
                self._indexes.pop(key, None)
