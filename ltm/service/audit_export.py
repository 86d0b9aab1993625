"""The audit-export document, ``ltm-audit/1``: the one shape ``!memory audit export`` and the
console's Export audit log both produce (``docs/commands.md``, "The audit export").

The whole log reads oldest first; one page (the command's, a chat message holds only so much)
newest first, like the audit log's other pages. Entries are shown as the read rule lets the scope
see them (:func:`~.audit.readable_entry`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from ..domain.scope import Scope
from ..domain.timefields import to_iso
from .writes import Actor

AUDIT_FORMAT = "ltm-audit/1"
EXPORT_PAGE_SIZE = 100

# The guarded read of the entries (``MemoryService.audit_export``: a memory admin's verb).
ExportEntries = Callable[[Scope, Actor, int | None, int], Awaitable[tuple[list[dict[str, Any]], int]]]


def audit_document(
    scope: Scope,
    entries: list[dict[str, Any]],
    total: int,
    *,
    at: datetime,
    page: int | None = None,
    page_size: int = EXPORT_PAGE_SIZE,
) -> dict[str, Any]:
    """The document of ``entries`` out of ``total``: the whole log (``page`` None) or one page."""
    pages = 1 if page is None else max(1, -(-total // page_size))
    return {
        "format": AUDIT_FORMAT,
        "exported_at": to_iso(at),
        "source": {"knowledge_base": scope.collection, "scope_key": scope.scope_key, "user_key": scope.user_key},
        "order": "oldest_first" if page is None else "newest_first",
        "page": 1 if page is None else page,
        "pages": pages,
        "total": total,
        "count": len(entries),
        "entries": entries,
    }


async def export_audit(
    export: ExportEntries,
    clock: Callable[[], datetime],
    scope: Scope,
    actor: Actor,
    *,
    page: int | None = None,
    page_size: int = EXPORT_PAGE_SIZE,
) -> dict[str, Any]:
    """The ``ltm-audit/1`` document of ``scope``'s log, read through ``export`` (which refuses a
    caller who is not a memory admin before anything is read)."""
    entries, total = await export(scope, actor, page, page_size)
    return audit_document(scope, entries, total, at=clock(), page=page, page_size=page_size)
