"""The audience rule: who may read an episode of a scope.

Every episode carries an ``audience``, fixed when it is written (:func:`audience_of`): ``*``
(everyone who reads its scope) for what was said in a group or marked shared, else the session key
of the private chat it was written in. The read rule (:func:`reader_audience`, applied by
:func:`ltm.domain.filters.scope_where`): in ``session`` isolation a scope is one chat, so nothing is
narrowed. In ``bot`` isolation a chat reader sees the shared episodes plus the private ones of the
current chat and of the current speaker's own private chat: another person's private chat stays
private, in every group and every other chat of the bot, for members and admins alike (a chat reply
is seen by the whole chat). The console, the operator's page outside any chat, reads everything.
"""

from __future__ import annotations

from .keys import session_key_of
from .scope import Scope

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
