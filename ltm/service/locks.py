"""Per-scope write serialization: one busy scope never blocks another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager


class ScopeLocks:
    """An asyncio lock per key (``l2:<collection>:<user_key>``, ``l1:<profile key>``, ``install``)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if self._users[key] == 0:
                self._users.pop(key, None)
                self._locks.pop(key, None)

    @asynccontextmanager
    async def hold_all(self, keys: Iterable[str]) -> AsyncIterator[None]:
        """Hold several locks, always taken in sorted order (``doc:`` before ``l2:``), so two
        operations over overlapping scopes cannot deadlock."""
        async with AsyncExitStack() as stack:
            for key in sorted(set(keys)):
                await stack.enter_async_context(self.hold(key))
            yield
