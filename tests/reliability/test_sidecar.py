"""The sidecar (ltm/service/sidecar.py, ADR 0008) on its own: isolation kept by the store's file_id
filter (and lost without it: the positive control), the order of a write's two halves, the
compaction that reads the same wherever it is cut, reconcile, and a dropped knowledge base.

Every backend here is the fake LangBot host answering like one of the three adapters that drop
metadata (tests/support/host_runtime.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError, ActionCallTimeoutError

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.host_index import HostVectorIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.backends import DROPS_METADATA, KEEPS_METADATA, metadata_verdict, probe_metadata
from ltm.domain.models import Episode, EpisodeInput, build_episode
from ltm.domain.scope import Criteria, derive_scope, scope_filter
from ltm.ports import VectorRecord, WriteOutcomeUnknown
from ltm.service.sidecar import COMPACT_AT, SIDE_PREFIX, SidecarVectors, merge_scope
from tests.support.backends import DROPPING_HOSTS
from tests.support.host_runtime import PG_ALLOWED_DIMS, FakeHostHandler, make_plugin

DIM = 64
EMBED = HashingEmbedder(dim=DIM)
KB = "kb-side"
ALICE = derive_scope(launcher_type="person", launcher_id="alice", bot_uuid="bot-1", collection=KB)
BOB = derive_scope(launcher_type="person", launcher_id="bob", bot_uuid="bot-1", collection=KB)
METRIC = {"milvus": "similarity", "pgvector": "cosine", "valkey": "cosine"}


class FlakyKV(MemoryKeyValueStore):
    """Plugin storage whose next write fails (``fail``: raise before applying, or after)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: tuple[Callable[[str], bool], BaseException, bool] | None = None
        self.writes = 0

    def _maybe(self, key: str) -> tuple[BaseException, bool] | None:
        if self.fail is not None and self.fail[0](key):
            _, exc, after = self.fail
            self.fail = None
            return exc, after
        return None

    async def set(self, key: str, value: bytes) -> None:
        self.writes += 1
        hit = self._maybe(key)
        if hit and not hit[1]:
            raise hit[0]
        await super().set(key, value)
        if hit:
            raise hit[0]

    async def delete(self, key: str) -> None:
        self.writes += 1
        hit = self._maybe(key)
        if hit and not hit[1]:
            raise hit[0]
        await super().delete(key)
        if hit:
            raise hit[0]


def make(vdb: str = "pgvector") -> tuple[SidecarVectors, FakeHostHandler, FlakyKV]:
    fake = FakeHostHandler(vdb=vdb)
    fake.pg_allowed_dims = (*PG_ALLOWED_DIMS, DIM)
    fake.add_knowledge_base(KB)
    kv = FlakyKV()
    side = SidecarVectors(HostVectorIndex(make_plugin(fake)), kv)
    side.adopt_verdict(KB, DROPS_METADATA, METRIC[vdb])
    return side, fake, kv


def episode(scope: Any, text: str, **kw: Any) -> Episode:
    return build_episode(EpisodeInput(content=text, **kw), scope, origin="tool")


def rec(ep: Episode, vector: list[float] | None = None) -> VectorRecord:
    return VectorRecord(ep.id, vector or EMBED.embed_one(ep.content), ep.to_metadata(), ep.content)


async def ids(side: SidecarVectors, scope: Any, statuses: tuple[str, ...] | None = None) -> set[str]:
    page = await side.list(KB, scope_filter(scope.user_key, Criteria(statuses=statuses)), 100, 0)
    return {i.id for i in page.items}


def stored_rows(kv: MemoryKeyValueStore) -> dict[str, Any]:
    """Every row the stored sidecar values hold (shards with their deltas applied)."""
    scopes: dict[str, dict[str, bytes | None]] = {}
    for key, raw in kv._data.items():  # noqa: SLF001 - the stored values themselves
        if key.startswith(SIDE_PREFIX):
            scopes.setdefault(key.rsplit("/", 1)[0], {})[key] = raw
    out: dict[str, Any] = {}
    for values in scopes.values():
        for shard in merge_scope(values)[1]:
            out.update(shard)
    return out


