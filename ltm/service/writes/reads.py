"""The reader the verbs read episodes through: every read goes through the one scope filter."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...domain.filters import Criteria, scope_where
from ...domain.models import Episode
from ...domain.scope import Scope
from ...ports import VectorIndex
from .errors import backend, need_l2

LIST_PAGE = 200
ID_BATCH = 100  # ids per filter of a read by id


class Reader:
    """Episodes of one scope, page by page, from the installation's vector index (read at use:
    a restart in tests swaps the store)."""

    def __init__(self, vectors: Callable[[], VectorIndex]) -> None:
        self._vectors = vectors

    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """Matching episodes of this scope, page by page through the one scope filter (at most ``limit``)."""
        need_l2(scope)
        where = scope_where(scope, criteria)
        out: list[Episode] = []
        offset = 0
        while len(out) < limit:
            page = await backend(self._vectors().list(scope.collection, where, LIST_PAGE, offset), "vector list")
            out.extend(Episode.from_metadata(i.metadata, i.id) for i in page.items)
            if len(page.items) < LIST_PAGE:
                break
            offset += LIST_PAGE
        return out[:limit]

    async def fetch_ids(self, scope: Scope, ids: Sequence[str]) -> dict[str, Episode]:
        """The episodes of this scope among ``ids`` (any status), by id."""
        ids = list(ids)
        found: dict[str, Episode] = {}
        for i in range(0, len(ids), ID_BATCH):
            for e in await self.fetch(scope, Criteria(statuses=None, ids=tuple(ids[i : i + ID_BATCH]))):
                found[e.id] = e
        return found
