"""Recall index snapshots in plugin storage: a cold scope is read from storage, never stale.

A "restart" here is a new MemoryService over the same key-value store and vector index (nothing
cached in process). Every exclusion test has its positive control: the snapshot was used (no host
list) and a live row of the same scope is present.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ConnectionClosedError

from ltm.adapters.embedders import HashingEmbedder
from ltm.domain.errors import BackendError
from ltm.domain.filters import ACTIVE, Criteria, scope_filter
from ltm.domain.scope import Scope
from ltm.service import Actor, MemoryService, Settings, index_snapshot
from ltm.service.transfer import import_scope
from tests.contract.test_recall_index import CountingIndex
from tests.support import ADMIN, KB, HostLimitedKeyValueStore, make_index, scope_of, with_consolidator, with_review
from tests.support.reliability import ALL_FAULTS, Fault, host_env, host_service
from tests.support.reliability import KB as KB_HOST

USER = Actor(surface="tool", sender_id="alice")
LIVE = "Alice drinks green tea every morning"
VICTIM = "Alice keeps a blue bicycle in the garage"


class FlakyKV(HostLimitedKeyValueStore):
    """Fails ``set`` of keys containing ``fail_set`` (as a host refusing the value)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_set = ""
        self.fail_get = ""

    async def set(self, key: str, value: bytes) -> None:
        if self.fail_set and self.fail_set in key:
            raise RuntimeError("host refused the value")
        await super().set(key, value)

    async def get(self, key: str) -> bytes | None:
        if self.fail_get and self.fail_get in key:
            raise RuntimeError("host read failed")
        return await super().get(key)


class World:
    """One key-value store and one vector index; services over them are processes."""

    def __init__(self, tmp: Path, kind: str = "numpy") -> None:
        self.kv = FlakyKV()
        self.vectors = CountingIndex(make_index(kind, tmp))
        self.emb = HashingEmbedder()

    async def process(self, **neighbours: Any) -> MemoryService:
        """A process over the world's stores, made with ``neighbours`` (``review=``, ``consolidator=``)."""
        svc = MemoryService(
            kv=self.kv, vectors=self.vectors, embedder_for=lambda c, kb: self.emb, settings=Settings, **neighbours
        )
        svc.index.snapshot_delay = 3600.0  # only explicit flushes in these tests
        await svc.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
        return svc


def ids(res: Any) -> list[str]:
    return [r.episode.id for r in res.episodes]


async def cold(world: World, scope_ident: Scope) -> tuple[MemoryService, Any]:
    """A restarted process's scope index (and whether it needed a host list)."""
    svc = await world.process()
    s = await scope_of(svc, scope_ident.session_name, scope_ident.sender_id)
    world.vectors.calls.clear()
    idx = await svc.scope_index(s)
    return svc, idx


async def snapshotted(world: World, *contents: str) -> tuple[MemoryService, Scope, list[Any]]:
    """A process whose scope remembered ``contents`` (as the user), recalled once and wrote its snapshot."""
    svc = await world.process()
    scope = await scope_of(svc)
    episodes = [(await svc.remember(scope, {"content": c}, USER))[0] for c in contents]
    await svc.recall(scope, "warm")
    await svc.index.flush_snapshots()
    return svc, scope, episodes


async def test_a_cold_scope_is_answered_from_its_snapshot_without_listing_the_host(tmp_path: Path) -> None:
    world = World(tmp_path)
    a = await world.process()
    s = await scope_of(a)
    live, _ = await a.remember(s, {"content": LIVE}, USER)
    other, _ = await a.remember(s, {"content": VICTIM}, USER)
    warm = ids(await a.recall(s, "blue bicycle garage"))
    assert await a.index.flush_snapshots() == 1
    b, idx = await cold(world, s)
    assert idx.from_snapshot and world.vectors.calls.get("list", 0) == 0
    assert set(idx.pos) == {live.id, other.id}
    sb = await scope_of(b)
    assert ids(await b.recall(sb, "blue bicycle garage")) == warm  # same answer as the warm process
    assert world.vectors.calls.get("list", 0) == 0 and world.vectors.calls.get("search", 0) == 0


