"""A turn costs what recall costs (issue 38): the reply does not wait for the last-turn snapshot's
write, a failed write is logged as what it is, and a runner's call into the memory knowledge base
that the block already served is answered from the in-process mark with no host call at all."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.service.served_turns import identity
from ltm.service.writes import Actor
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.surfaces.test_memory_once import SENTENCE, ask, plugin_with_memory
from tests.surfaces.test_plugin_smoke import BOT, KB, run_listener


def is_snapshot_write(data: dict[str, Any]) -> bool:
    return str(data.get("key") or "").startswith("inject/")


def snapshot_keys(fake: FakeHostHandler) -> list[str]:
    return [k for k in fake.plugin_store() if k.startswith("inject/")]


def block_of(ctx: Any) -> str:
    return "\n".join(str(m.content) for m in ctx.event.default_prompt)


async def test_the_hook_returns_while_the_snapshot_store_is_held_shut() -> None:
    ctl, fake, _ = await plugin_with_memory()
    gate = fake.hold(A.SET_PLUGIN_STORAGE, is_snapshot_write)
    ctx = await asyncio.wait_for(run_listener(ctl, fake, 2, "where is my bicycle?"), timeout=5)
    assert SENTENCE in block_of(ctx)  # the turn had its memory
    assert snapshot_keys(fake) == []  # ...while the snapshot's write is still held
    service = component(ctl, "EventListener", "default").plugin.service
    scope = await service.scope_for(kb_id=KB, launcher_type="person", launcher_id="u1", bot_uuid=BOT, sender_id="u1")
    waiting = await service.last_injection(scope)  # `!memory why` right after the turn sees it
    assert waiting is not None and waiting.query_id == 2
    gate.set()
    for _ in range(100):
        if snapshot_keys(fake):
            break
        await asyncio.sleep(0.02)
    assert len(snapshot_keys(fake)) == 1  # written after the turn


async def test_a_failed_snapshot_write_is_a_warning_about_the_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    ctl, fake, _ = await plugin_with_memory()
    gate = fake.hold(A.SET_PLUGIN_STORAGE, is_snapshot_write)
    fake.fail_next(A.SET_PLUGIN_STORAGE, RuntimeError("database is locked"))
    with caplog.at_level(logging.INFO):
        ctx = await asyncio.wait_for(run_listener(ctl, fake, 2, "where is my bicycle?"), timeout=5)
        gate.set()
        await asyncio.sleep(0.3)
    assert SENTENCE in block_of(ctx)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("snapshot not saved" in m and "database is locked" in m for m in warned), warned
    assert not any("injection failed" in m for m in warned)


async def test_a_served_retrieve_makes_no_host_call() -> None:
    _, fake, mem_id = await plugin_with_memory()
    ctl = await load_plugin(fake)  # a restarted plugin over the same host: nothing cached yet
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    await asyncio.sleep(0.1)
    engine.plugin.served_turns.mark(identity(KB, "person_u1", BOT, "u1"))
    before = len(fake.calls)
    served = await engine.retrieve(ask())
    assert served.results == [] and served.metadata.get("reason") == "served by the memory block"
    assert [a.value for a, _ in fake.calls[before:]] == []
    # positive control: another chat, not served, is answered from storage and the index
    other = await engine.retrieve(ask(session="person_u2", sender="u2"))
    assert other.metadata.get("reason") != "served by the memory block"
    assert len(fake.calls) > before
    assert mem_id


async def test_a_snapshot_still_waiting_when_its_memory_is_forgotten_is_written_without_it() -> None:
    """The erase reaches the snapshots not yet written too (issue 35 finding 1 with issue 38's
    deferred write): forgotten while the turn's snapshot waits, the stored snapshot never shows it."""
    ctl, fake, mem_id = await plugin_with_memory()
    gate = fake.hold(A.SET_PLUGIN_STORAGE, is_snapshot_write)
    ctx = await asyncio.wait_for(run_listener(ctl, fake, 2, "where is my bicycle?"), timeout=5)
    assert SENTENCE in block_of(ctx)
    service = component(ctl, "EventListener", "default").plugin.service
    scope = await service.scope_for(kb_id=KB, launcher_type="person", launcher_id="u1", bot_uuid=BOT, sender_id="u1")
    waiting = await service.last_injection(scope)
    assert waiting is not None and mem_id in json.dumps(waiting.to_record())  # control: it shows the row
    await service.erase_episodes(scope, [mem_id], Actor(surface="tool", sender_id="u1"))
    gate.set()
    for _ in range(100):
        if snapshot_keys(fake) and not service.snapshot_writer.pending(scope):
            break
        await asyncio.sleep(0.02)
    [key] = snapshot_keys(fake)
    stored = fake.plugin_store()[key].decode("utf-8")
    assert SENTENCE[:30] not in stored and mem_id not in stored


async def test_a_snapshot_write_cut_by_a_restart_is_info(caplog: pytest.LogCaptureFixture) -> None:
    """A debug-mode restart closes the host connection under a write in flight: the snapshot is a
    cache, so that is an info line (as the usage ledger's), while any other failure stays a warning."""
    ctl, fake, _ = await plugin_with_memory()
    gate = fake.hold(A.SET_PLUGIN_STORAGE, is_snapshot_write)
    fake.fail_next(A.SET_PLUGIN_STORAGE, ConnectionError("Connection closed"))
    with caplog.at_level(logging.INFO):
        await asyncio.wait_for(run_listener(ctl, fake, 2, "where is my bicycle?"), timeout=5)
        gate.set()
        await asyncio.sleep(0.3)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if "snapshot not saved" in r.getMessage()]
    assert lines and all(level == logging.INFO for level, _ in lines), lines
    assert all("connection is closed" in m for _, m in lines), lines
