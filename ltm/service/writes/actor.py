"""Who asks for a write, and the policy checks every verb makes about them first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...domain import privilege as policy
from ...domain.errors import PermissionDenied
from ..settings import Settings


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
