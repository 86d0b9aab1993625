"""Scope keys and the one filter builder every L2 read, search, list, count, export and delete uses.

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
records. The storage key layouts and their one parser (:func:`parse_storage_key`) are at the end.

The read rule (:func:`reader_audience`, applied by :func:`scope_where`): every episode carries an
``audience``, fixed when it is written (:func:`audience_of`): ``*`` (everyone who reads its scope)
for what was said in a group or marked shared, else the session key of the private chat it was
written in. In ``session`` isolation a scope is one chat, so nothing is narrowed. In ``bot``
isolation a chat reader sees the shared episodes plus the private ones of the current chat and of
the current speaker's own private chat: another person's private chat stays private, in every
group and every other chat of the bot, for members and admins alike (a chat reply is seen by the
whole chat). The console, the operator's page outside any chat, reads everything.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import quote

from . import records as rec
from .errors import ScopeError, ValidationError
from .text import check_text

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
    operator: bool = False  # the console / recovery: reads every audience (see reader_audience)

    @property
    def is_group(self) -> bool:
        return self.launcher == "group"

    @property
    def launcher(self) -> str:
        """``person`` | ``group`` | ``""``: the launcher type, or the session name's prefix."""
        return self.launcher_type or launcher_of(self.session_name)

    def as_operator(self) -> Scope:
        return Scope(**{**self.__dict__, "operator": True})

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

    @classmethod
    def from_describe(cls, d: Mapping[str, Any]) -> Scope:
        """The scope a :meth:`describe` record names (its exact inverse; a missing field reads as
        ``""``). The launcher type is the session name's, as :func:`derive_scope` sets it;
        ``operator`` is not recorded, so the scope read back is a chat reader's."""
        session_name = rec.text(d, "session_name")
        return cls(
            session_name=session_name,
            bot_uuid=rec.text(d, "bot_uuid"),
            isolation=rec.text(d, "isolation"),
            session_key=rec.text(d, "session_key"),
            scope_key=rec.text(d, "scope_key"),
            user_key=rec.text(d, "user_key"),
            collection=rec.text(d, "collection"),
            sender_id=rec.text(d, "sender_id"),
            launcher_type=launcher_of(session_name),
        )


def scope_of_record(d: Mapping[str, Any]) -> Scope:
    """The scope a journal part, a fence or a document names (``Scope.describe()``): an operator
    scope, since recovery, fences and documents act for the installation, not for a chat."""
    return Scope.from_describe(d).as_operator()


def user_key_scope(collection: str, user_key: str) -> Scope:
    """The scope of a memory known only by its user key (a document's index names these)."""
    return scope_of_record(
        {"session_key": user_key, "scope_key": user_key, "user_key": user_key, "collection": collection}
    )


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
    for name, value in (
        ("session_name", session_name),
        ("launcher_id", launcher_id),
        ("bot_uuid", bot_uuid),
        ("sender_id", sender_id),
    ):
        check_text(str(value or ""), name)
    if session_name:
        name = str(session_name).strip()
        lt, lid = split_session_name(name)
        check_id(lid, "launcher_id")
    else:
        name = session_name_of(launcher_type or "", launcher_id or "")
        lt = name.split("_", 1)[0]
    bot = check_id(bot_uuid, "bot_uuid")
    if len(str(sender_id or "")) > MAX_ID_CHARS:  # compared exactly elsewhere: never stripped here
        raise ScopeError("sender_id: too long", key="error.scope_id_long", field="sender_id", limit=MAX_ID_CHARS)
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


SHARED = "*"


def audience_of(scope: Scope, *, shared: bool = False) -> str:
    """The audience of an episode written in ``scope`` (see the module docstring): ``*`` for a
    group's or a shared one; otherwise (a private chat, or a scope of unknown kind: fail closed)
    the session key it was written in."""
    if shared or scope.launcher == "group":
        return SHARED
    return scope.session_key or scope.scope_key or scope.user_key


def reader_audience(scope: Scope) -> tuple[str, ...] | None:
    """THE read rule: the audiences a reader of ``scope`` may see, or ``None`` for every one (the
    operator, or ``session`` isolation, where a scope is one chat)."""
    if scope.operator or scope.isolation != "bot":
        return None
    tokens = [SHARED, scope.session_key]
    if scope.sender_id:  # the speaker's own private chat with this bot
        tokens.append(session_key_of(f"person_{scope.sender_id}", scope.bot_uuid))
    return tuple(dict.fromkeys(t for t in tokens if t))


def narrowest_audience(audiences: list[str]) -> str | None:
    """The audience of a record derived from others (a summary): shared only when they all are,
    else the one private audience among them; ``None`` when they span two private chats."""
    private = {a for a in audiences if a != SHARED}
    if not private:
        return SHARED
    return private.pop() if len(private) == 1 else None


