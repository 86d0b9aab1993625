"""The usage ledger's per-space cache is bounded (issue 34, finding 4): reports from more spaces
than :data:`CACHE_SPACES` keep at most that many records in memory, least recently written out
first; an evicted space's record is read back from storage whole, and its next report adds to it."""

from __future__ import annotations

from datetime import UTC, datetime

from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.ledger import TurnUsage
from ltm.domain.scope import derive_scope
from ltm.service import ledger as ledger_module
from ltm.service.background import Background
from ltm.service.ledger import UsageLedger


def _scope(i: int):  # noqa: ANN202 - a Scope
    return derive_scope(launcher_type="person", launcher_id=f"u{i}", bot_uuid="b", collection="kb")


def _usage(qid: int) -> TurnUsage:
    return TurnUsage("2026-12-01T10:00:00Z", qid, 1, 10, 2, 5)


async def test_the_cache_holds_at_most_its_bound_and_an_evicted_record_reads_back() -> None:
    kv = MemoryKeyValueStore()
    ledger = UsageLedger(lambda: kv, lambda: datetime(2026, 12, 1, 12, tzinfo=UTC), Background(), delay=0)
    spaces = ledger_module.CACHE_SPACES + 40
    for i in range(spaces):
        ledger.turn(_scope(i), _usage(i))
        if i % 50 == 0:
            await ledger.flush()
    await ledger.flush()
    assert ledger.cached_spaces() == ledger_module.CACHE_SPACES  # bounded, and full: the control
    # space 0 was written first: evicted, and read back from storage whole
    first = await ledger.record(_scope(0))
    assert [t["query_id"] for t in first["turns"]] == [0]
    assert ledger.cached_spaces() == ledger_module.CACHE_SPACES  # a read does not grow the cache
    ledger.turn(_scope(0), _usage(1000))  # its next report adds to the stored record
    await ledger.flush()
    again = await ledger.record(_scope(0))
    assert [t["query_id"] for t in again["turns"]] == [0, 1000]
    assert (await ledger.today(_scope(0)))["turns"] == 2
    assert ledger.cached_spaces() <= ledger_module.CACHE_SPACES
    # the most recent spaces are still cached and read the same
    last = await ledger.record(_scope(spaces - 1))
    assert [t["query_id"] for t in last["turns"]] == [spaces - 1]
