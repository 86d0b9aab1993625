"""The write engine: every change to the memory is a list of :class:`WriteStep` run by
:meth:`WriteEngine.mutate`, with write fences, a journal and recovery after a restart.

A step is one host write (a vector upsert or delete, one plugin-storage key), atomic by itself. It
names its write scope (``lock_key``: ``l2:<kb>:<user_key>`` or ``l1:<profile key>``), what the store
holds once it applied (typed :data:`Expectation` values), how to apply it, how to take it back
(multi-step mutations only) and the audit entry it owes its scope's log.

``mutate`` checks the fences of every lock, writes the journal entry, runs the steps, optionally
reads back, writes the owed audit entries and closes the journal entry. The caller holds every lock
(``engine.locks``). A deterministic failure of the first write applied nothing; an unknown outcome
(a timeout after dispatch, a lost connection, a cancellation) fences the write scope: further
writes there are refused until a person clears the fence, because a late write could still land.
Several steps are all or nothing: a failure takes the applied steps back in reverse order.

Journal record, plugin storage ``journal/<op_id>`` (UTF-8 JSON), written before the first write and
deleted once the audit entries are written::

    {"op_id": "<16 hex>", "operation": "episode.forget", "started_at": "<ISO-8601 UTC>",
     "actor": {"surface": "...", "sender_id": "...", "query_id": 1 | null},
     "parts": [{"lock_key": "l2:...", "scope": <Scope.describe()>,
                "expect": [<expectation>, ...],      # what the store holds once the step applied
                "audit": ["<target id>", ...] | null,  # the step owes an audit entry (its targets)
                "audit_op": "" | "tombstone.record"}]}  # the audited operation, when not the mutation's

An expectation is one JSON object, tagged by its first key (see the classes below)::

    {"episode": id, "status": s}                    EpisodeIs (status "absent": EpisodeGone)
    {"episode": id, "status": s, "confidence": c}   EpisodeIs with its confidence
    {"kv": key, "sha": h}                           KvHolds: exactly these bytes (sha256, 32 hex)
    {"kv": key, "absent": true}                     KvAbsent
    {"kv": key, "list_has": id[, "status": s]}      KvListHas: a JSON list of {"id", "status"} holds it
    {"kv": key, "list_lacks": id}                   KvListLacks
    {"kv": key, "cites": source}                    KvCites: a JSON record whose ``sources`` hold it

:meth:`WriteEngine.recover` reads every open entry after a restart: all expectations met means the
operation applied (its owed audit entries are written once), none met means it never happened
(dropped), anything else fences its scopes and is reported.
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
from typing import Any, ClassVar, TypeVar

from ..domain import privilege as policy
from ..domain.backends import READBACK_DELAYS_S
from ..domain.errors import BackendError, FencedError, LtmError, PermissionDenied, ScopeError
from ..domain.models import Episode
from ..domain.scope import (
    FENCE_PREFIX,
    Criteria,
    Scope,
    audit_log_key,
    kb_part,
    l2_lock_key,
    parse_lock_key,
    scope_fence_keys,
    scope_where,
)
from ..domain.text import check_text
from ..domain.timefields import now_utc, to_iso
from ..ports import Embedder, KeyValueStore, VectorIndex, VectorRecord, is_unknown_outcome
from .audit import AuditEntry, AuditLog
from .background import Background, checkpoint
from .locks import ScopeLocks
from .readback import read_until
from .recall_index import VECTOR_KEY, RecallIndex, encode_vector
from .settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

JOURNAL_PREFIX = "journal/"
LIST_PAGE = 200
DELETE_BATCH = 2000
ID_BATCH = 100  # ids per filter of a read by id


# ---------------------------------------------------------------------------------------- actor
@dataclass(frozen=True)
class Actor:
    """Who asked: the surface, the speaker, the query and the host privilege (2 = admin).
    ``operator`` names a dashboard operator (the Memory Console, see :meth:`console`): a memory
    admin by position, named in every audit entry it causes."""

    surface: str
    sender_id: str = ""
    query_id: int | None = None
    privilege: int = 1
    operator: str = ""

    @classmethod
    def console(cls, who: str = "") -> Actor:
        """The Memory Console's operator: the host's logged-in user (``who``), or ``console`` when
        the host names none. A memory admin: the host shows the page to its operators only."""
        name = str(who or "")[:128]
        return cls(surface="console", sender_id=name, privilege=policy.HOST_ADMIN_PRIVILEGE, operator=name or "console")

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"surface": self.surface, "sender_id": self.sender_id, "query_id": self.query_id}
        if self.operator:
            out["operator"] = self.operator
        return out


def caller_of(actor: Actor, settings: Settings) -> policy.Caller:
    """The privilege policy's view of ``actor`` (admin from the live ``admin_sender_ids``, or as
    the console's operator)."""
    caller = policy.caller_of(actor.privilege, actor.sender_id, settings.admin_sender_ids)
    return policy.Caller(caller.speaker, True) if actor.operator else caller


