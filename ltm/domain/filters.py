"""The one filter builder every L2 read, search, list, count, export and delete uses, and the
criteria that narrow it: :func:`scope_where` is a scope's user key narrowed by the read rule
(:func:`ltm.domain.audience.reader_audience`) and the caller's :class:`Criteria`;
:func:`matches` is its reference semantics for adapters and fakes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .audience import reader_audience
from .errors import ScopeError, ValidationError
from .scope import Scope

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
    audience: tuple[str, ...] | None = None  # set by scope_where from the read rule; None = all
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
    if c.audience is not None:
        aud = [str(a) for a in c.audience]
        conds.append({"audience": {"$eq": aud[0]}} if len(aud) == 1 else {"audience": {"$in": aud}})
    for k, v in sorted(c.extra.items()):
        conds.append({k: {"$eq": v}})
    return conds[0] if len(conds) == 1 else {"$and": conds}


def scope_where(scope: Scope, criteria: Criteria | None = None) -> dict[str, Any]:
    """The filter of every read, list, search, count, export and delete of one reader in one scope:
    :func:`scope_filter` of its user key, narrowed by the read rule (:func:`reader_audience`)."""
    c = criteria or Criteria()
    audience = reader_audience(scope)
    if audience is not None:
        c = replace(c, audience=audience)
    return scope_filter(scope.user_key, c)


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
    return matches_conditions(metadata, filter_conditions(where))


def matches_conditions(metadata: dict[str, Any], conditions: list[tuple[str, str, Any]]) -> bool:
    """:func:`matches` over a filter already flattened by :func:`filter_conditions` (one filter
    checked against many rows is flattened once)."""
    for fname, op, val in conditions:
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
