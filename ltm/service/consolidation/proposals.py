"""Consolidation proposals: a reviewed-before-use summary draft of one L2 scope, stored one per key.

Plugin storage ``consolidation/<user_key>/<proposal id>`` holds one :class:`Proposal` record
(:data:`RECORD_FORMAT`). A proposal is used once: after use, or when a source changed, it is
rewritten as a marker without text (``used`` / ``stale``). At most :data:`MAX_PENDING_PER_SCOPE`
are pending per scope and each expires after :data:`PROPOSAL_TTL_DAYS`.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ...domain import consolidation as rules
from ...domain import records as rec
from ...domain.errors import LtmError
from ...domain.scope import Scope, user_key_scope
from ...domain.storage_keys import PROPOSAL_PREFIX, l2_lock_key, owned_keys, proposal_key
from ...domain.timefields import parse_instant
from ..neighbours import ConsolidationHost
from ..writes.actor import Actor
from ..writes.errors import backend, need_l2

log = logging.getLogger(__name__)

PREFIX = PROPOSAL_PREFIX
RECORD_FORMAT = "ltm-consolidation/1"
MAX_PENDING_PER_SCOPE = 5
PROPOSAL_TTL_DAYS = 7
OPERATION = "consolidation.proposal"  # the journal's name for a proposal write
ACTOR = Actor(surface="consolidation")


def new_proposal_id() -> str:
    return "cp_" + uuid.uuid4().hex[:20]


@dataclass
class Proposal:
    """A reviewed-before-use summary draft of one L2 scope (collection + user_key)."""

    id: str
    collection: str
    user_key: str
    scope_key: str
    sender_id: str
    created_at: str
    created_by: dict[str, Any]
    sources: list[rules.SourceRef]
    summary: str
    valid_from: str | None
    valid_until: str | None
    model_uuid: str = ""
    status: str = "pending"  # pending | used | stale (used/stale keep no text)
    used_at: str = ""
    result_id: str = ""
    reason: str = ""

    @property
    def source_ids(self) -> list[str]:
        return [s.id for s in self.sources]

    def to_record(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "id": self.id,
            "status": self.status,
            "collection": self.collection,
            "user_key": self.user_key,
            "scope_key": self.scope_key,
            "sender_id": self.sender_id,
            "created_at": self.created_at,
            "created_by": self.created_by,
            "sources": [{"id": s.id, "content_hash": s.content_hash} for s in self.sources],
            "summary": self.summary,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "model_uuid": self.model_uuid,
            "used_at": self.used_at,
            "result_id": self.result_id,
            "reason": self.reason,
        }

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> Proposal:
        return cls(
            id=rec.text(d, "id"),
            collection=rec.text(d, "collection"),
            user_key=rec.text(d, "user_key"),
            scope_key=rec.text(d, "scope_key"),
            sender_id=rec.text(d, "sender_id"),
            created_at=rec.text(d, "created_at"),
            created_by=rec.mapping(d, "created_by"),
            sources=[
                rules.SourceRef(rec.text(s, "id"), rec.text(s, "content_hash"))
                for s in (d.get("sources") or [])
                if isinstance(s, dict)
            ],
            summary=rec.text(d, "summary"),
            valid_from=rec.optional(d, "valid_from"),
            valid_until=rec.optional(d, "valid_until"),
            model_uuid=rec.text(d, "model_uuid"),
            status=rec.text(d, "status", "pending"),
            used_at=rec.text(d, "used_at"),
            result_id=rec.text(d, "result_id"),
            reason=rec.text(d, "reason"),
        )

    def spent(self, status: str, at: str, *, result_id: str = "", reason: str = "") -> Proposal:
        """The marker left after use or invalidation: ids and outcome, no summary, no hashes."""
        return Proposal(
            id=self.id,
            collection=self.collection,
            user_key=self.user_key,
            scope_key=self.scope_key,
            sender_id=self.sender_id,
            created_at=self.created_at,
            created_by=self.created_by,
            sources=[],
            summary="",
            valid_from=None,
            valid_until=None,
            model_uuid=self.model_uuid,
            status=status,
            used_at=at,
            result_id=result_id,
            reason=reason,
        )

    def to_public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "created_at": self.created_at,
            "sender_id": self.sender_id,
            "source_ids": self.source_ids,
            "summary": self.summary,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "used_at": self.used_at,
            "result_id": self.result_id,
        }


class ProposalStore:
    """The proposal records of one service's scopes."""

    def __init__(self, service: ConsolidationHost) -> None:
        self.service = service

    async def load(self, user_key: str, proposal_id: str) -> Proposal | None:
        raw = await self.service.kv.get(proposal_key(user_key, proposal_id))
        if not raw:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            log.warning("unreadable consolidation proposal %s", proposal_id)
            return None
        return Proposal.from_record(data) if isinstance(data, dict) else None

    async def store(self, p: Proposal, *, held: bool = False) -> None:
        """Write ``p``: one journaled step fenced with its scope's L2 writes (not audited: the verb
        that writes it is). ``held``: the caller holds the scope's write lock."""
        await self._write(p, json.dumps(p.to_record(), ensure_ascii=False).encode(), held)

    async def delete(self, p: Proposal, *, held: bool = False) -> None:
        """Delete ``p``'s record, like :meth:`store`."""
        await self._write(p, None, held)

    async def _write(self, p: Proposal, value: bytes | None, held: bool) -> None:
        writes = self.service.writes
        scope = user_key_scope(p.collection, p.user_key)
        key = proposal_key(p.user_key, p.id)

        async def write() -> None:
            old = await backend(writes.kv.get(key), "storage read")
            if old != value:
                await writes.mutate(ACTOR, OPERATION, [writes.kv_step(scope, OPERATION, key, value, old)])

        if held:
            await write()
            return
        async with writes.locks.hold(l2_lock_key(scope)):
            await write()

    async def scope_proposals(self, scope: Scope) -> list[Proposal]:
        """Every proposal record of this L2 scope: the key's owner is checked exactly (a user key that
        is a prefix of another must not see the other's proposals), then the record's."""
        out = []
        for key in owned_keys(scope, await self.service.kv.keys(f"{PREFIX}{scope.user_key}/")):
            pid = key.rsplit("/", 1)[-1]
            p = await self.load(scope.user_key, pid)
            if (
                p
                and p.user_key == scope.user_key
                and p.collection == scope.collection
                and key == proposal_key(p.user_key, p.id)
            ):
                out.append(p)
        return out

    async def list_pending(self, scope: Scope) -> list[Proposal]:
        """Pending proposals of the scope, newest first."""
        need_l2(scope)
        pending = [p for p in await self.scope_proposals(scope) if p.status == "pending"]
        return sorted(pending, key=lambda p: (p.created_at, p.id), reverse=True)

    def expired(self, p: Proposal) -> bool:
        try:
            created = parse_instant(p.created_at, "created_at")
        except LtmError:
            return True
        return self.service.clock() - created > timedelta(days=PROPOSAL_TTL_DAYS)

    async def prune(self, scope: Scope, keep: str) -> None:
        """Bound the pending proposals of a scope: expired ones go, then the oldest beyond the cap."""
        pending = await self.list_pending(scope)  # newest first
        alive = [p for p in pending if p.id == keep]
        for p in pending:
            if p.id == keep:
                continue
            if self.expired(p):
                await self.delete(p)
            else:
                alive.append(p)
        for p in alive[MAX_PENDING_PER_SCOPE:]:
            await self.delete(p)

    async def drop_collection(self, kb_id: str) -> int:
        """Delete every proposal of a knowledge base (any scope). Returns the number dropped."""
        n = 0
        for key in await self.service.kv.keys(PREFIX):
            raw = await self.service.kv.get(key)
            try:
                data = json.loads(raw) if raw else None
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("collection") == kb_id:
                await self.service.kv.delete(key)
                n += 1
        return n
