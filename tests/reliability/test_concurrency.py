"""Concurrency: many writers on one scope lose nothing; writers on different scopes run in parallel.

Backends: the numpy, Chroma and Qdrant adapters with an in-memory key-value store that yields on
every call (like a network hop), and the real host adapters over the fake LangBot host with seeded
random latency on every host call - so the writers really interleave.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.errors import FencedError
from ltm.domain.filters import Criteria
from ltm.domain.scope import Scope
from ltm.domain.storage_keys import l2_lock_key
from ltm.ports import VectorRecord
from ltm.service import Actor, MemoryService, Settings
from tests.support import KB, DelegatingIndex, make_index, stored_audit_entries
from tests.support.backends import ENGINES, ENGINES_WITH_HOST
from tests.support.reliability import KB as HOST_KB
from tests.support.reliability import host_env

ADMIN = Actor(surface="test", sender_id="admin", privilege=2)
N = 50


def settings() -> Settings:
    return Settings(max_profile_traits=200)


class YieldingKV(MemoryKeyValueStore):
    """The in-memory store, but every call yields to the loop first (seeded jitter)."""

    def __init__(self, seed: int = 7) -> None:
        super().__init__()
        self._rng = random.Random(seed)

    async def _hop(self) -> None:
        await asyncio.sleep(self._rng.choice((0, 0, 0.0005, 0.001)))

    async def get(self, key: str) -> bytes | None:
        await self._hop()
        return await super().get(key)

    async def set(self, key: str, value: bytes) -> None:
        await self._hop()
        await super().set(key, value)

    async def delete(self, key: str) -> None:
        await self._hop()
        await super().delete(key)

    async def keys(self, prefix: str = "") -> list[str]:
        await self._hop()
        return await super().keys(prefix)


@pytest.fixture(params=list(ENGINES_WITH_HOST))
async def svc(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[MemoryService, str]]:
    if request.param == "host":
        fake, service = await host_env(settings=settings)
        rng = random.Random(11)

        async def latency(action: Any, data: dict[str, Any]) -> None:
            await asyncio.sleep(rng.choice((0, 0, 0.0005, 0.001)))

        fake.pause = latency
        yield service, HOST_KB
        fake.close()
        return
    emb = HashingEmbedder()
    service = MemoryService(
        kv=YieldingKV(), vectors=make_index(request.param, tmp_path), embedder_for=lambda c, kb: emb, settings=settings
    )
    await service.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
    yield service, KB
    close = getattr(service.vectors, "close", None)
    if close:
        close()


async def _scope(service: MemoryService, kb: str, session: str, sender: str) -> Scope:
    return await service.scope_for(kb_id=kb, session_name=session, bot_uuid="bot1", sender_id=sender)


async def _fifty_and_fifty(service: MemoryService, kb: str) -> Scope:
    """50 remembers + 50 speaker-profile updates (distinct traits; 15 of them also add a note) +
    10 session-profile updates, all at once on one scope, in a seeded random order."""
    scope = await _scope(service, kb, "group_g1", "alice")
    writes: list[Any] = []
    for n in range(N):
        writes.append(service.remember(scope, {"content": f"concurrent fact number {n}"}, ADMIN))
        patch: dict[str, Any] = {"add_traits": [f"trait-{n}"]}
        if n < 15:
            patch["add_notes"] = [f"note-{n}"]
        writes.append(service.update_profile(scope, patch, ADMIN))
        if n < 10:
            writes.append(service.update_profile(scope, {"target": "session", "add_notes": [f"s-{n}"]}, ADMIN))
    random.Random(3).shuffle(writes)
    results = await asyncio.gather(*writes)
    assert len(results) == 2 * N + 10
    return scope


async def test_fifty_remembers_and_fifty_profile_updates_on_one_scope_lose_nothing(
    svc: tuple[MemoryService, str],
) -> None:
    """110 concurrent writes on one scope (see :func:`_fifty_and_fifty`): every episode, trait and
    note is there; no fence, no open journal entry."""
    service, kb = svc
    scope = await _fifty_and_fifty(service, kb)
    listed = await service.list_episodes(scope, page_size=100)
    assert sorted(e.content for e in listed.items) == sorted(f"concurrent fact number {n}" for n in range(N))
    speaker = await service.get_profile(scope, "speaker", "alice")
    assert sorted(speaker.traits) == sorted(f"trait-{n}" for n in range(N))
    assert sorted(speaker.notes) == sorted(f"note-{n}" for n in range(15))
    session = await service.get_profile(scope, "session")
    assert sorted(session.notes) == sorted(f"s-{n}" for n in range(10))
    assert not await service.fences()
    assert not await service.kv.keys("journal/")


async def test_concurrent_writers_keep_a_gapless_audit_log(svc: tuple[MemoryService, str]) -> None:
    """The same 110 concurrent writes: the scope's audit log has exactly one entry per write, with
    unique, gapless sequence numbers."""
    service, kb = svc
    scope = await _fifty_and_fifty(service, kb)
    entries = await stored_audit_entries(service, scope)
    seqs = sorted(e["seq"] for e in entries)
    assert seqs == list(range(1, 2 * N + 10 + 1)), "audit entries lost or sequence numbers reused"
    assert await service.audit_count(scope) == 2 * N + 10


async def test_concurrent_remembers_alone_keep_a_gapless_audit_log(svc: tuple[MemoryService, str]) -> None:
    """Writers that share one lock (50 remembers) do keep a gapless audit log: one entry each."""
    service, kb = svc
    scope = await _scope(service, kb, "person_carol", "carol")
    await asyncio.gather(*(service.remember(scope, {"content": f"solo fact {n}"}, ADMIN) for n in range(N)))
    seqs = sorted(e["seq"] for e in await stored_audit_entries(service, scope))
    assert seqs == list(range(1, N + 1))


async def test_concurrent_supersede_of_one_episode_has_one_winner(svc: tuple[MemoryService, str]) -> None:
    """Ten writers race to supersede the same episode: exactly one wins, the others are refused
    (the target is no longer active) and nothing else changes."""
    service, kb = svc
    scope = await _scope(service, kb, "person_alice", "alice")
    old, _ = await service.remember(scope, {"content": "Alice lives in Berlin"}, ADMIN)
    outcomes = await asyncio.gather(
        *(
            service.remember(scope, {"content": f"Alice lives in city {n}", "supersedes": [old.id]}, ADMIN)
            for n in range(10)
        ),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(winners) == 1 and len(losers) == 9
    assert all(getattr(e, "key", "") == "error.supersede_status" for e in losers), losers
    active = await service.list_episodes(scope, page_size=100)
    assert [e.id for e in active.items] == [winners[0][0].id]
    assert (await service.get_episode(scope, old.id)).superseded_by == winners[0][0].id


async def test_concurrent_forget_and_bulk_delete_delete_once(svc: tuple[MemoryService, str]) -> None:
    """Forget and bulk delete racing on the same rows: every row is gone once, the counts add up,
    and nothing of another scope is touched."""
    service, kb = svc
    a = await _scope(service, kb, "person_alice", "alice")
    b = await _scope(service, kb, "person_bob", "bob")
    ids = [(await service.remember(a, {"content": f"row {n}", "tags": ["x"]}, ADMIN))[0].id for n in range(12)]
    keep, _ = await service.remember(b, {"content": "bob keeps this", "tags": ["x"]}, ADMIN)
    outcomes = await asyncio.gather(
        *(service.forget(a, i, ADMIN) for i in ids[:6]),
        service.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="x"),
        return_exceptions=True,
    )
    forgotten = sum(1 for o in outcomes[:6] if not isinstance(o, BaseException))
    bulk = outcomes[6]
    assert not isinstance(bulk, BaseException), bulk
    assert forgotten + bulk == 12
    assert (await service.list_episodes(a, statuses=None, page_size=100)).items == []
    assert [e.id for e in (await service.list_episodes(b, page_size=100)).items] == [keep.id]


# --------------------------------------------------------------------------------------------
# different scopes proceed in parallel
# --------------------------------------------------------------------------------------------


class GatedIndex(DelegatingIndex):
    """Wraps a VectorIndex: an upsert of ``blocked_user_key`` waits until ``release`` is set."""

    def __init__(self, inner: Any, blocked_user_key: str) -> None:
        super().__init__(inner)
        self.blocked = blocked_user_key
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if any(r.metadata.get("user_key") == self.blocked for r in records):
            self.entered.set()
            await self.release.wait()
        await self.inner.upsert(collection, records)


class GatedKV(MemoryKeyValueStore):
    """A profile write of ``blocked_key`` waits until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked = ""
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def set(self, key: str, value: bytes) -> None:
        if key == self.blocked:
            self.entered.set()
            await self.release.wait()
        await super().set(key, value)