def require_admin(verb: str, actor: Actor | None, settings: Settings) -> None:
    """Refuse an admin verb of the policy table for a caller who is not a memory admin (no actor:
    nobody asked, so nobody is an admin). Called first in every such verb, before any write."""
    if policy.requires_admin(verb) and (actor is None or not caller_of(actor, settings).admin):
        raise PermissionDenied(
            f"{verb} needs a memory admin", key=f"cmd.refused.{policy.rule_for(verb).kind}", verb=verb
        )


# ---------------------------------------------------------------------------------------- helpers
async def backend(aw: Awaitable[T], what: str) -> T:
    """Await a backend call; a failure that is not ours becomes a :class:`BackendError`."""
    try:
        return await aw
    except LtmError:
        raise
    except Exception as exc:
        log.warning("%s failed: %s", what, exc)
        raise BackendError(f"{what}: {exc}", key="error.backend", what=what) from exc


def need_l2(scope: Scope) -> None:
    """Episodes live in a memory knowledge base: refuse a scope without one."""
    if not scope.collection:
        raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")


def hash_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:32]


def scope_of_record(d: dict[str, Any]) -> Scope:
    """The scope a journal part, a fence or a document names (``Scope.describe()``): an operator
    scope, since recovery, fences and documents act for the installation, not for a chat."""
    return Scope(
        session_name=str(d.get("session_name") or ""),
        bot_uuid=str(d.get("bot_uuid") or ""),
        isolation=str(d.get("isolation") or ""),
        session_key=str(d.get("session_key") or ""),
        scope_key=str(d.get("scope_key") or ""),
        user_key=str(d.get("user_key") or ""),
        collection=str(d.get("collection") or ""),
        sender_id=str(d.get("sender_id") or ""),
        operator=True,
    )


def user_key_scope(collection: str, user_key: str) -> Scope:
    """The scope of a memory known only by its user key (a document's index names these)."""
    return scope_of_record(
        {"session_key": user_key, "scope_key": user_key, "user_key": user_key, "collection": collection}
    )


# ---------------------------------------------------------------------------------------- expectations
@dataclass(frozen=True)
class EpisodeIs:
    """The episode row ``id`` has this status (and, when given, this confidence)."""

    id: str
    status: str
    confidence: str | None = None

    @property
    def target(self) -> str:
        return self.id

    def met_by(self, episode: Episode | None) -> bool:
        if episode is None:
            return False
        return episode.status == self.status and self.confidence in (None, episode.confidence)

    def to_json(self) -> dict[str, Any]:
        return {
            "episode": self.id,
            "status": self.status,
            **({"confidence": self.confidence} if self.confidence else {}),
        }


@dataclass(frozen=True)
class EpisodeGone:
    """No row ``id`` is stored (deleted, or a new row taken back)."""

    id: str

    @property
    def target(self) -> str:
        return self.id

    def met_by(self, episode: Episode | None) -> bool:
        return episode is None

    def to_json(self) -> dict[str, Any]:
        return {"episode": self.id, "status": "absent"}


