"""MemoryService: the one object every surface (tools, listener, command, engine, console) calls.

A façade: it composes the write engine (:mod:`.writes`) and one module per capability over it -
:mod:`.registry` (knowledge bases), :mod:`.profiles` (L1), :mod:`.episodes` (L2),
:mod:`.documents`, :mod:`.recall`, :mod:`.snapshots` - and names each verb once. Every L2 read,
search, list, count, export and delete is filtered by :func:`ltm.domain.scope.scope_where` (the
scope and the read rule); every mutation is serialized per scope, audited, and allowed or refused
by :mod:`ltm.domain.privilege` inside the verb itself, so no surface can skip the policy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..domain import privilege as policy
from ..domain.scope import Scope
from ..domain.timefields import now_utc
from ..ports import KeyValueStore, VectorIndex
from .audit import AuditLog
from .audit_export import EXPORT_PAGE_SIZE, export_audit
from .background import Background
from .documents import Documents
from .episodes import REMEMBER_RETRY_WINDOW_S, EpisodePage, Episodes, Remembered
from .known_scopes import KnownScopes, known_scopes
from .ledger import UsageLedger
from .locks import ScopeLocks
from .profiles import Profiles
from .recall import Recall, RecalledEpisode, RecallResult
from .recall_index import RecallIndex
from .registry import EmbedderFor, KbRegistry, RerankerFor
from .retire import RetireEvent
from .settings import Settings
from .snapshots import InjectionSnapshots
from .turn import Injection, Publish, prepare_turn
from .turns import Identity, ServedTurns
from .writes import DELETE_BATCH, Actor, WriteEngine, WriteStep, backend, caller_of, require_admin


class MemoryService:
    def __init__(
        self,
        kv: KeyValueStore,
        vectors: VectorIndex,
        embedder_for: EmbedderFor,
        settings: Callable[[], Settings] = Settings,
        clock: Callable[[], datetime] = now_utc,
        reranker_for: RerankerFor | None = None,
        background: Background | None = None,
        delete_batch: int = DELETE_BATCH,
    ) -> None:
        self._settings = settings
        # work that outlives its call (recovery, snapshots, refreshes): run inside a live call
        self.background = background or Background()
        # the index of both recall legs of every active scope, kept up to date by the writes
        self.writes = WriteEngine(
            kv,
            vectors,
            RecallIndex(vectors, kv=kv, background=self.background),
            lambda scope: self.registry.embedder(scope),
            clock,
            background=self.background,
            delete_batch=delete_batch,
        )
        self.registry = KbRegistry(self.writes, embedder_for, settings, reranker_for)
        self.profiles = Profiles(self.writes, settings)
        self.recaller = Recall(
            settings=settings,
            clock=lambda: self.writes.clock(),
            kb_settings=self.registry.kb_settings,
            embedder=self.registry.embedder,
            reranker_for=reranker_for,
            fetch=self.writes.reads.fetch,
            get_profile=self.profiles.get_profile,
            backend=backend,
            vectors=lambda: self.writes.vectors,
            index=self.writes.index,
        )
        self.episodes = Episodes(self.writes, settings, self.recaller.scope_index)
        self.documents = Documents(self.writes, self.registry, self.episodes)
        self.snapshots = InjectionSnapshots(self.writes)
        # the store and the clock are read at use: tests swap them on the service
        self.ledger = UsageLedger(lambda: self.writes.kv, lambda: self.writes.clock(), self.background)

        # The verbs, each implemented once in its capability module.
        self.register_kb = self.registry.register_kb
        self.unregister_kb = self.registry.unregister_kb
        self.kb_settings = self.registry.kb_settings
        self.known_kbs = self.registry.known_kbs
        self.resolve_kb = self.registry.resolve_kb
        self.scope_for = self.registry.scope_for
        self.embedder = self.registry.embedder

        self.get_profile = self.profiles.get_profile
        self.update_profile = self.profiles.update_profile
        self.speaker_profiles = self.profiles.speaker_profiles

        self.remember = self.episodes.remember
        self.screen_statement = self.episodes.screen_statement
        self.confirm_episode = self.episodes.confirm_episode
        self.get_episode = self.episodes.get_episode
        self.list_episodes = self.episodes.list_episodes
        self.count_by_status = self.episodes.count_by_status
        self.fetch = self.episodes.fetch
        self.forget = self.episodes.forget
        self.set_status = self.episodes.set_status
        self.bulk_delete = self.episodes.bulk_delete

        self.ingest_document = self.documents.ingest_document
        self.delete_document = self.documents.delete_document

        self.recall = self.recaller.recall
        self.scope_index = self.recaller.scope_index

        self.save_injection = self.snapshots.save_injection
        self.last_injection = self.snapshots.last_injection

        self.audit_count = self.audit.scope_count
        self.audit_page = self.audit.scope_page

        self.fences = self.writes.fencing.fences
        self.fence_of = self.writes.fencing.fence_of
        self.clear_fence = self.writes.fencing.clear_fence
        self.clear_kb_fences = self.writes.fencing.clear_kb_fences
        self.recover = self.writes.journal.recover
        self.wait_recovered = self.writes.journal.wait_recovered

    # ------------------------------------------------------------------ settings and policy
    @property
    def settings(self) -> Settings:
        return self._settings()

    def caller(self, actor: Actor) -> policy.Caller:
        """The privilege policy's view of ``actor`` (admin from the live ``admin_sender_ids``)."""
        return caller_of(actor, self.settings)

    async def why(self, scope: Scope, query: str, actor: Actor, *, as_of: str | None = None) -> RecallResult:
        """The recall trace of ``query`` as the turn's hook would recall it (``!memory why``, the
        console's typed query). A memory admin's verb: a trace names what the filter keeps out."""
        require_admin("why", actor, self.settings)
        return await self.recall(scope, query, with_profiles=False, as_of=as_of, trace=True, trace_all_statuses=True)

    async def clear_scope_fences(self, scope: Scope, actor: Actor, reason: str = "") -> int:
        """Lift the write fences of a scope (the console's Clear fence; recovery and the engine
        lifecycle clear their own through the write engine). A memory admin's verb."""
        require_admin("fences.clear", actor, self.settings)
        return await self.writes.fencing.clear_scope_fences(scope, actor, reason)

    async def audit_export(
        self, scope: Scope, actor: Actor, page: int | None = None, page_size: int = 100
    ) -> tuple[list[dict[str, Any]], int]:
        """The audit log of ``scope`` as an export, with its total: every entry oldest first, or
        with ``page`` one page of ``page_size`` newest first. Entries are shown as the read rule
        lets the scope see them. A memory admin's verb (a whole-log dump; ``audit_page`` is the
        open read)."""
        require_admin("audit.export", actor, self.settings)
        if page is None:
            entries = await self.audit.scope_export(scope)
            return entries, len(entries)
        return await self.audit.scope_page(scope, page, page_size)

    # ------------------------------------------------------------------ the stores (the write engine's)
    # Read-only: the parts are joined once, at construction, so none can be left on an old store.
    @property
    def kv(self) -> KeyValueStore:
        return self.writes.kv

    @property
    def vectors(self) -> VectorIndex:
        return self.writes.vectors

    @property
    def embedder_for(self) -> EmbedderFor:
        return self.registry.embedder_for

    @property
    def index(self) -> RecallIndex:
        return self.writes.index

    @property
    def locks(self) -> ScopeLocks:
        return self.writes.locks

    @property
    def audit(self) -> AuditLog:
        return self.writes.audit_log

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.writes.clock

    @clock.setter
    def clock(self, value: Callable[[], datetime]) -> None:
        # The one part that may be replaced: no part keeps its own reference, every one reads the
        # clock through the write engine at use, so a replaced clock is everyone's at once.
        self.writes.clock = value

    @property
    def delete_batch(self) -> int:
        return self.writes.delete_batch

    # ------------------------------------------------------------------ recovery
    def start_recovery(self) -> asyncio.Future[list[dict[str, Any]]]:
        return self.writes.journal.start_recovery()

    def stop_recovery(self) -> None:
        self.writes.journal.stop_recovery()

    def stop_background(self) -> None:
        """The installation was revoked: its queued and running background work stops."""
        self.background.stop()

    @property
    def recovering(self) -> bool:
        return self.writes.journal.recovering

    # ------------------------------------------------------------------ the turn, known spaces, audit document
    async def prepare_turn(
        self,
        scope: Scope,
        text: str,
        *,
        speaker_name: str = "",
        query_id: int | None = None,
        served: ServedTurns | None = None,
        who: Identity | None = None,
        publish: Publish | None = None,
    ) -> Injection | None:
        """One chat turn's memory block, payload and snapshot (:func:`.turn.prepare_turn`)."""
        return await prepare_turn(
            self.recall,
            self.save_injection,
            self.settings,
            scope,
            text,
            speaker_name=speaker_name,
            query_id=query_id,
            served=served,
            who=who,
            publish=publish,
        )

    async def known_scopes(self) -> KnownScopes:
        """The memory spaces the stores hold records for (:func:`.known_scopes.known_scopes`)."""
        return await known_scopes(self.kv, self.audit)

    async def audit_document(
        self, scope: Scope, actor: Actor, page: int | None = None, page_size: int = EXPORT_PAGE_SIZE
    ) -> dict[str, Any]:
        """The ``ltm-audit/1`` document of ``scope`` (:func:`.audit_export.export_audit`): the whole
        log, or with ``page`` one page; a memory admin's verb, as :meth:`audit_export`."""
        return await export_audit(self.audit_export, self.clock, scope, actor, page=page, page_size=page_size)


__all__ = [
    "REMEMBER_RETRY_WINDOW_S",
    "Actor",
    "EpisodePage",
    "MemoryService",
    "RecalledEpisode",
    "RecallResult",
    "Remembered",
    "RetireEvent",
    "Scope",
    "WriteStep",
]