async def _retire(svc: MemoryService, s: Scope, verb: str, victim: str) -> None:
    if verb == "supersede":
        await svc.remember(s, {"content": "Alice sold the bicycle", "supersedes": [victim]}, USER)
    elif verb == "archive":
        await svc.set_status(s, victim, "archived", ADMIN)
    elif verb == "forget":
        await svc.forget(s, victim, ADMIN)
    elif verb == "forget_never":  # the process was made with its review queue (NEIGHBOURS)
        await svc.forget(s, victim, ADMIN, reason="never", never=True)
    elif verb == "bulk_delete":
        await svc.bulk_delete(s, Criteria(statuses=None, ids=(victim,)), ADMIN)
    elif verb == "document_delete":
        assert await svc.delete_document(KB, "doc1", ADMIN) == 1
    elif verb == "consolidation":  # the process was made with its consolidator (NEIGHBOURS)
        links = {"sources": [victim], "proposal_id": "cp_" + "0" * 20}
        raw = {"content": "Alice cycles", "claim_type": "inference"}
        plan = svc.episodes.plan_remember(s, raw, ADMIN, origin="consolidation")
        plan.link(links)
        plan.replacing([victim])
        async with plan:
            await plan.commit()
    else:
        raise AssertionError(verb)


VERBS = (
    "supersede", "archive", "forget", "forget_never", "bulk_delete", "document_delete", "consolidation",
)  # fmt: skip


ERASING = ("forget", "forget_never", "bulk_delete", "document_delete")
# the neighbours a verb's processes are made with (their rules in the writes)
NEIGHBOURS: dict[str, dict[str, Any]] = {
    "forget_never": {"review": with_review()},
    "consolidation": {"consolidator": with_consolidator()},
}


@pytest.mark.parametrize("rewrite", ["rewritten", "crash_before_rewrite", "other_process"])
@pytest.mark.parametrize("verb", VERBS)
async def test_a_retired_row_never_comes_back_from_a_snapshot(tmp_path: Path, verb: str, rewrite: str) -> None:
    """The snapshot holds the victim; it is retired through ``verb`` and then a new process starts:
    after the snapshot was rewritten, before (the process died first: the stamp voids it), or by a
    process that never held the scope's index."""
    world = World(tmp_path)
    a = await world.process(**NEIGHBOURS.get(verb, {}))
    s = await scope_of(a)
    if verb == "document_delete":
        doc = {"session_name": s.session_name, "bot_uuid": s.bot_uuid, "episodes": [{"content": VICTIM}]}
        await a.ingest_document(KB, "doc1", doc, ADMIN)
        victim = (await a.list_episodes(s)).items[0].id
    else:
        victim = (await a.remember(s, {"content": VICTIM}, USER))[0].id
    live, _ = await a.remember(s, {"content": LIVE}, USER)
    assert victim in ids(await a.recall(s, "blue bicycle garage"))  # positive control: indexed
    assert await a.index.flush_snapshots() == 1
    _, before = await cold(world, s)
    assert before.from_snapshot and victim in before.pos  # positive control: the snapshot holds it

    writer = await world.process(**NEIGHBOURS.get(verb, {})) if rewrite == "other_process" else a
    await _retire(writer, await scope_of(writer), verb, victim)
    if rewrite == "rewritten":
        await a.index.flush_snapshots()

    b, idx = await cold(world, s)
    assert victim not in idx.pos
    assert live.id in idx.pos  # positive control: the scope's live row is there
    # a verb that deletes rows rewrites the snapshot itself before it answers (ltm/service/erasure.py):
    # a crash after it finds the rewritten copy
    erased = rewrite == "crash_before_rewrite" and verb in ERASING
    if rewrite == "rewritten" or erased:
        assert idx.from_snapshot and world.vectors.calls.get("list", 0) == 0  # served by the new snapshot
    else:
        assert not idx.from_snapshot  # the stored copy is void: the host was listed
    sb = await scope_of(b)
    got = ids(await b.recall(sb, "blue bicycle garage"))
    assert victim not in got
    assert live.id in ids(await b.recall(sb, "green tea morning"))


async def test_imported_rows_are_in_the_next_snapshot(tmp_path: Path) -> None:
    world = World(tmp_path)
    a, s, [live] = await snapshotted(world, LIVE)
    await import_scope(a, s, {"episodes": [{"id": "x1", "content": VICTIM}]}, ADMIN)
    await a.index.flush_snapshots()
    _, idx = await cold(world, s)
    texts = {str((idx.metadata(r) or {}).get("text")) for r in idx.pos}
    assert idx.from_snapshot and texts == {LIVE, VICTIM}


