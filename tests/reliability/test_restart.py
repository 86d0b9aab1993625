"""Restarts: fences persist, and a half-finished operation is settled by ``recover()``.

An installation is a key-value store and a vector store that outlive the service: SQLite on disk +
Chroma or Qdrant on disk, or the fake LangBot host (its plugin storage and vectors). A "restart" is
a new :class:`MemoryService` (new adapters) over the same stores.

A crash is simulated by freezing the old service at a chosen point - a store call that never
returns - so that none of its exception handlers or ``finally`` blocks run (a killed process runs
none either); the frozen task is abandoned and only cancelled once the test is over.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.sqlite_kv import SqliteKeyValueStore
from ltm.domain.errors import FencedError
from ltm.domain.filters import Criteria
from ltm.domain.scope import Scope
from ltm.domain.storage_keys import audit_log_key, l2_lock_key
from ltm.ports import VectorRecord
from ltm.service import Actor, MemoryService, Settings
from ltm.service.writes import DELETE_BATCH
from tests.support import DelegatingIndex, stored_audit_entries, with_review
from tests.support.reliability import EMBEDDING_MODEL, TIMEOUT_AFTER, FaultyHost, host_service
from tests.support.reliability import KB as HOST_KB

ADMIN = Actor(surface="test", sender_id="admin", privilege=2)
Hook = Callable[[str, str, str], Awaitable[None]]  # (method, key or collection, "before"|"after")


async def _freeze() -> None:
    """The process "dies" here: this call never returns."""
    await asyncio.Event().wait()


def crash_at(method: str, key_prefix: str = "", phase: str = "before", nth: int = 1) -> Hook:
    """A hook freezing the ``nth`` matching store call, ``before`` or ``after`` it is applied."""
    seen = 0

    async def hook(m: str, key: str, p: str) -> None:
        nonlocal seen
        if m == method and key.startswith(key_prefix) and p == phase:
            seen += 1
            if seen == nth:
                await _freeze()

    return hook


class HookKV:
    def __init__(self, inner: Any, hook: Hook | None) -> None:
        self.inner, self.hook, self.name = inner, hook, getattr(inner, "name", "kv")

    async def _around(self, method: str, key: str, call: Callable[[], Awaitable[Any]]) -> Any:
        if self.hook:
            await self.hook(method, key, "before")
        out = await call()
        if self.hook:
            await self.hook(method, key, "after")
        return out

    async def get(self, key: str) -> bytes | None:
        return await self.inner.get(key)

    async def set(self, key: str, value: bytes) -> None:
        await self._around("set", key, lambda: self.inner.set(key, value))

    async def delete(self, key: str) -> None:
        await self._around("delete", key, lambda: self.inner.delete(key))

    async def keys(self, prefix: str = "") -> list[str]:
        return await self.inner.keys(prefix)


class HookIndex(DelegatingIndex):
    def __init__(self, inner: Any, hook: Hook | None) -> None:
        super().__init__(inner)
        self.hook = hook

    async def _around(self, method: str, collection: str, call: Callable[[], Awaitable[Any]]) -> Any:
        if self.hook:
            await self.hook(method, collection, "before")
        out = await call()
        if self.hook:
            await self.hook(method, collection, "after")
        return out

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        await self._around("upsert", collection, lambda: self.inner.upsert(collection, records))

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        await self._around("delete", collection, lambda: self.inner.delete(collection, where))


class Installation:
    """Stores that survive restarts; :meth:`start` opens a new service over them."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind, self.tmp = kind, tmp
        self.kb = HOST_KB if kind == "host" else "kb-restart"
        self.fake = FaultyHost(bots=["bot1"]) if kind == "host" else None
        self._open: list[Any] = []
        self._sqlite: list[SqliteKeyValueStore] = []
        self.frozen: list[asyncio.Task[Any]] = []
        self._registered = False

    async def start(
        self,
        *,
        kv_hook: Hook | None = None,
        index_hook: Hook | None = None,
        delete_batch: int = DELETE_BATCH,
        review: bool = False,
    ) -> MemoryService:
        self._close_stores()
        if self.fake is not None:
            base = host_service(self.fake, Settings)
            kv, index, embedder_for = base.kv, base.vectors, base.embedder_for
            if not self._registered:
                self.fake.add_knowledge_base(self.kb)
        else:
            emb = HashingEmbedder()
            kv = SqliteKeyValueStore(self.tmp / "kv.sqlite3")
            index = self._index()

            def embedder_for(collection: str, kb: Any) -> Any:
                return emb

            self._open.append(index)
            self._sqlite.append(kv)
        svc = MemoryService(
            kv=HookKV(kv, kv_hook),
            vectors=HookIndex(index, index_hook),
            embedder_for=embedder_for,
            delete_batch=delete_batch,
            review=with_review() if review else None,  # the process is made with a review queue
        )
        if not self._registered:
            await svc.register_kb(self.kb, {"embedding_model": EMBEDDING_MODEL, "isolation": "session"})
            self._registered = True
        return svc

    def _index(self) -> Any:
        if self.kind == "chroma":
            from ltm.adapters.chroma_index import ChromaIndex

            return ChromaIndex(str(self.tmp / "chroma"))
        from ltm.adapters.qdrant_index import QdrantIndex

        return QdrantIndex(str(self.tmp / "qdrant"))

    def _close_stores(self) -> None:
        for store in self._open:  # vector stores lock their folder (Qdrant); SQLite copes with several
            close = getattr(store, "close", None)
            if close:
                close()
        self._open = []

    async def crash_during(self, aw: Awaitable[Any]) -> None:
        """Run ``aw`` until it freezes (the simulated crash) and abandon it."""
        task = asyncio.ensure_future(aw)
        for _ in range(500):
            await asyncio.sleep(0.002)
            if task.done():
                raise AssertionError(f"the operation finished instead of crashing: {task.result()!r}")
            if _frozen(task):
                break
        self.frozen.append(task)

    async def close(self) -> None:
        for task in self.frozen:
            task.cancel()
        await asyncio.gather(*self.frozen, return_exceptions=True)
        self._close_stores()
        for kv in self._sqlite:
            kv.close()
        if self.fake is not None:
            self.fake.close()

    async def scope(self, svc: MemoryService, session: str = "person_alice", sender: str = "alice") -> Scope:
        return await svc.scope_for(kb_id=self.kb, session_name=session, bot_uuid="bot1", sender_id=sender)


def _frozen(task: asyncio.Task[Any]) -> bool:
    """Whether the task is parked in :func:`_freeze` (its innermost frame)."""
    coro: Any = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None)
        if frame is not None and frame.f_code is _freeze.__code__:
            return True
        coro = getattr(coro, "cr_await", None)
    return False


@pytest.fixture(params=["chroma", "qdrant", "host"])
async def inst(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Installation]:
    installation = Installation(request.param, tmp_path)
    yield installation
    await installation.close()


async def _ops(svc: MemoryService, scope: Scope, operation: str) -> int:
    return sum(1 for e in await stored_audit_entries(svc, scope) if e["operation"] == operation)


# --------------------------------------------------------------------------------------------
# fences survive restarts
# --------------------------------------------------------------------------------------------


class TimeoutAfterUpsert:
    """The vector write is applied, then the call times out (outcome unknown to the service)."""

    def __init__(self) -> None:
        self.armed = True

    async def __call__(self, method: str, key: str, phase: str) -> None:
        if self.armed and method == "upsert" and phase == "after":
            self.armed = False
            raise TimeoutError("vector write timed out (injected)")


async def test_a_fence_survives_a_restart_and_still_refuses_writes(inst: Installation) -> None:
    """An unknown outcome fences scope A. After a restart the fence is still there: A's writes are
    refused (error.fenced), B's are accepted, A can be read; recover() completes the applied write
    (one audit entry) but keeps the fence; an audited clear lets A's writes in again."""
    if inst.fake is not None:
        svc = await inst.start()
        inst.fake.arm_action(A.VECTOR_UPSERT, TIMEOUT_AFTER)
    else:
        svc = await inst.start(index_hook=TimeoutAfterUpsert())
    a = await inst.scope(svc)
    with pytest.raises(FencedError) as info:
        await svc.remember(a, {"content": "Alice moved to Hamburg"}, ADMIN)
    assert info.value.key == "error.fenced_now"
    lock = l2_lock_key(a)
    assert lock in await svc.fences()
    with pytest.raises(FencedError):
        await svc.remember(a, {"content": "refused in the same process"}, ADMIN)

    svc2 = await inst.start()  # restart
    a2, b2 = await inst.scope(svc2), await inst.scope(svc2, "person_bob", "bob")
    assert lock in await svc2.fences()
    with pytest.raises(FencedError) as info:
        await svc2.remember(a2, {"content": "refused after the restart"}, ADMIN)
    assert info.value.key == "error.fenced"
    await svc2.remember(b2, {"content": "Bob is unaffected"}, ADMIN)
    contents = {e.content for e in (await svc2.list_episodes(a2, statuses=None)).items}
    assert "Alice moved to Hamburg" in contents  # the write was applied before the timeout
    assert "refused after the restart" not in contents
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.remember", "applied")]
    assert await _ops(svc2, a2, "episode.remember") == 1
    assert lock in await svc2.fences()  # recovery reports; an operator clears
    assert await _ops(svc2, a2, "fence.set") == 1

    svc3 = await inst.start()  # and again: still fenced, nothing left to recover
    assert await svc3.recover() == []
    a3 = await inst.scope(svc3)
    with pytest.raises(FencedError):
        await svc3.remember(a3, {"content": "still refused"}, ADMIN)
    assert await svc3.clear_fence(lock, ADMIN, reason="checked")
    assert await _ops(svc3, a3, "fence.clear") == 1
    await svc3.remember(a3, {"content": "accepted after the clear"}, ADMIN)
    svc4 = await inst.start()
    assert await svc4.fences() == {}


# --------------------------------------------------------------------------------------------
# half-finished operations
# --------------------------------------------------------------------------------------------


async def _seed(svc: MemoryService, inst: Installation) -> dict[str, str]:
    a = await inst.scope(svc)
    e1, _ = await svc.remember(a, {"content": "Alice drinks jasmine tea"}, ADMIN)
    e2, _ = await svc.remember(a, {"content": "Alice lives in Berlin"}, ADMIN)
    return {"e1": e1.id, "e2": e2.id}


OPS: dict[str, tuple[str, Callable[[MemoryService, Scope, dict[str, str]], Awaitable[Any]]]] = {
    "remember": ("episode.remember", lambda s, a, ids: s.remember(a, {"content": "Alice ran a marathon"}, ADMIN)),
    "supersede": (
        "episode.remember",
        lambda s, a, ids: s.remember(a, {"content": "Alice lives in Hamburg", "supersedes": [ids["e2"]]}, ADMIN),
    ),
    "forget": ("episode.forget", lambda s, a, ids: s.forget(a, ids["e1"], ADMIN)),
    "archive": ("episode.archive", lambda s, a, ids: s.set_status(a, ids["e1"], "archived", ADMIN)),
    "bulk_delete": ("episode.bulk_delete", lambda s, a, ids: s.bulk_delete(a, Criteria(statuses=None), ADMIN)),
    "update_profile": ("profile.update", lambda s, a, ids: s.update_profile(a, {"add_traits": ["bold"]}, ADMIN)),
}


async def _expect_applied(svc: MemoryService, a: Scope, op: str, ids: dict[str, str]) -> None:
    eps = {e.id: e for e in (await svc.list_episodes(a, statuses=None, page_size=100)).items}
    if op == "remember":
        assert any(e.content == "Alice ran a marathon" for e in eps.values())
    elif op == "supersede":
        assert eps[ids["e2"]].status == "superseded"
    elif op == "forget":
        assert ids["e1"] not in eps
    elif op == "archive":
        assert eps[ids["e1"]].status == "archived"
    elif op == "bulk_delete":
        assert eps == {}
    else:
        assert (await svc.get_profile(a, "speaker", "alice")).traits == ["bold"]


@pytest.mark.parametrize("op", sorted(OPS))
async def test_crash_after_the_write_before_the_audit_is_completed_by_recover(inst: Installation, op: str) -> None:
    """Journal written, the data write applied, crash before the audit entry. After a restart,
    ``recover()`` reports the operation as applied, writes its one audit entry, closes the journal
    and leaves no fence; a second ``recover()`` has nothing to do."""
    operation, run = OPS[op]
    svc = await inst.start()
    ids = await _seed(svc, inst)
    svc = await inst.start(kv_hook=crash_at("set", "audit/"))
    a = await inst.scope(svc)
    await inst.crash_during(run(svc, a, ids))
    svc2 = await inst.start()
    a2 = await inst.scope(svc2)
    assert await svc2.kv.keys("journal/"), "the crashed operation left no journal entry"
    before = await _ops(svc2, a2, operation)
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [(operation, "applied")]
    await _expect_applied(svc2, a2, op, ids)
    assert await _ops(svc2, a2, operation) == before + 1
    assert await svc2.kv.keys("journal/") == []
    assert await svc2.fences() == {}
    assert await svc2.recover() == []
    assert await _ops(svc2, a2, operation) == before + 1
    await svc2.remember(a2, {"content": "writes go on"}, ADMIN)


