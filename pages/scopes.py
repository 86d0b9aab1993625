"""Known memory spaces, read from the key names the service writes (read-only; nothing is decoded
beyond the key itself except a bot-wide audit page, which names the sessions it touched).

Keys looked at (see :mod:`ltm.service.memory_service` and :mod:`ltm.service.audit`):

- ``profile/<scope_key>#session`` and ``profile/<user_key>#speaker:<sender>``;
- ``inject/<scope_key>`` (the last injection snapshot);
- ``audit/<user_key>/head`` (a scope that was ever written to has an audit log).

A ``scope_key`` is ``<bot_uuid>:<session_name>`` or a bare ``<session_name>``; a ``user_key`` is
the same, or ``bot:<bot_uuid>`` in bot isolation (all sessions of that bot).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ltm.domain.errors import ScopeError
from ltm.domain.scope import parse_audit_log_key, split_session_name
from ltm.service import MemoryService
from ltm.service.audit import PREFIX as AUDIT_PREFIX

log = logging.getLogger(__name__)

MAX_SCOPES = 500
BOT_AUDIT_SAMPLE = 50


@dataclass
class KnownScope:
    session_name: str
    bot_uuid: str
    sources: set[str] = field(default_factory=set)
    speakers: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_name": self.session_name,
            "bot_uuid": self.bot_uuid,
            "sources": sorted(self.sources),
            "speakers": sorted(self.speakers)[:20],
        }


def parse_session_key(key: str) -> tuple[str, str] | None:
    """``(bot_uuid, session_name)`` of a session/scope key, or None when it is not one."""
    key = str(key or "")
    if key.startswith(("person_", "group_")):
        bot, name = "", key
    else:
        bot, sep, name = key.partition(":")
        if not sep or not bot:
            return None
    try:
        split_session_name(name)
    except ScopeError:
        return None
    return bot, name


async def known_scopes(service: MemoryService) -> dict[str, Any]:
    """Sessions seen in profiles, injection snapshots and audit logs; bots seen in bot-wide keys."""
    found: dict[tuple[str, str], KnownScope] = {}
    bots: dict[str, set[str]] = {}

    def add(key: str, source: str, speaker: str = "") -> None:
        if key.startswith("bot:"):
            bots.setdefault(key[4:], set()).add(source)
            return
        parsed = parse_session_key(key)
        if parsed is None:
            return
        item = found.setdefault(parsed, KnownScope(session_name=parsed[1], bot_uuid=parsed[0]))
        item.sources.add(source)
        if speaker:
            item.speakers.add(speaker)

    for k in await service.kv.keys("profile/"):
        rest = k[len("profile/") :]
        if rest.endswith("#session"):  # key parts are escaped (ltm.domain.scope.key_part)
            add(unquote(rest[: -len("#session")]), "profile")
        elif "#speaker:" in rest:
            owner, _, speaker = rest.partition("#speaker:")
            add(unquote(owner), "speaker", unquote(speaker))
    for k in await service.kv.keys("inject/"):
        add(k[len("inject/") :], "injection")
    audit_logs: list[tuple[str, str]] = []  # (log key, user key): one log per knowledge base and user key
    for k in await service.kv.keys(AUDIT_PREFIX):
        if k.endswith("/head"):
            log_key = k[len(AUDIT_PREFIX) : -len("/head")]
            user_key = parse_audit_log_key(log_key)[1]
            audit_logs.append((log_key, user_key))
            add(user_key, "audit")
    # A bot-wide log (bot isolation) names the sessions that wrote to it: sample its newest page.
    for log_key, user_key in audit_logs:
        if not user_key.startswith("bot:"):
            continue
        try:
            entries, _ = await service.audit.page(log_key, 1, BOT_AUDIT_SAMPLE)
        except Exception as exc:  # a damaged log must not hide the other scopes
            log.warning("audit of %s unreadable: %s", log_key, exc)
            continue
        for e in entries:
            add(str(e.get("scope_key") or ""), "audit")
    items = sorted(found.values(), key=lambda s: (s.bot_uuid, s.session_name))
    return {
        "scopes": [s.to_dict() for s in items[:MAX_SCOPES]],
        "truncated": len(items) > MAX_SCOPES,
        "bots": [{"bot_uuid": b, "sources": sorted(src)} for b, src in sorted(bots.items())],
    }
