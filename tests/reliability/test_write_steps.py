"""Multi-step writes are all or nothing (``WriteEngine.mutate``), on the real engines.

The fault matrix (tests/test_faults.py) injects one fault per cell through the host adapters; these
tests cover what one injected fault cannot: the taking back failing too, a backend that acknowledges
a delete it did not do, overlapping multi-scope operations, and a re-ingested document.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.errors import BackendError, FencedError
from ltm.domain.filters import Criteria
from ltm.domain.scope import Scope
from ltm.domain.storage_keys import l2_lock_key
from ltm.ports import VectorRecord
from ltm.service import MemoryService
from tests.support import ADMIN, KB, DelegatingIndex, build_service, scope_of, with_consolidator, with_review
from tests.support.backends import ENGINES


class ScriptedIndex(DelegatingIndex):
    """A real index with scripted misbehaviour per call: ``refuse`` answers an error (nothing
    applied), ``ignore`` acknowledges without applying; ``yield_each`` lets other tasks run inside
    every write (to interleave concurrent operations)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.script: dict[tuple[str, int], str] = {}
        self.counts: dict[str, int] = {}
        self.yield_each = False

    async def _write(self, method: str, call: Any) -> None:
        n = self.counts[method] = self.counts.get(method, 0) + 1
        if self.yield_each:
            await asyncio.sleep(0)
        action = self.script.get((method, n))
        if action == "refuse":
            raise RuntimeError(f"{method} #{n} refused (scripted)")
        if action != "ignore":
            await call()

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        await self._write("upsert", lambda: self.inner.upsert(collection, records))

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        await self._write("delete", lambda: self.inner.delete(collection, where))


def scripted(svc: MemoryService) -> ScriptedIndex:
    """The service's scripted index (built under it by the fixtures below), counting from now on."""
    idx = svc.vectors
    assert isinstance(idx, ScriptedIndex)
    idx.counts.clear()
    return idx


