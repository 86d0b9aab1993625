"""The review queue: candidates, value tombstones, conflict parking and the one resolver.

One queue per memory scope (knowledge base + ``user_key``). A candidate is a statement waiting for
a person: extracted from the user's own words of a turn (rules or a model that may only pick
sentences), or parked by :meth:`ReviewQueue.guard` because a ``remember`` contradicted an active
memory. Its status is set only by rules and people:

- ``pending``: waiting; ``conflict``: waiting, and it contradicts the active memories it lists
  (both sides are kept for review);
- ``accepted``: :meth:`ReviewQueue.accept` wrote it through the normal write path
  (``MemoryService.remember`` with ``origin="candidate"`` and a ``candidate_id`` link, superseding
  the conflicting memories; or ``MemoryService.update_profile`` for a name);
- ``rejected``: :meth:`ReviewQueue.reject` refused it and recorded a tombstone on its value.

A model's recommendation is stored next to the candidate and never read as a status. Accept and
reject are the only resolvers; the ``!memory`` command and the Memory Console both call them.

Tombstones are keyed on the normalised value (:mod:`ltm.domain.tombstone`), per scope, and hold no
text: a hash, the reason, who, when, and the ids it came from. The guard refuses a tombstoned value
on every ``remember`` and document ingest; ``accept`` refuses it too; ``forget(..., never=True)``
records one through the retire pipeline (:mod:`ltm.service.retire`). An admin can lift a tombstone.

Storage (plugin KV), per ``<kb>/<user_key>``:

- ``cand/<kb>/<user_key>/r/<id>``: one candidate;
- ``cand/<kb>/<user_key>/head`` ``{"seq": n}`` and ``cand/<kb>/<user_key>/i/<k>``: ids by sequence,
  in chunks of :data:`INDEX_CHUNK` (the all-statuses pages read only their chunks);
- ``cand/<kb>/<user_key>/open``: the open candidates (id, seq, status, value key), at most
  :data:`MAX_OPEN` (the default page reads only this list and its page's records);
- ``tomb/<kb>/<user_key>/<tombstone id>``: one tombstone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..domain import candidates as rules
from ..domain.conflict import find_conflicts
from ..domain.errors import (
    ConflictError,
    NotFoundError,
    ParkedError,
    TombstonedError,
    ValidationError,
)
from ..domain.models import Episode, EpisodeInput, Profile, content_hash
from ..domain.scope import (
    ACTIVE,
    TOMB_PREFIX,
    Criteria,
    Scope,
    audience_of,
    candidate_key,
    kb_part,
    l2_lock_key,
    may_read,
    owned_keys,
    reader_audience,
    review_base,
    tombstone_key,
)
from ..domain.timefields import to_iso
from ..domain.tombstone import TOMBSTONE_ID_PREFIX, subject_of, value_key
from ..ports import MODEL_TIMEOUT_S, ChatModel
from .memory_service import MemoryService
from .retire import RetireEvent
from .settings import bool_setting, int_setting
from .writes import Actor, KvCites, KvListHas, KvListLacks, WriteStep, backend, need_l2

log = logging.getLogger(__name__)

PENDING, CONFLICT, ACCEPTED, REJECTED = "pending", "conflict", "accepted", "rejected"
CANDIDATE_STATUSES: tuple[str, ...] = (PENDING, CONFLICT, ACCEPTED, REJECTED)
OPEN: tuple[str, ...] = (PENDING, CONFLICT)
INDEX_CHUNK = 50
MAX_OPEN = 500
CONFLICT_SCAN_LIMIT = 2_000
MAX_REASON = 500
# Statements from these origins are checked for conflicts; every origin is checked for tombstones.
CONFLICT_ORIGINS: tuple[str, ...] = ("tool", "command", "console")
EPISODE_FIELDS = ("importance", "tags", "event_at", "valid_from", "valid_until", "claim_type", "source_ref")
CANDIDATE_ID = re.compile(r"^cand_[0-9a-f]{20}$")


def new_candidate_id() -> str:
    return "cand_" + uuid.uuid4().hex[:20]


TOMBSTONE_ID = re.compile(r"^" + TOMBSTONE_ID_PREFIX + r"[0-9a-f]{16}$")


@dataclass(frozen=True)
class ReviewSettings:
    """The review part of the plugin config (``spec.config`` in manifest.yaml), read per call."""

    enabled: bool = False  # candidate_extraction_enabled
    auto_apply: bool = False  # candidate_auto_apply
    max_per_turn: int = 3  # candidate_max_per_turn
    model_uuid: str = ""  # candidate_model_uuid: empty = rules

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> ReviewSettings:
        c = dict(config or {})
        return cls(
            enabled=bool_setting(c.get("candidate_extraction_enabled"), False),
            auto_apply=bool_setting(c.get("candidate_auto_apply"), False),
            max_per_turn=int_setting(c.get("candidate_max_per_turn"), 3, 1, 10),
            model_uuid=str(c.get("candidate_model_uuid") or "").strip(),
        )


class _Record:
    """JSON round trip of a stored record; unknown keys (a newer version's) are ignored."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        names = cls.__dataclass_fields__  # type: ignore[attr-defined]
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class Candidate(_Record):
    id: str
    scope: dict[str, str]  # Scope.describe() of where it was proposed
    sender_id: str
    content: str
    classification: str
    origin: str  # "rules" | "model" | the origin of a parked remember ("tool", ...)
    value_key: str  # the tombstone id its value would get
    status: str = PENDING
    seq: int = 0
    evidence_quote: str = ""
    target: str = "episode"  # "episode" | "profile"
    profile_patch: dict[str, Any] = field(default_factory=dict)
    episode_fields: dict[str, Any] = field(default_factory=dict)
    source_ref: str = ""
    redactions: int = 0
    model_recommendation: str = ""  # stored, never read as a status
    model_note: str = ""
    conflicts_with: list[dict[str, Any]] = field(default_factory=list)
    created_at: str = ""
    created_by: dict[str, Any] = field(default_factory=dict)
    decided_by: dict[str, Any] = field(default_factory=dict)
    decided_at: str = ""
    reason: str = ""
    result_id: str = ""
    superseded: list[str] = field(default_factory=list)


@dataclass
class Tombstone(_Record):
    id: str
    collection: str
    user_key: str
    subject: str  # the speaker of a first-person value, "" for the whole scope
    kind: str  # "rejected" | "forgotten"
    reason: str
    by: dict[str, Any]
    at: str
    sources: list[str] = field(default_factory=list)  # candidate / episode ids, newest last
    count: int = 1


@dataclass
class ExtractReport:
    mode: str  # "rules" | "model"
    candidates: list[Candidate] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)  # auto-applied candidate ids
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (why, detail)
    redactions: int = 0
    truncated: bool = False
    model_error: str = ""