async def test_a_void_snapshot_is_deleted_not_only_ignored(tmp_path: Path) -> None:
    """The stored copy of a scope written by a process that does not hold its index is deleted:
    a retired row's text does not stay in storage."""
    world = World(tmp_path)
    a, s, [victim, _] = await snapshotted(world, VICTIM, LIVE)
    key = index_snapshot.base_key(KB, s.user_key) + "snap"
    assert VICTIM.encode() in (await world.kv.get(key) or b"")  # positive control
    other = await world.process()
    await other.forget(await scope_of(other), victim.id, ADMIN)
    await other.index.flush_snapshots()
    assert await world.kv.get(key) is None


async def test_a_write_with_an_unknown_outcome_voids_the_snapshot(tmp_path: Path) -> None:
    world = World(tmp_path)
    a, s, [live] = await snapshotted(world, LIVE)
    world.vectors.fail_next = "upsert"  # lands, but the caller cannot know
    with pytest.raises(Exception):  # noqa: B017 - fenced
        await a.remember(s, {"content": "Alice plays go on Mondays"}, USER)
    await a.recall(s, "warm")  # rebuilt in process from the host...
    assert await a.index.flush_snapshots() == 0  # ...but not snapshotted: the write may land later
    _, idx = await cold(world, s)
    assert not idx.from_snapshot
    texts = {str((idx.metadata(r) or {}).get("text")) for r in idx.pos}
    assert "Alice plays go on Mondays" in texts and LIVE in texts


async def test_a_snapshot_write_failure_fails_neither_the_turn_nor_the_write(tmp_path: Path) -> None:
    world = World(tmp_path)
    a = await world.process()
    a.index.snapshot_delay = 0.0
    s = await scope_of(a)
    world.kv.fail_set = "/snap"
    ep, _ = await a.remember(s, {"content": LIVE}, USER)
    assert ids(await a.recall(s, "green tea")) == [ep.id]
    await asyncio.sleep(0.05)  # the background flush ran and failed
    assert a.index.snapshot_counts["failed"] >= 1
    ep2, _ = await a.remember(s, {"content": VICTIM}, USER)
    assert set(ids(await a.recall(s, "bicycle tea"))) == {ep.id, ep2.id}
    world.kv.fail_set = ""
    _, idx = await cold(world, s)
    assert not idx.from_snapshot and set(idx.pos) == {ep.id, ep2.id}


async def test_a_snapshot_read_failure_falls_back_to_the_host(tmp_path: Path) -> None:
    world = World(tmp_path)
    a, s, [ep] = await snapshotted(world, LIVE)
    world.kv.fail_get = "recall/"
    b, idx = await cold(world, s)
    assert not idx.from_snapshot and world.vectors.calls["list"] == 1 and set(idx.pos) == {ep.id}
    assert await b.index.flush_snapshots() == 0  # stamp unknown: nothing written


async def test_a_stamp_that_cannot_move_refuses_the_write_before_it_is_sent(tmp_path: Path) -> None:
    world = World(tmp_path)
    a, s, [ep] = await snapshotted(world, LIVE)
    world.kv.fail_set = "/stamp"
    with pytest.raises(BackendError):
        await a.forget(s, ep.id, ADMIN)
    world.kv.fail_set = ""
    assert [e.id for e in (await a.list_episodes(s)).items] == [ep.id]  # nothing was written
    _, idx = await cold(world, s)
    assert idx.from_snapshot and set(idx.pos) == {ep.id}  # and the snapshot is still right


async def test_a_snapshot_is_only_read_for_its_own_scope(tmp_path: Path) -> None:
    world = World(tmp_path)
    a = await world.process()
    alice, bob = await scope_of(a), await scope_of(a, "person_bob", "bob")
    await a.remember(alice, {"content": VICTIM}, USER)
    bob_ep, _ = await a.remember(bob, {"content": LIVE}, Actor(surface="tool", sender_id="bob"))
    await a.recall(alice, "warm")
    await a.recall(bob, "warm")
    await a.index.flush_snapshots()
    ka, kb = (index_snapshot.base_key(KB, x.user_key) for x in (alice, bob))
    # bob's slot gets alice's snapshot, under bob's stamp: refused (it names another owner)
    await world.kv.set(kb + "snap", await world.kv.get(ka + "snap") or b"")
    await world.kv.set(kb + "stamp", await world.kv.get(ka + "stamp") or b"")
    _, idx = await cold(world, bob)
    assert not idx.from_snapshot and set(idx.pos) == {bob_ep.id}
    for garbage in (b"", b"LTMSNAP1", b"LTMSNAP1\x00garbage", b"not a snapshot"):
        await world.kv.set(ka + "snap", garbage)
        _, idx = await cold(world, alice)
        assert not idx.from_snapshot and len(idx) == 1


