"""How a backend failure becomes one of ours, and the refusal of a scope without a memory KB."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

from ...domain.errors import BackendError, LtmError, ScopeError
from ...domain.scope import Scope

log = logging.getLogger(__name__)
T = TypeVar("T")


async def backend(aw: Awaitable[T], what: str) -> T:
    """Await a backend call; a failure that is not ours becomes a :class:`BackendError`."""
    try:
        return await aw
    except LtmError:
        raise
    except Exception as exc:
        log.warning("%s failed: %s", what, exc)
        raise BackendError(f"{what}: {exc}", key="error.backend", what=what) from exc


def need_l2(scope: Scope) -> None:
    """Episodes live in a memory knowledge base: refuse a scope without one."""
    if not scope.collection:
        raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")