@pytest.mark.parametrize("vdb", DROPPING_HOSTS)
async def test_isolation_is_the_stores_file_id_filter_and_lost_without_it(vdb: str) -> None:
    side, fake, _ = make(vdb)
    a, b = episode(ALICE, "Alice drinks jasmine tea"), episode(BOB, "Bob drinks jasmine tea")
    await side.upsert(KB, [rec(a), rec(b)])
    q = EMBED.embed_one("jasmine tea")
    where = scope_filter(ALICE.user_key, Criteria())
    assert [h.id for h in await side.search(KB, q, 10, where)] == [a.id]
    assert await ids(side, ALICE) == {a.id}
    # positive control: the same store, the scope filter handed over as it is -> it leaks
    side.isolate = False
    assert {h.id for h in await side.search(KB, q, 10, where)} == {a.id, b.id}
    assert await ids(side, ALICE) == {a.id, b.id}


def test_valkey_search_would_pass_a_metadata_only_probe() -> None:
    """Why the probe also lists with a filter it must not match: Valkey Search returns the whole
    metadata (metadata_json), so comparing it alone says it keeps metadata."""
    sent = probe_metadata("ltmprobe_1", "r1")
    valkey_returned = {**sent, "_langbot_instance_uuid": "i"}
    assert metadata_verdict(sent, valkey_returned) == KEEPS_METADATA


async def test_a_rewrite_that_keeps_the_vector_writes_no_host_row() -> None:
    side, fake, _ = make()
    a = episode(ALICE, "Alice plays the cello")
    await side.upsert(KB, [rec(a)])
    upserts = len([c for c in fake.calls if c[0].value == "vector_upsert"])
    await side.upsert(KB, [rec(a.retagged(status="archived"))])
    assert len([c for c in fake.calls if c[0].value == "vector_upsert"]) == upserts
    assert await ids(side, ALICE, ("active",)) == set() and await ids(side, ALICE, ("archived",)) == {a.id}


async def test_a_refused_metadata_write_takes_the_new_vectors_back() -> None:
    side, fake, kv = make()
    a = episode(ALICE, "Alice lives in Berlin")
    kv.fail = (lambda k: k.startswith(SIDE_PREFIX), ActionCallError("injected refusal"), False)
    with pytest.raises(ActionCallError):
        await side.upsert(KB, [rec(a)])
    assert fake.vector_rows(KB)["ids"] == []  # the vector went again
    assert await ids(side, ALICE) == set()
    await side.upsert(KB, [rec(a)])  # positive control: the same write then works
    assert await ids(side, ALICE) == {a.id}


@pytest.mark.parametrize("after", [False, True])
async def test_an_unknown_metadata_write_is_an_unknown_outcome_and_reads_as_stored(after: bool) -> None:
    side, fake, kv = make()
    a = episode(ALICE, "Alice lives in Berlin")
    kv.fail = (lambda k: k.startswith(SIDE_PREFIX), ActionCallTimeoutError("timed out"), after)
    with pytest.raises(WriteOutcomeUnknown):
        await side.upsert(KB, [rec(a)])
    # whatever landed is what reads: the row if its metadata did, else nothing
    assert await ids(side, ALICE) == ({a.id} if after else set())


async def test_a_delete_removes_the_metadata_first_and_a_failed_vector_delete_leaves_nothing_visible() -> None:
    side, fake, kv = make()
    a = episode(ALICE, "Alice drinks jasmine tea")
    await side.upsert(KB, [rec(a)])
    fake.fail_next(A.VECTOR_DELETE)
    await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(a.id,))))  # refused: logged
    assert await ids(side, ALICE, None) == set()
    assert len(fake.vector_rows(KB)["ids"]) == 1  # the vector stays, named by no metadata
    counts = await side.reconcile(KB)
    assert counts == {"vectors_deleted": 1, "metadata_removed": 0}
    assert fake.vector_rows(KB)["ids"] == []


async def test_reconcile_removes_metadata_whose_vector_is_gone() -> None:
    side, fake, kv = make()
    a, b = episode(ALICE, "Alice one"), episode(ALICE, "Alice two")
    await side.upsert(KB, [rec(a), rec(b)])
    fake.dropping_rows[KB].pop(a.id)  # the store lost it
    assert await ids(side, ALICE) == {b.id}  # a listing leaves it out at once
    assert (await side.reconcile(KB))["metadata_removed"] == 1
    assert set(stored_rows(kv)) == {b.id}


