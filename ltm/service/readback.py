"""Reading back what was just written, without assuming it is visible at once (SeekDB's vector
search lags its writes by up to about 2 s): read, and read again after each wait of a bounded
schedule (:data:`ltm.domain.backends.READBACK_DELAYS_S`) until the answer is conclusive."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[object]]


async def read_until(
    read: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    delays: Sequence[float],
    sleep: Sleep = asyncio.sleep,
) -> tuple[T, bool]:
    """``(last value read, whether done(value))``; at most ``len(delays) + 1`` reads."""
    value = await read()
    for delay in delays:
        if done(value):
            return value, True
        await sleep(delay)
        value = await read()
    return value, done(value)