@pytest.mark.parametrize("backend", list(ENGINES))
async def test_a_blocked_write_on_scope_a_does_not_block_scope_b(backend: str, tmp_path: Path) -> None:
    """Scope A's vector write hangs in the backend. Meanwhile a write on scope B completes, and so
    does a profile update of A (another lock), while a second write on A waits its turn; then A is
    released and both of A's writes complete - in order, nothing lost."""
    emb = HashingEmbedder()
    kv = GatedKV()
    inner = make_index(backend, tmp_path)
    probe = MemoryService(kv=MemoryKeyValueStore(), vectors=inner, embedder_for=lambda c, kb: emb, settings=settings)
    await probe.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
    a_key = (await _scope(probe, KB, "person_alice", "alice")).user_key
    index = GatedIndex(inner, a_key)
    service = MemoryService(kv=kv, vectors=index, embedder_for=lambda c, kb: emb, settings=settings)
    await service.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
    a = await _scope(service, KB, "person_alice", "alice")
    b = await _scope(service, KB, "person_bob", "bob")

    first_a = asyncio.create_task(service.remember(a, {"content": "Alice first"}, ADMIN))
    await asyncio.wait_for(index.entered.wait(), 5)
    second_a = asyncio.create_task(service.remember(a, {"content": "Alice second"}, ADMIN))
    ep_b, _ = await asyncio.wait_for(service.remember(b, {"content": "Bob is not blocked"}, ADMIN), 5)
    prof = await asyncio.wait_for(service.update_profile(a, {"add_traits": ["patient"]}, ADMIN), 5)
    assert prof.traits == ["patient"]
    await asyncio.sleep(0.05)
    assert not first_a.done() and not second_a.done(), "scope A's writes did not wait for A's blocked write"
    assert [e.id for e in (await service.list_episodes(b)).items] == [ep_b.id]
    assert (await service.list_episodes(a)).items == []  # reads of A are not blocked either
    index.release.set()
    e1, _ = await asyncio.wait_for(first_a, 5)
    e2, _ = await asyncio.wait_for(second_a, 5)
    assert {e.content for e in (await service.list_episodes(a)).items} == {"Alice first", "Alice second"}
    seqs = [e["seq"] for e in await stored_audit_entries(service, a) if e["operation"] == "episode.remember"]
    assert len(seqs) == 2 and e1.id != e2.id
    close = getattr(inner, "close", None)
    if close:
        close()


