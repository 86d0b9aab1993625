"""The errors the memory service raises. Each carries a locale message key and its arguments."""

from __future__ import annotations

from typing import Any


class LtmError(Exception):  # noqa: N801 - avoids shadowing the builtin MemoryError
    """Base class: a request the service refused. Nothing was written."""

    key = "error.generic"

    def __init__(self, detail: str = "", key: str | None = None, **args: Any) -> None:
        super().__init__(detail or (key or self.key))
        self.detail = detail
        if key:
            self.key = key
        self.params = {"detail": detail, **args}


class ValidationError(LtmError):
    """An input field is malformed; rejected before any write."""

    key = "error.validation"


class NotFoundError(LtmError):
    """The addressed record does not exist in this scope."""

    key = "error.not_found"


class ScopeError(LtmError):
    """The request has no usable scope (no session identity, no memory knowledge base)."""

    key = "error.scope"


class ConflictError(LtmError):
    """The request conflicts with the state of a record (e.g. superseding a non-active record)."""

    key = "error.conflict"


class PermissionDenied(LtmError):
    """The caller lacks the privilege for this verb."""

    key = "error.permission"


class BackendError(LtmError):
    """A storage or model call failed with an authoritative error; nothing was written."""

    key = "error.backend"


class FencedError(LtmError):
    """Writes to this scope are refused: an earlier write's outcome is unknown (see fences)."""

    key = "error.fenced"


class TombstonedError(ConflictError):
    """The value was rejected or forgotten for good; its tombstone refuses it (an admin can lift it)."""

    key = "review.error.tombstoned"


class ParkedError(ConflictError):
    """The statement contradicts an active memory; it was parked as a candidate for review, not written."""

    key = "review.error.parked"


class InstructionLikeError(ConflictError):
    """The statement reads as an instruction to the assistant, not a fact about the user; it waits in
    the review queue as a candidate marked ``instruction-like``, and nothing was stored."""

    key = "review.error.instruction_like"
