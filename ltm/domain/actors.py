"""Who asked, and how a stored record names them. Pure.

:class:`Actor` is the caller of a verb: the surface, the speaker, the query and the host privilege.
Every record that names a caller (a journal entry, a candidate's ``created_by`` and
``decided_by``, a tombstone's ``by``) holds :func:`actor_record` of it::

    {"surface": "...", "sender_id": "...", "query_id": 1 | null[, "operator": "..."]}

``operator`` is there only for the console's operator. The privilege is not recorded: a record
says who did something, not what they could do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from . import records as rec
from .privilege import HOST_ADMIN_PRIVILEGE

MAX_OPERATOR_CHARS = 128


class ActorFields(Protocol):
    """What :func:`actor_record` reads of an actor."""

    @property
    def surface(self) -> str: ...
    @property
    def sender_id(self) -> str: ...
    @property
    def query_id(self) -> int | None: ...
    @property
    def operator(self) -> str: ...


def actor_record(actor: ActorFields) -> dict[str, Any]:
    """The record of who asked (see the module docstring)."""
    out: dict[str, Any] = {"surface": actor.surface, "sender_id": actor.sender_id, "query_id": actor.query_id}
    if actor.operator:
        out["operator"] = actor.operator
    return out


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
        name = str(who or "")[:MAX_OPERATOR_CHARS]
        return cls(surface="console", sender_id=name, privilege=HOST_ADMIN_PRIVILEGE, operator=name or "console")

    def to_record(self) -> dict[str, Any]:
        return actor_record(self)

    @classmethod
    def from_record(cls, d: Mapping[str, Any]) -> Actor:
        """The actor a record names. A missing field reads as empty and a query id that is not a
        whole number as none; the privilege is not recorded, so it is the console's for an
        operator and a member's for anyone else."""
        query_id = d.get("query_id")
        operator = rec.text(d, "operator")
        return cls(
            surface=rec.text(d, "surface"),
            sender_id=rec.text(d, "sender_id"),
            query_id=query_id if isinstance(query_id, int) and not isinstance(query_id, bool) else None,
            privilege=HOST_ADMIN_PRIVILEGE if operator else 1,
            operator=operator,
        )
