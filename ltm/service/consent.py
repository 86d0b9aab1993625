"""Opt-out: a person asked that nothing they say be stored (issue 35). The one gate every write of a
person's statement asks (:func:`require_consent`): a ``remember`` with them as speaker (tool,
command, candidate accept), a document or import row naming them, their speaker-profile updates
and candidate extraction from their messages. Other people in the same chat are not affected.

The record is per bot and person (every chat of the bot), in plugin storage at
``privacy/optout/<bot part>/<sender part>``; it holds when and through which surface, no text.
It is written by :class:`ltm.service.people.People` in an audited mutation.
"""

from __future__ import annotations

from ..domain.errors import ConflictError
from ..domain.keys import bot_part, key_part
from ..ports import KeyValueStore
from .writes.errors import backend

OPTOUT_PREFIX = "privacy/optout/"


class OptedOutError(ConflictError):
    """The speaker opted out: nothing they say is stored."""


def optout_key(bot_uuid: str, sender_id: str) -> str:
    return f"{OPTOUT_PREFIX}{bot_part(bot_uuid or '')}/{key_part(sender_id)}"


async def is_opted_out(kv: KeyValueStore, bot_uuid: str, sender_id: str) -> bool:
    """Whether ``sender_id`` opted out in the chats of ``bot_uuid`` (an empty sender never has)."""
    if not sender_id:
        return False
    return await backend(kv.get(optout_key(bot_uuid, sender_id)), "consent read") is not None


async def require_consent(kv: KeyValueStore, bot_uuid: str, sender_id: str) -> None:
    """THE gate: refuse storing what ``sender_id`` said while they are opted out."""
    if await is_opted_out(kv, bot_uuid, sender_id):
        raise OptedOutError(f"{sender_id} opted out of memory", key="privacy.error.opted_out")
