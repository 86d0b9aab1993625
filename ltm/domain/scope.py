"""The scope: where a memory lives, derived once per request from the host's identity
(:func:`derive_scope`, the single place that turns an identity into keys, encoded by :mod:`.keys`).

Who may read what inside a scope is :mod:`.audience`; the storage keys of a scope are
:mod:`.storage_keys`; what a read of a scope selects is :mod:`.filters`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import records as rec
from .errors import ScopeError
from .keys import MAX_ID_CHARS, check_id, launcher_of, session_key_of, session_name_of, split_session_name, user_key_of
from .text import check_text


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