def audience_of_key(scope_key: str) -> str:
    """:func:`audience_of` for what was done in the session of ``scope_key`` (an audit entry's):
    ``*`` for a group's, else the key itself (``<bot part>:<session part>`` or a bare session part;
    an encoded bot part never holds a ``:``)."""
    _, sep, tail = scope_key.partition(":")
    session = tail if sep else scope_key
    return SHARED if session.startswith("group_") and session != "group_" else scope_key


def write_audiences(scope: Scope) -> tuple[str, ...]:
    """The audiences whose tombstones bind a statement written in ``scope``: the shared one and the
    audience the statement itself gets (:func:`audience_of`). A private chat's tombstone binds only
    writes into that private chat; a group's (shared) one binds every chat that reads it. In
    ``session`` isolation a scope is one chat: every tombstone of it is shared."""
    if scope.isolation != "bot":
        return (SHARED,)
    return tuple(dict.fromkeys((SHARED, audience_of(scope))))


def tombstone_audience(scope: Scope, audience: str) -> str:
    """The audience a tombstone on a memory of ``scope`` records: in ``bot`` isolation the
    memory's own (one naming none: what a statement written in ``scope`` gets); in ``session``
    isolation shared, since the scope is one chat (and its keys stay the ones stored before)."""
    if scope.isolation != "bot":
        return SHARED
    return audience or audience_of(scope)


def may_read(scope: Scope, audience: str) -> bool:
    """:func:`reader_audience` for one record already in hand (e.g. a review candidate)."""
    allowed = reader_audience(scope)
    return allowed is None or audience in allowed


# --------------------------------------------------------------------------------------------
# Storage key layouts: every key the service writes for a scope is built here, and every listing
# that scans keys keeps a key only when :func:`scope_owns` finds its owner equal to the scope's,
# never by prefix. ``<kb>`` = :func:`kb_part`; ``<owner>`` = a user key or scope key (no raw ``#``;
# a ``/`` may occur inside, so every layout ends in a fixed-form tail and is parsed from both ends).
# --------------------------------------------------------------------------------------------

PROFILE_PREFIX = "profile/"  # profile/<scope_key>#session, profile/<user_key>#speaker:<sender>
INJECT_PREFIX = "inject/"  # inject/<scope_key>
LEDGER_PREFIX = "ledger/"  # ledger/<scope_key>: the usage ledger of a memory space
AUDIT_PREFIX = "audit/"  # audit/<kb>/<user_key>/head, audit/<kb>/<user_key>/c/<n>
TOMB_PREFIX = "tomb/"  # tomb/<kb>/<user_key>/<tombstone id>
CAND_PREFIX = "cand/"  # cand/<kb>/<user_key>/{open,head,i/<n>,r/<candidate id>}
PROPOSAL_PREFIX = "consolidation/"  # consolidation/<user_key>/<proposal id> (the KB is in the record)
FENCE_PREFIX = "fence/"  # fence/<lock key>: l2:<kb>:<user_key>, l1:<profile key>
NO_KB_LOG = "!"  # the knowledge-base part of the log key of a scope without a memory KB (never a quote() result)

_OWNER = r"(?P<owner>[^#]+)"
_KB = r"(?P<kb>[^/:]+)"
_PROFILE_RE = (
    ("profile.session", re.compile(r"^" + _OWNER + r"#session$")),
    ("profile.speaker", re.compile(r"^" + _OWNER + r"#speaker:(?P<tail>[^#:]+)$")),
)
_LAYOUT_RE = (
    ("inject", re.compile(r"^inject/" + _OWNER + r"$")),
    ("audit", re.compile(r"^audit/" + _KB + "/" + _OWNER + r"/(?P<tail>head|c/\d+)$")),
    ("tombstone", re.compile(r"^tomb/" + _KB + "/" + _OWNER + r"/(?P<tail>tb_[0-9a-f]{16})$")),
    ("candidate", re.compile(r"^cand/" + _KB + "/" + _OWNER + r"/(?P<tail>open|head|i/\d+|r/cand_[0-9a-f]{20})$")),
    ("proposal", re.compile(r"^consolidation/" + _OWNER + r"/(?P<tail>cp_[0-9a-f]{20})$")),
)
_L2_LOCK_RE = re.compile(r"^l2:" + _KB + ":" + _OWNER + r"$")


@dataclass(frozen=True)
class StorageKey:
    """A parsed storage key (or lock key) of one scope."""

    layout: str  # profile.session/.speaker, inject, audit, tombstone, candidate, proposal, l2 (lock), l1.* (lock)
    owner: str  # the user key or scope key, exactly as in the key
    kb: str = ""  # the encoded knowledge-base part ("" when the layout has none)
    tail: str = ""  # what follows the owner: a sender part, a record id, ...


def _match(layouts: tuple[tuple[str, re.Pattern[str]], ...], text: str, prefix: str = "") -> StorageKey | None:
    for layout, rx in layouts:
        m = rx.match(text)
        if m:
            d = m.groupdict()
            return StorageKey(prefix + layout, d["owner"], d.get("kb") or "", d.get("tail") or "")
    return None