async def test_compaction_reads_the_same_wherever_it_is_cut() -> None:
    """Every write of a compaction failing in turn (before and after applying): the stored state
    reads the same as before it, and the next compaction finishes it."""
    side, fake, kv = make()
    eps = [episode(ALICE, f"Alice fact {n}") for n in range(COMPACT_AT - 2)]  # no compaction yet
    for e in eps:  # one delta per write
        await side.upsert(KB, [rec(e)])
    await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(eps[0].id,))))
    want = set(stored_rows(kv))
    assert want == {e.id for e in eps[1:]}
    snapshot = dict(kv._data)  # noqa: SLF001
    cuts = 0
    while True:
        kv._data = dict(snapshot)  # noqa: SLF001
        fresh = SidecarVectors(side.inner, kv)
        fresh.adopt_verdict(KB, DROPS_METADATA, "cosine")
        held = await fresh._load(KB, _tag())  # noqa: SLF001
        seen = {"n": 0}

        def nth(key: str, seen: dict[str, int] = seen, target: int = cuts) -> bool:
            seen["n"] += 1
            return seen["n"] == target + 1

        kv.fail = (nth, ActionCallTimeoutError("cut"), cuts % 2 == 1)
        await fresh._compact(KB, _tag(), held)  # noqa: SLF001 - logs, never raises
        cut = kv.fail is None
        kv.fail = None
        assert set(stored_rows(kv)) == want, cuts
        if not cut:  # it ran to its end: nothing left to cut
            assert not [k for k in kv._data if k.rsplit("/", 1)[-1].startswith("d")]  # noqa: SLF001
            break
        cuts += 1
    assert cuts > 2  # positive control: the compaction had several writes to cut


def _tag() -> str:
    from ltm.domain.backends import scope_tag

    return scope_tag(KB, ALICE.user_key)


@pytest.mark.parametrize("vdb", DROPPING_HOSTS)
async def test_a_dropped_knowledge_base_leaves_no_vector_and_no_metadata(vdb: str) -> None:
    """Milvus and pgvector delete every plugin row by a file-id range, Valkey Search by a listing."""
    side, fake, kv = make(vdb)
    await side.upsert(KB, [rec(episode(ALICE, "Alice one")), rec(episode(BOB, "Bob one"))])
    assert fake.vector_rows(KB)["ids"] and stored_rows(kv)
    await side.drop_collection(KB)
    assert fake.vector_rows(KB)["ids"] == []
    assert not [k for k in kv._data if k.startswith(SIDE_PREFIX)]  # noqa: SLF001


async def test_the_recovery_after_a_restart_deletes_a_vector_its_cut_write_left() -> None:
    """A write cut between its vector and its metadata (a crash) leaves a vector no filter names;
    the journal's recovery after the restart reconciles and deletes it. The row was never visible."""
    from ltm.service import Actor
    from tests.support.reliability import EMBEDDING_MODEL, host_service

    fake = FakeHostHandler(vdb="milvus", bots=["bot1"])
    svc = host_service(fake)
    fake.add_knowledge_base(KB)
    await svc.register_kb(KB, {"embedding_model": EMBEDDING_MODEL})
    alice = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    kept, _ = await svc.remember(
        alice, {"content": "Alice drinks jasmine tea"}, Actor(surface="tool", sender_id="alice")
    )
    cut, _ = await svc.remember(alice, {"content": "Alice lives in Berlin"}, Actor(surface="tool", sender_id="alice"))
    last = max(k for k in fake.storage if k.startswith(SIDE_PREFIX))  # the second write's metadata
    del fake.storage[last]  # as if the process died before storing it
    assert len(fake.vector_rows(KB)["ids"]) == 2
    again = host_service(fake)
    await again.recover()
    assert fake.vector_rows(KB)["ids"] == [kept.id]  # the cut write's vector is gone
    listed = (await again.list_episodes(alice, statuses=None)).items
    assert [e.id for e in listed] == [kept.id] and cut.id not in {e.id for e in listed}
