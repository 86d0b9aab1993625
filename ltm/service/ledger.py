"""The usage ledger: per memory space, the last turns and a daily roll-up of what memory cost.

The listener and the tools only *report* (:meth:`UsageLedger.turn`, :meth:`UsageLedger.tool_called`:
plain method calls, no await, no storage access on the chat's path). Reports are queued and one
deferred task per installation writes them, at most one plugin-storage write per space per
:data:`FLUSH_DELAY_S`, like the injection snapshot a record of what happened, not memory: not
journaled, not audited. One record per space (:func:`ltm.domain.storage_keys.ledger_key`), bounded by
:data:`ltm.domain.ledger.MAX_RECORD_BYTES`; the rules of the record are :mod:`ltm.domain.ledger`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..domain import ledger as rules
from ..domain.scope import Scope
from ..domain.storage_keys import ledger_key
from ..domain.timefields import to_iso
from ..ports import HOST_CALLS, KeyValueStore, is_connection_lost
from .background import Background

log = logging.getLogger(__name__)
FLUSH_DELAY_S = 0.5  # reports within this window share one write per space
CACHE_SPACES = 256  # records kept in memory (least recently written first out); each at most 16 KiB


class UsageLedger:
    def __init__(
        self,
        kv: Callable[[], KeyValueStore],
        clock: Callable[[], datetime],
        background: Background,
        delay: float = FLUSH_DELAY_S,
    ) -> None:
        self._kv = kv  # read at use: a test may swap the service's store
        self._clock = clock
        self.background = background  # the write outlives the report: it runs where host calls may
        self.delay = delay
        self._pending: dict[str, list[tuple[str, Any]]] = {}
        # the records last written, bounded: one evicted is read again from storage when next used
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ reports (no await)
    def turn(self, scope: Scope, usage: rules.TurnUsage) -> None:
        self._queue(scope, ("turn", usage))

    def tool_called(self, scope: Scope, query_id: Any, tool: str) -> None:
        self._queue(scope, ("tool", (query_id, tool, to_iso(self._clock()))))

    def _queue(self, scope: Scope, op: tuple[str, Any]) -> None:
        self._pending.setdefault(ledger_key(scope), []).append(op)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a synchronous caller): the next read or flush writes it
        # one job for every queued report; in an installed package it runs inside a live call
        # (ltm.service.background), elsewhere as a task after the delay
        self.background.submit("usage-ledger", self._flush_logged, delay=self.delay)

    async def _flush_logged(self) -> None:
        token = HOST_CALLS.set(None)  # the flush's storage calls are not the reporting turn's
        try:
            await self.flush()
        except Exception as exc:  # a lost ledger write never reaches a chat; the next report retries
            if is_connection_lost(exc):  # a restart of the plugin: the next instance keeps its own counts
                log.info("usage ledger not written: the host connection is closed (%s)", exc)
            else:
                log.warning("usage ledger write failed", exc_info=True)
        finally:
            HOST_CALLS.reset(token)

    # ------------------------------------------------------------------ storage
    async def _read(self, key: str) -> dict[str, Any]:
        """The record of ``key``: the cached one, else read from storage (not cached: only a flush,
        under the lock, puts a record in the cache, so a read never replaces one a flush holds)."""
        if key in self._cache:
            return self._cache[key]
        raw = await self._kv().get(key)
        try:
            return rules.normalise(json.loads(raw) if raw else None)
        except ValueError:
            log.warning("usage ledger record %s unreadable; starting it again", key[:80])
            return rules.empty()

    async def _load(self, key: str) -> dict[str, Any]:
        """The record a flush updates, cached as the most recent (the least recent beyond
        :data:`CACHE_SPACES` leaves the cache; it is in storage)."""
        record = await self._read(key)
        self._cache[key] = record
        self._cache.move_to_end(key)
        while len(self._cache) > CACHE_SPACES:
            self._cache.popitem(last=False)
        return record

    def cached_spaces(self) -> int:
        """How many records are held in memory (at most :data:`CACHE_SPACES`)."""
        return len(self._cache)

    async def flush(self) -> None:
        """Write every queued report (a read calls it first, so it always sees the latest turn)."""
        async with self._lock:
            while self._pending:
                key, ops = self._pending.popitem()
                try:
                    record = await self._load(key)
                    for kind, arg in ops:
                        if kind == "turn":
                            rules.add_turn(record, arg)
                        else:
                            rules.add_tool_call(record, *arg)
                    await self._kv().set(key, encode(record))
                except Exception:
                    self._cache.pop(key, None)  # read it again next time; these reports are dropped
                    raise

    # ------------------------------------------------------------------ reads
    async def record(self, scope: Scope) -> dict[str, Any]:
        await self.flush()
        return json.loads(encode(await self._read(ledger_key(scope))))  # a copy

    async def today(self, scope: Scope) -> dict[str, Any]:
        return rules.day_totals(await self.record(scope), to_iso(self._clock())[:10])

    async def view(self, scope: Scope) -> dict[str, Any]:
        """The console's shape: newest turn first, newest day first, and today's totals."""
        rec = await self.record(scope)
        return {
            "turns": list(reversed(rec["turns"])),
            "days": list(reversed(rec["days"])),
            "today": rules.day_totals(rec, to_iso(self._clock())[:10]),
            "limits": {"turns": rules.TURNS_KEPT, "days": rules.DAYS_KEPT, "bytes": rules.MAX_RECORD_BYTES},
        }


def encode(record: dict[str, Any]) -> bytes:
    return rules.encode(record)
