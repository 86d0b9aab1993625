"""Every call of a component runs the installation's background work (``ltm/service/background.py``).

In the installed package a host call is only allowed inside the invocation of the action that makes
it, so journal recovery, recall snapshots, refreshes and re-embed fills run inside the component
calls: started when a call begins, waited for a bounded time when it ends.
``@runs_background_work`` wraps a component method (a coroutine or an async generator);
:func:`running_background_work` is the same as a context manager for the listener's handlers.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from ltm.service import CHAT_GRACE_S, OPERATOR_GRACE_S

__all__ = ["CHAT_GRACE_S", "OPERATOR_GRACE_S", "running_background_work", "runs_background_work"]

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.asynccontextmanager
async def running_background_work(plugin: Any, grace: float = CHAT_GRACE_S) -> AsyncIterator[None]:
    """Run ``plugin``'s queued background work alongside the enclosed call (none without a service:
    a plugin that failed to initialise, or a test double)."""
    service = getattr(plugin, "service", None)
    background = getattr(service, "background", None)
    if background is None:
        yield
        return
    retention = getattr(service, "retention", None)
    if retention is not None:
        retention.poke()  # the daily retention sweep, queued when due: this call carries it
    async with background.carrying(grace):
        yield


def runs_background_work(grace: float = CHAT_GRACE_S) -> Callable[[F], F]:
    """Decorate a component method (``self.plugin`` is the plugin) so that its call runs the work."""

    def wrap(fn: F) -> F:
        if inspect.isasyncgenfunction(fn):

            @functools.wraps(fn)
            async def stream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                async with running_background_work(getattr(self, "plugin", None), grace):
                    async for item in fn(self, *args, **kwargs):
                        yield item

            stream.background_grace = grace  # type: ignore[attr-defined]  # read by the carriers' table test
            return stream  # type: ignore[return-value]

        @functools.wraps(fn)
        async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            async with running_background_work(getattr(self, "plugin", None), grace):
                return await fn(self, *args, **kwargs)

        call.background_grace = grace  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap
