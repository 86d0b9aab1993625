"""The small codecs of what the write engine persists: a value's hash; the scope a journal part, a
fence or a document's index names is the domain's (:func:`ltm.domain.scope.scope_of_record`)."""

from __future__ import annotations

import hashlib

from ...domain.scope import scope_of_record, user_key_scope

__all__ = ["hash_bytes", "scope_of_record", "user_key_scope"]


def hash_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:32]