def parse_lock_key(lock_key: str) -> StorageKey | None:
    """``l2:<kb>:<user_key>`` (layout ``l2``) or ``l1:<profile key>`` (``l1.profile.*``)."""
    if lock_key.startswith("l1:"):
        return _match(_PROFILE_RE, lock_key[3:], "l1.")
    m = _L2_LOCK_RE.match(lock_key)
    return StorageKey("l2", m["owner"], m["kb"]) if m else None


def parse_storage_key(key: str) -> StorageKey | None:
    """The layout and owner of a storage key this plugin writes for a scope, or None (other keys:
    knowledge bases, documents, the journal)."""
    key = str(key or "")
    if key.startswith(PROFILE_PREFIX):
        return _match(_PROFILE_RE, key[len(PROFILE_PREFIX) :])
    if key.startswith(FENCE_PREFIX):
        return parse_lock_key(key[len(FENCE_PREFIX) :])
    return _match(_LAYOUT_RE, key)


def scope_owns(scope: Scope, key: str | StorageKey | None, *, lock: bool = False) -> bool:
    """Whether a storage key (or, with ``lock``, a lock key) belongs to ``scope``: its owner and
    knowledge base compared exactly (a key whose owner merely starts with the scope's is not its)."""
    k = key if isinstance(key, StorageKey) or key is None else (parse_lock_key(key) if lock else parse_storage_key(key))
    if k is None:
        return False
    layout = k.layout.removeprefix("l1.")
    kb = kb_part(scope.collection) if scope.collection else ""
    if layout == "profile.session":
        return k.owner == scope.scope_key
    if layout == "profile.speaker":
        return k.owner == scope.user_key
    if layout == "inject":
        return k.owner == scope.scope_key
    if layout == "audit":
        return k.owner == scope.user_key and k.kb == (kb or NO_KB_LOG)
    if layout in ("tombstone", "candidate", "l2"):
        return bool(kb) and k.owner == scope.user_key and k.kb == kb
    if layout == "proposal":
        return k.owner == scope.user_key  # the KB is checked against the record
    return False


def owned_keys(scope: Scope, keys: Sequence[str], *, lock: bool = False) -> list[str]:
    return [k for k in keys if scope_owns(scope, k, lock=lock)]


def scope_fence_keys(scope: Scope, lock_keys: Iterable[str]) -> list[str]:
    """The write fences that concern one scope, in order: its L2 fence in its knowledge base and its
    profiles' L1 fences. What the console lists for a scope is what clearing its fences lifts."""
    return sorted(owned_keys(scope, list(lock_keys), lock=True))


def audit_log_key(scope: Scope) -> str:
    """The audit log of one memory: per knowledge base AND user key, so two memory knowledge bases
    that share a user key (the same chat) never share a log. ``<kb>/<user_key>``; the KB part is
    percent-quoted, so the first ``/`` always ends it."""
    kb = kb_part(scope.collection) if scope.collection else NO_KB_LOG
    return f"{kb}/{scope.user_key}"


def parse_audit_log_key(log_key: str) -> tuple[str, str]:
    """(encoded KB part, user_key) of an :func:`audit_log_key`."""
    kb, _, user_key = log_key.partition("/")
    return ("" if kb == NO_KB_LOG else kb), user_key


def speaker_profile_key(scope: Scope, sender_id: str) -> str:
    """Speaker profiles follow the L2 sharing: per session, or per bot in ``bot`` isolation."""
    return f"{scope.user_key}#speaker:{key_part(sender_id)}"


def session_profile_key(scope: Scope) -> str:
    return f"{scope.scope_key}#session"


def profile_storage_key(profile_key: str) -> str:
    return PROFILE_PREFIX + profile_key


def l1_lock_key(profile_key: str) -> str:
    return "l1:" + profile_key


def l2_lock_key(scope: Scope) -> str:
    return f"l2:{kb_part(scope.collection)}:{scope.user_key}"


def inject_key(scope: Scope) -> str:
    return INJECT_PREFIX + scope.scope_key


def ledger_key(scope: Scope) -> str:
    return LEDGER_PREFIX + scope.scope_key


def review_base(scope: Scope) -> str:
    """``<kb>/<user_key>``: the part of the review queue's keys (candidates, tombstones) that names the scope."""
    return f"{kb_part(scope.collection)}/{scope.user_key}"


def tombstone_key(scope: Scope, tombstone_id: str) -> str:
    return f"{TOMB_PREFIX}{review_base(scope)}/{tombstone_id}"


def candidate_key(scope: Scope, tail: str) -> str:
    """``tail``: ``open``, ``head``, ``i/<n>`` or ``r/<candidate id>``."""
    return f"{CAND_PREFIX}{review_base(scope)}/{tail}"


def proposal_key(user_key: str, proposal_id: str) -> str:
    return f"{PROPOSAL_PREFIX}{user_key}/{proposal_id}"


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