async def test_an_old_snapshot_answers_and_is_refreshed_from_the_host(tmp_path: Path) -> None:
    """Writes made outside this plugin: a snapshot older than the TTL is used and rebuilt behind."""
    world = World(tmp_path)
    a, s, [ep] = await snapshotted(world, LIVE)
    b = await world.process()
    b.index.wall = lambda: time.time() + 10_000
    sb = await scope_of(b)
    world.vectors.calls.clear()
    idx = await b.scope_index(sb)
    assert idx.from_snapshot and set(idx.pos) == {ep.id}
    await b.scope_index(sb)  # past the TTL: the refresh starts
    await asyncio.sleep(0.05)
    assert world.vectors.calls.get("list", 0) == 1
    assert not (await b.scope_index(sb)).from_snapshot


async def test_a_scope_over_the_size_bound_has_no_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(tmp_path)
    a = await world.process()
    s = await scope_of(a)
    await a.remember(s, {"content": LIVE}, USER)
    await a.recall(s, "warm")
    monkeypatch.setattr(index_snapshot, "MAX_BYTES", 100)
    assert await a.index.flush_snapshots() == 0
    assert await world.kv.get(index_snapshot.base_key(KB, s.user_key) + "snap") is None


async def test_removing_a_knowledge_base_deletes_its_snapshots(tmp_path: Path) -> None:
    world = World(tmp_path)
    a, s, [_] = await snapshotted(world, LIVE)
    snap = index_snapshot.base_key(KB, s.user_key) + "snap"
    assert await world.kv.get(snap) is not None
    await a.registry.unregister_kb(KB)
    await asyncio.sleep(0.05)
    assert await world.kv.get(snap) is None


async def test_active_rows_only_even_from_a_tampered_snapshot(tmp_path: Path) -> None:
    """A snapshot that holds a non-active row (never written so) never serves it."""
    from ltm.service.recall_index import RecallIndex

    world = World(tmp_path)
    a = await world.process()
    s = await scope_of(a)
    live, _ = await a.remember(s, {"content": LIVE}, USER)
    arch, _ = await a.remember(s, {"content": VICTIM}, USER)
    await a.set_status(s, arch.id, "archived", ADMIN)
    rows = (await world.vectors.inner.list(KB, scope_filter(s.user_key, Criteria(statuses=None)), 10, 0)).items
    forged = RecallIndex(world.vectors)  # an index loaded with every row, whatever its status
    idx = await forged.get(KB, s.user_key)
    idx.load([])
    for r in rows:
        idx.put(r.id, str(r.metadata.get("text")), r.metadata, None)
    stamp = (await index_snapshot.SnapshotStore(world.kv).read(KB, s.user_key))[0]
    await world.kv.set(index_snapshot.base_key(KB, s.user_key) + "snap", idx.snapshot(stamp))
    _, loaded = await cold(world, s)
    assert loaded.from_snapshot and set(loaded.pos) == {live.id}
    assert [
        r[0] for r in loaded.lexical_search("blue bicycle", 5, scope_filter(s.user_key, Criteria(statuses=ACTIVE)))
    ] == []


OPS = st.lists(
    st.tuples(st.sampled_from(["remember", "forget", "archive", "restore", "flush", "restart"]), st.integers(0, 9)),
    min_size=1,
    max_size=25,
)


@settings(max_examples=25, deadline=None)
@given(OPS)
def test_a_cold_scope_always_holds_exactly_the_stores_active_rows(ops: list[tuple[str, int]]) -> None:
    """Any sequence of writes, retirements, snapshot flushes and restarts (a restart drops
    whatever was not flushed): the index a new process starts from holds exactly the active rows
    the store has, whether it came from a snapshot or from the host."""

    async def run(tmp: Path) -> None:
        world = World(tmp)
        svc = await world.process()
        s = await scope_of(svc)
        for op, n in [*ops, ("restart", 0)]:
            rows = (await world.vectors.inner.list(KB, scope_filter(s.user_key, Criteria(statuses=None)), 100, 0)).items
            by_status = {st_: [r.id for r in rows if r.metadata.get("status") == st_] for st_ in ("active", "archived")}
            if op == "remember":
                await svc.remember(s, {"content": f"note {n} about item{n} and more {len(rows)}"}, USER)
            elif op in ("forget", "archive") and by_status["active"]:
                victim = by_status["active"][n % len(by_status["active"])]
                if op == "forget":
                    await svc.forget(s, victim, ADMIN)
                else:
                    await svc.set_status(s, victim, "archived", ADMIN)
            elif op == "restore" and by_status["archived"]:
                await svc.set_status(s, by_status["archived"][n % len(by_status["archived"])], "active", ADMIN)
            elif op == "flush":
                await svc.recall(s, "item")  # the scope is held, so the flush has content to write
                await svc.index.flush_snapshots()
            elif op == "restart":
                svc, idx = await cold(world, s)
                s = await scope_of(svc)
                event(f"cold start from a snapshot: {idx.from_snapshot}")
                truth = await world.vectors.inner.list(KB, scope_filter(s.user_key, Criteria()), 100, 0)
                assert set(idx.pos) == {r.id for r in truth.items}

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp)))


