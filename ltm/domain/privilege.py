"""Who may do what to memory: one pure policy for every surface (command, tools, console, listener).

Reading the memory of the scope one is speaking in is open to everyone in that scope (its review
queue and its tombstones too: a tombstone shows no value, only its id, reason, who and when); what
a scope shows a reader is decided by the one read rule, :func:`ltm.domain.audience.reader_audience`.

Changing memory needs a memory admin: the host's bot admin (``ExecuteContext.privilege == 2``), a
sender listed in the plugin config ``admin_sender_ids``, or the console (the operator). In group
chats the host gives every member the same privilege (admins are configured per launcher), so
per-person rights come from ``admin_sender_ids``, matched exactly (no trimming, no normalisation,
as every other surface compares ids) against the current speaker (the query variable
``sender_id``), never against ``Session.sender_id``.

One exception, decided per record by :func:`may_change_record`: a speaker may forget their OWN
memories; someone else's, or one without an owner (a shared or session-level record: a document's,
an import's without speaker), needs an admin. ``remember supersedes`` (:func:`may_supersede`)
replaces only the speaker's own records, or, for an admin, a shared one.
The session profile of a group is injected into every member's prompt: editing it needs an admin
unless the plugin setting ``members_edit_group_profile`` allows members (:func:`may_edit_profile`).
The service enforces these in its verbs, so no surface can skip them.

The ``self`` verbs (``me``, ``forget-me``, ``optout``, ``optin``) are a person's rights over what
they said: open to everyone, and only ever about the caller (the service takes the person from the
actor, never from an argument); the same for someone else is the console's (``people``,
``people.erase``), an admin's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

HOST_ADMIN_PRIVILEGE = 2

READ = "read"
OWN = "own"  # allowed on one's own record; another's needs an admin (decided by the service)
MUTATE = "mutate"
BULK = "bulk"
EXPORT = "export"
IMPORT = "import"
PROBE = "probe"
SELF = "self"  # about the caller alone (their own memory, everywhere): anyone, for themselves only


@dataclass(frozen=True)
class Rule:
    """The policy of one verb: its kind and whether it needs an admin."""

    verb: str
    kind: str

    @property
    def needs_admin(self) -> bool:
        """Always needs an admin (an ``own`` verb needs one only for another's record)."""
        return self.kind not in (READ, OWN, SELF)

    @property
    def admin_column(self) -> str:
        """The documented "Needs admin" answer: ``yes``, ``no`` or ``for another's``."""
        return "for another's" if self.kind == OWN else "yes" if self.needs_admin else "no"


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
        Rule("why", PROBE),  # the recall trace: other speakers' memories and the filter's view
        Rule("forget", OWN),
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
        Rule("fences.clear", MUTATE),  # the console's Clear fence; no chat command
        # people's rights (issue 35): a person over what they said; the console over anyone
        Rule("me", SELF),
        Rule("forget-me", SELF),
        Rule("optout", SELF),
        Rule("optin", SELF),
        Rule("people", EXPORT),  # the console's People panel: anyone's listing and its JSON
        Rule("people.erase", BULK),  # the console's erase of a person
    )
}


def rule_for(verb: str) -> Rule:
    """The rule of ``verb``; an unknown verb is treated as a mutation (deny by default)."""
    return POLICY.get(verb) or Rule(verb, MUTATE)


def requires_admin(verb: str) -> bool:
    return rule_for(verb).needs_admin


def is_admin(privilege: int | None, sender_id: str | None, admin_ids: Iterable[str]) -> bool:
    """Host bot admin, or the current speaker listed in ``admin_sender_ids``, compared exactly (an
    empty id never matches; ``admin-1\\xa0`` is not ``admin-1``)."""
    if privilege == HOST_ADMIN_PRIVILEGE:
        return True
    sender = sender_id if isinstance(sender_id, str) else ""
    return bool(sender) and sender in {str(a) for a in admin_ids}


def can_run(verb: str, privilege: int | None, sender_id: str | None, admin_ids: Iterable[str]) -> bool:
    """True when the caller may run ``verb`` at all (an ``own`` verb: the record decides later)."""
    return not requires_admin(verb) or is_admin(privilege, sender_id, admin_ids)


@dataclass(frozen=True)
class Caller:
    """Who asks, as the policy sees it: the speaker's exact id and whether they are a memory admin."""

    speaker: str
    admin: bool


def caller_of(privilege: int | None, sender_id: str | None, admin_ids: Iterable[str]) -> Caller:
    return Caller(str(sender_id or ""), is_admin(privilege, sender_id, admin_ids))


def owns(caller: Caller, owner: str) -> bool:
    """The record is the caller's own: a non-empty owner equal to the speaker, exactly."""
    return bool(owner) and owner == caller.speaker


def may_change_record(caller: Caller, owner: str) -> bool:
    """Forget or supersede one record owned by ``owner`` (its ``sender_id``)."""
    return caller.admin or owns(caller, owner)


def may_supersede(caller: Caller, owner: str) -> bool:
    """Replace a record with a new statement of the caller (``remember supersedes``): one's own,
    or, for an admin, a shared record. Another speaker's record is never replaced by someone
    else's statement (a correction is its speaker's; the service refuses it as a conflict)."""
    return owns(caller, owner) or (not owner and caller.admin)


def may_edit_profile(caller: Caller, target: str, *, group: bool, members_edit_group_profile: bool) -> bool:
    """Edit a profile. A speaker profile is always the caller's own (its key is the speaker's); the
    session profile of a private chat belongs to its one person; a group's needs an admin unless
    the setting lets members edit it."""
    if target != "session" or not group:
        return True
    return caller.admin or members_edit_group_profile


def matrix() -> list[tuple[str, str, bool]]:
    """``(verb, kind, needs_admin)`` rows, in documentation order."""
    return [(r.verb, r.kind, r.needs_admin) for r in POLICY.values()]
