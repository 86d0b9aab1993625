"""Known memory spaces: the sessions (and bots) the stores hold records for, for the console's list.

Read-only. The sources are the records themselves, found by the key names the service writes
(layouts in :mod:`ltm.domain.storage_keys`, parsed by its one parser): a profile
(``profile/<scope_key>#session``, ``profile/<user_key>#speaker:<sender>``), an injection snapshot
(``inject/<scope_key>``) and an audit log (``audit/<kb>/<user_key>/head``: a scope that was ever
written to has one). Only a key whose id is shortened there is completed from its record, which
keeps the readable identity; a bot-wide audit log names the sessions it touched.

A ``scope_key`` is ``<bot>:<session>`` or a bare ``<session>``; a ``user_key`` is the same, or
``bot:<bot>`` in bot isolation (all sessions of that bot).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from ..domain.keys import key_part_value, parse_owner_key
from ..domain.storage_keys import INJECT_PREFIX, PROFILE_PREFIX, parse_audit_log_key, parse_storage_key
from ..ports import KeyValueStore
from .audit import AuditLog

log = logging.getLogger(__name__)

MAX_SCOPES = 500
BOT_AUDIT_SAMPLE = 50
MAX_SPEAKERS = 20  # listed per session


@dataclass
class KnownScope:
    """A session some record names, with where it was seen and the speakers seen in it."""

    session_name: str
    bot_uuid: str
    sources: set[str] = field(default_factory=set)  # profile, speaker, injection, audit
    speakers: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_name": self.session_name,
            "bot_uuid": self.bot_uuid,
            "sources": sorted(self.sources),
            "speakers": sorted(self.speakers)[:MAX_SPEAKERS],
        }


@dataclass
class KnownScopes:
    """The known sessions (sorted by bot and session, at most :data:`MAX_SCOPES`) and the bots
    seen in bot-wide keys."""

    scopes: list[KnownScope]
    truncated: bool
    bots: dict[str, set[str]]  # bot uuid -> sources

    def to_dict(self) -> dict[str, Any]:
        return {
            "scopes": [s.to_dict() for s in self.scopes],
            "truncated": self.truncated,
            "bots": [{"bot_uuid": b, "sources": sorted(src)} for b, src in sorted(self.bots.items())],
        }


def parse_session_key(key: str) -> tuple[str, str] | None:
    """``(bot_uuid, session_name)`` of a session/scope key, or None when it is not one (or one of its
    ids is shortened: then only the record names it)."""
    owner = parse_owner_key(key)
    if owner is None or owner.bot_wide or owner.bot_uuid is None or owner.session_name is None:
        return None
    return owner.bot_uuid, owner.session_name


async def _record(kv: KeyValueStore, key: str) -> dict[str, Any]:
    try:
        raw = await kv.get(key)
        record = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


async def _record_sender(kv: KeyValueStore, key: str) -> str:
    """The readable speaker a speaker profile record keeps (its key may hold a shortened id)."""
    return str((await _record(kv, key)).get("sender_id") or "")


async def _record_owner(kv: KeyValueStore, key: str) -> tuple[str, str] | None:
    """The readable ``(bot_uuid, session_name)`` a profile or snapshot record keeps."""
    owner = (await _record(kv, key)).get("owner")
    if not isinstance(owner, dict):
        return None
    name, bot = owner.get("session_name"), owner.get("bot_uuid")
    return (str(bot or ""), str(name)) if isinstance(name, str) and name else None


async def known_scopes(kv: KeyValueStore, audit: AuditLog) -> KnownScopes:
    """Sessions seen in profiles, injection snapshots and audit logs; bots seen in bot-wide keys."""
    found: dict[tuple[str, str], KnownScope] = {}
    bots: dict[str, set[str]] = {}

    def add_named(named: tuple[str, str], source: str, speaker: str) -> None:
        item = found.setdefault(named, KnownScope(session_name=named[1], bot_uuid=named[0]))
        item.sources.add(source)
        if speaker:
            item.speakers.add(speaker)

    def add(key: str, source: str, speaker: str = "") -> None:
        owner = parse_owner_key(key)
        if owner is not None and owner.bot_wide:
            bots.setdefault(owner.bot_uuid if owner.bot_uuid is not None else key[4:], set()).add(source)
            return
        parsed = parse_session_key(key)
        if parsed is not None:
            add_named(parsed, source, speaker)

    async def add_key(storage_key: str, owner: str, source: str, speaker: str = "") -> None:
        parsed = parse_owner_key(owner)
        if parsed is not None and not parsed.bot_wide and (parsed.bot_uuid is None or parsed.session_name is None):
            named = await _record_owner(kv, storage_key)  # a shortened id: the record names it
            if named is not None:
                add_named(named, source, speaker)
            return
        add(owner, source, speaker)

    for k in await kv.keys(PROFILE_PREFIX):
        p = parse_storage_key(k)
        if p is not None and p.layout == "profile.session":
            await add_key(k, p.owner, "profile")
        elif p is not None and p.layout == "profile.speaker":
            speaker = key_part_value(p.tail)
            await add_key(k, p.owner, "speaker", speaker if speaker is not None else await _record_sender(kv, k))
    for k in await kv.keys(INJECT_PREFIX):
        p = parse_storage_key(k)
        if p is not None and p.layout == "inject":
            await add_key(k, p.owner, "injection")
    logs = await audit.logs()  # one log per knowledge base and user key
    for log_key in logs:
        add(parse_audit_log_key(log_key)[1], "audit")
    # A bot-wide log (bot isolation) names the sessions that wrote to it: sample its newest page.
    for log_key in logs:
        owner = parse_owner_key(parse_audit_log_key(log_key)[1])
        if owner is None or not owner.bot_wide:
            continue
        try:
            entries, _ = await audit.page(log_key, 1, BOT_AUDIT_SAMPLE)
        except Exception as exc:  # a damaged log must not hide the other scopes
            log.warning("audit of %s unreadable: %s", log_key, exc)
            continue
        for e in entries:
            add(str(e.get("scope_key") or ""), "audit")
    items = sorted(found.values(), key=lambda s: (s.bot_uuid, s.session_name))
    return KnownScopes(scopes=items[:MAX_SCOPES], truncated=len(items) > MAX_SCOPES, bots=bots)