@pytest.fixture(params=list(ENGINES))
async def service(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryService:
    """The suite's ``service`` on each engine, every index call through a :class:`ScriptedIndex`."""
    return await build_service(request.param, tmp_path, vectors=ScriptedIndex)


@pytest.fixture(params=list(ENGINES))
async def consolidating_service(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryService:
    """As ``service``, made with a consolidator (its rules in the retire pipeline)."""
    return await build_service(request.param, tmp_path, vectors=ScriptedIndex, consolidator=with_consolidator())


@pytest.fixture(params=list(ENGINES))
async def chunked_service(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryService:
    """As ``service``, deleting two ids per backend call."""
    return await build_service(request.param, tmp_path, vectors=ScriptedIndex, delete_batch=2)


def doc(*parts: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "episodes": [{"session_name": s, "bot_uuid": "bot1", "sender_id": who, "content": c} for s, who, c in parts]
    }


async def rows(svc: MemoryService, scope: Scope) -> list[tuple[str, str, str]]:
    return sorted((e.id, e.status, e.content) for e in await svc.fetch(scope, Criteria(statuses=None)))


async def ops(svc: MemoryService, scope: Scope, operation: str) -> list[dict[str, Any]]:
    return [e for e in await svc.audit.scope_export(scope) if e["operation"] == operation]


async def test_a_multi_scope_document_is_audited_once_per_scope(service: MemoryService) -> None:
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    await service.ingest_document(KB, "doc-1", doc(("person_alice", "alice", "A1"), ("group_g1", "carol", "C1")), ADMIN)
    (ea,), (ec,) = await rows(service, a), await rows(service, c)  # positive control: one row each
    for scope, mine, other in ((a, ea, ec), (c, ec, ea)):
        (entry,) = await ops(service, scope, "document.ingest")
        assert mine[0] in entry["targets"] and other[0] not in entry["targets"]
    assert not await service.kv.keys("journal/") and not await service.fences()


async def test_a_refused_later_scope_takes_the_earlier_scope_and_the_index_back(service: MemoryService) -> None:
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    await service.remember(a, {"content": "Alice already knew this"}, ADMIN)
    before = (await rows(service, a), await rows(service, c), await service.kv.keys("doc/"))
    idx = scripted(service)
    idx.script[("upsert", 2)] = "refuse"  # the second scope's write
    with pytest.raises(BackendError) as info:
        await service.ingest_document(
            KB, "doc-1", doc(("person_alice", "alice", "A1"), ("group_g1", "carol", "C1")), ADMIN
        )
    assert info.value.key == "error.backend"
    assert (await rows(service, a), await rows(service, c), await service.kv.keys("doc/")) == before
    assert not await service.fences() and not await service.kv.keys("journal/")
    assert not await ops(service, a, "document.ingest")
    # the same document goes in once the backend accepts again
    assert (
        await service.ingest_document(
            KB, "doc-1", doc(("person_alice", "alice", "A1"), ("group_g1", "carol", "C1")), ADMIN
        )
        == 2
    )


async def test_when_taking_back_fails_every_scope_is_fenced_and_recovery_reports_it(service: MemoryService) -> None:
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    idx = scripted(service)
    idx.script[("upsert", 2)] = "refuse"  # the second scope's write (alice's) ...
    idx.script[("delete", 1)] = "refuse"  # ... and taking the first one (carol's) back
    with pytest.raises(FencedError) as info:
        await service.ingest_document(
            KB, "doc-1", doc(("person_alice", "alice", "A1"), ("group_g1", "carol", "C1")), ADMIN
        )
    assert info.value.key == "error.fenced_now"
    assert set(await service.fences()) == {l2_lock_key(a), l2_lock_key(c)}
    assert len(await service.kv.keys("journal/")) == 1
    # a restart: the journal still describes a half-applied operation, so recovery reports it
    svc2 = MemoryService(kv=service.kv, vectors=idx.inner, embedder_for=service.embedder_for)
    (report,) = await svc2.recover()
    assert report["state"] == "partial" and report["operation"] == "document.ingest"
    assert set(await svc2.fences()) == {l2_lock_key(a), l2_lock_key(c)}
    # scopes are written in user-key order (group_g1 first): carol's row stayed, alice's was refused;
    # reads still work, so the operator can look
    assert [r[2] for r in await rows(svc2, c)] == ["C1"] and await rows(svc2, a) == []
    with pytest.raises(FencedError):
        await svc2.remember(a, {"content": "refused while fenced"}, ADMIN)


async def test_an_unverified_chunked_delete_writes_every_chunk_back(chunked_service: MemoryService) -> None:
    service = chunked_service
    a = await scope_of(service)
    for n in range(5):
        await service.remember(a, {"content": f"row {n}", "tags": ["bulk"]}, ADMIN)
    before = await rows(service, a)
    assert len(before) == 5  # positive control
    idx = scripted(service)
    idx.script[("delete", 3)] = "ignore"  # the backend acknowledges the last chunk but keeps it
    with pytest.raises(BackendError) as info:
        await service.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="bulk")
    assert info.value.key == "error.delete_unverified"
    assert await rows(service, a) == before
    assert not await service.fences() and not await service.kv.keys("journal/")
    assert not await ops(service, a, "episode.bulk_delete")
    # and when the backend behaves, the same delete removes all five in three calls, audited once
    idx.script.clear()
    assert await service.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="bulk") == 5
    assert await rows(service, a) == []
    (entry,) = await ops(service, a, "episode.bulk_delete")
    assert entry["summary"] == "deleted 5 memories"


async def test_a_reingested_document_is_deleted_from_every_scope_it_reached(service: MemoryService) -> None:
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    b = await scope_of(service, "person_bob", "bob")
    await service.ingest_document(KB, "doc-b", doc(("person_bob", "bob", "B1")), ADMIN)
    await service.ingest_document(KB, "doc-x", doc(("person_alice", "alice", "A1")), ADMIN)
    await service.ingest_document(KB, "doc-x", doc(("group_g1", "carol", "C1")), ADMIN)  # same id, other scope
    assert [r[2] for r in await rows(service, a)] == ["A1"] and [r[2] for r in await rows(service, c)] == ["C1"]
    index = json.loads(await service.kv.get("doc/" + KB + "/doc-x") or b"{}")
    assert index == {"user_keys": sorted([a.user_key, c.user_key])}
    assert await service.delete_document(KB, "doc-x", ADMIN) == 2
    assert await rows(service, a) == [] and await rows(service, c) == []
    assert [r[2] for r in await rows(service, b)] == ["B1"]  # another document of another scope stays
    assert await service.kv.get("doc/" + KB + "/doc-x") is None


async def test_overlapping_multi_scope_operations_do_not_deadlock(service: MemoryService) -> None:
    """Two documents over the same two scopes in opposite order, a bulk delete and a remember in one
    of them, all at once: the locks are taken in one order, so every operation completes."""
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    await service.remember(a, {"content": "old", "tags": ["old"]}, ADMIN)
    scripted(service).yield_each = True
    results = await asyncio.wait_for(
        asyncio.gather(
            service.ingest_document(KB, "d1", doc(("person_alice", "alice", "A1"), ("group_g1", "carol", "C1")), ADMIN),
            service.ingest_document(KB, "d2", doc(("group_g1", "carol", "C2"), ("person_alice", "alice", "A2")), ADMIN),
            service.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="old"),
            service.remember(c, {"content": "C3"}, ADMIN),
        ),
        timeout=60,  # a deadlock guard, not a speed assertion
    )
    assert results[:3] == [2, 2, 1]
    assert sorted(r[2] for r in await rows(service, a)) == ["A1", "A2"]
    assert sorted(r[2] for r in await rows(service, c)) == ["C1", "C2", "C3"]
    assert not await service.fences() and not await service.kv.keys("journal/")


