"""MemoryService: the one object every surface (tools, listener, command, engine, console) calls.

Every verb exists once here. Every L2 read, search, list, count, export and delete is filtered by
:func:`ltm.domain.scope.scope_where` (the scope and the read rule); every mutation is serialized per
scope, audited, and allowed or refused by :mod:`ltm.domain.privilege` inside the verb itself, so
no surface can skip the policy.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from ..domain import budget as budget_rules
from ..domain import privilege as policy
from ..domain import ranking, timewindow
from ..domain import rerank as rerank_rules
from ..domain.errors import (
    BackendError,
    ConflictError,
    FencedError,
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
    validity_window,
)
from ..domain.scope import (
    ACTIVE,
    AS_OF_STATUSES,
    FENCE_PREFIX,
    PROFILE_PREFIX,
    STATUSES,
    Criteria,
    Scope,
    audience_of_key,
    audit_log_key,
    derive_scope,
    inject_key,
    kb_part,
    key_part_value,
    l1_lock_key,
    l2_lock_key,
    may_read,
    owned_keys,
    parse_lock_key,
    parse_storage_key,
    profile_storage_key,
    scope_owns,
    scope_where,
    session_profile_key,
    speaker_profile_key,
)
from ..domain.text import check_text
from ..domain.timefields import now_utc, parse_instant, to_iso, ts
from ..domain.trust import trust_label
from ..ports import Embedder, KeyValueStore, Reranker, VectorIndex, VectorRecord, is_unknown_outcome
from .audit import AuditEntry, AuditLog
from .locks import ScopeLocks
from .recall_index import VECTOR_KEY, RecallIndex, ScopeIndex, encode_vector
from .settings import KbSettings, Settings

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


@dataclass(frozen=True)
class Actor:
    """Who asked: the surface, the speaker, the query and the host privilege (2 = admin)."""

    surface: str
    sender_id: str = ""
    query_id: int | None = None
    privilege: int = 1


@dataclass
class RecalledEpisode:
    episode: Episode
    score: float

    def to_public(self) -> dict[str, Any]:
        e = self.episode
        return {
            "id": e.id,
            "content": e.content,
            "sender_id": e.sender_id,
            "timestamp": e.timestamp,
            "event_at": e.event_at,
            "valid_from": e.valid_from,
            "valid_until": e.valid_until,
            "valid_window": validity_window(e),
            "status": e.status,
            **({"superseded_by": e.superseded_by} if e.superseded_by else {}),
            "claim_type": e.claim_type,
            "confidence": e.confidence,
            "trust": trust_label(e.claim_type, e.confidence),
            "importance": e.importance,
            "tags": e.tags,
            "source_ref": e.source_ref,
            "score": round(self.score, 4),
        }


@dataclass
class RecallResult:
    session_profile: Profile | None
    speaker_profile: Profile | None
    episodes: list[RecalledEpisode] = field(default_factory=list)
    tokens: int = 0
    window: tuple[float, float] | None = None
    candidates: int = 0
    as_of: str | None = None  # the instant of an as-of recall (UTC ISO-8601), None for "now"


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


@dataclass
class WriteStep:
    """One host write of a mutation: its lock (the write scope it fences), what the store holds once
    it applied (``{episode id: status | "absent"}``, ``{"profile:<key>": hash}``, ``{"kv:<key>": hash
    | "absent"}``), how to apply it, how to take it back (idempotent; only multi-step mutations use
    it) and the audit entry it owes its scope's log (``(targets, summary)``), if any."""

    scope: Scope
    lock_key: str
    expect: dict[str, Any]
    apply: Callable[[], Awaitable[Any]]
    undo: Callable[[], Awaitable[Any]] | None = None
    audit: tuple[list[str], str] | None = None
    audit_op: str = ""  # the audited operation when it is not the mutation's own (candidate.accept, ...)
    audit_reason: str = ""  # the audited reason when it is not the mutation's own


