"""The memory knowledge bases of an installation: their creation settings, and the scope of a chat.

A memory KB is registered when the host creates it through the knowledge-base engine
(plugin storage ``kb/<kb id>`` holds its :class:`KbSettings`); its isolation decides how a chat's
scope is derived (:func:`ltm.domain.scope.derive_scope`) and its embedding model which embedder
writes and searches its vectors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..domain.errors import ScopeError, ValidationError
from ..domain.scope import Scope, derive_scope
from ..ports import Embedder, Reranker
from .settings import KbSettings, Settings
from .writes import Actor, WriteEngine, backend

log = logging.getLogger(__name__)

KB_PREFIX = "kb/"

EmbedderFor = Callable[[str, KbSettings], Embedder]
RerankerFor = Callable[[str, KbSettings], Reranker]


class KbRegistry:
    def __init__(
        self,
        writes: WriteEngine,
        embedder_for: EmbedderFor,
        settings: Callable[[], Settings],
        reranker_for: RerankerFor | None = None,
    ) -> None:
        self.writes = writes
        self.embedder_for = embedder_for
        self.reranker_for = reranker_for
        self._settings = settings
        self._kb_cache: dict[str, KbSettings | None] = {}
        self._kb_ids: tuple[float, list[str]] | None = None  # (read at, registered KB ids)

    async def register_kb(self, kb_id: str, creation: dict[str, Any] | None) -> KbSettings:
        if not kb_id:
            raise ValidationError("knowledge base id required", key="error.kb_missing")
        kb = KbSettings.from_creation(kb_id, creation)
        async with self.writes.locks.hold("install"):
            await self.writes.kv.set(KB_PREFIX + kb_id, json.dumps(kb.to_dict()).encode())
            self._kb_cache[kb_id] = kb
            self._kb_ids = None
        log.info("memory knowledge base registered: %s (isolation=%s)", kb_id, kb.isolation)
        return kb

    async def unregister_kb(self, kb_id: str) -> None:
        """The host deleted the KB: forget its settings, its recall index, its fences, its vectors."""
        async with self.writes.locks.hold("install"):
            await self.writes.kv.delete(KB_PREFIX + kb_id)
            self._kb_cache.pop(kb_id, None)
            self._kb_ids = None
        self.writes.index.invalidate(kb_id)
        await self.writes.clear_kb_fences(kb_id, Actor(surface="engine"), reason="knowledge base deleted")
        try:
            await self.writes.vectors.drop_collection(kb_id)
        except Exception as exc:  # the host may already have removed the KB row
            log.warning("dropping vectors of deleted knowledge base %s failed: %s", kb_id, exc)
        log.info("memory knowledge base unregistered: %s", kb_id)

    async def kb_settings(self, kb_id: str) -> KbSettings | None:
        if not kb_id:
            return None
        if kb_id in self._kb_cache:
            return self._kb_cache[kb_id]
        raw = await backend(self.writes.kv.get(KB_PREFIX + kb_id), "storage read")
        kb = KbSettings.from_creation(kb_id, json.loads(raw)) if raw else None
        self._kb_cache[kb_id] = kb
        return kb

    async def known_kbs(self) -> list[str]:
        """The registered memory KBs. The host lists every storage key of the plugin at once, so the
        list is kept (registering and removing through this process update it; re-read after the
        recall index's TTL for KBs another process registered)."""
        index = self.writes.index
        now = index.clock()
        if self._kb_ids is None or now - self._kb_ids[0] > index.ttl:
            ids = sorted(k[len(KB_PREFIX) :] for k in await self.writes.kv.keys(KB_PREFIX))
            self._kb_ids = (now, ids)
        return list(self._kb_ids[1])

    async def resolve_kb(self, pipeline_kbs: Sequence[str] = ()) -> str:
        """The memory KB for a query: the first of ours on the pipeline, else the configured one,
        else the only one registered. Empty string when there is none (profiles still work)."""
        for kb in pipeline_kbs:
            if await self.kb_settings(str(kb)):
                return str(kb)
        configured = self._settings().memory_kb
        if configured and await self.kb_settings(configured):
            return configured
        known = await self.known_kbs()
        return known[0] if len(known) == 1 else ""

    async def scope_for(
        self,
        *,
        kb_id: str,
        session_name: str | None = None,
        launcher_type: str | None = None,
        launcher_id: str | None = None,
        bot_uuid: str | None = None,
        sender_id: str | None = None,
    ) -> Scope:
        kb = await self.kb_settings(kb_id) if kb_id else None
        return derive_scope(
            session_name=session_name,
            launcher_type=launcher_type,
            launcher_id=launcher_id,
            bot_uuid=bot_uuid,
            isolation=kb.isolation if kb else "session",
            collection=kb_id if kb else "",
            sender_id=sender_id,
        )

    async def embedder(self, scope: Scope) -> Embedder:
        """The embedder of the scope's memory knowledge base (its embedding model)."""
        kb = await self.kb_settings(scope.collection)
        if kb is None:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")
        return self.embedder_for(scope.collection, kb)
