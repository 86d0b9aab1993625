"""The candidate store: statements waiting for a person, per scope (knowledge base + ``user_key``).

Storage (plugin KV), per ``<kb>/<user_key>``:

- ``cand/<kb>/<user_key>/r/<id>``: one candidate;
- ``cand/<kb>/<user_key>/head`` ``{"seq": n}`` and ``cand/<kb>/<user_key>/i/<k>``: ids by sequence,
  in chunks of :data:`INDEX_CHUNK` (the all-statuses pages read only their chunks);
- ``cand/<kb>/<user_key>/open``: the open candidates (id, seq, status, value key), at most
  :data:`MAX_OPEN` (the default page reads only this list and its page's records).

Every write is a step of a journaled mutation (:mod:`ltm.service.writes`), fenced with the scope's
L2 writes; the read rule of episodes applies to candidates (:meth:`CandidateStore.readable`).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from ...domain import candidates as rules
from ...domain.actors import actor_record
from ...domain.audience import audience_of, may_read, reader_audience
from ...domain.errors import ConflictError, NotFoundError
from ...domain.records import Record
from ...domain.scope import Scope
from ...domain.storage_keys import CAND_PREFIX, candidate_key, l2_lock_key
from ...domain.tombstone import value_key
from ..writes.actor import Actor
from ..writes.errors import backend, need_l2
from ..writes.expectations import KvListHas, KvListLacks
from ..writes.plan import WriteStep
from .records import ReviewPart

log = logging.getLogger(__name__)

PENDING, CONFLICT, ACCEPTED, REJECTED = "pending", "conflict", "accepted", "rejected"
CANDIDATE_STATUSES: tuple[str, ...] = (PENDING, CONFLICT, ACCEPTED, REJECTED)
OPEN: tuple[str, ...] = (PENDING, CONFLICT)
INDEX_CHUNK = 50
MAX_OPEN = 500
CANDIDATE_ID = re.compile(r"^cand_[0-9a-f]{20}$")


def new_candidate_id() -> str:
    return "cand_" + uuid.uuid4().hex[:20]


@dataclass
class Candidate(Record):
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
    # "instruction-like" (ltm.domain.instructions): never auto-applied; accepted, injected with a mark
    flags: list[str] = field(default_factory=list)


@dataclass
class CandidatePage:
    items: list[Candidate]
    page: int
    page_size: int
    has_more: bool
    total: int


class CandidateStore(ReviewPart):
    """The candidates of one service's scopes."""

    def _store_lock(self, scope: Scope) -> str:
        return "store:" + self._base(scope)

    async def open_list(self, scope: Scope) -> list[dict[str, Any]]:
        return list(await self._read(candidate_key(scope, "open")) or [])

    async def insert(
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
        flags: list[str] | None = None,
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
            created_by=actor_record(actor),
            flags=list(flags or []),
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
                f"candidate {cand.id} {kind} ({cand.classification}, {origin}"
                + "".join(f", {f}" for f in cand.flags)
                + ")",
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

    async def save_steps(
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
                current = await self.open_list(scope)
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

    async def person_candidates(self, scope: Scope, sender_id: str) -> list[Candidate]:
        """Every candidate of this scope proposed from ``sender_id``'s words, any status, any
        audience (a person's erasure and the console's listing of a person)."""
        if not sender_id:
            return []
        out, n = [], 1
        while True:
            part = await self.list(scope.as_operator(), page=n, page_size=100, all_statuses=True)
            out += [c for c in part.items if c.sender_id == sender_id]
            if not part.has_more:
                return out
            n += 1

    async def erase_person_steps(self, scope: Scope, sender_id: str) -> tuple[list[WriteStep], int]:
        """A person's erasure: each of their candidates keeps its id and decision history but loses
        every text (their words, the evidence, the patch, the contradicted memories' previews); an
        open one is closed as rejected. Returns the steps and how many candidates they touch."""
        steps: list[WriteStep] = []
        found = await self.person_candidates(scope, sender_id)
        for cand in found:
            erased = replace(
                cand,
                content="",
                evidence_quote="",
                profile_patch={},
                episode_fields={},
                conflicts_with=[],
                model_note="",
                source_ref="",
                reason="erased on request",
                status=REJECTED if cand.status in OPEN else cand.status,
            )
            audit = ([cand.id], f"candidate {cand.id}: text erased on request")
            steps += await self.save_steps(scope, erased, "candidate.erase", audit)
        return steps, len(found)

    async def delete_kb(self, kb_id: str) -> int:
        """The knowledge base ``kb_id`` is gone: every candidate record of it goes too (records,
        open lists and index chunks). How many went."""
        return await self._delete_kb_records(CAND_PREFIX, "candidate", kb_id)

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
        """The read rule of episodes (:func:`ltm.domain.audience.reader_audience`) for a candidate: the
        audience of what is written where it was proposed."""
        return may_read(scope, audience_of(Scope.from_describe(cand.scope)))

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
            rows = sorted(await self.open_list(scope), key=lambda o: o["seq"], reverse=True)
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