class _Stored:
    """An expectation about one plugin-storage key: ``met_by`` gets its raw value (None: absent)."""

    key: str
    tag: ClassVar[str]

    @property
    def target(self) -> str:
        return self.key

    def met_by(self, raw: bytes | None) -> bool:
        raise NotImplementedError

    @staticmethod
    def _json(raw: bytes | None) -> Any:
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    @staticmethod
    def _entries(value: Any) -> list[dict[str, Any]]:
        return [o for o in value if isinstance(o, dict)] if isinstance(value, list) else []


@dataclass(frozen=True)
class KvHolds(_Stored):
    """The key holds exactly the bytes whose :func:`hash_bytes` is ``sha``."""

    key: str
    sha: str

    @classmethod
    def of(cls, key: str, value: bytes) -> KvHolds:
        return cls(key, hash_bytes(value))

    def met_by(self, raw: bytes | None) -> bool:
        return raw is not None and hash_bytes(raw) == self.sha

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "sha": self.sha}


@dataclass(frozen=True)
class KvAbsent(_Stored):
    key: str

    def met_by(self, raw: bytes | None) -> bool:
        return not raw

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "absent": True}


@dataclass(frozen=True)
class KvListHas(_Stored):
    """The key holds a JSON list with an ``{"id": item}`` entry (of ``status``, when given)."""

    key: str
    item: str
    status: str | None = None

    def met_by(self, raw: bytes | None) -> bool:
        return any(
            str(o.get("id")) == self.item and (self.status is None or o.get("status") == self.status)
            for o in self._entries(self._json(raw))
        )

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "list_has": self.item, **({"status": self.status} if self.status else {})}


@dataclass(frozen=True)
class KvListLacks(_Stored):
    """The key's JSON list has no ``{"id": item}`` entry (or the key is absent)."""

    key: str
    item: str

    def met_by(self, raw: bytes | None) -> bool:
        value = self._json(raw)
        if raw and value is None:
            return False  # unreadable: unknown
        return all(str(o.get("id")) != self.item for o in self._entries(value))

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "list_lacks": self.item}


@dataclass(frozen=True)
class KvCites(_Stored):
    """The key holds a JSON record whose ``sources`` list holds ``source`` (a tombstone's decision)."""

    key: str
    source: str

    def met_by(self, raw: bytes | None) -> bool:
        value = self._json(raw)
        return isinstance(value, dict) and self.source in (value.get("sources") or [])

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "cites": self.source}


Expectation = EpisodeIs | EpisodeGone | KvHolds | KvAbsent | KvListHas | KvListLacks | KvCites


def expectation_of(d: dict[str, Any]) -> Expectation:
    """Decode one journal expectation (the inverse of ``to_json``)."""
    if "episode" in d:
        eid, status = str(d["episode"]), str(d.get("status") or "")
        return EpisodeGone(eid) if status == "absent" else EpisodeIs(eid, status, d.get("confidence"))
    key = str(d.get("kv") or "")
    if "sha" in d:
        return KvHolds(key, str(d["sha"]))
    if d.get("absent"):
        return KvAbsent(key)
    if "list_has" in d:
        return KvListHas(key, str(d["list_has"]), d.get("status"))
    if "list_lacks" in d:
        return KvListLacks(key, str(d["list_lacks"]))
    if "cites" in d:
        return KvCites(key, str(d["cites"]))
    raise ValueError(f"unknown journal expectation {sorted(d)}")


def episodes_are(episodes: Sequence[Episode] | Sequence[str], status: str) -> list[Expectation]:
    """``status`` (``"absent"``: gone) for each episode (or id)."""
    ids = [e if isinstance(e, str) else e.id for e in episodes]
    return [EpisodeGone(i) if status == "absent" else EpisodeIs(i, status) for i in ids]


# ---------------------------------------------------------------------------------------- steps
@dataclass
class WriteStep:
    """One host write of a mutation: its lock (the write scope it fences), what the store holds once
    it applied, how to apply it, how to take it back (idempotent; only multi-step mutations use it)
    and the audit entry it owes its scope's log (``(targets, summary)``), if any."""

    scope: Scope
    lock_key: str
    expect: list[Expectation]
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


