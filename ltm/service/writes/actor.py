"""The policy checks every verb makes first about who asks (:class:`ltm.domain.actors.Actor`)."""

from __future__ import annotations

from ...domain import privilege as policy
from ...domain.actors import Actor
from ...domain.errors import PermissionDenied
from ..settings import Settings


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


__all__ = ["Actor", "caller_of", "require_admin"]