async def test_a_single_chunk_delete_that_does_not_verify_is_taken_back(service: MemoryService) -> None:
    a = await scope_of(service)
    for n in range(3):
        await service.remember(a, {"content": f"row {n}", "tags": ["bulk"]}, ADMIN)
    before = await rows(service, a)
    scripted(service).script[("delete", 1)] = "ignore"  # acknowledged, nothing deleted
    with pytest.raises(BackendError) as info:
        await service.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="bulk")
    assert info.value.key == "error.delete_unverified"
    assert await rows(service, a) == before and len(before) == 3
    assert not await service.fences() and not await service.kv.keys("journal/")


async def test_a_pending_audit_is_written_before_the_next_write_of_its_scope(service: MemoryService) -> None:
    """The write applied but its audit append failed (acknowledged; bookkeeping pending): the next
    write to that scope first records it, so the journal never outlives a later change; while the
    audit still fails, that next write is refused and changes nothing."""
    a = await scope_of(service)
    real_set = service.kv.set
    failing = {"on": True}

    async def flaky_set(key: str, value: bytes) -> None:
        if key.startswith("audit/") and failing["on"]:
            raise OSError("storage went away")
        await real_set(key, value)

    service.kv.set = flaky_set  # type: ignore[method-assign]
    ep, _ = await service.remember(a, {"content": "Alice likes tea"}, ADMIN)  # applied, acknowledged
    assert [r[0] for r in await rows(service, a)] == [ep.id]  # positive control
    assert len(await service.kv.keys("journal/")) == 1
    with pytest.raises(BackendError):
        await service.forget(a, ep.id, ADMIN)
    assert [r[0] for r in await rows(service, a)] == [ep.id]  # the refused forget changed nothing
    failing["on"] = False
    await service.forget(a, ep.id, ADMIN)
    assert await rows(service, a) == []
    assert [e["operation"] for e in await service.audit.scope_export(a)] == ["episode.remember", "episode.forget"]
    assert not await service.kv.keys("journal/") and not await service.fences()