# --------------------------------------------------------------------------------------------
# every fault at the snapshot's own host calls, through the real host adapters
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ALL_FAULTS, ids=lambda f: f.name)
async def test_a_fault_at_the_snapshot_write_fails_neither_turns_nor_writes(fault: Fault) -> None:
    fake, svc = await host_env()
    try:
        s = await scope_of_host(svc)
        ep, _ = await svc.remember(s, {"content": LIVE}, USER)
        assert ids(await svc.recall(s, "green tea")) == [ep.id]
        fake.arm_action(A.SET_PLUGIN_STORAGE, fault)  # the flush's only write: the snapshot value
        flush = asyncio.ensure_future(svc.index.flush_snapshots())  # a background task in production
        await asyncio.wait([flush])
        fake.disarm()
        assert fake.fired is not None and str(fake.fired[1].get("key", "")).endswith("/snap")
        ep2, _ = await svc.remember(s, {"content": VICTIM}, USER)  # the write is unaffected
        assert set(ids(await svc.recall(s, "green tea blue bicycle"))) == {ep.id, ep2.id}
        cold = host_service(fake)  # a restart: whatever landed, the index holds exactly the live rows
        idx = await cold.scope_index(await scope_of_host(cold))
        assert set(idx.pos) == {ep.id, ep2.id}
    finally:
        fake.close()


@pytest.mark.parametrize("fault", [f for f in ALL_FAULTS if not f.applied], ids=lambda f: f.name)
async def test_a_fault_at_the_snapshot_read_falls_back_to_the_host(fault: Fault) -> None:
    fake, svc = await host_env()
    try:
        s = await scope_of_host(svc)
        ep, _ = await svc.remember(s, {"content": LIVE}, USER)
        await svc.recall(s, "green tea")
        assert await svc.index.flush_snapshots() == 1
        cold = host_service(fake)
        cs = await scope_of_host(cold)
        await cold.kv.keys()  # the storage adapter's key listing, before the fault is armed
        fake.arm_action(A.GET_PLUGIN_STORAGE, fault)  # the first read: the stamp or the snapshot
        try:
            got = ids(await cold.recall(cs, "green tea"))
        except asyncio.CancelledError:
            assert fault.name.startswith("cancel")
            got = None
        fake.disarm()
        assert fake.fired is not None and "recall/" in str(fake.fired[1].get("key", ""))
        if got is not None:
            assert got == [ep.id] and not cold.index.snapshot_counts["used"]  # the host answered
        assert ids(await cold.recall(cs, "green tea")) == [ep.id]  # and the next turn is fine
    finally:
        fake.close()


async def scope_of_host(svc: MemoryService) -> Scope:
    return await svc.scope_for(kb_id=KB_HOST, session_name="person_alice", bot_uuid="bot1", sender_id="alice")


@pytest.mark.parametrize(
    ("error", "level"),
    [
        (ConnectionClosedError("Connection closed"), logging.INFO),  # a plugin restart in debug mode
        (BackendError("disk full"), logging.WARNING),  # control: a real failure stays a warning
    ],
)
async def test_a_snapshot_write_on_a_closed_connection_is_not_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, error: Exception, level: int
) -> None:
    world = World(tmp_path)
    a = await world.process()
    s = await scope_of(a)
    await a.remember(s, {"content": LIVE}, USER)
    await a.recall(s, "blue bicycle")

    async def failing_set(key: str, value: bytes) -> None:
        raise error

    world.kv.set = failing_set  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="ltm.service.snapshot_flush"):
        assert await a.index.flush_snapshots() == 0
    snapshot_lines = [r for r in caplog.records if "snapshot" in r.getMessage()]
    assert snapshot_lines and {r.levelno for r in snapshot_lines} == {level}
    assert a.index.snapshot_counts["failed"] >= 1
