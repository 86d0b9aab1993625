"""MemoryService: the one object every surface (tools, listener, command, engine, console) calls.

Every verb exists once here. Every L2 read, search, list, count, export and delete is filtered by
:func:`ltm.domain.scope.scope_where` (the scope and the read rule); every mutation is serialized per
scope, audited, and allowed or refused by :mod:`ltm.domain.privilege` inside the verb itself, so
no surface can skip the policy.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from ..domain import privilege as policy
from ..domain.errors import (
    ConflictError,
    MemoryError_,
    NotFoundError,
    PermissionDenied,
    ScopeError,
    ValidationError,
)
from ..domain.models import (
    Episode,
    EpisodeInput,
    Profile,
    apply_profile_patch,
    build_episode,
    content_hash,
    is_record_id,
    validate_episode_input,
    validate_profile_patch,
)
from ..domain.scope import (
    ACTIVE,
    AS_OF_STATUSES,
    PROFILE_PREFIX,
    STATUSES,
    Criteria,
    Scope,
    audience_of_key,
    audit_log_key,
    derive_scope,
    inject_key,
    key_part_value,
    l1_lock_key,
    l2_lock_key,
    may_read,
    parse_storage_key,
    profile_storage_key,
    scope_owns,
    scope_where,
    session_profile_key,
    speaker_profile_key,
)
from ..domain.timefields import now_utc, to_iso, ts
from ..ports import Embedder, KeyValueStore, Reranker, VectorIndex
from .audit import AuditLog
from .locks import ScopeLocks
from .recall import Recall, RecalledEpisode, RecallResult
from .recall_index import RecallIndex, ScopeIndex
from .settings import KbSettings, Settings
from .writes import (
    Actor,
    EpisodeIs,
    WriteEngine,
    WriteStep,
    backend,
    caller_of,
    episodes_are,
    need_l2,
    require_admin,
    user_key_scope,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

KB_PREFIX = "kb/"
DOC_PREFIX = "doc/"
JOURNAL_PREFIX = "journal/"
LIST_PAGE = 200
DELETE_BATCH = 2000
# A remember identical to an active memory of the same scope and speaker stored less than this long
# ago is the natural retry of a write whose answer was lost (a plugin restart during the turn, a
# timeout): it returns the existing memory instead of storing a second copy. Longer than a turn
# plus the host's restart of the plugin, short enough that restating a fact days later still counts.
REMEMBER_RETRY_WINDOW_S = 600.0


class Remembered(tuple):
    """What :meth:`MemoryService.remember` returns: unpacks as ``(episode, superseded)``.
    ``existing`` is True when an identical memory stored moments ago was returned (a retry)."""

    existing: bool

    def __new__(cls, episode: Episode, superseded: list[Episode], existing: bool = False) -> Remembered:
        self = super().__new__(cls, (episode, superseded))
        self.existing = existing
        return self

    @property
    def episode(self) -> Episode:
        return self[0]


@dataclass
class EpisodePage:
    items: list[Episode]
    page: int
    page_size: int
    has_more: bool


@dataclass
class RetireEvent:
    """Episodes that just left the active set (or the store): for cascades (derived summaries,
    pending proposals) and tombstones. Fired after the mutation committed and its lock was released."""

    scope: Scope
    operation: str  # "supersede" | "consolidate" | "archive" | "forget" | "bulk_delete"
    episodes: list[Episode]
    actor: Actor
    reason: str = ""
    never: bool = False  # forget --never: the value must not come back


StatementGuard = Callable[[Scope, EpisodeInput, Actor, str], Awaitable[None]]
RetireListener = Callable[[RetireEvent], Awaitable[None]]
RetireSteps = Callable[[RetireEvent], Awaitable[list[WriteStep]]]
ExtraSteps = Callable[..., Awaitable[list[WriteStep]]]


_profile_key = profile_storage_key


class MemoryService:
    def __init__(
        self,
        kv: KeyValueStore,
        vectors: VectorIndex,
        embedder_for: Callable[[str, KbSettings], Embedder],
        settings: Callable[[], Settings] = Settings,
        clock: Callable[[], datetime] = now_utc,
        reranker_for: Callable[[str, KbSettings], Reranker] | None = None,
    ) -> None:
        self.embedder_for = embedder_for
        self.reranker_for = reranker_for
        self._settings = settings
        self._kb_cache: dict[str, KbSettings | None] = {}
        self._kb_ids: tuple[float, list[str]] | None = None  # (read at, registered KB ids)
        index = RecallIndex(vectors)  # both recall legs of every active scope, kept by the writes
        self.writes = WriteEngine(kv, vectors, index, self.embedder, clock)
        # Extension points used by the review queue and consolidation (one service, more rules):
        # a guard may refuse or park a new statement before anything is written (it raises);
        # a retire listener runs after episodes left the active set.
        self.statement_guards: list[StatementGuard] = []
        self.retire_listeners: list[RetireListener] = []
        # writes that must commit with a retirement, in the same all-or-nothing mutation (the
        # tombstone of ``forget --never``)
        self.retire_steps: list[RetireSteps] = []
        self.recaller = Recall(
            settings=lambda: self.settings,
            clock=lambda: self.clock(),
            kb_settings=self.kb_settings,
            embedder=self.embedder,
            reranker_for=reranker_for,
            fetch=self.writes.fetch,
            get_profile=self.get_profile,
            backend=backend,
            vectors=lambda: self.vectors,
            index=index,
        )

    # ------------------------------------------------------------------ the stores (the write engine's)
    @property
    def kv(self) -> KeyValueStore:
        return self.writes.kv

    @kv.setter
    def kv(self, value: KeyValueStore) -> None:
        self.writes.kv = value

    @property
    def vectors(self) -> VectorIndex:
        return self.writes.vectors

    @vectors.setter
    def vectors(self, value: VectorIndex) -> None:
        self.writes.vectors = value

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
        self.writes.clock = value

    @property
    def delete_batch(self) -> int:
        return self.writes.delete_batch

    @delete_batch.setter
    def delete_batch(self, value: int) -> None:
        self.writes.delete_batch = value

    # ------------------------------------------------------------------ settings & KBs
    @property
    def settings(self) -> Settings:
        return self._settings()

    def caller(self, actor: Actor) -> policy.Caller:
        """The privilege policy's view of ``actor`` (admin from the live ``admin_sender_ids``)."""
        return caller_of(actor, self.settings)

    async def register_kb(self, kb_id: str, creation: dict[str, Any] | None) -> KbSettings:
        if not kb_id:
            raise ValidationError("knowledge base id required", key="error.kb_missing")
        kb = KbSettings.from_creation(kb_id, creation)
        async with self.locks.hold("install"):
            await self.kv.set(KB_PREFIX + kb_id, json.dumps(kb.to_dict()).encode())
            self._kb_cache[kb_id] = kb
            self._kb_ids = None
        log.info("memory knowledge base registered: %s (isolation=%s)", kb_id, kb.isolation)
        return kb

    async def unregister_kb(self, kb_id: str) -> None:
        async with self.locks.hold("install"):
            await self.kv.delete(KB_PREFIX + kb_id)
            self._kb_cache.pop(kb_id, None)
            self._kb_ids = None
        self.index.invalidate(kb_id)
        await self.clear_kb_fences(kb_id, Actor(surface="engine"), reason="knowledge base deleted")
        try:
            await self.vectors.drop_collection(kb_id)
        except Exception as exc:  # the host may already have removed the KB row
            log.warning("dropping vectors of deleted knowledge base %s failed: %s", kb_id, exc)
        log.info("memory knowledge base unregistered: %s", kb_id)

    async def kb_settings(self, kb_id: str) -> KbSettings | None:
        if not kb_id:
            return None
        if kb_id in self._kb_cache:
            return self._kb_cache[kb_id]
        raw = await backend(self.kv.get(KB_PREFIX + kb_id), "storage read")
        kb = KbSettings.from_creation(kb_id, json.loads(raw)) if raw else None
        self._kb_cache[kb_id] = kb
        return kb

    async def known_kbs(self) -> list[str]:
        """The registered memory KBs. The host lists every storage key of the plugin at once, so the
        list is kept (registering and removing through this process update it; re-read after the
        recall index's TTL for KBs another process registered)."""
        now = self.index.clock()
        if self._kb_ids is None or now - self._kb_ids[0] > self.index.ttl:
            ids = sorted(k[len(KB_PREFIX) :] for k in await self.kv.keys(KB_PREFIX))
            self._kb_ids = (now, ids)
        return list(self._kb_ids[1])

    async def resolve_kb(self, pipeline_kbs: Sequence[str] = ()) -> str:
        """The memory KB for a query: the first of ours on the pipeline, else the configured one,
        else the only one registered. Empty string when there is none (profiles still work)."""
        for kb in pipeline_kbs:
            if await self.kb_settings(str(kb)):
                return str(kb)
        configured = self.settings.memory_kb
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

    # The audit log of a scope: one per memory knowledge base and user key (never shared by two KBs).
    async def audit_count(self, scope: Scope) -> int:
        return await self.audit.count(audit_log_key(scope))

    async def audit_page(self, scope: Scope, page: int = 1, page_size: int = 10) -> tuple[list[dict[str, Any]], int]:
        """Newest first: (entries, total). Entries of what was done in a chat this reader may not
        read (another person's private chat, ``bot`` isolation) keep only their number, time and
        operation (``redacted``), so paging and totals stay the log's own."""
        entries, total = await self.audit.page(audit_log_key(scope), page, page_size)
        return [_readable_entry(scope, e) for e in entries], total

    async def audit_export(self, scope: Scope) -> list[dict[str, Any]]:
        return [_readable_entry(scope, e) for e in await self.audit.export(audit_log_key(scope))]

    # ------------------------------------------------------------------ fences & recovery (the write engine's)
    async def fences(self) -> dict[str, dict[str, Any]]:
        """Every fenced write scope of this installation: lock key -> fence record."""
        return await self.writes.fences()

    async def fence_of(self, lock_key: str) -> dict[str, Any] | None:
        return await self.writes.fence_of(lock_key)

    async def clear_fence(self, lock_key: str, actor: Actor, reason: str = "") -> bool:
        """Lift one fence (the console's Clear Fence). Audited. Returns whether one was set."""
        return await self.writes.clear_fence(lock_key, actor, reason)

    async def clear_scope_fences(self, scope: Scope, actor: Actor, reason: str = "") -> int:
        """Clear the L2 fence of a scope in its KB and the L1 fences of its profiles."""
        return await self.writes.clear_scope_fences(scope, actor, reason)

    async def clear_kb_fences(self, kb_id: str, actor: Actor, reason: str = "") -> int:
        return await self.writes.clear_kb_fences(kb_id, actor, reason)

    def start_recovery(self) -> asyncio.Task[list[dict[str, Any]]]:
        return self.writes.start_recovery()

    def stop_recovery(self) -> None:
        self.writes.stop_recovery()

    async def wait_recovered(self) -> None:
        await self.writes.wait_recovered()

    @property
    def recovering(self) -> bool:
        return self.writes.recovering

    async def recover(self) -> list[dict[str, Any]]:
        """Settle what a crash left in the journal (see :meth:`WriteEngine.recover`)."""
        return await self.writes.recover()

    # ------------------------------------------------------------------ L1 profiles
    def _profile_keys(self, scope: Scope, kind: str, sender_id: str = "") -> str:
        if kind == "session":
            return session_profile_key(scope)
        if kind == "speaker":
            if not sender_id:
                raise ValidationError("speaker profile needs a sender id", key="error.no_sender")
            return speaker_profile_key(scope, sender_id)
        raise ValidationError("target: session or speaker", key="error.profile_target", value=str(kind))

    async def get_profile(self, scope: Scope, kind: str, sender_id: str = "") -> Profile:
        key = self._profile_keys(scope, kind, sender_id)
        raw = await backend(self.kv.get(_profile_key(key)), "profile read")
        data = json.loads(raw) if raw else {}
        profile = Profile.from_dict(data, kind, key)
        if kind == "speaker":
            profile.sender_id = sender_id
        return profile

    async def update_profile(
        self, scope: Scope, patch_raw: dict[str, Any], actor: Actor, *, also: ExtraSteps | None = None
    ) -> Profile:
        """Apply a validated patch to a session or speaker profile (one storage write). ``also(profile)``
        returns more writes that commit with it, all or nothing."""
        raw = dict(patch_raw or {})
        target = raw.get("target") or "speaker"
        patch = validate_profile_patch(raw)
        sender = scope.sender_id or actor.sender_id
        key = self._profile_keys(scope, str(target), sender)
        s = self.settings
        members = s.members_edit_group_profile
        if not policy.may_edit_profile(
            self.caller(actor), str(target), group=scope.is_group, members_edit_group_profile=members
        ):
            raise PermissionDenied("the group profile needs a memory admin", key="policy.error.group_profile")
        async with self.locks.hold(l1_lock_key(key)):
            await self.writes.check_fence(l1_lock_key(key))
            old = await backend(self.kv.get(_profile_key(key)), "profile read")
            current = Profile.from_dict(json.loads(old) if old else {}, str(target), key)
            if target == "speaker":
                current.sender_id = sender  # the readable id: the key may hold a shortened one
            updated = apply_profile_patch(
                current,
                patch,
                max_traits=s.max_profile_traits,
                max_preferences=s.max_profile_preferences,
                updated_at=to_iso(self.clock()),
            )
            record = {**updated.to_dict(), "owner": {"session_name": scope.session_name, "bot_uuid": scope.bot_uuid}}
            payload = json.dumps(record, ensure_ascii=False).encode("utf-8")
            lock_key, skey = l1_lock_key(key), _profile_key(key)
            step = self.writes.kv_step(
                scope,
                "profile.update",
                skey,
                payload,
                old,
                audit=([key], f"{target} profile updated"),
                lock_key=lock_key,
            )
            extra = await also(updated) if also is not None else []
            await self.writes.mutate(actor, "profile.update", [step, *extra])
        log.info("profile updated: %s", key)
        return updated

    async def speaker_profiles(self, scope: Scope) -> list[Profile]:
        out = []
        for k in sorted(await self.kv.keys(_profile_key(scope.user_key + "#"))):
            parsed = parse_storage_key(k)
            if parsed is None or parsed.layout != "profile.speaker" or not scope_owns(scope, parsed):
                continue
            raw = await self.kv.get(k)
            if raw:
                p = Profile.from_dict(json.loads(raw), "speaker", k[len(PROFILE_PREFIX) :])
                p.sender_id = p.sender_id or key_part_value(parsed.tail) or ""
                out.append(p)
        return out

    # ------------------------------------------------------------------ L2 writes
    async def remember(
        self,
        scope: Scope,
        raw: dict[str, Any],
        actor: Actor,
        *,
        origin: str = "tool",
        links: dict[str, Any] | None = None,
        guarded: bool = True,
        also: ExtraSteps | None = None,
        audience: str | None = None,
        replaces: Sequence[str] = (),
    ) -> Remembered:
        """Store one episode; optional ``supersedes`` ids (active, same scope, same speaker) become
        superseded in the same vector write. ``links`` (e.g. ``{"candidate_id": ...}``,
        ``{"sources": [...]}``) is kept as lineage in the episode's ``extra``. Statement guards
        (tombstones, conflict detection) run first unless ``guarded`` is False (a person already
        reviewed the statement). ``also(episode, superseded)`` returns more writes that commit with
        this one, all or nothing (the review queue's candidate record). ``audience`` narrows who may
        read it (a summary takes its sources'). Returns (new episode, superseded episodes).

        ``replaces``: ids of active memories of this scope and speaker that the new one replaces as
        a whole (a reviewed summary's sources): superseded by it in the same vector write, like
        ``supersedes`` (checked under the lock the same way) but chosen by a person's review, not
        by a model's request, and announced to the retire listeners as ``consolidate``.

        Idempotent against a retry: a plain write (no ``links``, no ``also``) identical to an active
        memory of the same scope and speaker stored within :data:`REMEMBER_RETRY_WINDOW_S` returns
        that memory (``existing``), writes nothing and audits nothing (its own write was audited),
        even while the scope is fenced: that is how a write whose outcome was unknown is found."""
        need_l2(scope)
        data = validate_episode_input(raw)
        if data.status != "active":
            raise ValidationError("new memories are active", key="error.status", value=data.status)
        async with self.locks.hold(l2_lock_key(scope)):
            if links is None and also is None:
                same = await self._retry_of(scope, data)
                if same is not None:
                    log.info("remember: %s already stored in %s (a retry)", same.id, scope.user_key)
                    return Remembered(same, [], existing=True)
            targets = await self._check_supersede_targets(scope, data.supersedes, actor)
            replaced = await self._check_supersede_targets(
                scope, [i for i in replaces if i not in data.supersedes], actor
            )
            if guarded:
                for guard in self.statement_guards:
                    await guard(scope, data, actor, origin)
            episode = build_episode(data, scope, origin=origin, timestamp=to_iso(self.clock()), audience=audience)
            if links:
                episode.extra = dict(links)
            targets = [*targets, *replaced]
            retired = [t.retagged(status="superseded", superseded_by=episode.id) for t in targets]
            summary = f"remembered {episode.id}" + (
                f", superseding {', '.join(t.id for t in targets[:50])}" if targets else ""
            )
            step = WriteStep(
                scope,
                l2_lock_key(scope),
                [EpisodeIs(episode.id, "active"), *episodes_are(targets, "superseded")],
                apply=lambda: self.writes.upsert(scope, [episode, *retired], "episode.remember"),
                undo=lambda: self._take_back_remember(scope, episode, targets),
                audit=([episode.id, *[t.id for t in targets]][:50], summary),
            )
            extra = await also(episode, retired) if also is not None else []
            await self.writes.mutate(actor, "episode.remember", [step, *extra])
        log.info("remember: %s in %s (supersedes %d)", episode.id, scope.user_key, len(targets))
        corrected = [t for t in targets if t.id not in {r.id for r in replaced}]
        if corrected:
            await self._retired(RetireEvent(scope, "supersede", corrected, actor))
        if replaced:
            await self._retired(RetireEvent(scope, "consolidate", replaced, actor))
        return Remembered(episode, retired)

    async def _retry_of(self, scope: Scope, data: EpisodeInput) -> Episode | None:
        """The active memory of this scope and speaker that ``data`` repeats (same content, same
        times, same corrections), stored within the retry window; the newest one, or None."""
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id, extra={"content_hash": content_hash(data.content)})
        since = self.clock().timestamp() - REMEMBER_RETRY_WINDOW_S
        same = [
            e
            for e in await self.writes.fetch(scope, crit, limit=50)
            if (e.event_at, e.valid_from, e.valid_until) == (data.event_at, data.valid_from, data.valid_until)
            and sorted(e.supersedes) == sorted(data.supersedes)
            and ts(e.timestamp, 0.0) >= since
        ]
        return max(same, key=lambda e: (e.timestamp, e.id)) if same else None

    async def _take_back_remember(self, scope: Scope, episode: Episode, superseded: Sequence[Episode]) -> None:
        await self.writes.delete_ids(scope, [episode.id], "episode.remember.undo")
        if superseded:
            await self.writes.upsert(scope, list(superseded), "episode.remember.undo", fence_check=False)

    async def screen_statement(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """Run the statement guards on one statement about to be written by a path that does not
        go through :meth:`remember` (document ingest, import). Raises what a guard raises."""
        for guard in self.statement_guards:
            await guard(scope, data, actor, origin)

    async def confirm_episode(self, scope: Scope, episode_id: str, actor: Actor, reason: str = "") -> Episode:
        """A person confirms an active memory: its confidence becomes ``confirmed`` (the only way an
        inference or an unverified statement is lifted; recall never lifts it). Audited once;
        confirming a confirmed memory changes nothing. A memory admin's verb."""
        need_l2(scope)
        require_admin("confirm", actor, self.settings)
        async with self.locks.hold(l2_lock_key(scope)):
            episode = await self.get_episode(scope, episode_id)
            if episode.status != "active":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="review.error.confirm_status", status=episode.status
                )
            if episode.confidence == "confirmed":
                return episode
            at = to_iso(self.clock())
            extra = {**episode.extra, "confirmed_by": actor.sender_id or actor.surface, "confirmed_at": at}
            updated = episode.retagged(confidence="confirmed", extra=extra)
            step = self.writes.rewrite_step(
                scope,
                [updated],
                [episode],
                "episode.confirm",
                [EpisodeIs(episode.id, "active", confidence="confirmed")],
                ([episode.id], f"confirmed {episode.id} (was {episode.claim_type}/{episode.confidence})"),
            )
            await self.writes.mutate(actor, "episode.confirm", [step], reason=reason)
        log.info("confirm: %s in %s", episode.id, scope.user_key)
        return updated

    async def _retire_steps(self, event: RetireEvent) -> list[WriteStep]:
        """The writes that must commit with ``event``'s retirement (all or nothing with it): the
        tombstone of ``forget --never``, the sources a removed summary gives back."""
        steps: list[WriteStep] = []
        for provider in self.retire_steps:
            steps += await provider(event)
        return steps

    async def _retired(self, event: RetireEvent) -> None:
        for listener in self.retire_listeners:
            try:
                await listener(event)
            except Exception:
                log.exception("retire listener failed after %s in %s", event.operation, event.scope.user_key)

    async def _check_supersede_targets(self, scope: Scope, ids: Sequence[str], actor: Actor) -> list[Episode]:
        """The active records of this scope ``ids`` names, which a new statement of ``scope.sender_id``
        replaces: the speaker's own, or, for a memory admin, a shared one
        (:func:`ltm.domain.privilege.may_supersede`)."""
        if not ids:
            return []
        caller = policy.Caller(scope.sender_id, self.caller(actor).admin)
        found = await self.writes.fetch_ids(scope, ids)
        out = []
        for sid in ids:
            ep = found.get(sid)
            if ep is None:
                raise NotFoundError(f"no memory {sid} in this scope", key="error.supersede_missing", id=sid)
            if ep.status != "active":
                raise ConflictError(f"{sid} is {ep.status}", key="error.supersede_status", id=sid, status=ep.status)
            if ep.sender_id and ep.sender_id != scope.sender_id:
                raise ConflictError(f"{sid} belongs to another speaker", key="error.supersede_speaker", id=sid)
            if not policy.may_supersede(caller, ep.sender_id):
                raise PermissionDenied(f"{sid} is a shared memory", key="policy.error.supersede", id=sid)
            out.append(ep)
        return out

    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """Matching episodes of this scope, any status the criteria name (the one scope filter)."""
        return await self.writes.fetch(scope, criteria, limit)

    async def get_episode(self, scope: Scope, episode_id: str) -> Episode:
        if not is_record_id(episode_id):  # names no record; never sent to a backend that may choke on it
            raise NotFoundError("no such memory in this scope", key="error.not_found", id=str(episode_id))
        found = await self.writes.fetch(scope, Criteria(statuses=None, ids=(str(episode_id),)), limit=1)
        if not found:
            raise NotFoundError(f"no memory {episode_id} in this scope", key="error.not_found", id=episode_id)
        return found[0]

    async def list_episodes(
        self,
        scope: Scope,
        *,
        statuses: Sequence[str] | None = ACTIVE,
        page: int = 1,
        page_size: int = 10,
        sender_id: str | None = None,
        event_from_ts: float | None = None,
        event_until_ts: float | None = None,
        as_of_ts: float | None = None,
    ) -> EpisodePage:
        """A page of episodes, newest first. Pages through the backend; never loads other scopes.
        ``as_of_ts``: only the ones valid at that instant; the default statuses then are the
        as-of ones (active and superseded: what was true then)."""
        page = max(1, int(page))
        page_size = max(1, min(100, int(page_size)))
        if as_of_ts is not None and statuses is not None and tuple(statuses) == ACTIVE:
            statuses = AS_OF_STATUSES
        crit = Criteria(
            statuses=tuple(statuses) if statuses else None,
            sender_id=sender_id,
            event_from_ts=event_from_ts,
            event_until_ts=event_until_ts,
            as_of_ts=as_of_ts,
        )
        start = (page - 1) * page_size
        if crit.statuses == ACTIVE:  # the scope's index orders its active rows: read only the page
            idx = await self.scope_index(scope)
            if idx.complete:
                ordered = idx.matching_ids(scope_where(scope, crit))
                want = ordered[start : start + page_size]
                found = await self.writes.fetch(scope, Criteria(statuses=None, ids=tuple(want))) if want else []
                got = {e.id: e for e in found}
                items = [got[i] for i in want if i in got and got[i].status == "active"]
                if len(items) == len(want):
                    return EpisodePage(items, page, page_size, len(ordered) > start + page_size)
                self.index.invalidate(scope.collection, scope.user_key)  # changed by another process
        rows = await self.writes.fetch(scope, crit)
        rows.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        return EpisodePage(rows[start : start + page_size], page, page_size, len(rows) > start + page_size)

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for e in await self.writes.fetch(scope, Criteria(statuses=None)):
            counts[e.status] = counts.get(e.status, 0) + 1
        return counts

    async def forget(
        self, scope: Scope, episode_id: str, actor: Actor, reason: str = "", *, never: bool = False
    ) -> Episode:
        """Delete one episode of this scope from the vector index, verified by reading back. The
        speaker's own, or anyone's for a memory admin (:func:`ltm.domain.privilege.may_change_record`)."""
        need_l2(scope)
        operation = "episode.forget"
        async with self.locks.hold(l2_lock_key(scope)):
            episode = await self.get_episode(scope, episode_id)
            if not policy.may_change_record(self.caller(actor), episode.sender_id):
                raise PermissionDenied(f"{episode.id} is not the caller's", key="policy.error.forget", id=episode.id)
            event = RetireEvent(scope, "forget", [episode], actor, reason, never=never)
            steps = self.writes.delete_steps(scope, [episode], operation, ([episode.id], f"forgot {episode.id}"))
            steps += await self._retire_steps(event)  # committed with the delete
            verify = lambda: self.writes.verify_absent(scope, [episode.id], operation)  # noqa: E731
            await self.writes.mutate(actor, operation, steps, reason=reason, verify=verify)
        log.info("forget: %s in %s", episode.id, scope.user_key)
        await self._retired(event)
        return episode

    async def set_status(self, scope: Scope, episode_id: str, status: str, actor: Actor, reason: str = "") -> Episode:
        """Archive or restore (lifecycle change; the row keeps its own scope keys). A memory admin's verb."""
        if status not in ("archived", "active"):
            raise ValidationError("status: archived or active", key="error.status", value=status)
        need_l2(scope)
        require_admin("archive" if status == "archived" else "restore", actor, self.settings)
        async with self.locks.hold(l2_lock_key(scope)):
            episode = await self.get_episode(scope, episode_id)
            if status == "archived" and episode.status != "active":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="error.archive_status", status=episode.status
                )
            if status == "active" and episode.status != "archived":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="error.restore_status", status=episode.status
                )
            # Restoring undoes the archive: a record that had been superseded before it was archived
            # (consolidation archives superseded records) goes back to superseded, never to active.
            target = "superseded" if status == "active" and episode.superseded_by else status
            updated = episode.retagged(status=target)
            op = "episode.archive" if status == "archived" else "episode.restore"
            audit = ([episode.id], f"{op.split('.')[1]} {episode.id}")
            step = self.writes.rewrite_step(scope, [updated], [episode], op, episodes_are([episode], target), audit)
            event = RetireEvent(scope, "archive", [episode], actor, reason)
            extra = await self._retire_steps(event) if status == "archived" else []
            await self.writes.mutate(actor, op, [step, *extra], reason=reason)
        log.info("status %s -> %s in %s", episode.id, status, scope.user_key)
        if status == "archived":
            await self._retired(event)
        return updated

    async def bulk_delete(self, scope: Scope, criteria: Criteria, actor: Actor, reason: str = "", tag: str = "") -> int:
        """Delete every episode of this scope matching ``criteria`` (and ``tag``); returns the count
        that was present before and is gone after (read back). All or nothing: a delete of more than
        ``delete_batch`` rows is several backend calls, and a failure in a later one writes the
        earlier ones back."""
        need_l2(scope)
        async with self.locks.hold(l2_lock_key(scope)):
            victims = [e for e in await self.writes.fetch(scope, criteria) if not tag or tag in e.tags]
            ids = [e.id for e in victims]
            if not ids:
                return 0
            operation = "episode.bulk_delete"
            event = RetireEvent(scope, "bulk_delete", victims, actor, reason)
            steps = self.writes.delete_steps(scope, victims, operation, (ids[:50], f"deleted {len(ids)} memories"))
            await self.writes.mutate(
                actor,
                operation,
                steps + await self._retire_steps(event),
                reason=reason,
                verify=lambda: self.writes.verify_absent(scope, ids, operation),
            )
        log.info("bulk delete in %s: %d", scope.user_key, len(ids))
        await self._retired(event)
        return len(ids)

    # ------------------------------------------------------------------ documents (engine ingest)
    def _doc_key(self, kb_id: str, document_id: str) -> str:
        return DOC_PREFIX + f"{kb_id}/{document_id}"

    async def ingest_document(self, kb_id: str, document_id: str, payload: Any, actor: Actor) -> int:
        """Import a JSON document of episodes: ``{"session_name", "bot_uuid", "episodes": [...]}``
        or a list; each episode may name its own ``session_name``/``bot_uuid``/``sender_id``.
        The whole document is validated before anything is written, and written all or nothing:
        the document's index and one upsert per scope are the steps of one mutation."""
        if isinstance(payload, list):
            payload = {"episodes": payload}
        if not isinstance(payload, dict) or not isinstance(payload.get("episodes"), list):
            raise ValidationError('expected {"episodes": [...]} or a list', key="error.document_shape")
        items = payload["episodes"]
        if not items:
            raise ValidationError("no episodes in the document", key="error.document_empty")
        plan: list[tuple[Scope, EpisodeInput, bool]] = []
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict):
                raise ValidationError(f"episode {n}: expected an object", key="error.document_item", n=n)
            try:
                scope = await self.scope_for(
                    kb_id=kb_id,
                    session_name=str(item.get("session_name") or payload.get("session_name") or ""),
                    bot_uuid=str(item.get("bot_uuid") or payload.get("bot_uuid") or ""),
                    sender_id=str(item.get("sender_id") or payload.get("sender_id") or ""),
                )
                fields = {k: v for k, v in item.items() if k not in ("session_name", "bot_uuid", "sender_id", "status")}
                fields.setdefault("source_ref", f"document:{document_id}")
                fields.pop("supersedes", None)
                shared = fields.pop("shared", False)
                if not isinstance(shared, bool):
                    raise ValidationError("shared: true or false", key="error.field_type", field="shared")
                data = validate_episode_input(fields, default_claim="unknown")
            except MemoryError_ as exc:
                raise ValidationError(f"episode {n}: {exc.detail or exc.key}", key="error.document_item", n=n) from exc
            plan.append((scope, data, shared))
        for scope, data, _shared in plan:  # tombstones refuse the whole document before anything is written
            await self.screen_statement(scope, data, actor, "document")
        by_scope: dict[str, list[Episode]] = {}
        scopes: dict[str, Scope] = {}
        for scope, data, shared in plan:
            now = to_iso(self.clock())
            ep = build_episode(data, scope, origin="document", timestamp=now, document_id=document_id, shared=shared)
            by_scope.setdefault(scope.user_key, []).append(ep)
            scopes[scope.user_key] = scope
        touched = sorted(by_scope)
        key = self._doc_key(kb_id, document_id)
        operation = "document.ingest"
        async with self.locks.hold_all(["doc:" + key, *(l2_lock_key(s) for s in scopes.values())]):
            old = await backend(self.kv.get(key), "storage read")
            known = json.loads(old).get("user_keys", []) if old else []  # a re-ingest keeps the scopes it had
            new = json.dumps({"user_keys": sorted({*known, *touched})}).encode()
            # the index write is fenced with its first scope; a re-ingest into the same scopes leaves it
            steps = [self.writes.kv_step(scopes[touched[0]], operation, key, new, old)] if new != old else []
            for ukey in touched:
                eps = by_scope[ukey]
                audit = ([e.id for e in eps][:50], f"document {document_id}: {len(eps)} memories")
                steps += self.writes.new_row_steps(scopes[ukey], eps, operation, audit)
            await self.writes.mutate(actor, operation, steps)
        log.info("ingested document %s into %s: %d episodes, %d scopes", document_id, kb_id, len(plan), len(touched))
        return len(plan)

    async def delete_document(self, kb_id: str, document_id: str, actor: Actor) -> int:
        """Delete every episode of a document in every scope it reached, and its index: all or
        nothing (the per-scope deletes and the index delete are the steps of one mutation). The
        scopes are the ones the index names under the locks: if a concurrent ingest of the same
        document added one meanwhile, the locks are taken again for the new set."""
        key = self._doc_key(kb_id, document_id)
        raw = await backend(self.kv.get(key), "storage read")
        operation = "episode.bulk_delete"
        reason = f"document {document_id} deleted"
        while raw:
            ukeys = sorted(set(json.loads(raw).get("user_keys", [])))
            scopes = [user_key_scope(kb_id, u) for u in ukeys]
            victims: dict[str, list[Episode]] = {}
            async with self.locks.hold_all(["doc:" + key, *(l2_lock_key(s) for s in scopes)]):
                now = await backend(self.kv.get(key), "storage read")
                if now != raw:  # changed before the locks were held: start again with what it says now
                    raw = now
                    continue
                if not scopes:  # an index naming no scope (never written so): nothing to delete but it
                    await backend(self.kv.delete(key), "storage write")
                    return 0
                steps: list[WriteStep] = []
                for scope in scopes:
                    rows = await self.writes.fetch(scope, Criteria(statuses=None, document_id=document_id))
                    if rows:
                        victims[scope.user_key] = rows
                        ids = [e.id for e in rows]
                        steps += self.writes.delete_steps(
                            scope, rows, operation, (ids[:50], f"deleted {len(ids)} memories")
                        )
                        steps += await self._retire_steps(RetireEvent(scope, "bulk_delete", rows, actor, reason))
                steps.append(self.writes.kv_step(scopes[0], operation, key, None, raw))

                async def verify(victims: dict[str, list[Episode]] = victims, scopes: list[Scope] = scopes) -> None:
                    for scope in scopes:
                        if victims.get(scope.user_key):
                            await self.writes.verify_absent(scope, [e.id for e in victims[scope.user_key]], operation)

                await self.writes.mutate(actor, operation, steps, reason=reason, verify=verify)
            for scope in scopes:
                if victims.get(scope.user_key):
                    await self._retired(RetireEvent(scope, "bulk_delete", victims[scope.user_key], actor, reason))
            return sum(len(v) for v in victims.values())
        return 0

    # ------------------------------------------------------------------ recall
    async def scope_index(self, scope: Scope, settings: Settings | None = None) -> ScopeIndex:
        """The scope's recall index (built on first use from one paged list of its active rows)."""
        return await self.recaller.scope_index(scope, settings)

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
    ) -> RecallResult:
        """Profiles + ranked episodes of this scope for ``query`` (see :meth:`Recall.recall`)."""
        return await self.recaller.recall(
            scope, query, limit=limit, speaker_id=speaker_id, only_speaker=only_speaker, time_from=time_from,
            time_until=time_until, as_of=as_of, with_profiles=with_profiles, budget_tokens=budget_tokens,
            parse_window=parse_window,
        )  # fmt: skip

    # ------------------------------------------------------------------ injection snapshot
    async def save_injection(self, scope: Scope, snapshot: dict[str, Any]) -> None:
        # the readable identity stays in the record (a very long id is shortened in the key)
        record = {**snapshot, "owner": {"session_name": scope.session_name, "bot_uuid": scope.bot_uuid}}
        await self.kv.set(inject_key(scope), json.dumps(record, ensure_ascii=False).encode("utf-8"))

    async def last_injection(self, scope: Scope) -> dict[str, Any] | None:
        raw = await self.kv.get(inject_key(scope))
        return json.loads(raw) if raw else None


def _readable_entry(scope: Scope, entry: dict[str, Any]) -> dict[str, Any]:
    """An audit entry as the read rule lets ``scope`` see it (see :meth:`MemoryService.audit_page`)."""
    if may_read(scope, audience_of_key(str(entry.get("scope_key") or ""))):
        return entry
    keep = ("seq", "at", "operation", "user_key", "collection")
    return {**{k: entry.get(k) for k in keep}, "targets": [], "sender": "", "summary": "", "redacted": True}


__all__ = ["Actor", "MemoryService", "RecalledEpisode", "RecallResult", "Remembered", "RetireEvent", "WriteStep"]