@dataclass
class CandidatePage:
    items: list[Candidate]
    page: int
    page_size: int
    has_more: bool
    total: int


@dataclass
class Decision:
    candidate: Candidate
    episode: Episode | None = None
    superseded: list[Episode] = field(default_factory=list)
    profile: Profile | None = None
    parked: bool = False  # accept found a (new) conflict: the candidate waits with both sides shown


class _Skip(Exception):
    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(why)
        self.why, self.detail = why, detail


def _actor_dict(actor: Actor) -> dict[str, Any]:
    return {"surface": actor.surface, "sender_id": actor.sender_id, "query_id": actor.query_id}


def _reason(reason: str) -> str:
    if not isinstance(reason, str):
        raise ValidationError("reason: text", key="error.field_type", field="reason")
    return " ".join(reason.split())[:MAX_REASON]


class ReviewQueue:
    """Candidates, tombstones and the resolver over one :class:`MemoryService`. Its :meth:`guard`
    and :meth:`tombstone_steps` join the service's writes in :func:`ltm.service.compose.wire`."""

    def __init__(
        self,
        service: MemoryService,
        settings: Callable[[], ReviewSettings] = ReviewSettings,
        model: ChatModel | None = None,
    ) -> None:
        self.service = service
        self._settings = settings
        self.model = model
        self.locks = service.locks  # the same locks as the service's writes it fences with

    @property
    def settings(self) -> ReviewSettings:
        return self._settings()

    def _now(self) -> str:
        return to_iso(self.service.clock())

    # ------------------------------------------------------------------ keys
    @staticmethod
    def _base(scope: Scope) -> str:
        return review_base(scope)

    def _rkey(self, scope: Scope, cid: str) -> str:
        return candidate_key(scope, f"r/{cid}")

    def _tkey(self, scope: Scope, tid: str) -> str:
        return tombstone_key(scope, tid)

    async def _read(self, key: str) -> Any:
        raw = await backend(self.service.kv.get(key), "review read")
        return json.loads(raw) if raw else None

    @staticmethod
    def _bytes(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")

    # ------------------------------------------------------------------ tombstones
    async def tombstone_for(self, scope: Scope, content: str, sender_id: str) -> Tombstone | None:
        """The tombstone that refuses ``content`` said by ``sender_id`` in this scope, if any."""
        tid = value_key(content, sender_id)
        if not tid or not scope.collection:
            return None
        raw = await self._read(self._tkey(scope, tid))
        return Tombstone.from_dict(raw) if raw else None

    def _refusal(self, tb: Tombstone) -> TombstonedError:
        return TombstonedError(
            f"the value was {tb.kind} ({tb.id})",
            key=f"review.error.tombstoned_{tb.kind}" if tb.kind in ("rejected", "forgotten") else None,
            tombstone=tb.id,
            kind=tb.kind,
            reason=tb.reason or "-",
            at=tb.at,
            by=str(tb.by.get("sender_id") or tb.by.get("surface") or "-"),
        )

    def _tombstone_step(
        self,
        scope: Scope,
        content: str,
        sender_id: str,
        kind: str,
        reason: str,
        actor: Actor,
        source: str,
        operation: str,
        *,
        audit: tuple[list[str], str] | None = None,
        audit_op: str = "",
    ) -> tuple[WriteStep, str] | None:
        """The write that records (or re-records) the tombstone of a value, as one step of the
        mutation that decides it (a reject, a ``forget --never``), and its id. The record is read
        and merged when the step runs, under the tombstone's lock. Taking it back restores the old
        record only if nobody wrote it since; otherwise it removes just this decision's source
        (another decision, or a lift, that came in between stays)."""
        tid = value_key(content, sender_id)
        if not tid:
            return None
        key = self._tkey(scope, tid)
        lock = l2_lock_key(scope)
        before: list[bytes | None] = []  # what the record was, once read
        written: list[bytes] = []  # what this step wrote

        async def put(value: bytes | None) -> None:
            await self.service.writes.kv_put(lock, scope, operation, key, value)

        async def apply() -> None:
            async with self.locks.hold("tomb:" + key):
                old = await backend(self.service.kv.get(key), "review read")
                before[:] = [old]
                tb = Tombstone(
                    id=tid,
                    collection=scope.collection,
                    user_key=scope.user_key,
                    subject=subject_of(content, sender_id),
                    kind=kind,
                    reason=reason,
                    by=_actor_dict(actor),
                    at=self._now(),
                    sources=[source],
                    count=1,
                )
                if old:
                    prev = Tombstone.from_dict(json.loads(old))
                    tb.sources = [*[s for s in prev.sources if s != source], source][-10:]
                    tb.count = prev.count + 1
                written[:] = [self._bytes(tb.to_dict())]
                await put(written[0])

        async def undo() -> None:
            if not before:  # never read, so never written
                return
            async with self.locks.hold("tomb:" + key):
                now = await backend(self.service.kv.get(key), "review read")
                if now is None:
                    return  # lifted meanwhile (or never written)
                if written and now == written[0]:
                    await put(before[0])
                    return
                tb = Tombstone.from_dict(json.loads(now))
                if source in tb.sources:
                    tb.sources = [s for s in tb.sources if s != source]
                    tb.count = max(1, tb.count - 1)
                    await put(self._bytes(tb.to_dict()))

        expect = [KvCites(key, source)]  # the decision's source is in the record once applied
        step = WriteStep(scope, lock, expect, apply, undo, audit=audit, audit_op=audit_op)
        return step, tid

    async def list_tombstones(self, scope: Scope, page: int = 1, page_size: int = 10) -> tuple[list[Tombstone], int]:
        """Tombstones of this scope, newest first (they are few: each is a person's decision)."""
        need_l2(scope)
        prefix = f"{TOMB_PREFIX}{kb_part(scope.collection)}/"
        items = []
        keys = await backend(self.service.kv.keys(prefix), "review keys")
        for k in owned_keys(scope, keys):  # exact owner: a launcher id extending this one is not this scope
            raw = await self._read(k)
            if raw:
                items.append(Tombstone.from_dict(raw))
        items.sort(key=lambda t: (t.at, t.id), reverse=True)
        start = (max(1, page) - 1) * page_size
        return items[start : start + page_size], len(items)

    async def lift_tombstone(self, scope: Scope, tombstone_id: str, actor: Actor, reason: str = "") -> Tombstone:
        """An admin lifts a tombstone: the value may be stored again. Audited."""
        need_l2(scope)
        reason = _reason(reason)
        if not isinstance(tombstone_id, str) or not TOMBSTONE_ID.match(tombstone_id):
            raise NotFoundError(
                f"no tombstone {tombstone_id}", key="review.error.tombstone_missing", id=str(tombstone_id)
            )
        key = self._tkey(scope, tombstone_id)
        operation = "tombstone.lift"
        async with self.locks.hold("tomb:" + key):
            raw = await backend(self.service.kv.get(key), "review read")
            if not raw:
                raise NotFoundError(
                    f"no tombstone {tombstone_id}", key="review.error.tombstone_missing", id=tombstone_id
                )
            tb = Tombstone.from_dict(json.loads(raw))
            step = self.service.writes.kv_step(
                scope, operation, key, None, raw, audit=([tb.id], f"tombstone {tb.id} lifted")
            )
            await self.service.writes.mutate(actor, operation, [step], reason=reason)
        log.info("tombstone %s lifted in %s", tb.id, scope.user_key)
        return tb

    # ------------------------------------------------------------------ the guard (remember, ingest)
    async def guard(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """A statement guard: refuse a tombstoned value; park a contradicting statement as a
        ``conflict`` candidate and refuse the write (unless it names what it ``supersedes``)."""
        tb = await self.tombstone_for(scope, data.content, scope.sender_id)
        if tb is not None:
            raise self._refusal(tb)
        if origin not in CONFLICT_ORIGINS or data.supersedes:
            return
        conflicts = await self._episode_conflicts(scope, data.content)
        if not conflicts:
            return
        fields = {k: getattr(data, k) for k in EPISODE_FIELDS}
        cand = await self._insert(
            scope,
            rules.Proposal(data.content, "", rules.classify(data.content) or "correction"),
            actor,
            origin=origin,
            status=CONFLICT,
            conflicts=conflicts,
            source_ref=data.source_ref,
            episode_fields=fields,
        )
        ids = ", ".join(c["id"] for c in conflicts)
        raise ParkedError(
            f"contradicts {ids}; parked as {cand.id}",
            candidate=cand.id,
            ids=ids,
            existing=" / ".join(c["content"] for c in conflicts)[:300],
        )

    async def tombstone_steps(self, event: RetireEvent) -> list[WriteStep]:
        """``forget(..., never=True)``: a tombstone on each forgotten value, written in the same
        all-or-nothing mutation as the delete (audited ``tombstone.record``)."""
        if not event.never or event.operation != "forget":
            return []
        steps = []
        for e in event.episodes:
            made = self._tombstone_step(
                event.scope,
                e.content,
                e.sender_id,
                "forgotten",
                event.reason,
                event.actor,
                e.id,
                "episode.forget",
                audit_op="tombstone.record",
            )
            if made is not None:
                step, tid = made
                step.audit = ([tid, e.id], f"forgot {e.id} for good")
                steps.append(step)
        return steps

    # ------------------------------------------------------------------ conflicts
    async def _episode_conflicts(self, scope: Scope, content: str) -> list[dict[str, Any]]:
        """Active, currently valid memories of this speaker that ``content`` contradicts."""
        if not scope.collection:
            return []
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id, as_of_ts=self.service.clock().timestamp())
        episodes = await self.service.fetch(scope, crit, limit=CONFLICT_SCAN_LIMIT)
        aliases = [scope.sender_id]
        if scope.sender_id:
            aliases.append((await self.service.get_profile(scope, "speaker", scope.sender_id)).name)
        by_id = {e.id: e for e in episodes}
        out = []
        for eid, v in find_conflicts(content, [(e.id, e.content) for e in episodes], aliases):
            e = by_id[eid]
            out.append(
                {
                    "kind": "episode",
                    "id": e.id,
                    "content": e.content,
                    "sender_id": e.sender_id,
                    "timestamp": e.timestamp,
                    "claim_type": e.claim_type,
                    "confidence": e.confidence,
                    "attribute": v.attribute,
                    "new_value": v.new_value,
                    "old_value": v.old_value,
                    "why": v.reason,
                }
            )
        return out

    async def _profile_conflicts(self, scope: Scope, patch: dict[str, Any]) -> list[dict[str, Any]]:
        name = str(patch.get("name") or "")
        if not name or not scope.sender_id:
            return []
        current = await self.service.get_profile(scope, "speaker", scope.sender_id)
        if current.name and current.name.casefold() != name.casefold():
            return [{"kind": "profile", "id": current.key, "field": "name", "content": current.name, "new_value": name}]
        return []

    # ------------------------------------------------------------------ the store
    def _store_lock(self, scope: Scope) -> str:
        return "store:" + self._base(scope)

    async def _open_list(self, scope: Scope) -> list[dict[str, Any]]:
        return list(await self._read(candidate_key(scope, "open")) or [])

    async def _insert(
        self,
        scope: Scope,
        p: rules.Proposal,
        actor: Actor,
        *,
        origin: str,
        status: str,
        conflicts: list[dict[str, Any]],
        source_ref: str = "",
        redactions: int = 0,
        episode_fields: dict[str, Any] | None = None,
    ) -> Candidate:
        cand = Candidate(
            id=new_candidate_id(),
            scope=scope.describe(),
            sender_id=scope.sender_id,
            content=p.content,
            classification=p.classification,
            origin=origin,
            value_key=value_key(p.content, scope.sender_id),
            status=status,
            evidence_quote=p.evidence_quote,
            target=p.target,
            profile_patch=dict(p.profile_patch),
            episode_fields=dict(episode_fields or {"claim_type": "user_statement", "source_ref": source_ref}),
            source_ref=source_ref,
            redactions=redactions,
            model_recommendation=p.recommendation,
            model_note=p.note,
            conflicts_with=conflicts,
            created_at=self._now(),
            created_by=_actor_dict(actor),
        )
        kind = "parked" if status == CONFLICT else "proposed"
        operation = "candidate.propose"
        kv = self.service.kv
        async with self.locks.hold(self._store_lock(scope)):
            open_key, head_key = candidate_key(scope, "open"), candidate_key(scope, "head")
            raw_open = await backend(kv.get(open_key), "review read")
            open_ = list(json.loads(raw_open) if raw_open else [])
            if len(open_) >= MAX_OPEN:
                raise ConflictError("the review queue is full", key="review.error.queue_full", limit=MAX_OPEN)
            raw_head = await backend(kv.get(head_key), "review read")
            cand.seq = int((json.loads(raw_head) if raw_head else {"seq": 0})["seq"]) + 1
            chunk_key = candidate_key(scope, f"i/{(cand.seq - 1) // INDEX_CHUNK}")
            raw_chunk = await backend(kv.get(chunk_key), "review read")
            chunk = list(json.loads(raw_chunk) if raw_chunk and (cand.seq - 1) % INDEX_CHUNK else [])
            chunk.append([cand.seq, cand.id])
            open_.append({"id": cand.id, "seq": cand.seq, "status": cand.status, "value_key": cand.value_key})
            audit = (
                [cand.id, *[c["id"] for c in conflicts]][:50],
                f"candidate {cand.id} {kind} ({cand.classification}, {origin})",
            )
            steps = [
                self.service.writes.kv_step(
                    scope, operation, self._rkey(scope, cand.id), self._bytes(cand.to_dict()), None
                ),
                self.service.writes.kv_step(scope, operation, chunk_key, self._bytes(chunk), raw_chunk),
                self.service.writes.kv_step(scope, operation, head_key, self._bytes({"seq": cand.seq}), raw_head),
                self.service.writes.kv_step(scope, operation, open_key, self._bytes(open_), raw_open, audit=audit),
            ]
            await self.service.writes.mutate(actor, operation, steps)
        log.info("candidate %s %s in %s (%s, %s)", cand.id, kind, scope.user_key, cand.classification, origin)
        return cand

    async def _save_steps(
        self,
        scope: Scope,
        cand: Candidate,
        operation: str,
        audit: tuple[list[str], str],
        audit_op: str = "",
        audit_reason: str = "",
    ) -> list[WriteStep]:
        """The writes that store a decided (or parked) candidate: its record, then its entry in the
        open list. The open list is shared by every candidate of the scope, so its step reads and
        rewrites it under the store lock when it runs, and taking it back restores only this
        candidate's entry; recovery checks the record's hash and this candidate's (non-)membership."""
        rkey = self._rkey(scope, cand.id)
        old = await backend(self.service.kv.get(rkey), "review read")
        record = self.service.writes.kv_step(
            scope, operation, rkey, self._bytes(cand.to_dict()), old, audit=audit, audit_op=audit_op
        )
        record.audit_reason = audit_reason
        okey = candidate_key(scope, "open")
        lock = l2_lock_key(scope)
        prior: list[list[dict[str, Any]]] = []

        async def rewrite(entries: list[dict[str, Any]]) -> None:
            async with self.locks.hold(self._store_lock(scope)):
                current = await self._open_list(scope)
                if not prior:
                    prior.append([o for o in current if o["id"] == cand.id])
                new = sorted([o for o in current if o["id"] != cand.id] + entries, key=lambda o: o["seq"])
                await self.service.writes.kv_put(lock, scope, operation, okey, self._bytes(new))

        mine = [{"id": cand.id, "seq": cand.seq, "status": cand.status, "value_key": cand.value_key}]

        async def undo() -> None:
            if prior:
                await rewrite(prior[0])

        is_open = cand.status in OPEN
        expect = [KvListHas(okey, cand.id, cand.status) if is_open else KvListLacks(okey, cand.id)]
        open_step = WriteStep(scope, lock, expect, apply=lambda: rewrite(mine if is_open else []), undo=undo)
        return [record, open_step]

    async def get(self, scope: Scope, candidate_id: str) -> Candidate:
        need_l2(scope)
        if not isinstance(candidate_id, str) or not CANDIDATE_ID.match(candidate_id):
            raise NotFoundError(
                f"no candidate {candidate_id}", key="review.error.candidate_missing", id=str(candidate_id)
            )
        raw = await self._read(self._rkey(scope, candidate_id))
        cand = Candidate.from_dict(raw) if raw else None
        if cand is None or not self.readable(scope, cand):  # the read rule: "not found" to this reader
            raise NotFoundError(f"no candidate {candidate_id}", key="review.error.candidate_missing", id=candidate_id)
        return cand

    @staticmethod
    def readable(scope: Scope, cand: Candidate) -> bool:
        """The read rule of episodes (:func:`ltm.domain.scope.reader_audience`) for a candidate: the
        audience of what is written where it was proposed."""
        d = cand.scope
        where = Scope(
            session_name=str(d.get("session_name") or ""),
            bot_uuid=str(d.get("bot_uuid") or ""),
            isolation=str(d.get("isolation") or ""),
            session_key=str(d.get("session_key") or ""),
            scope_key=str(d.get("scope_key") or ""),
            user_key=str(d.get("user_key") or ""),
        )
        return may_read(scope, audience_of(where))

    async def list(
        self, scope: Scope, *, page: int = 1, page_size: int = 10, all_statuses: bool = False
    ) -> CandidatePage:
        """Newest first: the open candidates (pending and conflict), or every candidate, that this
        reader may read (in ``bot`` isolation another person's private chat stays private)."""
        need_l2(scope)
        page, page_size = max(1, int(page)), max(1, min(100, int(page_size)))
        start = (page - 1) * page_size
        if reader_audience(scope) is not None:
            return await self._readable_page(scope, page, page_size, all_statuses)
        if not all_statuses:
            rows = sorted(await self._open_list(scope), key=lambda o: o["seq"], reverse=True)
            ids = [o["id"] for o in rows[start : start + page_size]]
            total = len(rows)
        else:
            total = int((await self._read(candidate_key(scope, "head")) or {"seq": 0})["seq"])
            hi, lo = total - start, max(1, total - start - page_size + 1)
            ids = []
            if hi >= 1:
                for k in range((hi - 1) // INDEX_CHUNK, (lo - 1) // INDEX_CHUNK - 1, -1):
                    chunk = await self._read(candidate_key(scope, f"i/{k}")) or []
                    ids += [cid for seq, cid in sorted(chunk, reverse=True) if lo <= seq <= hi]
        items = []
        for cid in ids:
            raw = await self._read(self._rkey(scope, cid))
            if raw:
                items.append(Candidate.from_dict(raw))
        return CandidatePage(items, page, page_size, total > start + page_size, total)

    async def _readable_page(self, scope: Scope, page: int, page_size: int, all_statuses: bool) -> CandidatePage:
        """A page of the candidates this reader may read: the whole queue read as the operator,
        filtered by the read rule, then paged (the open list is bounded by ``MAX_OPEN``)."""
        everything, n = [], 1
        while True:
            part = await self.list(scope.as_operator(), page=n, page_size=100, all_statuses=all_statuses)
            everything += [c for c in part.items if self.readable(scope, c)]
            if not part.has_more:
                break
            n += 1
        start = (page - 1) * page_size
        items = everything[start : start + page_size]
        return CandidatePage(items, page, page_size, len(everything) > start + page_size, len(everything))

    # ------------------------------------------------------------------ proposing
    async def propose(
        self,
        scope: Scope,
        proposal: rules.Proposal,
        actor: Actor,
        *,
        origin: str,
        source_ref: str = "",
        redactions: int = 0,
    ) -> Candidate:
        """Queue one statement of ``scope.sender_id``: refused when tombstoned; skipped (``_Skip``)
        when already queued or already remembered; ``conflict`` when it contradicts an active one."""
        need_l2(scope)
        tb = await self.tombstone_for(scope, proposal.content, scope.sender_id)
        if tb is not None:
            raise self._refusal(tb)
        vk = value_key(proposal.content, scope.sender_id)
        if any(o.get("value_key") == vk for o in await self._open_list(scope)):
            raise _Skip("queued", vk)
        if proposal.target == "profile":
            current = await self.service.get_profile(scope, "speaker", scope.sender_id) if scope.sender_id else None
            if (
                current is not None
                and current.name.casefold() == str(proposal.profile_patch.get("name", "")).casefold()
            ):
                raise _Skip("known", current.key)
            conflicts = await self._profile_conflicts(scope, proposal.profile_patch)
        else:
            if await self._same_statement(scope, proposal.content):
                raise _Skip("known", vk)
            conflicts = await self._episode_conflicts(scope, proposal.content)
        return await self._insert(
            scope,
            proposal,
            actor,
            origin=origin,
            status=CONFLICT if conflicts else PENDING,
            conflicts=conflicts,
            source_ref=source_ref,
            redactions=redactions,
            episode_fields={
                "claim_type": "user_statement",
                "source_ref": source_ref,
                "tags": [proposal.classification],
            },
        )

    async def _same_statement(self, scope: Scope, content: str) -> Episode | None:
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id, extra={"content_hash": content_hash(content)})
        found = await self.service.fetch(scope, crit, limit=1)
        return found[0] if found else None

    async def extract(self, scope: Scope, user_text: str, actor: Actor, *, source_ref: str = "") -> ExtractReport:
        """Candidates from the user's own text of one turn (see :mod:`ltm.domain.candidates`).

        With ``candidate_model_uuid`` set, the model may only pick sentences, within
        :data:`MODEL_TIMEOUT_S`; any fault in its answer writes nothing. Rule candidates are
        accepted at once when ``candidate_auto_apply`` is on; model candidates always wait."""
        s = self.settings
        need_l2(scope)
        turn = rules.prepare(user_text)
        mode = "model" if s.model_uuid and self.model is not None else "rules"
        report = ExtractReport(mode=mode, redactions=turn.redactions, truncated=turn.truncated)
        if not turn.sentences:
            return report
        if mode == "model":
            system, user = rules.model_messages(turn, s.max_per_turn)
            try:
                raw = await asyncio.wait_for(
                    self.model.complete(s.model_uuid, system, user, MODEL_TIMEOUT_S),  # type: ignore[union-attr]
                    MODEL_TIMEOUT_S,
                )
                proposals = rules.parse_model_result(raw, turn, s.max_per_turn)
            except rules.ModelResultError as exc:
                report.model_error = str(exc.args_.get("reason") or exc)
                log.warning("candidate model result rejected in %s: %s", scope.user_key, report.model_error)
                return report
            except TimeoutError:
                report.model_error = f"no answer within {MODEL_TIMEOUT_S:.0f} s"
                log.warning("candidate model timed out in %s", scope.user_key)
                return report
            except Exception as exc:  # the host refused the call: nothing is proposed this turn
                report.model_error = f"model call failed: {type(exc).__name__}"
                log.warning("candidate model call failed in %s: %s", scope.user_key, exc)
                return report
        else:
            proposals = rules.extract_by_rules(turn, s.max_per_turn)
        for p in proposals:
            try:
                cand = await self.propose(
                    scope, p, actor, origin=mode, source_ref=source_ref, redactions=turn.redactions
                )
            except TombstonedError as exc:
                report.skipped.append(("tombstoned", str(exc.args_.get("tombstone"))))
                continue
            except _Skip as skip:
                report.skipped.append((skip.why, skip.detail))
                continue
            except ConflictError as exc:
                if exc.key != "review.error.queue_full":
                    raise
                report.skipped.append(("queue_full", str(MAX_OPEN)))
                log.warning("review queue of %s is full; candidate dropped", scope.user_key)
                continue
            report.candidates.append(cand)
            if s.auto_apply and mode == "rules" and cand.status == PENDING:
                auto = Actor(surface="auto-apply", sender_id=actor.sender_id, query_id=actor.query_id)
                decision = await self.accept(scope, cand.id, auto, reason="candidate_auto_apply")
                if not decision.parked:
                    report.accepted.append(cand.id)
        log.info(
            "extract in %s (%s): %d candidates, %d skipped, %d redacted",
            scope.user_key,
            mode,
            len(report.candidates),
            len(report.skipped),
            turn.redactions,
        )
        return report

    # ------------------------------------------------------------------ the resolver
    async def _candidate_scope(self, scope: Scope, cand: Candidate) -> Scope:
        d = cand.scope
        cscope = await self.service.scope_for(
            kb_id=str(d.get("collection") or ""),
            session_name=str(d.get("session_name") or ""),
            bot_uuid=str(d.get("bot_uuid") or ""),
            sender_id=cand.sender_id,
        )
        if (cscope.user_key, cscope.collection) != (scope.user_key, scope.collection):
            raise ConflictError("the knowledge base isolation changed", key="review.error.scope_changed")
        return cscope

    async def _park(self, scope: Scope, cand: Candidate, conflicts: list[dict[str, Any]], actor: Actor) -> Decision:
        cand.status = CONFLICT
        cand.conflicts_with = conflicts
        audit = (
            [cand.id, *[c["id"] for c in conflicts]][:50],
            f"candidate {cand.id} contradicts {len(conflicts)} active memories: parked for review",
        )
        steps = await self._save_steps(scope, cand, "candidate.park", audit)
        await self.service.writes.mutate(actor, "candidate.park", steps)
        return Decision(cand, parked=True)

    async def _applied(self, scope: Scope, cand: Candidate) -> Episode | None:
        """The episode an earlier, interrupted accept of this candidate already wrote."""
        crit = Criteria(statuses=None, sender_id=scope.sender_id, extra={"content_hash": content_hash(cand.content)})
        for e in await self.service.fetch(scope, crit, limit=50):
            if e.extra.get("candidate_id") == cand.id:
                return e
        return None

    async def _open_candidate(self, scope: Scope, candidate_id: str) -> Candidate:
        """The candidate a decision is about: it must still be open (decided once)."""
        cand = await self.get(scope, candidate_id)
        if cand.status not in OPEN:
            raise ConflictError(
                f"{cand.id} is {cand.status}", key="review.error.decided", id=cand.id, status=cand.status
            )
        return cand

    def _decide(self, cand: Candidate, status: str, actor: Actor, reason: str) -> None:
        cand.status = status
        cand.decided_by = _actor_dict(actor)
        cand.decided_at = self._now()
        cand.reason = reason

    def _accept_audit(self, cand: Candidate) -> tuple[list[str], str]:
        return (
            [cand.id, cand.result_id, *cand.superseded][:50],
            f"candidate {cand.id} accepted as {cand.result_id}"
            + (f", superseding {', '.join(cand.superseded)}" if cand.superseded else ""),
        )

    async def accept(self, scope: Scope, candidate_id: str, actor: Actor, reason: str = "") -> Decision:
        """Write an open candidate through the normal write path and link the result to it: the
        memory (or profile) write and the candidate's record are one all-or-nothing mutation.

        A pending candidate that now contradicts an active memory is parked instead (``parked``);
        accepting a ``conflict`` candidate supersedes the memories it contradicts. A tombstoned
        value is refused and the candidate is left as it was."""
        reason = _reason(reason)
        need_l2(scope)
        op = "candidate.accept"
        async with self.locks.hold(f"cand:{self._base(scope)}:{candidate_id}"):
            cand = await self._open_candidate(scope, candidate_id)
            cscope = await self._candidate_scope(scope, cand)
            tb = await self.tombstone_for(cscope, cand.content, cand.sender_id)
            if tb is not None:
                raise self._refusal(tb)
            decision = Decision(cand)
            decided = replace(cand)  # written only if the whole mutation commits
            self._decide(decided, ACCEPTED, actor, reason)
            if cand.target == "profile":
                current = await self._profile_conflicts(cscope, cand.profile_patch)
                if current and cand.status == PENDING:
                    return await self._park(scope, cand, current, actor)

                async def with_profile(profile: Profile) -> list[WriteStep]:
                    decided.result_id = "profile:" + profile.key
                    return await self._save_steps(scope, decided, op, self._accept_audit(decided), op, reason)

                decision.profile = await self.service.update_profile(
                    cscope, {"target": "speaker", **cand.profile_patch}, actor, also=with_profile
                )
            else:
                current = await self._episode_conflicts(cscope, cand.content)
                ids = {c["id"] for c in current}
                known = {c["id"] for c in cand.conflicts_with if c.get("kind") == "episode"}
                if current and (cand.status == PENDING or ids - known):
                    return await self._park(scope, cand, current, actor)

                async def with_episode(episode: Episode, superseded: list[Episode]) -> list[WriteStep]:
                    decided.result_id, decided.superseded = episode.id, [e.id for e in superseded]
                    return await self._save_steps(scope, decided, op, self._accept_audit(decided), op, reason)

                episode = await self._applied(cscope, cand)
                if episode is None:
                    raw = {"content": cand.content, **cand.episode_fields, "supersedes": sorted(ids)}
                    episode, decision.superseded = await self.service.remember(
                        cscope,
                        raw,
                        actor,
                        origin="candidate",
                        links={"candidate_id": cand.id},
                        guarded=False,
                        also=with_episode,
                    )
                else:  # an accept interrupted before this version wrote the memory: link it now
                    steps = await with_episode(episode, [])
                    await self.service.writes.mutate(actor, op, steps, reason=reason)
                decision.episode = episode
            decision.candidate = cand = decided
        log.info("candidate %s accepted in %s -> %s", cand.id, scope.user_key, cand.result_id)
        return decision

    async def reject(self, scope: Scope, candidate_id: str, actor: Actor, reason: str = "") -> Candidate:
        """Refuse an open candidate: it is never written or recalled, stays inspectable, and its
        value gets a tombstone (one all-or-nothing mutation). A conflict's other side stays as it is."""
        reason = _reason(reason)
        need_l2(scope)
        op = "candidate.reject"
        async with self.locks.hold(f"cand:{self._base(scope)}:{candidate_id}"):
            cand = await self._open_candidate(scope, candidate_id)
            decided = replace(cand)
            self._decide(decided, REJECTED, actor, reason)
            made = self._tombstone_step(scope, cand.content, cand.sender_id, "rejected", reason, actor, cand.id, op)
            decided.result_id = made[1] if made else ""
            audit = (
                [cand.id, *([decided.result_id] if made else [])],
                f"candidate {cand.id} rejected" + (f"; tombstone {decided.result_id}" if made else ""),
            )
            steps = ([made[0]] if made else []) + await self._save_steps(scope, decided, op, audit)
            await self.service.writes.mutate(actor, op, steps, reason=reason)
        log.info("candidate %s rejected in %s", decided.id, scope.user_key)
        return decided


__all__ = [
    "ACCEPTED",
    "CANDIDATE_STATUSES",
    "CONFLICT",
    "OPEN",
    "PENDING",
    "REJECTED",
    "Candidate",
    "CandidatePage",
    "Decision",
    "ExtractReport",
    "ReviewQueue",
    "ReviewSettings",
    "Tombstone",
]
