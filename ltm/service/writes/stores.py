"""The stores one installation writes to, shared by the write engine's parts, and the one way an
audit entry is appended to a scope's log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ...domain.scope import Scope
from ...domain.storage_keys import audit_log_key
from ...domain.timefields import now_utc, to_iso
from ...ports import KeyValueStore, VectorIndex
from ..audit import AuditEntry, AuditLog
from .actor import Actor


@dataclass
class Stores:
    """Plugin storage, the vector index and the clock, read at use by every part of the engine (all
    three given at construction: a test that travels in time gives a clock it moves); the audit log
    is built over the storage."""

    kv: KeyValueStore
    vectors: VectorIndex
    clock: Callable[[], datetime] = now_utc
    audit_log: AuditLog = field(init=False)

    def __post_init__(self) -> None:
        self.audit_log = AuditLog(self.kv)

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
