"""The console's list of known memory spaces (``/scopes``): the service's
:meth:`~ltm.service.MemoryService.known_scopes`, as the page reads it."""

from __future__ import annotations

from typing import Any

from ltm.service import MemoryService


async def known_scopes(service: MemoryService) -> dict[str, Any]:
    """Sessions seen in profiles, injection snapshots and audit logs; bots seen in bot-wide keys."""
    return (await service.known_scopes()).to_dict()
