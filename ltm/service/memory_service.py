"""MemoryService: the one object every surface (tools, listener, command, engine, console) calls.

A façade: it composes the write engine (:mod:`.writes`) and one module per capability over it -
:mod:`.registry` (knowledge bases), :mod:`.profiles` (L1), :mod:`.episodes` (L2),
:mod:`.documents`, :mod:`.recall`, :mod:`.snapshots` - and names each verb once. Every L2 read,
search, list, count, export and delete is filtered by :func:`ltm.domain.filters.scope_where` (the
scope and the read rule); every mutation is serialized per scope, audited, and allowed or refused
by :mod:`ltm.domain.privilege` inside the verb itself, so no surface can skip the policy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..domain import privilege as policy
from ..domain.filters import Criteria
from ..domain.models import Episode, EpisodeInput, Profile
from ..domain.scope import Scope
from ..domain.timefields import now_utc
from ..ports import Embedder, KeyValueStore, VectorIndex
from . import backup as installation_backup
from . import health as setup_checks
from . import transfer
from .audit import AuditLog
from .audit_export import EXPORT_PAGE_SIZE, export_audit
from .background import Background
from .backup import HeldBackups, RestoreReport
from .block_renderer import BlockRenderer
from .chat_turn import Injection, SnapshotWriter, prepare_turn
from .consolidation import Consolidator
from .documents import Documents
from .episodes import REMEMBER_RETRY_WINDOW_S, EpisodePage, Episodes, Remembered
from .erasure import Erasure
from .health import HealthReport
from .known_scopes import KnownScopes, known_scopes
from .ledger import UsageLedger
from .locks import ScopeLocks
from .people import Holdings, People, PersonErasure
from .profiles import Profiles
from .recall import Recall, RecalledEpisode, RecallResult
from .recall_index import RecallIndex
from .registry import EmbedderFor, KbRegistry, RerankerFor
from .retention import Retention
from .retire import RetireEvent, RetirePipeline
from .review import ReviewQueue
from .scope_index import ScopeIndex
from .sealing import SealedVectors
from .served_turns import Identity, ServedTurns
from .settings import KbSettings, Settings
from .snapshots import InjectionSnapshot, InjectionSnapshots
from .transfer import ImportReport
from .writes import DELETE_BATCH, Actor, WriteEngine, WriteStep, backend, caller_of, require_admin


@dataclass(frozen=True)
class Overview:
    """A memory space at a glance (``!memory`` and the console's overview): its knowledge base's
    settings, its memories counted by status (``None`` without a knowledge base), the size of its
    audit log and its last injection."""

    kb: KbSettings | None
    counts: dict[str, int] | None
    audit_total: int
    injection: InjectionSnapshot | None


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
        *,
        monotonic: Callable[[], float] = time.monotonic,
        review: Callable[[MemoryService], ReviewQueue] | None = None,
        consolidator: Callable[[MemoryService], Consolidator] | None = None,
    ) -> None:
        """The service over its stores, every part given what it uses here, once: nothing is
        joined or swapped afterwards. ``clock`` is the time every part reads, ``monotonic`` the
        seconds the recall index's refresh and the people's codes age by (a test gives ones it
        moves). ``review`` and ``consolidator`` make the neighbours whose rules join the writes:
        each is called with this service (its host port) before the episodes are made, so the
        episodes get the queue's guard and the retire pipeline as constructor arguments; a
        neighbour's constructor keeps its host and reads nothing of it but the write engine's
        parts (its locks)."""
        self._settings = settings
        # every memory row the store is handed is sealed under a key of its own (ltm/service/sealing.py)
        vectors = vectors if isinstance(vectors, SealedVectors) else SealedVectors(vectors, kv)
        # work that outlives its call (recovery, snapshots, refreshes): run inside a live call
        self.background = background or Background()
        # the index of both recall legs of every active scope, kept up to date by the writes
        self.writes = WriteEngine(
            kv,
            vectors,
            RecallIndex(vectors, kv=kv, background=self.background, clock=monotonic, settings=settings),
            lambda scope: self.registry.embedder(scope),
            clock,
            background=self.background,
            delete_batch=delete_batch,
            # the erase of every copy of deleted rows, run by the write engine after each delete
            on_erased=lambda erased: self.erasure.after_delete(erased),
        )
        self.registry = KbRegistry(self.writes, embedder_for, settings, reranker_for)
        self.profiles = Profiles(self.writes, settings)
        self.recaller = Recall(
            settings=settings,
            clock=clock,
            kb_settings=self.registry.kb_settings,
            embedder=self.registry.embedder,
            reranker_for=reranker_for,
            fetch=self.writes.reads.fetch,
            get_profile=self.profiles.get_profile,
            backend=backend,
            vectors=lambda: self.writes.vectors,
            index=self.writes.index,
        )
        # the neighbours, made over this service: the review queue (the statement guard, the
        # tombstones of forget --never) and consolidation (give-back, the cascade after a retirement)
        self.review = review(self) if review is not None else None
        self.consolidator = consolidator(self) if consolidator is not None else None
        self.episodes = Episodes(
            self.writes,
            settings,
            self.recaller.scope_index,
            guard=self.review.guard if self.review is not None else None,
            retire=RetirePipeline(
                tombstones=self.review.tombstones if self.review is not None else None, summaries=self.consolidator
            ),
        )
        self.documents = Documents(self.writes, self.registry, self.episodes)
        self.snapshots = InjectionSnapshots(self.writes)
        # a person's own memory: see, erase, opt out (issue 35); an erasure reaches their candidates
        self.people = People(self, monotonic, review=self.review)
        self.retention = Retention(self)  # retention_days / audit_retention_days: a daily background sweep
        # one erase of every copy of a deleted row, run by the write engine after each delete
        self.erasure = Erasure(self)
        self.held_backups = HeldBackups()  # backup documents awaiting download: dropped by every erase
        # the last-turn snapshot is written after the turn (the reply does not need it)
        self.snapshot_writer = SnapshotWriter(self.snapshots.save_injection, self.background)
        # the memory block off the event loop, and a turn's refusal of the operator's template
        self.block_renderer = BlockRenderer()
        self.ledger = UsageLedger(lambda: self.writes.kv, clock, self.background)

    # ------------------------------------------------------------------ the verbs
    # Each implemented once in its capability module; here so go-to-definition and the type
    # checker see the signature (tests/unit/test_facade.py holds them equal).
    async def register_kb(self, kb_id: str, creation: dict[str, Any] | None) -> KbSettings:
        """:meth:`.registry.KbRegistry.register_kb`."""
        return await self.registry.register_kb(kb_id, creation)

    async def kb_settings(self, kb_id: str) -> KbSettings | None:
        """:meth:`.registry.KbRegistry.kb_settings`."""
        return await self.registry.kb_settings(kb_id)

    async def known_kbs(self) -> list[str]:
        """:meth:`.registry.KbRegistry.known_kbs`."""
        return await self.registry.known_kbs()

    async def resolve_kb(self, pipeline_kbs: Sequence[str] = ()) -> str:
        """:meth:`.registry.KbRegistry.resolve_kb`."""
        return await self.registry.resolve_kb(pipeline_kbs)

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
        """:meth:`.registry.KbRegistry.scope_for`."""
        return await self.registry.scope_for(
            kb_id=kb_id,
            session_name=session_name,
            launcher_type=launcher_type,
            launcher_id=launcher_id,
            bot_uuid=bot_uuid,
            sender_id=sender_id,
        )

    async def embedder(self, scope: Scope) -> Embedder:
        """:meth:`.registry.KbRegistry.embedder`."""
        return await self.registry.embedder(scope)

    async def get_profile(self, scope: Scope, kind: str, sender_id: str = "") -> Profile:
        """:meth:`.profiles.Profiles.get_profile`."""
        return await self.profiles.get_profile(scope, kind, sender_id)

    async def update_profile(self, scope: Scope, patch_raw: dict[str, Any], actor: Actor) -> Profile:
        """:meth:`.profiles.Profiles.update_profile`."""
        return await self.profiles.update_profile(scope, patch_raw, actor)

    async def speaker_profiles(self, scope: Scope) -> list[Profile]:
        """:meth:`.profiles.Profiles.speaker_profiles`."""
        return await self.profiles.speaker_profiles(scope)

    async def remember(self, scope: Scope, raw: dict[str, Any], actor: Actor, *, origin: str = "tool") -> Remembered:
        """:meth:`.episodes.Episodes.remember`."""
        return await self.episodes.remember(scope, raw, actor, origin=origin)

    async def screen_statement(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """:meth:`.episodes.Episodes.screen_statement`."""
        return await self.episodes.screen_statement(scope, data, actor, origin)

    async def confirm_episode(self, scope: Scope, episode_id: str, actor: Actor, reason: str = "") -> Episode:
        """:meth:`.episodes.Episodes.confirm_episode`."""
        return await self.episodes.confirm_episode(scope, episode_id, actor, reason)

    async def get_episode(self, scope: Scope, episode_id: str) -> Episode:
        """:meth:`.episodes.Episodes.get_episode`."""
        return await self.episodes.get_episode(scope, episode_id)

    async def list_episodes(
        self,
        scope: Scope,
        *,
        statuses: Sequence[str] | None = ("active",),
        page: int = 1,
        page_size: int = 10,
        sender_id: str | None = None,
        event_from_ts: float | None = None,
        event_until_ts: float | None = None,
        as_of_ts: float | None = None,
    ) -> EpisodePage:
        """:meth:`.episodes.Episodes.list_episodes`."""
        return await self.episodes.list_episodes(
            scope,
            statuses=statuses,
            page=page,
            page_size=page_size,
            sender_id=sender_id,
            event_from_ts=event_from_ts,
            event_until_ts=event_until_ts,
            as_of_ts=as_of_ts,
        )

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        """:meth:`.episodes.Episodes.count_by_status`."""
        return await self.episodes.count_by_status(scope)

    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """:meth:`.episodes.Episodes.fetch`."""
        return await self.episodes.fetch(scope, criteria, limit)

    async def forget(
        self, scope: Scope, episode_id: str, actor: Actor, reason: str = "", *, never: bool = False
    ) -> Episode:
        """:meth:`.episodes.Episodes.forget`."""
        return await self.episodes.forget(scope, episode_id, actor, reason, never=never)

    async def erase_episodes(self, scope: Scope, ids: Sequence[str], actor: Actor, reason: str = "") -> int:
        """:meth:`.erasure.Erasure.erase_episodes`."""
        return await self.erasure.erase_episodes(scope, ids, actor, reason)

    async def set_status(self, scope: Scope, episode_id: str, status: str, actor: Actor, reason: str = "") -> Episode:
        """:meth:`.episodes.Episodes.set_status`."""
        return await self.episodes.set_status(scope, episode_id, status, actor, reason)

    async def bulk_delete(self, scope: Scope, criteria: Criteria, actor: Actor, reason: str = "", tag: str = "") -> int:
        """:meth:`.episodes.Episodes.bulk_delete`."""
        return await self.episodes.bulk_delete(scope, criteria, actor, reason, tag)

    async def ingest_document(self, kb_id: str, document_id: str, payload: Any, actor: Actor) -> int:
        """:meth:`.documents.Documents.ingest_document`."""
        return await self.documents.ingest_document(kb_id, document_id, payload, actor)

    async def delete_document(self, kb_id: str, document_id: str, actor: Actor) -> int:
        """:meth:`.documents.Documents.delete_document`."""
        return await self.documents.delete_document(kb_id, document_id, actor)

    async def recall(
        self,
        scope: Scope,
        query: str,
        *,
        limit: int | None = None,
        speaker_id: str | None = None,
        only_speaker: bool = False,
        time_from: str | None = None,
        time_until: str | None = None,
        as_of: str | None = None,
        with_profiles: bool = True,
        budget_tokens: int | None = None,
        parse_window: bool = True,
        trace: bool = False,
        trace_all_statuses: bool = False,
    ) -> RecallResult:
        """:meth:`.recall.Recall.recall`."""
        return await self.recaller.recall(
            scope,
            query,
            limit=limit,
            speaker_id=speaker_id,
            only_speaker=only_speaker,
            time_from=time_from,
            time_until=time_until,
            as_of=as_of,
            with_profiles=with_profiles,
            budget_tokens=budget_tokens,
            parse_window=parse_window,
            trace=trace,
            trace_all_statuses=trace_all_statuses,
        )

    async def scope_index(self, scope: Scope, settings: Settings | None = None) -> ScopeIndex:
        """:meth:`.recall.Recall.scope_index`."""
        return await self.recaller.scope_index(scope, settings)

    async def save_injection(self, scope: Scope, snapshot: InjectionSnapshot) -> None:
        """:meth:`.snapshots.InjectionSnapshots.save_injection`."""
        return await self.snapshots.save_injection(scope, snapshot)

    async def last_injection(self, scope: Scope) -> InjectionSnapshot | None:
        """:meth:`.snapshots.InjectionSnapshots.last_injection` (one still waiting for its write first)."""
        waiting = self.snapshot_writer.pending(scope)
        return waiting.owned_by(scope) if waiting is not None else await self.snapshots.last_injection(scope)

    async def audit_count(self, scope: Scope) -> int:
        """:meth:`.audit.AuditLog.scope_count`."""
        return await self.audit.scope_count(scope)

    async def audit_page(self, scope: Scope, page: int = 1, page_size: int = 10) -> tuple[list[dict[str, Any]], int]:
        """:meth:`.audit.AuditLog.scope_page`."""
        return await self.audit.scope_page(scope, page, page_size)

    async def fences(self) -> dict[str, dict[str, Any]]:
        """:meth:`.writes.fences.Fences.fences`."""
        return await self.writes.fencing.fences()

    async def fence_of(self, lock_key: str) -> dict[str, Any] | None:
        """:meth:`.writes.fences.Fences.fence_of`."""
        return await self.writes.fencing.fence_of(lock_key)

    async def clear_fence(self, lock_key: str, actor: Actor, reason: str = "") -> bool:
        """:meth:`.writes.fences.Fences.clear_fence`."""
        return await self.writes.fencing.clear_fence(lock_key, actor, reason)

    async def clear_kb_fences(self, kb_id: str, actor: Actor, reason: str = "") -> int:
        """:meth:`.writes.fences.Fences.clear_kb_fences`."""
        return await self.writes.fencing.clear_kb_fences(kb_id, actor, reason)

    async def recover(self) -> list[dict[str, Any]]:
        """:meth:`.writes.journal.Journal.recover`."""
        return await self.writes.journal.recover()

    async def wait_recovered(self) -> None:
        """:meth:`.writes.journal.Journal.wait_recovered`."""
        return await self.writes.journal.wait_recovered()

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
        """The vector store as it was given (the host's: the sidecar over it, ADR 0008): its rows
        as stored (sealed). The verbs read and write through :attr:`sealed`, which opens and seals them."""
        vectors = self.writes.vectors
        return vectors.store if isinstance(vectors, SealedVectors) else vectors

    @property
    def sealed(self) -> SealedVectors:
        """The vector store behind the seal (:mod:`.sealing`): plain rows in, sealed rows stored."""
        assert isinstance(self.writes.vectors, SealedVectors)
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
        """The clock given at construction, read by every part through the write engine."""
        return self.writes.clock

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
    ) -> Injection | None:
        """One chat turn's memory block, payload and snapshot (:func:`.chat_turn.prepare_turn`),
        returned for the caller to publish; then :meth:`record_turn`."""
        return await prepare_turn(
            self.recaller.recall,
            self.settings,
            self.block_renderer,
            scope,
            text,
            speaker_name=speaker_name,
            query_id=query_id,
            served=served,
            who=who,
        )

    def record_turn(self, scope: Scope, injection: Injection, pipeline_kbs: Sequence[str] | None = None) -> None:
        """The turn's block is in place and its host writes are answered: its snapshot is queued,
        written after the turn (:meth:`.chat_turn.SnapshotWriter.later`). Queued only now, so that
        where background work starts at once its storage write does not go ahead of them.
        ``pipeline_kbs``: the knowledge bases the turn's pipeline listed, kept with the snapshot for
        the health check of a surface that has no pipeline of its own (the console)."""
        snapshot = injection.snapshot
        if pipeline_kbs is not None:
            snapshot = replace(snapshot, pipeline_kbs=tuple(str(k) for k in pipeline_kbs))
        self.snapshot_writer.later(scope, snapshot)

    async def known_scopes(self) -> KnownScopes:
        """The memory spaces the stores hold records for (:func:`.known_scopes.known_scopes`)."""
        return await known_scopes(self.kv, self.audit)

    async def audit_document(
        self, scope: Scope, actor: Actor, page: int | None = None, page_size: int = EXPORT_PAGE_SIZE
    ) -> dict[str, Any]:
        """The ``ltm-audit/1`` document of ``scope`` (:func:`.audit_export.export_audit`): the whole
        log, or with ``page`` one page; a memory admin's verb, as :meth:`audit_export`."""
        return await export_audit(self.audit_export, self.clock, scope, actor, page=page, page_size=page_size)

    # ------------------------------------------------------------------ people's rights (issue 35)
    async def my_memory(self, scope: Scope, actor: Actor) -> Holdings:
        """:meth:`.people.People.holdings` (``!memory me``)."""
        return await self.people.holdings(scope, actor)

    async def person(self, bot_uuid: str, sender_id: str, actor: Actor) -> Holdings:
        """:meth:`.people.People.person` (the console's People panel)."""
        return await self.people.person(bot_uuid, sender_id, actor)

    def forget_me_code(self, scope: Scope, actor: Actor) -> str:
        """:meth:`.people.People.forget_me_code`."""
        return self.people.forget_me_code(scope, actor)

    async def forget_me(self, scope: Scope, actor: Actor, code: str) -> PersonErasure:
        """:meth:`.people.People.forget_me`."""
        return await self.people.forget_me(scope, actor, code)

    async def erase_person(self, bot_uuid: str, sender_id: str, actor: Actor) -> PersonErasure:
        """:meth:`.people.People.erase_person` (the console's erase)."""
        return await self.people.erase_person(bot_uuid, sender_id, actor)

    async def set_opt_out(self, scope: Scope, actor: Actor, out: bool) -> bool:
        """:meth:`.people.People.set_opt_out`."""
        return await self.people.set_opt_out(scope, actor, out)

    async def opted_out(self, scope: Scope, actor: Actor) -> bool:
        """:meth:`.people.People.opted_out`."""
        return await self.people.opted_out(scope, actor)

    # ------------------------------------------------------------------ whole-scope verbs (command and console)
    async def overview(self, scope: Scope) -> Overview:
        """The memory space at a glance (an open read, as ``!memory``)."""
        kb = await self.kb_settings(scope.collection) if scope.collection else None
        counts = await self.count_by_status(scope) if scope.collection else None
        return Overview(kb, counts, await self.audit_count(scope), await self.last_injection(scope))

    async def health(
        self, scope: Scope, pipeline_kbs: Sequence[str] | None = None, *, probe: bool = True, actor: Actor | None = None
    ) -> HealthReport:
        """The setup checks of ``scope`` (:func:`.health.run_health`); the isolation probe is an admin's."""
        return await setup_checks.run_health(self, scope, pipeline_kbs, probe=probe, actor=actor)

    async def export_scope(
        self,
        scope: Scope,
        actor: Actor,
        *,
        layer: str = "l2",
        statuses: Sequence[str] | None = None,
        page: int = 1,
        page_size: int | None = None,
    ) -> dict[str, Any]:
        """The ``ltm-export/1`` document of ``scope`` (:func:`.transfer.export_scope`); an admin's verb."""
        return await transfer.export_scope(
            self, scope, actor, layer=layer, statuses=statuses, page=page, page_size=page_size
        )

    async def import_scope(self, scope: Scope, payload: Any, actor: Actor) -> ImportReport:
        """Import an export document into ``scope`` (:func:`.transfer.import_scope`); an admin's verb."""
        return await transfer.import_scope(self, scope, payload, actor)

    async def backup(self, actor: Actor) -> list[str]:
        """The ``ltm-backup/1`` document of the whole installation, as lines (:func:`.backup.backup`);
        the console operator's verb."""
        return await installation_backup.backup(self, actor)

    def require_mover(self, verb: str, actor: Actor) -> None:
        """The one policy of ``backup`` and ``restore``: the console's operator, a memory admin."""
        installation_backup.require_operator(verb, actor, self.settings)

    def check_backup(
        self, actor: Actor, header: str, trailer: str, shas: Sequence[str], kinds: Sequence[str]
    ) -> dict[str, Any]:
        """Check a whole backup document's lines before any chunk is restored (:func:`.backup.check_document`)."""
        self.require_mover("restore", actor)
        return installation_backup.check_document(header, trailer, shas, kinds)

    async def restore_backup(
        self, actor: Actor, lines: Sequence[str], kb_map: dict[str, str] | None = None, *, verify: bool = False
    ) -> RestoreReport:
        """Restore (or, with ``verify``, read back) one chunk of a backup (:func:`.backup.restore`)."""
        return await installation_backup.restore(self, actor, lines, kb_map, verify=verify)

    def background_report(self) -> dict[str, Any]:
        """What this process carries in the background (the console's diagnostics): recovery, the
        queued and running jobs, the recall index's snapshot writes."""
        return {
            "recovering": self.recovering,
            "pending": [str(k) for k in self.background.pending()],
            "jobs": dict(self.background.counts),
            "snapshots": dict(self.writes.index.snapshot_counts),
        }


__all__ = [
    "REMEMBER_RETRY_WINDOW_S",
    "Actor",
    "EpisodePage",
    "MemoryService",
    "Overview",
    "RecalledEpisode",
    "RecallResult",
    "Remembered",
    "RetireEvent",
    "Scope",
    "WriteStep",
]
