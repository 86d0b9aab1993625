"""Who may run which ``!memory`` verb: a pure policy table, no I/O.

Reading the memory of the scope one is speaking in is open to everyone in that scope (its review
queue and its tombstones too: a tombstone shows no value, only its id, reason, who and when). Every
verb that changes memory (including accepting or rejecting a candidate, lifting a tombstone and
confirming a memory), deletes in bulk, imports, or exports a whole scope needs an admin: the host's
bot admin (``ExecuteContext.privilege == 2``) or a sender listed in the plugin config
``admin_sender_ids``. In group chats the host gives every member the same privilege (admins are
configured per launcher), so per-person rights come from ``admin_sender_ids``, matched against the
current speaker (the query variable ``sender_id``), never against ``Session.sender_id``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

HOST_ADMIN_PRIVILEGE = 2

READ = "read"
MUTATE = "mutate"
BULK = "bulk"
EXPORT = "export"
IMPORT = "import"
PROBE = "probe"


@dataclass(frozen=True)
class Rule:
    """The policy of one verb: its kind and whether it needs an admin."""

    verb: str
    kind: str

    @property
    def needs_admin(self) -> bool:
        return self.kind != READ


# Policy verbs (``Parsed.policy_verb``). Order = the order of the documented matrix.
POLICY: dict[str, Rule] = {
    r.verb: r
    for r in (
        Rule("summary", READ),
        Rule("help", READ),
        Rule("profile", READ),
        Rule("list", READ),
        Rule("search", READ),
        Rule("show", READ),
        Rule("superseded", READ),
        Rule("archived", READ),
        Rule("audit", READ),
        Rule("health", READ),
        Rule("candidates", READ),
        Rule("tombstones", READ),
        Rule("health.probe", PROBE),
        Rule("forget", MUTATE),
        Rule("archive", MUTATE),
        Rule("restore", MUTATE),
        Rule("confirm", MUTATE),
        Rule("candidate", MUTATE),
        Rule("tombstone", MUTATE),
        Rule("consolidate", MUTATE),
        Rule("delete", BULK),
        Rule("import", IMPORT),
        Rule("export", EXPORT),
        Rule("audit.export", EXPORT),
    )
}


def rule_for(verb: str) -> Rule:
    """The rule of ``verb``; an unknown verb is treated as a mutation (deny by default)."""
    return POLICY.get(verb) or Rule(verb, MUTATE)


def requires_admin(verb: str) -> bool:
    return rule_for(verb).needs_admin


def is_admin(privilege: int | None, sender_id: str | None, admin_ids: Iterable[str]) -> bool:
    """Host bot admin, or the current speaker listed in ``admin_sender_ids`` (an empty id never matches)."""
    if privilege == HOST_ADMIN_PRIVILEGE:
        return True
    sender = str(sender_id or "").strip()
    return bool(sender) and sender in {str(a).strip() for a in admin_ids}


def can_run(verb: str, privilege: int | None, sender_id: str | None, admin_ids: Iterable[str]) -> bool:
    """True when the caller may run ``verb``."""
    return not requires_admin(verb) or is_admin(privilege, sender_id, admin_ids)


def matrix() -> list[tuple[str, str, bool]]:
    """``(verb, kind, needs_admin)`` rows, in documentation order."""
    return [(r.verb, r.kind, r.needs_admin) for r in POLICY.values()]