async def test_a_blocked_profile_write_does_not_block_other_profiles() -> None:
    """A speaker-profile write of alice hangs: bob's profile, the session profile and an episode
    write of the same scope all complete meanwhile; alice's next update waits and then applies."""
    emb = HashingEmbedder()
    kv = GatedKV()
    service = MemoryService(
        kv=kv, vectors=make_index("numpy", Path(".")), embedder_for=lambda c, kb: emb, settings=settings
    )
    await service.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
    alice = await _scope(service, KB, "group_g1", "alice")
    bob = await _scope(service, KB, "group_g1", "bob")
    kv.blocked = f"profile/{alice.user_key}#speaker:alice"
    first = asyncio.create_task(service.update_profile(alice, {"add_traits": ["one"]}, ADMIN))
    await asyncio.wait_for(kv.entered.wait(), 5)
    second = asyncio.create_task(service.update_profile(alice, {"add_traits": ["two"]}, ADMIN))
    await asyncio.wait_for(service.update_profile(bob, {"add_traits": ["bob"]}, ADMIN), 5)
    await asyncio.wait_for(service.update_profile(alice, {"target": "session", "add_notes": ["s"]}, ADMIN), 5)
    await asyncio.wait_for(service.remember(alice, {"content": "an episode meanwhile"}, ADMIN), 5)
    await asyncio.sleep(0.05)
    assert not first.done() and not second.done()
    kv.blocked = ""
    kv.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert (await service.get_profile(alice, "speaker", "alice")).traits == ["one", "two"]


async def test_a_fence_on_one_scope_never_refuses_another(svc: tuple[MemoryService, str]) -> None:
    """Under concurrent load, a fenced scope refuses every write while 20 writes on other scopes
    complete (the fence is per scope, not global)."""
    service, kb = svc
    a = await _scope(service, kb, "person_alice", "alice")
    await service.writes.fencing.set_fence(l2_lock_key(a), a, "episode.remember", "test: unknown outcome")
    others = [await _scope(service, kb, f"person_u{n}", f"u{n}") for n in range(10)]
    outcomes = await asyncio.gather(
        *(service.remember(a, {"content": f"refused {n}"}, ADMIN) for n in range(5)),
        *(service.remember(s, {"content": f"accepted {n}"}, ADMIN) for n, s in enumerate(others * 2)),
        return_exceptions=True,
    )
    assert all(isinstance(o, FencedError) and o.key == "error.fenced" for o in outcomes[:5]), outcomes[:5]
    assert not any(isinstance(o, BaseException) for o in outcomes[5:]), outcomes[5:]
    assert (await service.list_episodes(a)).items == []
