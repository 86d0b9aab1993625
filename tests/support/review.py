"""Shared pieces of the review-queue tests: a scripted chat model and a service with its queue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ltm.domain.scope import Scope
from ltm.service import MemoryService
from ltm.service.review import ReviewQueue, ReviewSettings
from tests.support import build_service, scope_of, with_review


class ScriptedModel:
    """A :class:`ltm.ports.ChatModel` double: answers from a script and records every prompt.

    ``reply`` is a string, a callable ``(system, user) -> str``, an exception to raise, or
    ``("sleep", seconds)`` to never answer in time."""

    def __init__(self, reply: Any = '{"candidates": []}') -> None:
        self.reply = reply
        self.calls: list[dict[str, Any]] = []

    async def complete(self, model_uuid: str, system: str, user: str, timeout: float) -> str:
        self.calls.append({"model": model_uuid, "system": system, "user": user, "timeout": timeout})
        r = self.reply
        if isinstance(r, BaseException):
            raise r
        if isinstance(r, tuple) and r and r[0] == "sleep":
            await asyncio.sleep(r[1])
            return '{"candidates": []}'
        if callable(r):
            return r(system, user)
        return str(r)


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    state = {"t": start or datetime(2024, 6, 1, 8, 0, tzinfo=UTC)}

    def clock() -> datetime:
        state["t"] += timedelta(seconds=30)
        return state["t"]

    return clock


@dataclass
class World:
    service: MemoryService
    review: ReviewQueue
    alice: Scope
    config: dict[str, Any] = field(default_factory=dict)
    model: ScriptedModel | None = None


async def review_world(
    tmp: Path,
    model: ScriptedModel | None = None,
    *,
    kv: Callable[[Any], Any] | None = None,
    consolidator: Callable[[MemoryService], Any] | None = None,
    **config: Any,
) -> World:
    """A numpy-backed service with a review queue; ``config`` are plugin config items (live);
    ``kv`` wraps the storage (see :func:`tests.support.build_service`); ``consolidator`` makes the
    service's consolidator too (none without)."""
    cfg = dict(config)
    svc = await build_service(
        "numpy",
        tmp,
        kv=kv,
        clock=ticking_clock(),
        review=with_review(settings=lambda: ReviewSettings.from_config(cfg), model=model),
        consolidator=consolidator,
    )
    assert svc.review is not None
    return World(svc, svc.review, await scope_of(svc), cfg, model)


async def contents(svc: MemoryService, scope: Scope, statuses: tuple[str, ...] | None = ("active",)) -> list[str]:
    page = await svc.list_episodes(scope, statuses=statuses, page_size=100)
    return sorted(e.content for e in page.items)
