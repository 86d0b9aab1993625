"""Vectors for held rows stored without one, embedded in the background, bounded.

A row written by an older build, an import or another process may carry no vector (or one of
another dimension). Until every active row of a scope has one, the scope's vector leg is answered by
the host; :class:`VectorFill` embeds the missing ones, 64 at a time, one fill per scope at a time,
and gives each to its row unless a write meanwhile replaced the row (it carried its own vector).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import numpy as np

from .background import Background
from .scope_index import ScopeIndex

log = logging.getLogger(__name__)

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
BATCH = 64


class VectorFill:
    """The background fills of one recall index's scopes."""

    def __init__(self, background: Background) -> None:
        self.background = background
        self._fills: dict[tuple[str, str], asyncio.Future[None]] = {}

    def later(self, key: tuple[str, str], idx: ScopeIndex, embed: Embed, max_docs: int) -> None:
        """Fill ``idx``'s missing vectors (at most ``max_docs``) in the background, unless a fill of
        the scope runs already."""
        missing = idx.missing_vectors()[:max_docs]
        if not missing or key in self._fills:
            return

        async def fill() -> None:
            for i in range(0, len(missing), BATCH):
                batch = [(rid, idx.metadata(rid)) for rid in missing[i : i + BATCH]]
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
