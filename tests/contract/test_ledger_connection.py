"""A usage-ledger write that meets a closed host connection (a plugin restart in LangBot's debug
mode: the previous instance's job runs on after its connection closed) is an info line, not a
warning; any other failure of the write stays a warning (the control)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

import pytest

from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.ledger import TurnUsage
from ltm.domain.scope import derive_scope
from ltm.service.background import Background
from ltm.service.ledger import UsageLedger


class ConnectionClosedError(Exception):  # the SDK's class, recognised by its name
    pass


class FailingKV(MemoryKeyValueStore):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def set(self, key: str, value: bytes) -> None:
        raise self.error


async def _write_fails_with(error: Exception, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    kv = FailingKV(error)
    ledger = UsageLedger(lambda: kv, lambda: datetime(2026, 12, 1, tzinfo=UTC), Background(), delay=0)
    scope = derive_scope(launcher_type="person", launcher_id="u1", bot_uuid="b", collection="kb")
    with caplog.at_level(logging.INFO, logger="ltm.service.ledger"):
        ledger.turn(scope, TurnUsage("2026-12-01T10:00:00Z", 1, 1, 10, 2, 5))
        for _ in range(50):
            await asyncio.sleep(0.01)
            if any(r.name == "ltm.service.ledger" for r in caplog.records):
                break
    return [r for r in caplog.records if r.name == "ltm.service.ledger"]


async def test_a_closed_connection_is_an_info_line(caplog: pytest.LogCaptureFixture) -> None:
    (record,) = await _write_fails_with(ConnectionClosedError("Connection closed"), caplog)
    assert record.levelno == logging.INFO and "connection is closed" in record.getMessage()


async def test_another_failure_is_still_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    (record,) = await _write_fails_with(RuntimeError("disk full"), caplog)
    assert record.levelno == logging.WARNING and record.getMessage() == "usage ledger write failed"