async def test_a_delete_racing_a_reingest_of_the_same_document_removes_every_scope(service: MemoryService) -> None:
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    await service.ingest_document(KB, "dx", doc(("person_alice", "alice", "A1")), ADMIN)
    real_set = service.kv.set
    stalled, release = asyncio.Event(), asyncio.Event()

    async def stalling_set(key: str, value: bytes) -> None:
        if key == f"doc/{KB}/dx" and not release.is_set():
            stalled.set()
            await release.wait()
        await real_set(key, value)

    service.kv.set = stalling_set  # type: ignore[method-assign]
    ingest = asyncio.create_task(service.ingest_document(KB, "dx", doc(("group_g1", "carol", "C1")), ADMIN))
    await asyncio.wait_for(stalled.wait(), 10)
    delete = asyncio.create_task(service.delete_document(KB, "dx", ADMIN))  # reads the index naming only A
    await asyncio.sleep(0.05)
    release.set()
    assert await asyncio.wait_for(ingest, 30) == 1
    assert await asyncio.wait_for(delete, 30) == 2  # A1 and C1: the scopes the index named under the locks
    assert await rows(service, a) == [] and await rows(service, c) == []
    assert await service.kv.get(f"doc/{KB}/dx") is None


async def test_taking_back_a_reject_keeps_a_tombstone_another_decision_wrote_meanwhile(tmp_path: Any) -> None:
    """While a reject is between its tombstone and its candidate record (which then fails), a
    ``forget --never`` of the same value commits its own tombstone on the same record. Taking the
    reject back removes only the reject's part: the value stays refused."""
    from ltm.domain.candidates import Proposal
    from ltm.domain.errors import TombstonedError

    svc = await build_service("numpy", tmp_path, review=with_review())
    review = svc.review
    assert review is not None
    a = await scope_of(svc)
    cand = await review.propose(a, Proposal("I live in Paris", "", "fact"), ADMIN, origin="test")
    ep, _ = await svc.remember(a, {"content": "I live in Paris"}, ADMIN)
    real_set = svc.kv.set
    state = {"first": True}

    async def interleaving_set(key: str, value: bytes) -> None:
        if key.endswith(f"/r/{cand.id}") and state["first"]:
            state["first"] = False
            await svc.forget(a, ep.id, ADMIN, reason="wrong", never=True)  # commits in between
            raise OSError("storage went away")
        await real_set(key, value)

    svc.kv.set = interleaving_set  # type: ignore[method-assign]
    with pytest.raises(BackendError):
        await review.reject(a, cand.id, ADMIN, reason="wrong")
    assert (await review.get(a, cand.id)).status == "pending"
    (tomb,), _ = await review.list_tombstones(a)
    assert tomb.sources == [ep.id] and tomb.kind == "forgotten"  # only the reject's part was taken back
    with pytest.raises(TombstonedError):
        await svc.remember(a, {"content": "I live in Paris"}, ADMIN)


async def _summarised_and_proposed(svc: MemoryService, a: Scope) -> tuple[Any, str, str]:
    """An active memory of ``a``, a summary that cites it (not replacing it) and a pending
    consolidation proposal over it: what its correction retires once the correction commits."""
    from ltm.domain.consolidation import source_refs
    from ltm.service.consolidation.proposals import Proposal

    cons = svc.consolidator  # the service was made with one
    assert cons is not None
    ep, _ = await svc.remember(a, {"content": "Alice drinks jasmine tea"}, ADMIN)
    plan = svc.episodes.plan_remember(a, {"content": "Alice likes hot drinks"}, ADMIN, origin="consolidation")
    plan.link({"sources": [ep.id], "proposal_id": "cp_" + "1" * 20})
    async with plan:
        await plan.commit()
    proposal = Proposal(
        id="cp_" + "2" * 20,
        collection=a.collection,
        user_key=a.user_key,
        scope_key=a.scope_key,
        sender_id=a.sender_id,
        created_at="2025-03-01T12:00:00Z",
        created_by=ADMIN.to_record(),
        sources=source_refs([ep]),
        summary="Alice drinks tea",
        valid_from=None,
        valid_until=None,
    )
    await cons.proposals.store(proposal)
    return ep, plan.remembered[0].id, f"consolidation/{a.user_key}/{proposal.id}"


