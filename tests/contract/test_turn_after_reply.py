"""What a turn leaves for after its reply (issue 38), in an installed package (every host call bound
to the invocation of the call that makes it): the usage report and the last-turn snapshot queued by
the hook are carried by a later call, never by the hook that queued them; a snapshot write cut off
by its carrier's grace is written again later; and the snapshot's storage write is not sent before
the turn's query-variable writes are answered."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.adapters.host_invocation import invocation_probe
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.ledger import TurnUsage
from ltm.domain.scope import derive_scope
from ltm.service import background
from ltm.service.background import Background
from ltm.service.chat_turn import SnapshotWriter
from ltm.service.ledger import UsageLedger
from ltm.service.snapshots import InjectionSnapshot
from tests.contract.test_background import Plugin, call
from tests.surfaces.test_memory_once import plugin_with_memory
from tests.surfaces.test_plugin_smoke import run_listener

SCOPE = derive_scope(launcher_type="person", launcher_id="u1", bot_uuid="b", collection="kb")


def snapshot(qid: int) -> InjectionSnapshot:
    return InjectionSnapshot(at="2026-12-01T10:00:00Z", injected=True, blocks=1, chars=10, query_id=qid)


async def test_the_hooks_usage_report_is_carried_by_a_later_call_not_by_the_hook() -> None:
    plugin = Plugin()
    bg = Background(live=invocation_probe(plugin))
    kv = MemoryKeyValueStore()
    ledger = UsageLedger(lambda: kv, lambda: datetime(2026, 12, 1, 12, tzinfo=UTC), bg, delay=0)
    with call(plugin):
        async with bg.carrying():
            ledger.turn(SCOPE, TurnUsage("2026-12-01T10:00:00Z", 7, 1, 10, 2, 5))
    assert await kv.keys("") == []  # the hook returned without writing its report
    assert bg.pending() == ["usage-ledger"]
    with call(plugin):
        async with bg.carrying():  # the next call (any surface) carries it
            pass
    assert await kv.keys("") != []
    assert [t["query_id"] for t in (await ledger.record(SCOPE))["turns"]] == [7]


async def test_a_snapshot_write_cut_off_by_the_grace_is_written_by_a_later_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(background, "HOLD_S", 3600.0)  # a write that had to reach a checkpoint would hang
    plugin = Plugin()
    bg = Background(live=invocation_probe(plugin))
    saved: list[int] = []
    slow = asyncio.Event()

    async def save(scope: Any, snap: InjectionSnapshot) -> None:
        if not slow.is_set():
            await asyncio.sleep(3600)  # a store held shut: the carrier's grace cuts it off
        saved.append(int(snap.query_id or 0))

    writer = SnapshotWriter(save, bg)
    with call(plugin):
        async with bg.carrying():
            writer.later(SCOPE, snapshot(1))  # queued by the hook: not carried by it
    assert saved == [] and writer.pending(SCOPE) is not None

    async def next_call() -> None:
        with call(plugin):
            async with bg.carrying(grace=0.05):  # the next call carries it; its grace ends first
                pass

    await asyncio.wait_for(next_call(), timeout=10)  # cancelled at the grace (interruptible), not held
    assert saved == [] and writer.pending(SCOPE) is not None  # cut off, still pending
    slow.set()
    with call(plugin):
        async with bg.carrying():
            pass
    assert saved == [1] and writer.pending(SCOPE) is None


async def test_the_snapshot_write_waits_for_the_turns_query_variable_writes() -> None:
    ctl, fake, _ = await plugin_with_memory()
    gate = fake.hold(A.SET_QUERY_VAR, lambda data: data.get("key") == "_ltm_context")
    turn = asyncio.ensure_future(run_listener(ctl, fake, 2, "where is my bicycle?"))
    for _ in range(200):
        if any(d.get("key") == "_ltm_context" for d in fake.calls_of(A.SET_QUERY_VAR)):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    writes = [d for d in fake.calls_of(A.SET_PLUGIN_STORAGE) if str(d.get("key", "")).startswith("inject/")]
    assert writes == []  # the query variables are still in flight: the snapshot waits
    gate.set()
    await asyncio.wait_for(turn, timeout=5)
    for _ in range(200):
        if any(str(d.get("key", "")).startswith("inject/") for d in fake.calls_of(A.SET_PLUGIN_STORAGE)):
            break
        await asyncio.sleep(0.01)
    # positive control: once they are answered, the snapshot is written
    assert any(str(d.get("key", "")).startswith("inject/") for d in fake.calls_of(A.SET_PLUGIN_STORAGE))


async def test_the_reply_event_carries_nothing_when_review_is_off_and_the_next_hook_does() -> None:
    """``NormalMessageResponded`` is awaited before LangBot sends the reply: with nothing to extract
    it carries no queued work (the turn's snapshot); the next turn's hook carries it instead."""
    from types import SimpleNamespace

    from langbot_plugin.api.entities import events
    from langbot_plugin.api.proxies.invocation import bind_invocation

    from tests.contract.test_background import binding
    from tests.support.reliability import component

    ctl, fake, _ = await plugin_with_memory()
    listener = component(ctl, "EventListener", "default")
    assert not listener.plugin.review.settings.enabled

    def inject_writes() -> list[Any]:
        return [d for d in fake.calls_of(A.SET_PLUGIN_STORAGE) if str(d.get("key", "")).startswith("inject/")]

    with bind_invocation(fake, config={}, binding=binding(1)):  # an installed package's call
        await run_listener(ctl, fake, 2, "where is my bicycle?")
    assert inject_writes() == []  # queued by the hook, not carried by it
    with bind_invocation(fake, config={}, binding=binding(1)):
        for handler in listener.registered_handlers[events.NormalMessageResponded]:
            await handler(SimpleNamespace(event=None, query_id=2))
    assert inject_writes() == []  # the reply's event carried nothing
    with bind_invocation(fake, config={}, binding=binding(1)):
        await run_listener(ctl, fake, 3, "and my keys?")  # the next hook carries the first snapshot
    assert inject_writes() != []  # positive control
