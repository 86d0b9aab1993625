"""The small codecs of what the write engine persists: a value's hash, and the scope a journal
part, a fence or a document's index names."""

from __future__ import annotations

import hashlib
from typing import Any

from ...domain.scope import Scope


def hash_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:32]


def scope_of_record(d: dict[str, Any]) -> Scope:
    """The scope a journal part, a fence or a document names (``Scope.describe()``): an operator
    scope, since recovery, fences and documents act for the installation, not for a chat."""
    return Scope(
        session_name=str(d.get("session_name") or ""),
        bot_uuid=str(d.get("bot_uuid") or ""),
        isolation=str(d.get("isolation") or ""),
        session_key=str(d.get("session_key") or ""),
        scope_key=str(d.get("scope_key") or ""),
        user_key=str(d.get("user_key") or ""),
        collection=str(d.get("collection") or ""),
        sender_id=str(d.get("sender_id") or ""),
        operator=True,
    )


def user_key_scope(collection: str, user_key: str) -> Scope:
    """The scope of a memory known only by its user key (a document's index names these)."""
    return scope_of_record(
        {"session_key": user_key, "scope_key": user_key, "user_key": user_key, "collection": collection}
    )