async def test_crash_between_two_chunks_of_a_bulk_delete_is_fenced_and_reported(inst: Installation) -> None:
    """The process dies between the backend calls of a chunked bulk delete (nothing could take the
    first chunk back): after a restart ``recover()`` reports the operation as partial and fences the
    scope; the rows are still readable; nothing was audited as done; clearing the fence lets the
    operator finish the delete."""
    svc = await inst.start()
    a = await inst.scope(svc)
    for n in range(5):
        await svc.remember(a, {"content": f"bulk row {n}", "tags": ["bulk"]}, ADMIN)
    svc = await inst.start(index_hook=crash_at("delete", inst.kb, nth=2), delete_batch=2)
    a = await inst.scope(svc)
    await inst.crash_during(svc.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="bulk"))
    svc2 = await inst.start()
    a2 = await inst.scope(svc2)
    assert len((await svc2.list_episodes(a2, statuses=None)).items) == 3  # the first chunk is gone
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.bulk_delete", "partial")]
    assert list(await svc2.fences()) == [l2_lock_key(a2)]
    assert await _ops(svc2, a2, "episode.bulk_delete") == 0
    with pytest.raises(FencedError):
        await svc2.bulk_delete(a2, Criteria(statuses=None), ADMIN, tag="bulk")
    assert await svc2.clear_fence(l2_lock_key(a2), ADMIN, reason="checked")
    assert await svc2.bulk_delete(a2, Criteria(statuses=None), ADMIN, tag="bulk") == 3
    assert (await svc2.list_episodes(a2, statuses=None)).items == []


async def test_crash_after_a_two_scope_document_before_its_audits_is_completed_once_per_scope(
    inst: Installation,
) -> None:
    """Every step of a document over two scopes applied, the crash hits the first audit append:
    ``recover()`` finds the operation applied and writes one audit entry in each scope's log."""
    svc = await inst.start(kv_hook=crash_at("set", "audit/"))
    doc = {
        "episodes": [
            {"session_name": "person_alice", "bot_uuid": "bot1", "sender_id": "alice", "content": "Alice doc"},
            {"session_name": "group_g1", "bot_uuid": "bot1", "sender_id": "carol", "content": "Carol doc"},
        ]
    }
    await inst.crash_during(svc.ingest_document(inst.kb, "doc-r", doc, ADMIN))
    svc2 = await inst.start()
    a2, c2 = await inst.scope(svc2), await inst.scope(svc2, "group_g1", "carol")
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("document.ingest", "applied")]
    for scope, content in ((a2, "Alice doc"), (c2, "Carol doc")):
        assert [e.content for e in (await svc2.list_episodes(scope)).items] == [content]
        assert await _ops(svc2, scope, "document.ingest") == 1
    assert await svc2.fences() == {} and await svc2.kv.keys("journal/") == []
    assert await svc2.delete_document(inst.kb, "doc-r", ADMIN) == 2


async def test_crash_between_a_forget_and_its_tombstone_is_fenced_and_reported(inst: Installation) -> None:
    """``forget --never`` is one mutation (the delete, then the tombstone). The process dies between
    the two: after a restart ``recover()`` reports it partial and fences the scope, so the value
    cannot be written again unnoticed before an operator looked; nothing was audited as done."""

    svc = await inst.start()
    ids = await _seed(svc, inst)
    svc = await inst.start(kv_hook=crash_at("set", "tomb/"), review=True)
    a = await inst.scope(svc)
    await inst.crash_during(svc.forget(a, ids["e1"], ADMIN, reason="wrong", never=True))
    svc2 = await inst.start(review=True)
    a2 = await inst.scope(svc2)
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.forget", "partial")]
    assert list(await svc2.fences()) == [l2_lock_key(a2)]
    assert await _ops(svc2, a2, "episode.forget") == 0 and await _ops(svc2, a2, "tombstone.record") == 0
    with pytest.raises(FencedError):
        await svc2.remember(a2, {"content": "Alice drinks jasmine tea"}, ADMIN)


