"""Scope keys and the one filter builder every L2 read, search, list, count, export and delete uses.

Keys:
- ``session_name`` = ``<launcher_type>_<launcher_id>`` (what the host calls the session);
- ``session_key``  = ``<bot_uuid>:<session_name>``, or ``session_name`` when no bot is known;
- ``scope_key``    = the L1 profile scope: always the session key;
- ``user_key``     = the L2 isolation key: the session key in ``session`` isolation, ``bot:<bot_uuid>``
  in ``bot`` isolation (all sessions of one bot share their episodes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, unquote

from .errors import ScopeError, ValidationError

Isolation = Literal["session", "bot"]
ISOLATION_MODES: tuple[str, ...] = ("session", "bot")
LAUNCHER_TYPES: tuple[str, ...] = ("person", "group")

_KEY_PART = re.compile(r"^[^\s:]{1,256}$")


def session_name_of(launcher_type: str, launcher_id: str) -> str:
    lt = str(launcher_type or "").strip().lower()
    lid = str(launcher_id or "").strip()
    if lt not in LAUNCHER_TYPES:
        raise ScopeError(f"unknown launcher type {launcher_type!r}", key="error.scope_launcher", value=lt)
    if not lid or any(c.isspace() for c in lid):
        raise ScopeError("missing launcher id", key="error.scope_missing")
    return f"{lt}_{lid}"


def split_session_name(session_name: str) -> tuple[str, str]:
    """Split ``<launcher_type>_<launcher_id>`` at the first underscore (ids may contain more)."""
    lt, sep, lid = str(session_name or "").partition("_")
    if not sep or lt not in LAUNCHER_TYPES or not lid:
        raise ScopeError(f"malformed session name {session_name!r}", key="error.scope_session", value=session_name)
    return lt, lid


def session_key_of(session_name: str, bot_uuid: str | None) -> str:
    bot = (bot_uuid or "").strip()
    return f"{bot}:{session_name}" if bot else session_name


def user_key_of(session_key: str, bot_uuid: str | None, isolation: str) -> str:
    if isolation == "session":
        return session_key
    if isolation == "bot":
        bot = (bot_uuid or "").strip()
        if not bot:
            # Without a bot there is nothing to share across: fall back to the session.
            return session_key
        return f"bot:{bot}"
    raise ValidationError(f"unknown isolation mode {isolation!r}", key="error.isolation", value=isolation)


@dataclass(frozen=True)
class Scope:
    """Where a memory lives. Built once per request by :func:`derive_scope`; never restamped."""

    session_name: str
    bot_uuid: str
    isolation: str
    session_key: str
    scope_key: str
    user_key: str
    collection: str = ""
    sender_id: str = ""
    launcher_type: str = ""

    @property
    def is_group(self) -> bool:
        return self.launcher_type == "group"

    def with_sender(self, sender_id: str) -> Scope:
        return Scope(**{**self.__dict__, "sender_id": str(sender_id or "")})

    def describe(self) -> dict[str, str]:
        return {
            "isolation": self.isolation,
            "session_name": self.session_name,
            "bot_uuid": self.bot_uuid,
            "session_key": self.session_key,
            "scope_key": self.scope_key,
            "user_key": self.user_key,
            "collection": self.collection,
            "sender_id": self.sender_id,
        }


def derive_scope(
    *,
    session_name: str | None = None,
    launcher_type: str | None = None,
    launcher_id: str | None = None,
    bot_uuid: str | None = None,
    isolation: str = "session",
    collection: str = "",
    sender_id: str | None = None,
) -> Scope:
    """The single place that turns a host identity into keys."""
    if session_name:
        lt, _ = split_session_name(session_name)
        name = session_name.strip()
    else:
        name = session_name_of(launcher_type or "", launcher_id or "")
        lt = name.split("_", 1)[0]
    bot = str(bot_uuid or "").strip()
    skey = session_key_of(name, bot)
    ukey = user_key_of(skey, bot, isolation)
    return Scope(
        session_name=name,
        bot_uuid=bot,
        isolation=isolation,
        session_key=skey,
        scope_key=skey,
        user_key=ukey,
        collection=str(collection or ""),
        sender_id=str(sender_id or ""),
        launcher_type=lt,
    )


def key_part(value: str) -> str:
    """Escape ``%`` and ``#`` in an id that goes into a composite storage key, so that no launcher
    id or sender id can forge another scope's key (``#`` separates the parts)."""
    return str(value).replace("%", "%25").replace("#", "%23")


NO_KB_LOG = "!"  # the knowledge-base part of the log key of a scope without a memory KB (never a quote() result)


def audit_log_key(scope: Scope) -> str:
    """The audit log of one memory: per knowledge base AND user key, so two memory knowledge bases
    that share a user key (the same chat) never share a log. ``<kb>/<user_key>``; the KB id is
    percent-quoted, so the first ``/`` always ends it."""
    kb = quote(scope.collection, safe="") if scope.collection else NO_KB_LOG
    return f"{kb}/{scope.user_key}"


def parse_audit_log_key(log_key: str) -> tuple[str, str]:
    """(collection, user_key) of an :func:`audit_log_key`."""
    kb, _, user_key = log_key.partition("/")
    return ("" if kb == NO_KB_LOG else unquote(kb)), user_key


