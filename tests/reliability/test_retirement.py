"""Forgotten means forgotten, under concurrency and restarts (issue 24, findings 1 and 2).

Linearizable retirement: once a forget / archive / supersede / bulk delete has answered, no recall
that starts afterwards returns the retired row, whatever index builds, snapshot loads, TTL
refreshes or flushes are in flight; and once it has answered and the next snapshot flush has run,
no stored recall snapshot holds the row's text. The host here answers late, in the order the test
chooses (:mod:`tests.support.held_host`): each call is applied when sent, its answer held.

The deterministic tests replay the issue's two reports; the model-based test
(:mod:`tests.reliability.test_retirement_model`) searches the interleavings.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ltm.service import MemoryService
from ltm.service.recall import RecallResult
from tests.support import ADMIN, scope_of
from tests.support.backends import ENGINES
from tests.support.held_host import SLOW, HeldWorld, settle

LIVE = "Alice drinks green tea every morning"
VICTIM = "Alice keeps a blue bicycle in the garage"
QUERY = "Alice green tea blue bicycle garage morning"
KINDS = list(ENGINES)


def ids(res: RecallResult) -> list[str]:
    return [r.episode.id for r in res.episodes]


def slow(coro: Any) -> asyncio.Task[Any]:
    """A task whose host answers (and those of the tasks it starts) wait for the test."""
    token = SLOW.set(True)
    try:
        return asyncio.create_task(coro)
    finally:
        SLOW.reset(token)


async def release_until(world: HeldWorld, label: str) -> None:
    """Answer held calls, oldest first, until one labelled ``label`` is held (and keep that one)."""
    await settle()
    for _ in range(50):
        if label in world.held.labels():
            return
        assert world.held.pending, f"nothing held, waiting for {label}"
        world.held.release(0)
        await settle()
    raise AssertionError(f"{label} never held: {world.held.log}")


async def release_all(world: HeldWorld) -> None:
    await settle()
    while world.held.pending:
        world.held.release(0)
        await settle()


@pytest.fixture(params=KINDS)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    w = HeldWorld(request.param, tmp_path)
    yield w
    w.close()


async def _two_memories(world: HeldWorld) -> tuple[MemoryService, Any, Any]:
    a = await world.process()
    s = await scope_of(a)
    live, _ = await a.remember(s, {"content": LIVE}, ADMIN)
    victim, _ = await a.remember(s, {"content": VICTIM}, ADMIN)
    return a, live, victim


async def test_a_turn_after_a_forget_never_joins_an_older_build(world: HeldWorld) -> None:
    """Finding 1: Bob's turn starts the scope's first build after a restart; its host listing read
    the rows but answers late. The forget answers meanwhile. Carol's turn starts after that answer:
    it must not see the forgotten memory (it joined Bob's build before the fix)."""
    _, live, victim = await _two_memories(world)
    b = await world.process()  # a restart: no index held, no snapshot stored
    s = await scope_of(b)
    bob = slow(b.recall(s, QUERY, with_profiles=False))
    await release_until(world, "vector.list")  # Bob's build has read both rows; its answer waits
    assert (await b.forget(s, victim.id, ADMIN)).id == victim.id  # "Forgot ..."
    carol = asyncio.create_task(b.recall(s, QUERY, with_profiles=False))
    await release_all(world)
    got = ids(await carol)
    assert victim.id not in got, "a turn that started after the forget answered recalled the forgotten row"
    assert live.id in got  # positive control: the scope's live memory is recalled
    assert set(ids(await bob)) <= {live.id, victim.id}  # Bob started before the forget: either answer
    after = ids(await b.recall(s, QUERY, with_profiles=False))
    assert live.id in after and victim.id not in after


async def test_a_forget_during_a_build_leaves_no_text_in_a_stored_snapshot(world: HeldWorld) -> None:
    """Finding 2: the scope's snapshot holds the row; after a restart a turn's build reads the
    snapshot, late; a forget answers meanwhile; the next flush must leave no stored snapshot with
    the forgotten text (it skipped the scope while the build ran, and the dirty build was dropped
    without rescheduling it, before the fix)."""
    a, live, victim = await _two_memories(world)
    s = await scope_of(a)
    await a.recall(s, QUERY, with_profiles=False)
    assert await a.index.flush_snapshots() == 1
    assert any(VICTIM.encode() in v for v in world.snapshot_values().values())  # positive control
    b = await world.process()
    sb = await scope_of(b)
    bob = slow(b.recall(sb, QUERY, with_profiles=False))
    await release_until(world, "kv.get snap")  # Bob's build is reading the stored snapshot
    await b.forget(sb, victim.id, ADMIN)
    await b.index.flush_snapshots()  # the next flush after the forget answered
    stored = world.snapshot_values()
    assert not any(VICTIM.encode() in v or victim.id.encode() in v for v in stored.values()), "text kept"
    await release_all(world)
    await bob
    await b.index.flush_snapshots()
    assert not any(VICTIM.encode() in v for v in world.snapshot_values().values())
    # positive control: the scope is snapshotted again, without the row, and a cold process uses it
    await b.recall(sb, QUERY, with_profiles=False)
    await b.index.flush_snapshots()
    stored = world.snapshot_values()
    assert any(LIVE.encode() in v for v in stored.values())
    assert not any(VICTIM.encode() in v for v in stored.values())
    c = await world.process()
    idx = await c.scope_index(await scope_of(c))
    assert idx.from_snapshot and set(idx.pos) == {live.id}


async def test_a_write_during_a_ttl_refresh_is_not_undone_by_it(world: HeldWorld) -> None:
    """A TTL refresh that listed the host before an archive answers after it: the refreshed index
    must not bring the archived row back for a turn that starts after the archive answered."""
    a, live, victim = await _two_memories(world)
    s = await scope_of(a)
    assert set(ids(await a.recall(s, QUERY, with_profiles=False))) == {live.id, victim.id}
    world.mono += 10_000  # past the TTL: the next turn refreshes in the background
    first = slow(a.recall(s, QUERY, with_profiles=False))
    await release_until(world, "vector.list")
    await a.set_status(s, victim.id, "archived", ADMIN)
    carol = asyncio.create_task(a.recall(s, QUERY, with_profiles=False))
    await release_all(world)
    await first
    assert victim.id not in ids(await carol)
    later = ids(await a.recall(s, QUERY, with_profiles=False))
    assert victim.id not in later and live.id in later