@dataclass
class _Bookkeeping:
    """An applied mutation whose audit entries and journal close are still to be written."""

    op_id: str
    actor: Actor
    operation: str
    steps: list[WriteStep]
    reason: str
    locks: list[str]
    audited: set[int] = field(default_factory=set)


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
        self.kv = kv
        self._reranker_for = reranker_for
        self.vectors = vectors
        self._embedder_for = embedder_for
        self._settings = settings
        self.clock = clock
        self.locks = ScopeLocks()
        self.audit = AuditLog(kv)
        self.index = RecallIndex(vectors, kv=kv)  # both recall legs of every active scope, kept by the writes
        self._kb_cache: dict[str, KbSettings | None] = {}
        self._kb_ids: tuple[float, list[str]] | None = None  # (read at, registered KB ids)
        self._fences: dict[str, dict[str, Any]] | None = None  # lock key -> fence record
        self._pending: dict[str, _Bookkeeping] = {}  # op id -> applied, bookkeeping not yet written
        # Extension points used by the review queue and consolidation (one service, more rules):
        # a guard may refuse or park a new statement before anything is written (it raises);
        # a retire listener runs after episodes left the active set.
        self.statement_guards: list[StatementGuard] = []
        self.delete_batch = DELETE_BATCH  # ids per backend delete call
        self.retire_listeners: list[RetireListener] = []
        # writes that must commit with a retirement, in the same all-or-nothing mutation (the
        # tombstone of ``forget --never``)
        self.retire_steps: list[RetireSteps] = []
        self._recovery: asyncio.Task[list[dict[str, Any]]] | None = None

    # ------------------------------------------------------------------ settings & KBs
    @property
    def settings(self) -> Settings:
        return self._settings()

    def caller(self, actor: Actor) -> policy.Caller:
        """The privilege policy's view of ``actor`` (admin from the live ``admin_sender_ids``)."""
        return policy.caller_of(actor.privilege, actor.sender_id, self.settings.admin_sender_ids)

    def _require_admin(self, verb: str, actor: Actor) -> None:
        """Refuse an admin verb of the policy table for a caller who is not a memory admin."""
        if policy.requires_admin(verb) and not self.caller(actor).admin:
            raise PermissionDenied(
                f"{verb} needs a memory admin", key=f"cmd.refused.{policy.rule_for(verb).kind}", verb=verb
            )

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
        raw = await self._backend(self.kv.get(KB_PREFIX + kb_id), "storage read")
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

    async def _embedder(self, scope: Scope) -> Embedder:
        kb = await self.kb_settings(scope.collection)
        if kb is None:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")
        return self._embedder_for(scope.collection, kb)

    @staticmethod
    def _need_l2(scope: Scope) -> None:
        if not scope.collection:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")

    async def _backend(self, aw: Awaitable[T], what: str) -> T:
        try:
            return await aw
        except MemoryError_:
            raise
        except Exception as exc:
            log.warning("%s failed: %s", what, exc)
            raise BackendError(f"{what}: {exc}", key="error.backend", what=what) from exc

    async def _audit(
        self,
        scope: Scope,
        actor: Actor,
        operation: str,
        targets: Sequence[str],
        summary: str,
        reason: str = "",
        op_id: str = "",
    ) -> None:
        await self.audit.append(
            audit_log_key(scope),
            AuditEntry(
                seq=0,
                at=to_iso(self.clock()),
                operation=operation,
                targets=list(targets),
                scope_key=scope.scope_key,
                user_key=scope.user_key,
                sender=actor.sender_id,
                surface=actor.surface,
                query_id=actor.query_id,
                summary=summary,
                reason=reason,
                extra={"op_id": op_id} if op_id else {},
                collection=scope.collection,
            ),
        )

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

    # ------------------------------------------------------------------ fences & journal
    async def _load_fences(self) -> dict[str, dict[str, Any]]:
        if self._fences is None:
            fences: dict[str, dict[str, Any]] = {}
            for key in await self._backend(self.kv.keys(FENCE_PREFIX), "storage read"):
                raw = await self._backend(self.kv.get(key), "storage read")
                if raw:
                    fences[key[len(FENCE_PREFIX) :]] = json.loads(raw)
            self._fences = fences
        return self._fences

    async def fences(self) -> dict[str, dict[str, Any]]:
        """Every fenced write scope of this installation: lock key -> fence record."""
        return dict(await self._load_fences())

    async def fence_of(self, lock_key: str) -> dict[str, Any] | None:
        return (await self._load_fences()).get(lock_key)

    async def _check_fence(self, lock_key: str) -> None:
        fence = await self.fence_of(lock_key)
        if fence is not None:
            raise FencedError(
                f"writes to {lock_key} are fenced since {fence.get('dispatched_at')}",
                key="error.fenced",
                operation=str(fence.get("operation")),
                at=str(fence.get("dispatched_at")),
            )

    async def _set_fence(self, lock_key: str, scope: Scope, operation: str, detail: str) -> None:
        record = {
            "lock_key": lock_key,
            "operation": operation,
            "dispatched_at": to_iso(self.clock()),
            "detail": detail[:300],
            "scope": scope.describe(),
        }
        (await self._load_fences())[lock_key] = record  # this process refuses at once
        try:
            await self.kv.set(FENCE_PREFIX + lock_key, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            await self._audit(
                scope, Actor(surface="system"), "fence.set", [lock_key], f"fenced after {operation}", detail[:300]
            )
        except Exception as exc:  # the in-memory fence still holds for this process
            log.error("could not persist the fence of %s: %s", lock_key, exc)
        log.warning("write fence set on %s after %s: %s", lock_key, operation, detail)

    async def clear_fence(self, lock_key: str, actor: Actor, reason: str = "") -> bool:
        """Lift one fence (the console's Clear Fence). Audited. Returns whether one was set."""
        fence = await self.fence_of(lock_key)
        if fence is None:
            return False
        await self.kv.delete(FENCE_PREFIX + lock_key)
        (await self._load_fences()).pop(lock_key, None)
        scope_d = dict(fence.get("scope") or {})
        scope = _scope_from(scope_d) if scope_d else None
        if scope is not None:
            await self._audit(scope, actor, "fence.clear", [lock_key], "write fence cleared", reason)
        log.info("write fence cleared on %s by %s", lock_key, actor.surface)
        return True

    async def fences_of(self, scope: Scope) -> dict[str, dict[str, Any]]:
        """The fences that concern one scope: its L2 fence in its KB and its profiles' L1 fences."""
        return {k: v for k, v in (await self._load_fences()).items() if k in self._scope_fence_keys(scope, [k])}

    def _scope_fence_keys(self, scope: Scope, keys: Sequence[str]) -> list[str]:
        return owned_keys(scope, keys, lock=True)

    async def clear_scope_fences(self, scope: Scope, actor: Actor, reason: str = "") -> int:
        """Clear the L2 fence of a scope in its KB and the L1 fences of its profiles."""
        keys = self._scope_fence_keys(scope, list(await self._load_fences()))
        return sum([await self.clear_fence(k, actor, reason) for k in keys])

    async def clear_kb_fences(self, kb_id: str, actor: Actor, reason: str = "") -> int:
        kb = kb_part(kb_id)
        keys = [k for k in await self._load_fences() if (p := parse_lock_key(k)) and p.layout == "l2" and p.kb == kb]
        return sum([await self.clear_fence(k, actor, reason) for k in keys])

    async def clear_all_fences(self, actor: Actor, *, confirm: bool, reason: str = "") -> int:
        """Installation-wide clear; only when explicitly requested."""
        if not confirm:
            raise ValidationError("installation-wide clear needs explicit confirmation", key="error.confirm")
        return sum([await self.clear_fence(k, actor, reason) for k in list(await self._load_fences())])

    async def _dispatch(self, lock_key: str, scope: Scope, operation: str, aw: Awaitable[T]) -> T:
        """Run one host write. An unknown outcome fences the scope; a deterministic failure does not."""
        try:
            return await aw
        except asyncio.CancelledError:
            self.index.invalidate(scope.collection, scope.user_key)  # the write may have landed
            await self._set_fence(lock_key, scope, operation, "cancelled after dispatch")
            raise
        except MemoryError_:
            raise
        except Exception as exc:
            if is_unknown_outcome(exc):
                self.index.invalidate(scope.collection, scope.user_key)
                await self._set_fence(lock_key, scope, operation, f"{type(exc).__name__}: {exc}")
                raise FencedError(str(exc), key="error.fenced_now", operation=operation) from exc
            log.warning("%s refused by the backend: %s", operation, exc)
            raise BackendError(f"{operation}: {exc}", key="error.backend", what=operation) from exc

    async def _journal_begin(self, actor: Actor, operation: str, steps: Sequence[WriteStep]) -> str:
        """Persist the intent of a mutation before its first write: every step's scope, lock and
        expected state, and the audit entries it owes. :meth:`recover` settles what a crash leaves."""
        op_id = uuid.uuid4().hex[:16]
        entry = {
            "op_id": op_id,
            "operation": operation,
            "actor": {"surface": actor.surface, "sender_id": actor.sender_id, "query_id": actor.query_id},
            "started_at": to_iso(self.clock()),
            "parts": [
                {
                    "lock_key": s.lock_key,
                    "scope": s.scope.describe(),
                    "expect": s.expect,
                    "audit": list(s.audit[0][:50]) if s.audit else None,
                    "audit_op": s.audit_op,
                }
                for s in steps
            ],
        }
        await self._backend(
            self.kv.set(JOURNAL_PREFIX + op_id, json.dumps(entry, ensure_ascii=False).encode()), "journal write"
        )
        return op_id

    async def _journal_finish(self, book: _Bookkeeping) -> bool:
        """Audit (one entry per step that owes one, each once), then close the journal entry.
        True when done. On a failure the operation stays pending: the next write to one of its
        scopes finishes it first (:meth:`_settle_pending`), a restart leaves it to :meth:`recover`."""
        try:
            for n, s in enumerate(book.steps):
                if s.audit and n not in book.audited:
                    op = s.audit_op or book.operation
                    why = s.audit_reason or book.reason
                    await self._audit(s.scope, book.actor, op, s.audit[0], s.audit[1], why, op_id=book.op_id)
                    book.audited.add(n)
            await self.kv.delete(JOURNAL_PREFIX + book.op_id)
        except Exception as exc:
            log.warning("%s applied, its audit/journal bookkeeping is pending: %s", book.operation, exc)
            self._pending[book.op_id] = book
            return False
        self._pending.pop(book.op_id, None)
        return True

    async def _settle_pending(self, locks: Sequence[str]) -> None:
        """Before a write: finish the bookkeeping of an earlier applied operation on the same
        scopes, so its journal never outlives a change it could be misjudged by. Refuses the write
        (nothing applied) while that bookkeeping still fails."""
        for book in [b for b in self._pending.values() if set(b.locks) & set(locks)]:
            if not await self._journal_finish(book):
                raise BackendError(
                    f"the audit entry of an earlier {book.operation} is not recorded yet",
                    key="error.backend",
                    what="audit write",
                )

    async def _close_journal(self, op_id: str) -> None:
        try:
            await self.kv.delete(JOURNAL_PREFIX + op_id)
        except Exception as exc:
            log.warning("could not close journal %s: %s", op_id, exc)

    async def _mutate(
        self,
        scope: Scope,
        actor: Actor,
        *,
        lock_key: str,
        operation: str,
        targets: Sequence[str],
        summary: str,
        expect: dict[str, Any],
        write: Callable[[], Awaitable[Any]],
        reason: str = "",
    ) -> None:
        """One audited mutation in one host write (see :meth:`_mutate_steps`)."""
        step = WriteStep(scope, lock_key, expect, write, audit=(list(targets), summary))
        await self._mutate_steps(actor, operation, [step], reason=reason)

    async def _mutate_steps(
        self,
        actor: Actor,
        operation: str,
        steps: Sequence[WriteStep],
        *,
        reason: str = "",
        verify: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        """One audited mutation: fence check, journal, the writes (fenced on an unknown outcome),
        an optional read-back, the audit entries, the journal closed. The caller holds every lock.

        One step is one host write, atomic by itself: a deterministic failure applied nothing (the
        journal is closed), an unknown outcome fences the scope and leaves the journal for
        :meth:`recover`. Several steps (chunks, several scopes, a document index) are all or
        nothing: when one fails (or the read-back does), the steps already applied - and the
        failing one, if its outcome is unknown - are taken back with their ``undo`` in reverse
        order, so the store is in its before-state again. A fence set by the failing write stays
        (a late write could still land). If taking back fails too, every lock of the operation is
        fenced and the journal stays: recovery reports it."""
        check_text(reason or "", "reason")
        await self.wait_recovered()
        locks = list(dict.fromkeys(s.lock_key for s in steps))
        for key in locks:
            await self._check_fence(key)
        await self._settle_pending(locks)
        op_id = await self._journal_begin(actor, operation, steps)
        done = 0
        try:
            for step in steps:
                await step.apply()
                done += 1
            if verify is not None:
                await verify()
        except BaseException as exc:
            # Every host write goes through _dispatch, which fences on an unknown outcome: without a
            # fence, the failing write was refused or never dispatched.
            fenced = [k for k in locks if await self.fence_of(k) is not None]
            if done == 0 and not fenced:
                await self._close_journal(op_id)  # nothing was applied
                raise
            if done == 0 and len(steps) == 1:
                raise  # one write, outcome unknown: fenced, and the journal stays for recover()
            applied = list(steps[: done + 1 if fenced and done < len(steps) else done])
            ok, cancelled = await self._take_back(operation, applied, exc)
            if ok:
                await self._close_journal(op_id)
            else:
                for key in locks:
                    if await self.fence_of(key) is None:
                        scope = next(s.scope for s in steps if s.lock_key == key)
                        await self._set_fence(key, scope, operation, "partly applied; taking back failed")
            if cancelled and not isinstance(exc, asyncio.CancelledError):
                raise asyncio.CancelledError from exc  # a cancellation during the taking back wins
            if not ok and not isinstance(exc, (asyncio.CancelledError, FencedError)):
                raise FencedError(str(exc), key="error.fenced_now", operation=operation) from exc
            raise
        await self._journal_finish(_Bookkeeping(op_id, actor, operation, list(steps), reason, locks))

    async def _take_back(self, operation: str, applied: Sequence[WriteStep], cause: BaseException) -> tuple[bool, bool]:
        """Undo ``applied`` in reverse order (all of them, even after a failure or a cancellation).
        Returns (every undo succeeded, a cancellation arrived meanwhile)."""
        log.warning("%s failed after %d of its writes (%s); taking them back", operation, len(applied), cause)
        ok, cancelled = True, False
        for step in reversed(applied):
            try:
                if step.undo is not None:
                    await step.undo()
            except asyncio.CancelledError:
                log.error("%s: taking back a write in %s was cancelled", operation, step.lock_key)
                ok, cancelled = False, True
            except Exception as exc:
                log.error("%s: taking back a write in %s failed: %s", operation, step.lock_key, exc)
                ok = False
            self.index.invalidate(step.scope.collection, step.scope.user_key)
        return ok, cancelled

    def start_recovery(self) -> asyncio.Task[list[dict[str, Any]]]:
        """Run :meth:`recover` in the background (the plugin answers the host at once after a
        restart); every write waits for it first (:meth:`wait_recovered`), reads do not."""
        if self._recovery is None:
            self._recovery = asyncio.get_running_loop().create_task(self._recover_logged())
        return self._recovery

    def stop_recovery(self) -> None:
        """Cancel a background recovery still running (its installation was revoked)."""
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()

    async def _recover_logged(self) -> list[dict[str, Any]]:
        try:
            report = await self.recover()
        except Exception:
            log.exception("recovery of half-finished operations failed; they stay in the journal")
            return []
        for outcome in report:
            log.warning("recovered %s (%s): %s", outcome["op_id"], outcome["operation"], outcome["state"])
        return report

    async def wait_recovered(self) -> None:
        """Until the background recovery settled the journal: a write racing it could change a
        state recovery is still judging. Shielded: a cancelled write never cancels recovery."""
        task = self._recovery
        if task is not None and not task.done():
            await asyncio.shield(task)

    @property
    def recovering(self) -> bool:
        return self._recovery is not None and not self._recovery.done()

    async def recover(self) -> list[dict[str, Any]]:
        """After a restart: settle every open journal entry. An operation whose expected state is
        fully present is completed (each owed audit entry written once); one with no trace is
        dropped (it was never acknowledged); a partial one fences its scopes and is reported."""
        report: list[dict[str, Any]] = []
        for key in sorted(await self.kv.keys(JOURNAL_PREFIX)):
            raw = await self.kv.get(key)
            if not raw:
                continue
            entry = json.loads(raw)
            if "parts" not in entry:  # an entry of a one-step mutation written before steps existed
                entry["parts"] = [{k: entry.get(k) for k in ("lock_key", "scope", "expect")} | {"audit": []}]
            parts = [(p, _scope_from(p["scope"])) for p in entry["parts"]]
            actor = Actor(surface="recovery", sender_id=str(entry.get("actor", {}).get("sender_id") or ""))
            # a step that expects nothing checkable (a re-joined link) does not decide the state
            states = {await self._expected_state(scope, p["expect"]) for p, scope in parts if p.get("expect")}
            state = states.pop() if len(states) == 1 else "partial" if states else "applied"
            outcome = {"op_id": entry["op_id"], "operation": entry["operation"], "state": state}
            if state == "applied":
                for p, scope in parts:
                    if p.get("audit") is None:
                        continue
                    op = p.get("audit_op") or entry["operation"]
                    if not await self._audited(scope, entry["op_id"], op, str(entry.get("started_at") or "")):
                        targets = p["audit"] or list((p.get("expect") or {}).keys())[:50]
                        await self._audit(scope, actor, op, targets, "completed after restart", op_id=entry["op_id"])
                await self.kv.delete(key)
            elif state == "not_applied":
                await self.kv.delete(key)
            else:
                for lock_key, scope in {p["lock_key"]: scope for p, scope in parts}.items():
                    await self._set_fence(lock_key, scope, entry["operation"], "half-finished before restart")
            report.append(outcome)
            log.warning("recovered operation %s (%s): %s", entry["op_id"], entry["operation"], state)
        return report

    async def _audited(self, scope: Scope, op_id: str, operation: str, since: str) -> bool:
        """Whether the scope's log holds the entry of ``operation`` by ``op_id`` (newest first, down
        to the entries older than ``since``, when the operation started)."""
        page = 1
        while True:
            entries, total = await self.audit_page(scope, page, 100)
            for e in entries:
                if ((e.get("extra") or {}).get("op_id"), e.get("operation")) == (op_id, operation):
                    return True
            if not entries or page * 100 >= total or (since and str(entries[-1].get("at") or "") < since):
                return False
            page += 1

    async def _expected_state(self, scope: Scope, expect: dict[str, Any]) -> str:
        """Compare the store with ``expect``: ``{episode id: status | "<status>:<confidence>" |
        "absent"}``, ``{"profile:<key>": content hash}`` or ``{"kv:<storage key>": content hash |
        "absent" | {"list_has": id[, "status": s]} | {"list_lacks": id} | {"source": s}}`` (the last
        three look inside a stored JSON list of ``{"id", "status"}`` entries, or a record's ``sources``)."""
        hits = misses = 0
        ids = [k for k in expect if not k.startswith(("profile:", "kv:"))]
        found: dict[str, Episode] = {}
        for i in range(0, len(ids), 100):
            for e in await self._fetch(scope, Criteria(statuses=None, ids=tuple(ids[i : i + 100]))):
                found[e.id] = e
        for k, want in expect.items():
            if k.startswith(("profile:", "kv:")):
                storage_key = _profile_key(k[len("profile:") :]) if k.startswith("profile:") else k[len("kv:") :]
                raw = await self.kv.get(storage_key)
                ok = _stored_matches(raw, want)
            else:
                e = found.get(k)
                got = "absent" if e is None else e.status if ":" not in str(want) else f"{e.status}:{e.confidence}"
                ok = got == want
            hits, misses = hits + ok, misses + (not ok)
        if misses == 0:
            return "applied"
        return "not_applied" if hits == 0 else "partial"

    async def _kv_put(self, lock_key: str, scope: Scope, operation: str, key: str, value: bytes | None) -> None:
        """One plugin-storage write (``None`` deletes), fenced on ``lock_key`` on an unknown outcome."""
        write = self.kv.set(key, value) if value is not None else self.kv.delete(key)
        await self._dispatch(lock_key, scope, operation, write)

    def restore_step(self, scope: Scope, episodes: Sequence[Episode], cause: str, operation: str) -> WriteStep:
        """One vector write that makes ``episodes`` (rows of ``scope`` as read under its lock)
        active again, their ``superseded_by`` cleared; taken back by writing them as they were.
        For a step of a larger mutation (a removed summary giving its sources back)."""
        restored = [e.retagged(status="active", superseded_by="") for e in episodes]
        originals = list(episodes)
        ids = [e.id for e in restored]
        return WriteStep(
            scope,
            self._l2_lock(scope),
            dict.fromkeys(ids, "active"),
            apply=lambda: self._upsert(scope, restored, operation),
            undo=lambda: self._upsert(scope, originals, operation + ".undo", fence_check=False),
            audit=(ids[:50], f"{len(ids)} memories active again: {cause} no longer replaces them"),
            audit_op=operation,
        )

    def kv_step(
        self,
        scope: Scope,
        operation: str,
        key: str,
        new: bytes | None,
        old: bytes | None,
        *,
        audit: tuple[list[str], str] | None = None,
        audit_op: str = "",
        expect: dict[str, Any] | None = None,
    ) -> WriteStep:
        """One plugin-storage write (``new``; ``None`` deletes) that belongs to the memory of
        ``scope``: fenced with its L2 writes, taken back by restoring ``old``. ``expect`` defaults to
        the hash of ``new`` (or ``absent``)."""
        lock = self._l2_lock(scope)
        return WriteStep(
            scope,
            lock,
            expect if expect is not None else {"kv:" + key: _hash_bytes(new) if new is not None else "absent"},
            apply=lambda: self._kv_put(lock, scope, operation, key, new),
            undo=lambda: self._kv_put(lock, scope, operation, key, old),
            audit=audit,
            audit_op=audit_op,
        )

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
        raw = await self._backend(self.kv.get(_profile_key(key)), "profile read")
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
            await self._check_fence(l1_lock_key(key))
            old = await self._backend(self.kv.get(_profile_key(key)), "profile read")
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
            step = WriteStep(
                scope,
                lock_key,
                {f"profile:{key}": _hash_bytes(payload)},
                apply=lambda: self._kv_put(lock_key, scope, "profile.update", skey, payload),
                undo=lambda: self._kv_put(lock_key, scope, "profile.update", skey, old),
                audit=([key], f"{target} profile updated"),
            )
            extra = await also(updated) if also is not None else []
            await self._mutate_steps(actor, "profile.update", [step, *extra])
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
    async def _upsert(
        self, scope: Scope, episodes: Sequence[Episode], operation: str = "vector write", *, fence_check: bool = True
    ) -> None:
        """Embed and write episodes in ONE vector upsert (fenced on an unknown outcome). Taking back
        a step of a failed mutation writes with ``fence_check=False``: its own fence may be set."""
        lock_key = self._l2_lock(scope)
        if fence_check:
            await self._check_fence(lock_key)
        embedder = await self._embedder(scope)
        vectors = await self._backend(embedder.embed([e.content for e in episodes]), "embedding")
        if len(vectors) != len(episodes):
            raise BackendError("embedding count mismatch", key="error.backend", what="embedding")
        # the vector rides in the metadata too, so the recall index is built from one paged list
        records = [
            VectorRecord(
                id=e.id, vector=list(v), metadata={**e.to_metadata(), VECTOR_KEY: encode_vector(v)}, document=e.content
            )
            for e, v in zip(episodes, vectors, strict=True)
        ]
        async with self.index.writing(scope.collection, scope.user_key):  # its snapshot's stamp moves first
            await self._dispatch(lock_key, scope, operation, self.vectors.upsert(scope.collection, records))
            for r in records:
                self.index.on_upsert(scope.collection, scope.user_key, r.id, r.document, r.metadata)

    async def _delete_ids(self, scope: Scope, ids: Sequence[str], operation: str) -> None:
        """Delete rows of this scope by id through the one filter builder, in ONE backend call
        (fenced on an unknown outcome). More than ``delete_batch`` ids: :meth:`_delete_steps`."""
        where = scope_where(scope, Criteria(statuses=None, ids=tuple(ids)))
        async with self.index.writing(scope.collection, scope.user_key):  # its snapshot's stamp moves first
            await self._dispatch(self._l2_lock(scope), scope, operation, self.vectors.delete(scope.collection, where))
            for rid in ids:
                self.index.on_delete(scope.collection, scope.user_key, rid)

    def _new_row_steps(
        self,
        scope: Scope,
        episodes: Sequence[Episode],
        operation: str,
        audit: tuple[list[str], str] | None,
        chunk_size: int | None = None,
    ) -> list[WriteStep]:
        """The steps that write NEW rows (ids not in the store), ``chunk_size`` rows per upsert (all
        in one by default); each is taken back by deleting its ids. The first step owes the audit."""
        out: list[WriteStep] = []
        size = chunk_size or max(1, len(episodes))
        for i in range(0, len(episodes), size):
            chunk = list(episodes[i : i + size])
            ids = [e.id for e in chunk]
            out.append(
                WriteStep(
                    scope,
                    self._l2_lock(scope),
                    {e.id: e.status for e in chunk},
                    apply=lambda chunk=chunk: self._upsert(scope, chunk, operation),
                    undo=lambda ids=ids: self._delete_ids(scope, ids, operation + ".undo"),
                    audit=audit if i == 0 else None,
                )
            )
        return out

    def _delete_steps(
        self, scope: Scope, victims: Sequence[Episode], operation: str, audit: tuple[list[str], str] | None
    ) -> list[WriteStep]:
        """The steps that delete ``victims`` (rows of ``scope`` as read), ``delete_batch`` ids per
        backend call; each is taken back by writing its rows again. The first step owes the audit."""
        out: list[WriteStep] = []
        for i in range(0, len(victims), self.delete_batch):
            chunk = list(victims[i : i + self.delete_batch])
            ids = [e.id for e in chunk]
            out.append(
                WriteStep(
                    scope,
                    self._l2_lock(scope),
                    dict.fromkeys(ids, "absent"),
                    apply=lambda ids=ids: self._delete_ids(scope, ids, operation),
                    undo=lambda chunk=chunk: self._upsert(scope, chunk, operation + ".undo", fence_check=False),
                    audit=audit if i == 0 else None,
                )
            )
        return out

    async def _verify_absent(self, scope: Scope, ids: Sequence[str], operation: str) -> None:
        """Read back after a delete: the backend's returned count is not trusted (host Chroma says 0).
        The delete call's success is authoritative; a read-back that fails only leaves it unverified."""
        batch = self.delete_batch  # a filter of that many ids is what the delete itself sent
        try:
            still = [
                e.id
                for i in range(0, len(ids), batch)
                for e in await self._fetch(scope, Criteria(statuses=None, ids=tuple(ids[i : i + batch])), limit=1)
            ]
        except MemoryError_ as exc:
            log.warning("%s applied; read-back failed, not verified: %s", operation, exc)
            return
        if still:
            raise BackendError("the record is still present after delete", key="error.delete_unverified")

    def _l2_lock(self, scope: Scope) -> str:
        return l2_lock_key(scope)

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
        self._need_l2(scope)
        data = validate_episode_input(raw)
        if data.status != "active":
            raise ValidationError("new memories are active", key="error.status", value=data.status)
        async with self.locks.hold(self._l2_lock(scope)):
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
                self._l2_lock(scope),
                {episode.id: "active", **{t.id: "superseded" for t in targets}},
                apply=lambda: self._upsert(scope, [episode, *retired], "episode.remember"),
                undo=lambda: self._take_back_remember(scope, episode, targets),
                audit=([episode.id, *[t.id for t in targets]][:50], summary),
            )
            extra = await also(episode, retired) if also is not None else []
            await self._mutate_steps(actor, "episode.remember", [step, *extra])
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
            for e in await self._fetch(scope, crit, limit=50)
            if (e.event_at, e.valid_from, e.valid_until) == (data.event_at, data.valid_from, data.valid_until)
            and sorted(e.supersedes) == sorted(data.supersedes)
            and ts(e.timestamp, 0.0) >= since
        ]
        return max(same, key=lambda e: (e.timestamp, e.id)) if same else None

    async def _take_back_remember(self, scope: Scope, episode: Episode, superseded: Sequence[Episode]) -> None:
        await self._delete_ids(scope, [episode.id], "episode.remember.undo")
        if superseded:
            await self._upsert(scope, list(superseded), "episode.remember.undo", fence_check=False)

    async def screen_statement(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """Run the statement guards on one statement about to be written by a path that does not
        go through :meth:`remember` (document ingest, import). Raises what a guard raises."""
        for guard in self.statement_guards:
            await guard(scope, data, actor, origin)

    async def confirm_episode(self, scope: Scope, episode_id: str, actor: Actor, reason: str = "") -> Episode:
        """A person confirms an active memory: its confidence becomes ``confirmed`` (the only way an
        inference or an unverified statement is lifted; recall never lifts it). Audited once;
        confirming a confirmed memory changes nothing. A memory admin's verb."""
        self._need_l2(scope)
        self._require_admin("confirm", actor)
        async with self.locks.hold(self._l2_lock(scope)):
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
            await self._mutate(
                scope,
                actor,
                lock_key=self._l2_lock(scope),
                operation="episode.confirm",
                targets=[episode.id],
                summary=f"confirmed {episode.id} (was {episode.claim_type}/{episode.confidence})",
                expect={episode.id: "active:confirmed"},
                reason=reason,
                write=lambda: self._upsert(scope, [updated], "episode.confirm"),
            )
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
        found: dict[str, Episode] = {}
        for i in range(0, len(ids), 100):
            for e in await self._fetch(scope, Criteria(statuses=None, ids=tuple(ids[i : i + 100]))):
                found[e.id] = e
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

    async def _fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """Read matching episodes page by page (bounded by ``limit``)."""
        self._need_l2(scope)
        where = scope_where(scope, criteria)
        out: list[Episode] = []
        offset = 0
        while len(out) < limit:
            page = await self._backend(self.vectors.list(scope.collection, where, LIST_PAGE, offset), "vector list")
            out.extend(Episode.from_metadata(i.metadata, i.id) for i in page.items)
            if len(page.items) < LIST_PAGE:
                break
            offset += LIST_PAGE
        return out[:limit]

    async def get_episode(self, scope: Scope, episode_id: str) -> Episode:
        if not is_record_id(episode_id):  # names no record; never sent to a backend that may choke on it
            raise NotFoundError("no such memory in this scope", key="error.not_found", id=str(episode_id))
        found = await self._fetch(scope, Criteria(statuses=None, ids=(str(episode_id),)), limit=1)
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
                found = await self._fetch(scope, Criteria(statuses=None, ids=tuple(want))) if want else []
                got = {e.id: e for e in found}
                items = [got[i] for i in want if i in got and got[i].status == "active"]
                if len(items) == len(want):
                    return EpisodePage(items, page, page_size, len(ordered) > start + page_size)
                self.index.invalidate(scope.collection, scope.user_key)  # changed by another process
        rows = await self._fetch(scope, crit)
        rows.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        return EpisodePage(rows[start : start + page_size], page, page_size, len(rows) > start + page_size)

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for e in await self._fetch(scope, Criteria(statuses=None)):
            counts[e.status] = counts.get(e.status, 0) + 1
        return counts

    async def forget(
        self, scope: Scope, episode_id: str, actor: Actor, reason: str = "", *, never: bool = False
    ) -> Episode:
        """Delete one episode of this scope from the vector index, verified by reading back. The
        speaker's own, or anyone's for a memory admin (:func:`ltm.domain.privilege.may_change_record`)."""
        self._need_l2(scope)
        operation = "episode.forget"
        async with self.locks.hold(self._l2_lock(scope)):
            episode = await self.get_episode(scope, episode_id)
            if not policy.may_change_record(self.caller(actor), episode.sender_id):
                raise PermissionDenied(f"{episode.id} is not the caller's", key="policy.error.forget", id=episode.id)
            event = RetireEvent(scope, "forget", [episode], actor, reason, never=never)
            steps = self._delete_steps(scope, [episode], operation, ([episode.id], f"forgot {episode.id}"))
            steps += await self._retire_steps(event)  # committed with the delete
            verify = lambda: self._verify_absent(scope, [episode.id], operation)  # noqa: E731
            await self._mutate_steps(actor, operation, steps, reason=reason, verify=verify)
        log.info("forget: %s in %s", episode.id, scope.user_key)
        await self._retired(event)
        return episode

    async def set_status(self, scope: Scope, episode_id: str, status: str, actor: Actor, reason: str = "") -> Episode:
        """Archive or restore (lifecycle change; the row keeps its own scope keys). A memory admin's verb."""
        if status not in ("archived", "active"):
            raise ValidationError("status: archived or active", key="error.status", value=status)
        self._need_l2(scope)
        self._require_admin("archive" if status == "archived" else "restore", actor)
        async with self.locks.hold(self._l2_lock(scope)):
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
            lock = self._l2_lock(scope)
            step = WriteStep(
                scope,
                lock,
                {episode.id: target},
                apply=lambda: self._upsert(scope, [updated], op),
                undo=lambda: self._upsert(scope, [episode], op + ".undo", fence_check=False),
                audit=([episode.id], f"{op.split('.')[1]} {episode.id}"),
            )
            event = RetireEvent(scope, "archive", [episode], actor, reason)
            extra = await self._retire_steps(event) if status == "archived" else []
            await self._mutate_steps(actor, op, [step, *extra], reason=reason)
        log.info("status %s -> %s in %s", episode.id, status, scope.user_key)
        if status == "archived":
            await self._retired(event)
        return updated

    async def bulk_delete(self, scope: Scope, criteria: Criteria, actor: Actor, reason: str = "", tag: str = "") -> int:
        """Delete every episode of this scope matching ``criteria`` (and ``tag``); returns the count
        that was present before and is gone after (read back). All or nothing: a delete of more than
        ``delete_batch`` rows is several backend calls, and a failure in a later one writes the
        earlier ones back."""
        self._need_l2(scope)
        async with self.locks.hold(self._l2_lock(scope)):
            victims = [e for e in await self._fetch(scope, criteria) if not tag or tag in e.tags]
            ids = [e.id for e in victims]
            if not ids:
                return 0
            operation = "episode.bulk_delete"
            event = RetireEvent(scope, "bulk_delete", victims, actor, reason)
            steps = self._delete_steps(scope, victims, operation, (ids[:50], f"deleted {len(ids)} memories"))
            await self._mutate_steps(
                actor,
                operation,
                steps + await self._retire_steps(event),
                reason=reason,
                verify=lambda: self._verify_absent(scope, ids, operation),
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
        async with self.locks.hold_all(["doc:" + key, *(self._l2_lock(s) for s in scopes.values())]):
            old = await self._backend(self.kv.get(key), "storage read")
            known = json.loads(old).get("user_keys", []) if old else []  # a re-ingest keeps the scopes it had
            new = json.dumps({"user_keys": sorted({*known, *touched})}).encode()
            # the index write is fenced with its first scope; a re-ingest into the same scopes leaves it
            steps = [self.kv_step(scopes[touched[0]], operation, key, new, old)] if new != old else []
            for ukey in touched:
                eps = by_scope[ukey]
                audit = ([e.id for e in eps][:50], f"document {document_id}: {len(eps)} memories")
                steps += self._new_row_steps(scopes[ukey], eps, operation, audit)
            await self._mutate_steps(actor, operation, steps)
        log.info("ingested document %s into %s: %d episodes, %d scopes", document_id, kb_id, len(plan), len(touched))
        return len(plan)

    async def delete_document(self, kb_id: str, document_id: str, actor: Actor) -> int:
        """Delete every episode of a document in every scope it reached, and its index: all or
        nothing (the per-scope deletes and the index delete are the steps of one mutation). The
        scopes are the ones the index names under the locks: if a concurrent ingest of the same
        document added one meanwhile, the locks are taken again for the new set."""
        key = self._doc_key(kb_id, document_id)
        raw = await self._backend(self.kv.get(key), "storage read")
        operation = "episode.bulk_delete"
        reason = f"document {document_id} deleted"
        while raw:
            ukeys = sorted(set(json.loads(raw).get("user_keys", [])))
            scopes = [_user_key_scope(kb_id, u) for u in ukeys]
            victims: dict[str, list[Episode]] = {}
            async with self.locks.hold_all(["doc:" + key, *(self._l2_lock(s) for s in scopes)]):
                now = await self._backend(self.kv.get(key), "storage read")
                if now != raw:  # changed before the locks were held: start again with what it says now
                    raw = now
                    continue
                if not scopes:  # an index naming no scope (never written so): nothing to delete but it
                    await self._backend(self.kv.delete(key), "storage write")
                    return 0
                steps: list[WriteStep] = []
                for scope in scopes:
                    rows = await self._fetch(scope, Criteria(statuses=None, document_id=document_id))
                    if rows:
                        victims[scope.user_key] = rows
                        ids = [e.id for e in rows]
                        steps += self._delete_steps(scope, rows, operation, (ids[:50], f"deleted {len(ids)} memories"))
                        steps += await self._retire_steps(RetireEvent(scope, "bulk_delete", rows, actor, reason))
                steps.append(self.kv_step(scopes[0], operation, key, None, raw))

                async def verify(victims: dict[str, list[Episode]] = victims, scopes: list[Scope] = scopes) -> None:
                    for scope in scopes:
                        if victims.get(scope.user_key):
                            await self._verify_absent(scope, [e.id for e in victims[scope.user_key]], operation)

                await self._mutate_steps(actor, operation, steps, reason=reason, verify=verify)
            for scope in scopes:
                if victims.get(scope.user_key):
                    await self._retired(RetireEvent(scope, "bulk_delete", victims[scope.user_key], actor, reason))
            return sum(len(v) for v in victims.values())
        return 0

    # ------------------------------------------------------------------ recall
    async def scope_index(self, scope: Scope, settings: Settings | None = None) -> ScopeIndex:
        """The scope's recall index (built on first use from one paged list of its active rows)."""
        s = settings or self.settings
        self.index.configure(
            budget_bytes=s.recall_index_mb << 20, ttl=float(s.recall_index_ttl_seconds), max_docs=s.lexical_max_docs
        )
        embedder = await self._embedder(scope)
        return await self._backend(self.index.get(scope.collection, scope.user_key, embedder.embed), "recall index")

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
        """Profiles + ranked episodes of this scope for ``query``: the active ones valid now, or
        with ``as_of`` the ones valid at that instant, superseded ones included (what was true
        then, even if a correction or a summary replaced it since). A default recall never sees a
        superseded row. ``as_of`` is validated before anything is read."""
        check_text(query, "query")
        s = self.settings
        now = self.clock()
        as_of_dt = parse_instant(as_of, "as_of") if as_of else None
        speaker = speaker_id if speaker_id is not None else scope.sender_id
        # the index's list (cold scope) goes out with the profile reads and the embedding
        index_task = asyncio.ensure_future(self.scope_index(scope, s)) if scope.collection and query.strip() else None
        try:
            return await self._recall(
                scope, query, s, now, speaker, index_task, limit=limit, only_speaker=only_speaker,
                time_from=time_from, time_until=time_until, as_of_dt=as_of_dt, with_profiles=with_profiles,
                budget_tokens=budget_tokens, parse_window=parse_window,
            )  # fmt: skip
        finally:
            if index_task is not None and not index_task.done():
                index_task.cancel()  # the build itself goes on (shared) and is kept
            elif index_task is not None and not index_task.cancelled():
                index_task.exception()  # not needed by this recall (k = 0, bad input): not an error

    async def _recall(
        self,
        scope: Scope,
        query: str,
        s: Settings,
        now: datetime,
        speaker: str,
        index_task: asyncio.Future[ScopeIndex] | None,
        *,
        limit: int | None,
        only_speaker: bool,
        time_from: str | None,
        time_until: str | None,
        as_of_dt: datetime | None,
        with_profiles: bool,
        budget_tokens: int | None,
        parse_window: bool,
    ) -> RecallResult:
        prof_task = (
            asyncio.gather(
                self.get_profile(scope, "session"),
                self.get_profile(scope, "speaker", speaker) if speaker else _none(),
            )
            if with_profiles
            else None
        )
        episodes: list[RecalledEpisode] = []
        tokens = 0
        window: tuple[float, float] | None = None
        n_candidates = 0
        if scope.collection and query.strip():
            kb = await self.kb_settings(scope.collection)
            k = (
                limit
                if limit is not None
                else (kb.auto_recall_top_k if kb and kb.auto_recall_top_k else s.auto_recall_top_k)
            )
            k = max(0, min(50, int(k)))
            if t0 := (parse_instant(time_from, "time_from").timestamp() if time_from else None):
                window = (t0, float("inf"))
            if time_until:
                t1 = parse_instant(time_until, "time_until").timestamp()
                window = (window[0] if window else 0.0, t1)
            as_of_ts = as_of_dt.timestamp() if as_of_dt else now.timestamp()
            # An explicit time range is a hard filter inside the store; a window parsed from the query's
            # words ("last week", "昨天") only favours matching memories (a hard filter cost recall@5).
            crit = Criteria(
                statuses=AS_OF_STATUSES if as_of_dt else ACTIVE,
                as_of_ts=as_of_ts,
                sender_id=speaker if only_speaker and speaker else None,
                event_from_ts=window[0] if window and window[0] > 0 else None,
                event_until_ts=window[1] if window and window[1] != float("inf") else None,
            )
            if window is None and parse_window:
                window = timewindow.parse_time_window(query, now)
            if k > 0 and index_task is not None:
                episodes, n_candidates = await self._ranked(
                    scope, kb, query, crit, k, speaker, now, index_task, window=window, as_of_ts=as_of_ts, settings=s
                )
                budget = budget_tokens if budget_tokens is not None else s.recall_token_budget
                keep = budget_rules.fit_budget([(r.episode.id, r.episode.content, r.score) for r in episodes], budget)
                kept = set(keep)
                episodes = [r for r in episodes if r.episode.id in kept]
                tokens = sum(budget_rules.estimate_tokens(r.episode.content) for r in episodes)
        session_profile = speaker_profile = None
        if prof_task is not None:
            session_profile, speaker_profile = await prof_task
        log.info(
            "recall in %s: %d episodes (%d candidates)", scope.user_key or scope.scope_key, len(episodes), n_candidates
        )
        return RecallResult(
            session_profile,
            speaker_profile,
            episodes,
            tokens,
            window,
            n_candidates,
            as_of=to_iso(as_of_dt) if as_of_dt else None,
        )

    async def _ranked(
        self,
        scope: Scope,
        kb: KbSettings | None,
        query: str,
        crit: Criteria,
        k: int,
        speaker: str,
        now: datetime,
        index_task: asyncio.Future[ScopeIndex],
        *,
        window: tuple[float, float] | None = None,
        as_of_ts: float | None = None,
        settings: Settings | None = None,
    ) -> tuple[list[RecalledEpisode], int]:
        s = settings or self.settings
        where = scope_where(scope, crit)
        history = crit.statuses != ACTIVE  # an as-of recall: superseded rows too
        pool = max(4 * k, 40)
        strategy = kb.retrieval_strategy if kb else "hybrid"
        cands: dict[str, ranking.Candidate] = {}

        async def vector_leg() -> None:
            embedder = await self._embedder(scope)
            qv = (await self._backend(embedder.embed([query]), "embedding"))[0]
            idx = await index_task
            rows = idx.vector_search(qv, pool, where)
            if rows is None:  # rows stored without a vector, or more than the index holds: the host answers
                hits = await self._backend(self.vectors.search(scope.collection, qv, pool, where), "vector search")
                rows = [(h.id, h.similarity, h.metadata) for h in hits]
            for rid, sim, md in rows:
                cands[rid] = ranking.Candidate(
                    id=rid, text=str(md.get("text") or ""), metadata=md, vector_sim=sim, lexical=None
                )

        lexical: list[ScopeIndex] = []

        async def lexical_leg() -> list[tuple[str, float, dict[str, Any]]]:
            idx = await index_task
            if not idx.holds(where):  # e.g. other statuses than active: index the rows the filter selects
                rows = await self._fetch(scope, crit, limit=s.lexical_max_docs)
                rows.sort(key=lambda e: (e.timestamp, e.id))
                idx = ScopeIndex.of_rows([(e.id, e.content, e.to_metadata()) for e in rows], s.lexical_max_docs)
            lexical.append(idx)
            return idx.lexical_search(query, pool, where)

        legs: list[Awaitable[Any]] = []
        if strategy in ("hybrid", "vector"):
            legs.append(vector_leg())
        if strategy in ("hybrid", "lexical"):
            legs.append(lexical_leg())
        results = await asyncio.gather(*legs)
        lex_hits = results[-1] if strategy in ("hybrid", "lexical") else []
        for rid, score, md in lex_hits:
            if rid in cands:
                cands[rid].lexical = score
            else:
                cands[rid] = ranking.Candidate(
                    id=rid, text=str(md.get("text") or ""), metadata=md, vector_sim=None, lexical=score
                )
        if strategy == "hybrid":  # BM25 for vector-only candidates too: no extra round trip
            missing = [c.id for c in cands.values() if c.lexical is None]
            for rid, score in lexical[0].lexical_scores(query, missing).items():
                if rid in cands and score > 0:
                    cands[rid].lexical = score
            for c in cands.values():  # the index knows each text's terms: the ranking need not re-tokenize
                c.terms = lexical[0].bm25.distinct_terms(c.id)
        hl = kb.recency_half_life_days if kb and kb.recency_half_life_days is not None else s.recency_half_life_days
        ranked = ranking.rank(
            list(cands.values()),
            query=query,
            now_ts=now.timestamp(),
            speaker_id=speaker or None,
            settings=ranking.RankSettings(half_life_days=hl, require_active=not history),
            time_window=window,
            as_of_ts=as_of_ts,
        )
        ranked = await self._reranked(scope, kb, query, ranked, k)
        out = [RecalledEpisode(Episode.from_metadata(c.metadata, c.id), score) for c, score in ranked[:k]]
        return out, len(cands)

    async def _reranked(
        self, scope: Scope, kb: KbSettings | None, query: str, ranked: list[tuple[ranking.Candidate, float]], k: int
    ) -> list[tuple[ranking.Candidate, float]]:
        """The fused order with its head reordered by the KB's rerank model, when one is set: one
        bounded call; an error or a timeout keeps the fused order (recall never fails for it)."""
        if not (kb and kb.rerank_model and self._reranker_for and k > 0 and len(ranked) > 1):
            return ranked
        head = ranked[: max(k, rerank_rules.DEFAULT_POOL)]
        try:
            reranker = self._reranker_for(scope.collection, kb)
            answer = await asyncio.wait_for(
                reranker.rerank(query, [c.text for c, _ in head], kb.rerank_timeout_s), kb.rerank_timeout_s
            )
        except TimeoutError:
            log.warning("rerank model %s timed out after %.1fs; fused order kept", kb.rerank_model, kb.rerank_timeout_s)
            return ranked
        except Exception as exc:  # a failing model must not fail the recall
            log.warning("rerank model %s failed (%s); fused order kept", kb.rerank_model, type(exc).__name__)
            return ranked
        order = rerank_rules.apply(head, rerank_rules.parse_scores(answer, len(head)))
        # The head's fused scores, best first, follow the new order: the budget keeps by value.
        return [(c, s) for (c, _), (_, s) in zip(order, head, strict=True)] + ranked[len(head) :]

    # ------------------------------------------------------------------ injection snapshot
    async def save_injection(self, scope: Scope, snapshot: dict[str, Any]) -> None:
        # the readable identity stays in the record (a very long id is shortened in the key)
        record = {**snapshot, "owner": {"session_name": scope.session_name, "bot_uuid": scope.bot_uuid}}
        await self.kv.set(inject_key(scope), json.dumps(record, ensure_ascii=False).encode("utf-8"))

    async def last_injection(self, scope: Scope) -> dict[str, Any] | None:
        raw = await self.kv.get(inject_key(scope))
        return json.loads(raw) if raw else None


async def _none() -> None:
    return None


def _readable_entry(scope: Scope, entry: dict[str, Any]) -> dict[str, Any]:
    """An audit entry as the read rule lets ``scope`` see it (see :meth:`MemoryService.audit_page`)."""
    if may_read(scope, audience_of_key(str(entry.get("scope_key") or ""))):
        return entry
    keep = ("seq", "at", "operation", "user_key", "collection")
    return {**{k: entry.get(k) for k in keep}, "targets": [], "sender": "", "summary": "", "redacted": True}


def _scope_from(d: dict[str, Any]) -> Scope:
    return Scope(
        session_name=str(d.get("session_name") or ""),
        bot_uuid=str(d.get("bot_uuid") or ""),
        isolation=str(d.get("isolation") or ""),
        session_key=str(d.get("session_key") or ""),
        scope_key=str(d.get("scope_key") or ""),
        user_key=str(d.get("user_key") or ""),
        collection=str(d.get("collection") or ""),
        sender_id=str(d.get("sender_id") or ""),
        operator=True,  # recovery, fences and documents act for the installation, not for a chat
    )


def _user_key_scope(collection: str, user_key: str) -> Scope:
    """The scope of a memory known only by its user key (a document's index names these)."""
    return _scope_from({"session_key": user_key, "scope_key": user_key, "user_key": user_key, "collection": collection})


def _stored_matches(raw: bytes | None, want: Any) -> bool:
    """One ``kv:``/``profile:`` expectation of :meth:`MemoryService._expected_state`."""
    if not isinstance(want, dict):
        return (_hash_bytes(raw) if raw else "absent") == want
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return False
    if "list_has" in want or "list_lacks" in want:
        entries = [o for o in value if isinstance(o, dict)] if isinstance(value, list) else []
        if "list_lacks" in want:
            return all(str(o.get("id")) != want["list_lacks"] for o in entries)
        return any(
            str(o.get("id")) == want["list_has"] and ("status" not in want or o.get("status") == want["status"])
            for o in entries
        )
    if "source" in want:
        return isinstance(value, dict) and want["source"] in (value.get("sources") or [])
    return False


def _hash_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:32]