async def test_a_refused_correction_runs_no_retire_cascade(consolidating_service: MemoryService) -> None:
    """The backend refuses the correction's write: the memory it failed to replace is still active,
    so the summary built on it and its pending proposal stay. The control: the same correction,
    accepted, takes both away."""
    service = consolidating_service
    a = await scope_of(service)
    ep, summary_id, proposal_key = await _summarised_and_proposed(service, a)
    scripted(service).script[("upsert", 1)] = "refuse"
    with pytest.raises(BackendError):
        await service.remember(a, {"content": "Alice drinks green tea now", "supersedes": [ep.id]}, ADMIN)
    assert (await service.get_episode(a, ep.id)).status == "active"
    assert (await service.get_episode(a, summary_id)).status == "active"
    assert await service.kv.get(proposal_key) is not None
    assert not await service.fences() and not await service.kv.keys("journal/")
    scripted(service).script.clear()  # the backend accepts again
    await service.remember(a, {"content": "Alice drinks green tea now", "supersedes": [ep.id]}, ADMIN)
    assert (await service.get_episode(a, ep.id)).status == "superseded"
    assert summary_id not in [r[0] for r in await rows(service, a)]
    assert await service.kv.get(proposal_key) is None


@pytest.mark.parametrize("fenced_chat", ["person_alice", "group_g1"])
async def test_a_document_delete_is_refused_whole_when_any_of_its_chats_is_fenced(
    service: MemoryService, fenced_chat: str
) -> None:
    """A document over two chats, one of them fenced (either one): the delete is refused and
    deletes nothing in either chat. The control: once the fence is cleared it deletes both."""
    a, c = await scope_of(service), await scope_of(service, "group_g1", "carol")
    await service.ingest_document(KB, "doc-1", doc(("person_alice", "alice", "A1"), ("group_g1", "carol", "C1")), ADMIN)
    before = (await rows(service, a), await rows(service, c))
    assert [len(r) for r in before] == [1, 1]
    fenced = a if fenced_chat == "person_alice" else c
    await service.writes.fencing.set_fence(l2_lock_key(fenced), fenced, "test", "an earlier write's outcome is unknown")
    with pytest.raises(FencedError) as info:
        await service.delete_document(KB, "doc-1", ADMIN)
    assert info.value.key == "error.fenced"
    assert (await rows(service, a), await rows(service, c)) == before
    assert await service.kv.get(f"doc/{KB}/doc-1") is not None
    assert await service.clear_fence(l2_lock_key(fenced), ADMIN)
    assert await service.delete_document(KB, "doc-1", ADMIN) == 2
    assert (await rows(service, a), await rows(service, c)) == ([], [])


async def test_a_failed_journal_close_then_a_write_gives_one_audit_entry_each(service: MemoryService) -> None:
    """Closing a remember's journal entry fails once (the remember is acknowledged; its bookkeeping
    pending): the next remember finishes it first without auditing it again."""
    a = await scope_of(service)
    real_delete = service.kv.delete
    failures = {"left": 1}

    async def flaky_delete(key: str) -> None:
        if key.startswith("journal/") and failures["left"]:
            failures["left"] -= 1
            raise OSError("storage went away")
        await real_delete(key)

    service.kv.delete = flaky_delete  # type: ignore[method-assign]
    await service.remember(a, {"content": "Alice likes tea"}, ADMIN)
    assert len(await service.kv.keys("journal/")) == 1  # positive control: the close did fail
    await service.remember(a, {"content": "Alice plays the cello"}, ADMIN)
    assert [e["operation"] for e in await service.audit.scope_export(a)] == ["episode.remember"] * 2
    assert not await service.kv.keys("journal/")