async def test_crash_between_an_accepted_candidate_and_the_open_list_is_fenced_and_reported(
    inst: Installation,
) -> None:
    """An accept is one mutation: the memory, the candidate's record, its removal from the open list.
    The process dies before the open list is written: recovery must not call that applied (the
    candidate would stay listed as open for good); it reports it partial and fences the scope."""
    from ltm.domain.candidates import Proposal

    svc = await inst.start(review=True)
    a = await inst.scope(svc)
    assert svc.review is not None
    cand = await svc.review.propose(a, Proposal("Alice collects stamps", "", "fact"), ADMIN, origin="test")
    svc = await inst.start(kv_hook=crash_at("set", f"cand/{inst.kb}/{a.user_key}/open"), review=True)
    review = svc.review
    assert review is not None
    await inst.crash_during(review.accept(await inst.scope(svc), cand.id, ADMIN))
    svc2 = await inst.start(review=True)
    a2 = await inst.scope(svc2)
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.remember", "partial")]
    assert list(await svc2.fences()) == [l2_lock_key(a2)]
    assert await _ops(svc2, a2, "candidate.accept") == 0


async def test_crash_after_the_audit_before_closing_the_journal_is_not_audited_twice(inst: Installation) -> None:
    """The audit entry is written, the crash hits while the journal entry is being deleted:
    recovery finds the op's audit entry (by op id) and only closes the journal."""
    svc = await inst.start()
    ids = await _seed(svc, inst)
    svc = await inst.start(kv_hook=crash_at("delete", "journal/"))
    a = await inst.scope(svc)
    await inst.crash_during(svc.forget(a, ids["e1"], ADMIN))
    svc2 = await inst.start()
    a2 = await inst.scope(svc2)
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.forget", "applied")]
    assert await _ops(svc2, a2, "episode.forget") == 1
    assert await svc2.kv.keys("journal/") == []


async def test_crash_before_the_write_is_dropped_by_recover(inst: Installation) -> None:
    """Journal written, crash before the vector write reached the store: nothing was applied, so
    recovery drops the entry - no audit, no fence, the data unchanged."""
    svc = await inst.start()
    ids = await _seed(svc, inst)
    svc = await inst.start(index_hook=crash_at("upsert", phase="before"))
    a = await inst.scope(svc)
    await inst.crash_during(svc.set_status(a, ids["e1"], "archived", ADMIN))
    svc2 = await inst.start()
    a2 = await inst.scope(svc2)
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.archive", "not_applied")]
    assert (await svc2.get_episode(a2, ids["e1"])).status == "active"
    assert await _ops(svc2, a2, "episode.archive") == 0
    assert await svc2.fences() == {}
    assert await svc2.kv.keys("journal/") == []


async def test_a_partial_multi_step_delete_is_fenced_and_reported(inst: Installation) -> None:
    """A bulk delete of 150 rows, sent in batches of 100 (``delete_batch``; the default batch of 2,000
    makes such a delete one call), crashes after its first batch was deleted. After the
    restart ``recover()`` reports it as partial and fences the scope: writes are refused, reads
    work and show what is left; after an audited clear, writes are accepted again."""
    svc = await inst.start()
    a = await inst.scope(svc)
    items = [
        {"session_name": "person_alice", "bot_uuid": "bot1", "sender_id": "alice", "content": f"row {n}", "tags": ["x"]}
        for n in range(150)
    ]
    await svc.ingest_document(inst.kb, "doc-big", {"episodes": items}, ADMIN)
    svc = await inst.start(index_hook=crash_at("delete", phase="after", nth=1), delete_batch=100)
    a = await inst.scope(svc)
    await inst.crash_during(svc.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="x"))
    svc2 = await inst.start()
    a2 = await inst.scope(svc2)
    report = await svc2.recover()
    assert [(r["operation"], r["state"]) for r in report] == [("episode.bulk_delete", "partial")]
    lock = l2_lock_key(a2)
    assert lock in await svc2.fences()
    with pytest.raises(FencedError) as info:
        await svc2.remember(a2, {"content": "refused"}, ADMIN)
    assert info.value.key == "error.fenced"
    left = (await svc2.list_episodes(a2, statuses=None, page_size=100)).items
    assert len(left) == 50
    assert await svc2.clear_fence(lock, ADMIN, reason="checked the partial delete")
    await svc2.remember(a2, {"content": "accepted"}, ADMIN)


async def test_crash_between_the_audit_chunk_and_its_head_is_audited_once(inst: Installation) -> None:
    svc = await inst.start()
    ids = await _seed(svc, inst)
    svc = await inst.start()
    a = await inst.scope(svc)
    svc.kv.hook = crash_at("set", f"audit/{audit_log_key(a)}/head")
    await inst.crash_during(svc.forget(a, ids["e1"], ADMIN))
    svc2 = await inst.start()
    a2 = await inst.scope(svc2)
    await svc2.recover()
    assert await _ops(svc2, a2, "episode.forget") == 1