# ---------------------------------------------------------------------------------------- engine
class WriteEngine:
    """Fences, journal, the host writes and recovery over one installation's stores."""

    def __init__(
        self,
        kv: KeyValueStore,
        vectors: VectorIndex,
        index: RecallIndex,
        embedder: Callable[[Scope], Awaitable[Embedder]],
        clock: Callable[[], datetime] = now_utc,
        background: Background | None = None,
    ) -> None:
        self.kv = kv
        self.vectors = vectors
        self.index = index
        self.background = background or Background()
        self.embedder = embedder
        self.clock = clock
        self.locks = ScopeLocks()
        self.audit_log = AuditLog(kv)
        self.delete_batch = DELETE_BATCH  # ids per backend delete call
        # the waits of a read-back: a backend may show a write (or a delete) only a moment later
        self.readback_delays: tuple[float, ...] = READBACK_DELAYS_S
        self._fences: dict[str, dict[str, Any]] | None = None  # lock key -> fence record
        self._pending: dict[str, _Bookkeeping] = {}  # op id -> applied, bookkeeping not yet written
        self._recovery: asyncio.Future[list[dict[str, Any]]] | None = None

    # ------------------------------------------------------------------ audit
    async def audit(
        self,
        scope: Scope,
        actor: Actor,
        operation: str,
        targets: Sequence[str],
        summary: str,
        reason: str = "",
        op_id: str = "",
    ) -> None:
        """Append one entry to the scope's audit log."""
        await self.audit_log.append(
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
                operator=actor.operator,
                summary=summary,
                reason=reason,
                extra={"op_id": op_id} if op_id else {},
                collection=scope.collection,
            ),
        )

    # ------------------------------------------------------------------ reads
    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """Matching episodes of this scope, page by page through the one scope filter (at most ``limit``)."""
        need_l2(scope)
        where = scope_where(scope, criteria)
        out: list[Episode] = []
        offset = 0
        while len(out) < limit:
            page = await backend(self.vectors.list(scope.collection, where, LIST_PAGE, offset), "vector list")
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

    # ------------------------------------------------------------------ fences
    async def _load_fences(self) -> dict[str, dict[str, Any]]:
        if self._fences is None:
            fences: dict[str, dict[str, Any]] = {}
            for key in await backend(self.kv.keys(FENCE_PREFIX), "storage read"):
                raw = await backend(self.kv.get(key), "storage read")
                if raw:
                    fences[key[len(FENCE_PREFIX) :]] = json.loads(raw)
            self._fences = fences
        return self._fences

    async def fences(self) -> dict[str, dict[str, Any]]:
        """Every fenced write scope of this installation: lock key -> fence record."""
        return dict(await self._load_fences())

    async def fence_of(self, lock_key: str) -> dict[str, Any] | None:
        return (await self._load_fences()).get(lock_key)

    async def check_fence(self, lock_key: str) -> None:
        """Refuse a write to a fenced write scope."""
        fence = await self.fence_of(lock_key)
        if fence is not None:
            raise FencedError(
                f"writes to {lock_key} are fenced since {fence.get('dispatched_at')}",
                key="error.fenced",
                operation=str(fence.get("operation")),
                at=str(fence.get("dispatched_at")),
            )

    async def set_fence(self, lock_key: str, scope: Scope, operation: str, detail: str) -> None:
        """Fence a write scope (this process refuses at once; the record persists for the others)."""
        record = {
            "lock_key": lock_key,
            "operation": operation,
            "dispatched_at": to_iso(self.clock()),
            "detail": detail[:300],
            "scope": scope.describe(),
        }
        (await self._load_fences())[lock_key] = record
        try:
            await self.kv.set(FENCE_PREFIX + lock_key, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            await self.audit(
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
        if scope_d:
            await self.audit(scope_of_record(scope_d), actor, "fence.clear", [lock_key], "write fence cleared", reason)
        log.info("write fence cleared on %s by %s", lock_key, actor.surface)
        return True

    async def scope_fences(self, scope: Scope) -> dict[str, dict[str, Any]]:
        """The fences that concern one scope: its L2 fence in its KB and its profiles' L1 fences."""
        fences = await self._load_fences()
        return {k: fences[k] for k in scope_fence_keys(scope, fences)}

    async def clear_scope_fences(self, scope: Scope, actor: Actor, reason: str = "") -> int:
        """Clear the L2 fence of a scope in its KB and the L1 fences of its profiles."""
        return sum([await self.clear_fence(k, actor, reason) for k in await self.scope_fences(scope)])

    async def clear_kb_fences(self, kb_id: str, actor: Actor, reason: str = "") -> int:
        kb = kb_part(kb_id)
        keys = [k for k in await self._load_fences() if (p := parse_lock_key(k)) and p.layout == "l2" and p.kb == kb]
        return sum([await self.clear_fence(k, actor, reason) for k in keys])

    # ------------------------------------------------------------------ host writes
    async def dispatch(self, lock_key: str, scope: Scope, operation: str, aw: Awaitable[T]) -> T:
        """Run one host write. An unknown outcome fences the scope; a deterministic failure does not."""
        try:
            return await aw
        except asyncio.CancelledError:
            self.index.invalidate(scope.collection, scope.user_key)  # the write may have landed
            await self.set_fence(lock_key, scope, operation, "cancelled after dispatch")
            raise
        except LtmError:
            raise
        except Exception as exc:
            if is_unknown_outcome(exc):
                self.index.invalidate(scope.collection, scope.user_key)
                await self.set_fence(lock_key, scope, operation, f"{type(exc).__name__}: {exc}")
                raise FencedError(str(exc), key="error.fenced_now", operation=operation) from exc
            log.warning("%s refused by the backend: %s", operation, exc)
            raise BackendError(f"{operation}: {exc}", key="error.backend", what=operation) from exc

    async def kv_put(self, lock_key: str, scope: Scope, operation: str, key: str, value: bytes | None) -> None:
        """One plugin-storage write (``None`` deletes), fenced on ``lock_key`` on an unknown outcome."""
        write = self.kv.set(key, value) if value is not None else self.kv.delete(key)
        await self.dispatch(lock_key, scope, operation, write)

    async def upsert(
        self, scope: Scope, episodes: Sequence[Episode], operation: str = "vector write", *, fence_check: bool = True
    ) -> None:
        """Embed and write episodes in ONE vector upsert (fenced on an unknown outcome). Taking back
        a step of a failed mutation writes with ``fence_check=False``: its own fence may be set."""
        lock_key = l2_lock_key(scope)
        if fence_check:
            await self.check_fence(lock_key)
        embedder = await self.embedder(scope)
        vectors = await backend(embedder.embed([e.content for e in episodes]), "embedding")
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
            await self.dispatch(lock_key, scope, operation, self.vectors.upsert(scope.collection, records))
            for r in records:
                self.index.on_upsert(scope.collection, scope.user_key, r.id, r.document, r.metadata)

    async def delete_ids(self, scope: Scope, ids: Sequence[str], operation: str) -> None:
        """Delete rows of this scope by id through the one filter builder, in ONE backend call
        (fenced on an unknown outcome). More than ``delete_batch`` ids: :meth:`delete_steps`."""
        where = scope_where(scope, Criteria(statuses=None, ids=tuple(ids)))
        async with self.index.writing(scope.collection, scope.user_key):  # its snapshot's stamp moves first
            await self.dispatch(l2_lock_key(scope), scope, operation, self.vectors.delete(scope.collection, where))
            for rid in ids:
                self.index.on_delete(scope.collection, scope.user_key, rid)

    async def verify_absent(self, scope: Scope, ids: Sequence[str], operation: str) -> None:
        """Read back after a delete: the backend's returned count is not trusted (host Chroma says 0).
        The delete call's success is authoritative; a read-back that fails only leaves it unverified."""
        batch = self.delete_batch  # a filter of that many ids is what the delete itself sent

        async def present() -> list[str]:
            return [
                e.id
                for i in range(0, len(ids), batch)
                for e in await self.fetch(scope, Criteria(statuses=None, ids=tuple(ids[i : i + batch])), limit=1)
            ]

        try:  # a delete may become visible a moment late: read again within the bound first
            still, _ = await read_until(present, lambda found: not found, self.readback_delays)
        except LtmError as exc:
            log.warning("%s applied; read-back failed, not verified: %s", operation, exc)
            return
        if still:
            raise BackendError("the record is still present after delete", key="error.delete_unverified")

    # ------------------------------------------------------------------ steps
    def rewrite_step(
        self,
        scope: Scope,
        updated: Sequence[Episode],
        originals: Sequence[Episode],
        operation: str,
        expect: list[Expectation],
        audit: tuple[list[str], str] | None,
        *,
        audit_op: str = "",
    ) -> WriteStep:
        """One vector write of existing rows of ``scope`` (``updated``), taken back by writing
        ``originals`` (the rows as read under the lock)."""
        return WriteStep(
            scope,
            l2_lock_key(scope),
            expect,
            apply=lambda: self.upsert(scope, list(updated), operation),
            undo=lambda: self.upsert(scope, list(originals), operation + ".undo", fence_check=False),
            audit=audit,
            audit_op=audit_op,
        )

    def restore_step(self, scope: Scope, episodes: Sequence[Episode], cause: str, operation: str) -> WriteStep:
        """One vector write that makes ``episodes`` active again, their ``superseded_by`` cleared
        (a removed summary giving its sources back)."""
        restored = [e.retagged(status="active", superseded_by="") for e in episodes]
        ids = [e.id for e in restored]
        audit = (ids[:50], f"{len(ids)} memories active again: {cause} no longer replaces them")
        return self.rewrite_step(
            scope, restored, episodes, operation, episodes_are(ids, "active"), audit, audit_op=operation
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
        expect: list[Expectation] | None = None,
        lock_key: str | None = None,
    ) -> WriteStep:
        """One plugin-storage write (``new``; ``None`` deletes) that belongs to the memory of
        ``scope``: fenced with its L2 writes (or ``lock_key``), taken back by restoring ``old``.
        ``expect`` defaults to exactly ``new`` (or absent)."""
        lock = lock_key or l2_lock_key(scope)
        if expect is None:
            expect = [KvHolds.of(key, new) if new is not None else KvAbsent(key)]
        return WriteStep(
            scope,
            lock,
            expect,
            apply=lambda: self.kv_put(lock, scope, operation, key, new),
            undo=lambda: self.kv_put(lock, scope, operation, key, old),
            audit=audit,
            audit_op=audit_op,
        )

    def new_row_steps(
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
                    l2_lock_key(scope),
                    [EpisodeIs(e.id, e.status) for e in chunk],
                    apply=lambda chunk=chunk: self.upsert(scope, chunk, operation),
                    undo=lambda ids=ids: self.delete_ids(scope, ids, operation + ".undo"),
                    audit=audit if i == 0 else None,
                )
            )
        return out

    def delete_steps(
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
                    l2_lock_key(scope),
                    episodes_are(ids, "absent"),
                    apply=lambda ids=ids: self.delete_ids(scope, ids, operation),
                    undo=lambda chunk=chunk: self.upsert(scope, chunk, operation + ".undo", fence_check=False),
                    audit=audit if i == 0 else None,
                )
            )
        return out

    # ------------------------------------------------------------------ mutate
    async def mutate(
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
            await self.check_fence(key)
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
            # Every host write goes through dispatch, which fences on an unknown outcome: without a
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
                        await self.set_fence(key, scope, operation, "partly applied; taking back failed")
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

    # ------------------------------------------------------------------ journal
    async def _journal_begin(self, actor: Actor, operation: str, steps: Sequence[WriteStep]) -> str:
        """Persist the intent of a mutation before its first write (the record of the module
        docstring). :meth:`recover` settles what a crash leaves."""
        op_id = uuid.uuid4().hex[:16]
        entry = {
            "op_id": op_id,
            "operation": operation,
            "actor": actor.to_record(),
            "started_at": to_iso(self.clock()),
            "parts": [
                {
                    "lock_key": s.lock_key,
                    "scope": s.scope.describe(),
                    "expect": [x.to_json() for x in s.expect],
                    "audit": list(s.audit[0][:50]) if s.audit else None,
                    "audit_op": s.audit_op,
                }
                for s in steps
            ],
        }
        await backend(
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
                    await self.audit(s.scope, book.actor, op, s.audit[0], s.audit[1], why, op_id=book.op_id)
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

    # ------------------------------------------------------------------ recovery
    def start_recovery(self) -> asyncio.Future[list[dict[str, Any]]]:
        """Run :meth:`recover` in the background (the plugin answers the host at once after a
        restart; :mod:`.background` runs it inside a live call); every write waits for it first
        (:meth:`wait_recovered`), reads do not."""
        if self._recovery is None:
            self._recovery = self.background.submit("journal-recovery", self._recover_logged)
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
            await self.background.join(task)  # run here when no other call is running it

    @property
    def recovering(self) -> bool:
        return self._recovery is not None and not self._recovery.done()

    async def recover(self) -> list[dict[str, Any]]:
        """After a restart: settle every open journal entry. An operation whose expected state is
        fully present is completed (each owed audit entry written once); one with no trace is
        dropped (it was never acknowledged); a partial one fences its scopes and is reported."""
        report: list[dict[str, Any]] = []
        for key in sorted(await self.kv.keys(JOURNAL_PREFIX)):
            await checkpoint()  # between entries: a closing call may hand the rest to the next one
            raw = await self.kv.get(key)
            if not raw:
                continue
            entry = json.loads(raw)
            parts = [
                (p, scope_of_record(p["scope"]), [expectation_of(x) for x in p.get("expect") or []])
                for p in entry["parts"]
            ]
            actor = Actor(surface="recovery", sender_id=str(entry.get("actor", {}).get("sender_id") or ""))
            # a step that expects nothing checkable (a re-joined link) does not decide the state
            states = {await self.expected_state(scope, expect) for _, scope, expect in parts if expect}
            state = states.pop() if len(states) == 1 else "partial" if states else "applied"
            outcome = {"op_id": entry["op_id"], "operation": entry["operation"], "state": state}
            if state == "applied":
                for p, scope, expect in parts:
                    if p.get("audit") is None:
                        continue
                    op = p.get("audit_op") or entry["operation"]
                    if not await self._audited(scope, entry["op_id"], op, str(entry.get("started_at") or "")):
                        targets = p["audit"] or [x.target for x in expect][:50]
                        await self.audit(scope, actor, op, targets, "completed after restart", op_id=entry["op_id"])
                await self.kv.delete(key)
            elif state == "not_applied":
                await self.kv.delete(key)
            else:
                for lock_key, scope in {p["lock_key"]: scope for p, scope, _ in parts}.items():
                    await self.set_fence(lock_key, scope, entry["operation"], "half-finished before restart")
            report.append(outcome)
            log.warning("recovered operation %s (%s): %s", entry["op_id"], entry["operation"], state)
        return report

    async def _audited(self, scope: Scope, op_id: str, operation: str, since: str) -> bool:
        """Whether the scope's log holds the entry of ``operation`` by ``op_id`` (newest first, down
        to the entries older than ``since``, when the operation started)."""
        page = 1
        while True:
            entries, total = await self.audit_log.page(audit_log_key(scope), page, 100)
            for e in entries:
                if ((e.get("extra") or {}).get("op_id"), e.get("operation")) == (op_id, operation):
                    return True
            if not entries or page * 100 >= total or (since and str(entries[-1].get("at") or "") < since):
                return False
            page += 1

    async def expected_state(self, scope: Scope, expect: Sequence[Expectation]) -> str:
        """``applied`` when the store meets every expectation, ``not_applied`` when it meets none,
        else ``partial``."""
        ids = [x.id for x in expect if isinstance(x, (EpisodeIs, EpisodeGone))]
        found = await self.fetch_ids(scope, ids) if ids else {}
        hits = misses = 0
        for x in expect:
            if isinstance(x, (EpisodeIs, EpisodeGone)):
                ok = x.met_by(found.get(x.id))
            else:
                ok = x.met_by(await self.kv.get(x.key))
            hits, misses = hits + ok, misses + (not ok)
        if misses == 0:
            return "applied"
        return "not_applied" if hits == 0 else "partial"
