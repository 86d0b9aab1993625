"""The memory knowledge bases of an installation: their creation settings, and the scope of a chat.

A memory KB is registered when the host creates it through the knowledge-base engine
(plugin storage ``kb/<kb id>`` holds its :class:`KbSettings`); its isolation decides how a chat's
scope is derived (:func:`ltm.domain.scope.derive_scope`) and its embedding model which embedder
writes and searches its vectors.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..domain.backends import PROBE_VERSION
from ..domain.errors import ScopeError, ValidationError
from ..domain.scope import Scope, derive_scope
from ..ports import Embedder, Reranker
from .backend_probe import probe_backend
from .settings import KbSettings, Settings
from .writes.actor import Actor
from .writes.engine import WriteEngine
from .writes.errors import backend

log = logging.getLogger(__name__)

KB_PREFIX = "kb/"
PROBE_RETRY_S = 10.0  # an inconclusive backend probe is tried again on a use after this long

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
        self._probed: dict[str, float] = {}  # kb id -> when an inconclusive probe last ran
        self._probe_locks: dict[str, asyncio.Lock] = {}

    async def register_kb(self, kb_id: str, creation: dict[str, Any] | None) -> KbSettings:
        """Register a memory KB and probe its vector backend once (the verdict is stored with it).
        A backend that drops metadata (Milvus, pgvector, Valkey Search) is served through the
        sidecar (ltm/service/sidecar.py, ADR 0008): its scopes ride in file_id, its metadata in
        plugin storage."""
        if not kb_id:
            raise ValidationError("knowledge base id required", key="error.kb_missing")
        kb = replace(KbSettings.from_creation(kb_id, creation), backend="", metric="", probe=0)  # never the host's
        if kb.embedding_model:
            kb = await self._probed_kb(kb)
        async with self.writes.locks.hold("install"):
            await self.writes.kv.set(KB_PREFIX + kb_id, json.dumps(kb.to_dict()).encode())
            self._kb_cache[kb_id] = kb
            self._kb_ids = None
        self._adopt(kb)
        log.info("memory knowledge base registered: %s (isolation=%s, backend=%s)", kb_id, kb.isolation, kb.backend)
        return kb

    async def _probed_kb(self, kb: KbSettings) -> KbSettings:
        """``kb`` with what a probe found now (its verdict left as it was when inconclusive)."""
        self._probed[kb.kb_id] = time.monotonic()
        vectors = getattr(self.writes.vectors, "direct", self.writes.vectors)  # the store itself
        found = await probe_backend(vectors, self.embedder_for(kb.kb_id, kb), kb.kb_id, self.writes.readback_delays)
        if not found.verdict:
            return kb
        if kb.backend and kb.backend != found.verdict:
            log.error(
                "memory knowledge base %s: its backend was judged %s by an older probe and is %s: rows "
                "written before are not migrated",
                kb.kb_id,
                kb.backend,
                found.verdict,
            )
        return replace(kb, backend=found.verdict, metric=found.metric, probe=PROBE_VERSION)

    def _adopt(self, kb: KbSettings) -> None:
        """Hand the verdict to the vector store (the sidecar keeps the rows of a dropping backend)."""
        adopt = getattr(self.writes.vectors, "adopt_verdict", None)
        if callable(adopt):
            adopt(kb.kb_id, kb.backend, kb.metric)

    async def checked(self, kb: KbSettings) -> KbSettings:
        """``kb`` with its backend verdict: probed now when unknown or found by an older probe (once
        per :data:`PROBE_RETRY_S` while inconclusive) and stored; a KB registered before the probe
        existed, or marked unusable by the probe before ADR 0008, gets one too."""
        if (kb.backend and kb.probe >= PROBE_VERSION) or not kb.embedding_model:
            return kb
        lock = self._probe_locks.setdefault(kb.kb_id, asyncio.Lock())
        async with lock:
            current = self._kb_cache.get(kb.kb_id) or kb
            last = self._probed.get(kb.kb_id)
            if (current.backend and current.probe >= PROBE_VERSION) or (
                last is not None and time.monotonic() - last < PROBE_RETRY_S
            ):
                return current
            probed = await self._probed_kb(current)
            if probed == current:
                return current
            async with self.writes.locks.hold("install"):
                await self.writes.kv.set(KB_PREFIX + kb.kb_id, json.dumps(probed.to_dict()).encode())
                self._kb_cache[kb.kb_id] = probed
            self._adopt(probed)
            return probed

    async def require_usable(self, kb_id: str) -> KbSettings | None:
        """The KB's settings, its backend verdict checked (every verdict is usable: ADR 0008)."""
        kb = await self.kb_settings(kb_id)
        if kb is None:
            return None
        return await self.checked(kb)

    async def unregister_kb(self, kb_id: str) -> None:
        """The host deleted the KB: forget its settings, its recall index, its fences, its vectors."""
        async with self.writes.locks.hold("install"):
            await self.writes.kv.delete(KB_PREFIX + kb_id)
            self._kb_cache.pop(kb_id, None)
            self._kb_ids = None
        self.writes.index.invalidate(kb_id)
        await self.writes.fencing.clear_kb_fences(kb_id, Actor(surface="engine"), reason="knowledge base deleted")
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
        if kb is not None:
            self._adopt(kb)
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
        kb = await self.require_usable(kb_id) if kb_id else None
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
