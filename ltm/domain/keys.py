"""Key encoding: how a host identity (bot, launcher, sender) becomes the parts of a key.

Keys (each id inside a key is encoded by :func:`key_part`, the one encoding of every surface):
- ``session_name`` = ``<launcher_type>_<launcher_id>`` (what the host calls the session; readable);
- ``session_key``  = ``<bot>:<launcher_type>_<launcher_id>``, or ``<launcher_type>_<launcher_id>``
  when no bot is known (ids encoded);
- ``scope_key``    = the L1 profile scope: always the session key;
- ``user_key``     = the L2 isolation key: the session key in ``session`` isolation, ``bot:<bot>``
  in ``bot`` isolation (all sessions of one bot share their episodes).

An encoded id never contains ``:``, ``#`` or ``%`` except as ``%3A``, ``%23``, ``%25``, so the raw
``:`` and ``#`` of a key are always separators and two different identities never share a key. An
id whose encoding is longer than :data:`KEY_PART_MAX` is shortened to a readable head and a stable
digest, so every storage key stays within the host's 255 characters; the readable id stays in the
records. The scope built from these keys is :mod:`.scope`; the storage keys built from a scope are
:mod:`.storage_keys`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from .errors import ScopeError, ValidationError

Isolation = Literal["session", "bot"]
LAUNCHER_TYPES: tuple[str, ...] = ("person", "group")

MAX_ID_CHARS = 1024  # a bot, launcher or sender id longer than this is refused on every surface
KEY_PART_MAX = 64  # an encoded id longer than this is shortened (head + digest)
_DIGEST_HEAD = 30
_DIGEST_HEX = 24  # 96 bits of sha256
DIGEST_MARK = "%~"  # never produced by the escaping (a ``%`` is always followed by 25, 23 or 3A)
_ESCAPES = {"%": "%25", "#": "%23", ":": "%3A"}
_UNESCAPE = re.compile(r"%(25|23|3A)")
_BAD_ESCAPE = re.compile(r"%(?!25|23|3A)")
_BOT_WORD = "bot"  # a bot id spelled like the bot-wide key's own prefix is encoded apart from it
_BOT_WORD_PART = "%62ot"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_HEX]


def key_part(value: str) -> str:
    """The one encoding of an id (bot, launcher, sender) inside a composite key.

    ``%``, ``#`` and ``:`` are percent-escaped, so no id can forge a separator; an id whose
    encoding is longer than :data:`KEY_PART_MAX` becomes ``<head>%~<digest>``. Injective (up to
    a 96-bit digest collision) and the identity on ordinary ids, whose keys therefore never change.
    """
    v = str(value)
    out = "".join(_ESCAPES.get(c, c) for c in v)
    if len(out) <= KEY_PART_MAX:
        return out
    head = out[:_DIGEST_HEAD]
    cut = head.rfind("%")
    if cut >= len(head) - 2:  # never end inside an escape
        head = head[:cut]
    return head + DIGEST_MARK + _digest(v)


def key_part_value(part: str) -> str | None:
    """The id a :func:`key_part` stands for, or None when it is shortened (the id is then only in
    the record) or not an encoded id at all."""
    if DIGEST_MARK in part or _BAD_ESCAPE.search(part):
        return None
    return _UNESCAPE.sub(lambda m: {"25": "%", "23": "#", "3A": ":"}[m.group(1)], part)


def bot_part(bot_uuid: str) -> str:
    return _BOT_WORD_PART if bot_uuid == _BOT_WORD else key_part(bot_uuid)


def kb_part(collection: str) -> str:
    """A memory knowledge base id inside a storage key: percent-quoted (a uuid is unchanged), and
    shortened like an id when very long."""
    out = quote(str(collection), safe="")
    return out if len(out) <= KEY_PART_MAX else out[:_DIGEST_HEAD].rsplit("%", 1)[0] + DIGEST_MARK + _digest(collection)


def check_id(value: Any, field_name: str, *, required: bool = False) -> str:
    """The one validation of an id every surface applies before deriving keys: stripped text,
    no whitespace inside, at most :data:`MAX_ID_CHARS` characters."""
    v = str(value or "").strip()
    if required and not v:
        raise ScopeError(f"missing {field_name}", key="error.scope_missing")
    if any(c.isspace() for c in v):
        raise ScopeError(f"{field_name}: whitespace", key="error.scope_id_space", field=field_name)
    if len(v) > MAX_ID_CHARS:
        raise ScopeError(
            f"{field_name}: longer than {MAX_ID_CHARS}", key="error.scope_id_long", field=field_name, limit=MAX_ID_CHARS
        )
    return v


def session_name_of(launcher_type: str, launcher_id: str) -> str:
    lt = str(launcher_type or "").strip().lower()
    if lt not in LAUNCHER_TYPES:
        raise ScopeError(f"unknown launcher type {launcher_type!r}", key="error.scope_launcher", value=lt)
    lid = check_id(launcher_id, "launcher_id", required=True)
    return f"{lt}_{lid}"


def split_session_name(session_name: str) -> tuple[str, str]:
    """Split ``<launcher_type>_<launcher_id>`` at the first underscore (ids may contain more)."""
    lt, sep, lid = str(session_name or "").partition("_")
    if not sep or lt not in LAUNCHER_TYPES or not lid:
        raise ScopeError(f"malformed session name {session_name!r}", key="error.scope_session", value=session_name)
    return lt, lid


def launcher_of(session_name: str) -> str:
    """``person`` | ``group`` of a well-formed session name, else ``""`` (``group_`` names no group)."""
    lt, sep, lid = str(session_name or "").partition("_")
    return lt if sep and lid and lt in LAUNCHER_TYPES else ""


def session_part(session_name: str) -> str:
    """``<launcher_type>_<encoded launcher id>``."""
    lt, lid = split_session_name(session_name)
    return f"{lt}_{key_part(lid)}"


def session_key_of(session_name: str, bot_uuid: str | None) -> str:
    bot = (bot_uuid or "").strip()
    return f"{bot_part(bot)}:{session_part(session_name)}" if bot else session_part(session_name)


def user_key_of(session_key: str, bot_uuid: str | None, isolation: str) -> str:
    if isolation == "session":
        return session_key
    if isolation == "bot":
        bot = (bot_uuid or "").strip()
        if not bot:
            # Without a bot there is nothing to share across: fall back to the session.
            return session_key
        return f"bot:{bot_part(bot)}"
    raise ValidationError(f"unknown isolation mode {isolation!r}", key="error.isolation", value=isolation)


@dataclass(frozen=True)
class KeyOwner:
    """The identity a session/scope/user key stands for (ids None when shortened)."""

    bot_uuid: str | None
    session_name: str | None  # None for a bot-wide key or a shortened launcher id
    bot_wide: bool = False


def parse_owner_key(key: str) -> KeyOwner | None:
    """The identity of a ``session_key``/``scope_key``/``user_key``, or None when ``key`` is not one."""
    key = str(key or "")
    head, sep, rest = key.partition(":")
    if head == "bot" and sep:
        if ":" in rest or not rest:
            return None
        return KeyOwner(_bot_value(rest), None, bot_wide=True)
    if not sep:
        head, rest = "", key
    elif not head or ":" in rest:
        return None
    lt, us, lid = rest.partition("_")
    if not us or lt not in LAUNCHER_TYPES or not lid or "#" in rest:
        return None
    value = key_part_value(lid)
    return KeyOwner(_bot_value(head) if head else "", f"{lt}_{value}" if value is not None else None)


def _bot_value(part: str) -> str | None:
    return _BOT_WORD if part == _BOT_WORD_PART else key_part_value(part)