def speaker_profile_prefix(scope: Scope) -> str:
    return f"{key_part(scope.user_key)}#speaker:"


def speaker_profile_key(scope: Scope, sender_id: str) -> str:
    """Speaker profiles follow the L2 sharing: per session, or per bot in ``bot`` isolation."""
    return speaker_profile_prefix(scope) + key_part(sender_id)


def session_profile_key(scope: Scope) -> str:
    return f"{key_part(scope.scope_key)}#session"


# --------------------------------------------------------------------------------------------
# The one filter builder.
# --------------------------------------------------------------------------------------------

STATUSES: tuple[str, ...] = ("active", "superseded", "archived", "deleted")
ACTIVE: tuple[str, ...] = ("active",)
# What an as-of read sees: what was true then, including what a later statement (a correction, a
# summary) has replaced since. Archived and deleted rows stay out.
AS_OF_STATUSES: tuple[str, ...] = ("active", "superseded")


@dataclass(frozen=True)
class Criteria:
    """Optional narrowing inside one scope. The scope itself is never optional."""

    statuses: tuple[str, ...] | None = ACTIVE  # None = every status
    ids: tuple[str, ...] = ()
    sender_id: str | None = None
    tag: str | None = None  # matched after listing (tags are a JSON list); see service
    before_ts: float | None = None  # timestamp (storage time) strictly before
    event_from_ts: float | None = None
    event_until_ts: float | None = None
    as_of_ts: float | None = None  # validity: valid_from <= t < valid_until
    document_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def scope_filter(user_key: str, criteria: Criteria | None = None) -> dict[str, Any]:
    """Build the Chroma-style ``where`` for one L2 scope.

    Always contains ``user_key == <key>``. One condition is returned bare; several are wrapped in
    ``$and`` (Chroma rejects two top-level keys and an ``$and`` with a single item).
    """
    if not user_key or not isinstance(user_key, str):
        raise ScopeError("empty user key", key="error.scope_missing")
    c = criteria or Criteria()
    conds: list[dict[str, Any]] = [{"user_key": {"$eq": user_key}}]
    if c.statuses is not None:
        bad = [s for s in c.statuses if s not in STATUSES]
        if bad or not c.statuses:
            raise ValidationError(f"unknown status {bad!r}", key="error.status", value=",".join(bad))
        if len(c.statuses) == 1:
            conds.append({"status": {"$eq": c.statuses[0]}})
        else:
            conds.append({"status": {"$in": list(c.statuses)}})
    if c.ids:
        ids = [str(i) for i in c.ids]
        conds.append({"episode_id": {"$eq": ids[0]}} if len(ids) == 1 else {"episode_id": {"$in": ids}})
    if c.sender_id is not None:
        conds.append({"sender_id": {"$eq": str(c.sender_id)}})
    if c.before_ts is not None:
        conds.append({"ts": {"$lt": float(c.before_ts)}})
    if c.event_from_ts is not None:
        conds.append({"event_ts": {"$gte": float(c.event_from_ts)}})
    if c.event_until_ts is not None:
        conds.append({"event_ts": {"$lt": float(c.event_until_ts)}})
    if c.as_of_ts is not None:
        conds.append({"valid_from_ts": {"$lte": float(c.as_of_ts)}})
        conds.append({"valid_until_ts": {"$gt": float(c.as_of_ts)}})
    if c.document_id is not None:
        conds.append({"document_id": {"$eq": str(c.document_id)}})
    for k, v in sorted(c.extra.items()):
        conds.append({k: {"$eq": v}})
    return conds[0] if len(conds) == 1 else {"$and": conds}


def filter_conditions(where: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Flatten a filter built by :func:`scope_filter` into ``(field, op, value)`` triples.

    Adapters that do not speak Chroma's dialect (Qdrant, the numpy scan) translate from these.
    """
    items = where["$and"] if "$and" in where else [where]
    out: list[tuple[str, str, Any]] = []
    for item in items:
        ((fname, cond),) = item.items()
        if isinstance(cond, dict):
            ((op, val),) = cond.items()
        else:
            op, val = "$eq", cond
        out.append((fname, op, val))
    return out


def matches(metadata: dict[str, Any], where: dict[str, Any]) -> bool:
    """Evaluate a filter against one metadata dict (reference semantics for adapters and fakes)."""
    for fname, op, val in filter_conditions(where):
        present = fname in metadata and metadata[fname] is not None
        got = metadata.get(fname)
        if op == "$eq":
            ok = present and got == val
        elif op == "$ne":
            ok = not present or got != val
        elif op == "$in":
            ok = present and got in val
        elif op == "$nin":
            ok = not present or got not in val
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            if not present or not isinstance(got, (int, float)) or isinstance(got, bool):
                ok = False
            else:
                ok = {
                    "$gt": got > val,
                    "$gte": got >= val,
                    "$lt": got < val,
                    "$lte": got <= val,
                }[op]
        else:
            raise ValueError(f"unsupported operator {op}")
        if not ok:
            return False
    return True


def validate_key_part(value: str, name: str) -> str:
    v = str(value or "").strip()
    if not _KEY_PART.match(v):
        raise ValidationError(f"{name}: malformed", key="error.key_part", field=name)
    return v
