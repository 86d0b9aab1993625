"""The sidecar's edges (ltm/service/sidecar.py), each a bug a mutation pass (``scripts/mutate``)
injected and tests/reliability/test_sidecar.py let through: the stored format read as written
(empty values, half-bad shards, deltas in sequence order, the shard and digest functions that
stored data depends on), a removed row's metadata folded out of storage by ``tidy``, a cold process
finding a row across scopes by its id, a warm one reading only the scope it holds, a ghost row
visible again once rewritten, a rewritten vector whose metadata was refused fencing the scope, and
every call passed through on a backend that keeps metadata."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError, ActionCallTimeoutError

from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.backends import DROPS_METADATA, KEEPS_METADATA, scope_tag
from ltm.domain.errors import BackendError
from ltm.domain.filters import Criteria, scope_filter
from ltm.ports import ListPage, VectorHit, VectorRecord, WriteOutcomeUnknown
from ltm.service.registry import KB_PREFIX
from ltm.service.sidecar import (
    SIDE_PREFIX,
    SidecarCorrupt,
    SidecarVectors,
    decode_shard,
    encode_shard,
    merge_scope,
    scope_prefix,
    shard_of,
    vector_digest,
)
from tests.reliability.test_sidecar import ALICE, BOB, EMBED, KB, episode, ids, make, rec, stored_rows


# ------------------------------------------------------------------------------------------ the format
def test_an_absent_value_reads_as_no_rows_and_a_half_bad_one_as_corrupt() -> None:
    assert decode_shard(None) == ("", {}) and decode_shard(b"") == ("", {})
    good = {"m": {"status": "active"}, "d": "", "v": "00"}
    assert decode_shard(encode_shard("u1", {"r1": good, "r2": None})) == ("u1", {"r1": good, "r2": None})
    for bad in ("text", {"d": "no metadata"}, {"m": "not an object"}):
        with pytest.raises(SidecarCorrupt):
            decode_shard(encode_shard("u1", {"r1": good, "r2": bad}))  # type: ignore[dict-item]


def test_deltas_apply_in_sequence_order_whatever_order_they_are_read_in() -> None:
    prefix = scope_prefix(KB, "t1")
    old, new = {"m": {"v": 1}, "d": "", "v": "a"}, {"m": {"v": 2}, "d": "", "v": "b"}
    values = {
        f"{prefix}d00000002": encode_shard("u1", {"r1": new}),
        f"{prefix}d00000001": encode_shard("u1", {"r1": old}),
        f"{prefix}d00000003": encode_shard("u1", {"r2": old}),
    }
    user_key, shards, deltas, _ = merge_scope(values)
    rows = {rid: e for s in shards for rid, e in s.items()}
    assert (user_key, deltas, rows) == ("u1", [1, 2, 3], {"r1": new, "r2": old})


def test_the_shard_and_digest_functions_stored_data_depends_on_do_not_change() -> None:
    """Rows stored by one version are placed by ``shard_of`` and compared by ``vector_digest`` in
    the next: a changed function would leave a row in two shards (a deleted row coming back) or
    rewrite every vector. Pinned values."""
    assert [shard_of(x) for x in ("ep_0001", "ep_abc", "cand", "x")] == [15, 15, 3, 13]
    assert vector_digest([0.5, -1.0, 2.0]) == "79182ea173f68984"


# ------------------------------------------------------------------------------------------ tidy
def _scope_values(kv: MemoryKeyValueStore, user_key: str) -> dict[str, bytes]:
    prefix = scope_prefix(KB, scope_tag(KB, user_key))
    return {k: v for k, v in kv._data.items() if k.startswith(prefix)}  # noqa: SLF001 - the stored values


async def test_tidy_folds_a_removed_rows_metadata_out_of_every_stored_value() -> None:
    side, _, kv = make()
    a, b = episode(ALICE, "Alice one"), episode(ALICE, "Alice two")
    await side.upsert(KB, [rec(a), rec(b)])
    await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(b.id,))))
    assert await side.tidy() == 1  # the scope a delete touched
    assert await side.tidy() == 0  # nothing left to fold
    values = _scope_values(kv, ALICE.user_key)
    assert values and not [k for k in values if k.rsplit("/", 1)[-1].startswith("d")]  # no delta left
    assert b.id.encode() not in b"".join(values.values()) and set(stored_rows(kv)) == {a.id}
    await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(a.id,))))
    assert await side.tidy() == 1
    assert _scope_values(kv, ALICE.user_key) == {}  # the emptied shard is deleted, not kept
    assert await ids(side, ALICE, None) == set()


# ------------------------------------------------------------------------------------------ finding rows
def _by_id(rid: str) -> dict[str, Any]:
    return {"episode_id": {"$eq": rid}}


async def _alice_and_bob_then_another_process() -> tuple[Any, Any, Any, Any, SidecarVectors]:
    """Alice's and Bob's rows written by one process, and a second process over the same stores
    (nothing loaded yet)."""
    side, fake, kv = make()
    a, b = episode(ALICE, "Alice one"), episode(BOB, "Bob one")
    await side.upsert(KB, [rec(a), rec(b)])
    other = SidecarVectors(side.inner, kv)
    other.adopt_verdict(KB, DROPS_METADATA, "cosine")
    return fake, kv, a, b, other


async def test_a_cold_process_deletes_a_row_by_its_id_in_whichever_scope_it_is() -> None:
    fake, _, a, b, cold = await _alice_and_bob_then_another_process()
    await cold.delete(KB, _by_id(a.id))
    assert fake.vector_rows(KB)["ids"] == [b.id]  # its vector, named by the scope's own file id
    assert await ids(cold, ALICE, None) == set() and await ids(cold, BOB, None) == {b.id}


async def test_a_warm_process_finds_a_row_by_id_in_the_scope_it_holds_without_reading_others() -> None:
    fake, kv, a, b, warm = await _alice_and_bob_then_another_process()
    assert await ids(warm, ALICE) == {a.id}  # Alice's scope is loaded now, Bob's is not
    reads: list[str] = []
    get = kv.get

    async def recording(key: str) -> bytes | None:
        reads.append(key)
        return await get(key)

    kv.get = recording  # type: ignore[method-assign]
    await warm.delete(KB, _by_id(a.id))
    bob = scope_prefix(KB, scope_tag(KB, BOB.user_key))
    assert not [k for k in reads if k.startswith(bob)], reads
    assert fake.vector_rows(KB)["ids"] == [b.id]
    await warm.delete(KB, _by_id(b.id))  # control: a row of a scope it does not hold is found too
    assert fake.vector_rows(KB)["ids"] == [] and [k for k in reads if k.startswith(bob)]


async def test_rows_list_oldest_first_whatever_their_stored_time_looks_like() -> None:
    """A row's time (``ts``) is a number; a missing, boolean or text one counts as 0 (oldest)."""
    side, _, _ = make()
    rows = []
    for n, ts in enumerate([0.5, None, True, "late", 2.0]):
        e = episode(ALICE, f"Alice fact number {n}")
        r = rec(e)
        r.metadata["ts"] = ts
        if ts is None:
            del r.metadata["ts"]
        rows.append(r)
    await side.upsert(KB, rows)
    page = await side.list(KB, scope_filter(ALICE.user_key, Criteria(statuses=None)), 10, 0)
    zero = sorted(r.id for r in rows[1:4])
    assert [i.id for i in page.items] == [*zero, rows[0].id, rows[4].id]


# ------------------------------------------------------------------------------------------ writes
async def test_a_row_whose_vector_the_host_lost_is_visible_again_once_rewritten() -> None:
    side, fake, _ = make()
    a = episode(ALICE, "Alice lives in Berlin")
    await side.upsert(KB, [rec(a)])
    fake.dropping_rows[KB].pop(a.id)  # the store lost the vector
    assert await ids(side, ALICE) == set()  # a ghost now
    await side.upsert(KB, [rec(a)])  # the same row written again: its vector goes back
    assert await ids(side, ALICE) == {a.id}
    assert await ids(side, ALICE) == {a.id}  # and stays visible


async def test_a_rewritten_vector_whose_metadata_is_refused_is_an_unknown_outcome() -> None:
    """The old vector is not kept, so it cannot be taken back: the engine must fence the scope.
    Control: the same refusal for a new row takes its vector back and is the refusal itself."""
    side, _, kv = make()
    a = episode(ALICE, "Alice lives in Berlin")
    await side.upsert(KB, [rec(a)])
    kv.fail = (lambda k: k.startswith(SIDE_PREFIX), ActionCallError("refused"), False)
    with pytest.raises(WriteOutcomeUnknown):
        await side.upsert(KB, [rec(a, EMBED.embed_one("Alice lives in Munich"))])
    b = episode(ALICE, "Alice plays chess")
    kv.fail = (lambda k: k.startswith(SIDE_PREFIX), ActionCallError("refused"), False)
    with pytest.raises(ActionCallError):
        await side.upsert(KB, [rec(b)])


# ------------------------------------------------------------------------------------------ pass-through
class Inner:
    """A store that keeps metadata: records every call it gets."""

    name = "inner-store"
    dim = 3

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        self.calls.append(("upsert", [r.id for r in records]))

    async def search(self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]) -> list:
        self.calls.append(("search", where))
        return [VectorHit("r1", {"user_key": "u1"}, 0.9, 0.1)]

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        self.calls.append(("list", where))
        return ListPage(items=[], total=0)

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        self.calls.append(("delete", where))


async def test_a_backend_that_keeps_metadata_gets_every_call_as_it_is() -> None:
    inner, kv = Inner(), MemoryKeyValueStore()
    side = SidecarVectors(inner, kv)  # type: ignore[arg-type]
    side.adopt_verdict(KB, KEEPS_METADATA)
    assert side.name == "inner-store" and side.dim == 3  # it reads as the store it wraps
    where = scope_filter(ALICE.user_key, Criteria())
    a = episode(ALICE, "Alice one")
    await side.upsert(KB, [rec(a)])
    hits = await side.search(KB, [1.0, 0.0, 0.0], 5, where)
    await side.list(KB, where, 5, 0)
    await side.delete(KB, where)
    assert [h.id for h in hits] == ["r1"]
    assert inner.calls == [("upsert", [a.id]), ("search", where), ("list", where), ("delete", where)]
    assert await kv.keys(SIDE_PREFIX) == []  # nothing kept beside the store


class Loose(Inner):
    """A store that drops metadata and answers a search with a distance per row, best last, plus
    a row its file_id filter did not name (a store that ignored its own filter)."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[str, dict[str, Any]] = {}

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        self.kept.update({r.id: dict(r.metadata) for r in records})

    async def search(self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]) -> list:
        cond = where["file_id"]
        named = {cond["$eq"]} if "$eq" in cond else set(cond["$in"])
        hits = [
            VectorHit(rid, {"file_id": md["file_id"]}, 0.0, 0.1 * n)
            for n, (rid, md) in enumerate(sorted(self.kept.items()), 1)
            if md["file_id"] in named
        ]
        stray = next(rid for rid, md in self.kept.items() if md["file_id"] not in named)
        return [*reversed(hits), VectorHit(stray, {"file_id": self.kept[stray]["file_id"]}, 0.0, 0.0)]


async def test_search_scores_by_the_stores_metric_best_first_and_leaves_out_rows_it_did_not_name() -> None:
    inner, kv = Loose(), MemoryKeyValueStore()
    side = SidecarVectors(inner, kv)  # type: ignore[arg-type]
    side.adopt_verdict(KB, DROPS_METADATA, "cosine")
    mine = [episode(ALICE, f"Alice fact {n}") for n in range(3)]
    bob = episode(BOB, "Bob fact")
    await side.upsert(KB, [rec(e) for e in [*mine, bob]])
    hits = await side.search(KB, EMBED.embed_one("fact"), 10, scope_filter(ALICE.user_key, Criteria()))
    order = sorted(inner.kept)
    want = sorted(((1.0 - 0.1 * (order.index(e.id) + 1), e.id) for e in mine), reverse=True)
    assert [(round(h.similarity, 6), h.id) for h in hits] == [(round(s, 6), i) for s, i in want]
    assert bob.id not in {h.id for h in hits}  # the row the store should not have returned


async def test_a_delete_by_scope_never_reaches_the_host_as_a_filter_it_would_drop() -> None:
    """A dropping store ignores a filter on any field but ``file_id`` (LangBot logs a WARNING and
    acts on every row): a scope's delete names its rows by file id, and only a filter of ids alone
    is handed over as it is (a row of no scope: a probe's)."""
    side, fake, _ = make()
    a, b = episode(ALICE, "Alice one"), episode(BOB, "Bob one")
    await side.upsert(KB, [rec(a), rec(b)])
    await side.delete(KB, {"user_key": {"$eq": ALICE.user_key}})
    assert fake.vector_rows(KB)["ids"] == [b.id]  # Bob's row is still there
    sent = [d.get("filters") for a_, d in fake.calls if a_ == A.VECTOR_DELETE]
    assert sent and all(not f or set(f) == {"file_id"} for f in sent), sent  # never a filter it would drop
    with pytest.raises(ValueError, match="non-empty filter"):
        await side.delete(KB, {})  # no filter: refused, never "every record"
    assert fake.vector_rows(KB)["ids"] == [b.id]
    probe = VectorRecord("probe-1", EMBED.embed_one("probe"), {"file_id": "probe-1", "text": "probe"}, "probe")
    await side.upsert(KB, [probe])  # no scope: written as it is
    assert sorted(fake.vector_rows(KB)["ids"]) == sorted([b.id, "probe-1"])
    await side.delete(KB, {"file_id": {"$eq": "probe-1"}})
    assert fake.vector_rows(KB)["ids"] == [b.id]


async def test_reconcile_rereads_a_scope_another_process_wrote_and_keeps_its_rows() -> None:
    """Two processes over one store: the first holds Alice's scope from before the second wrote a
    row there. Its reconcile reads both halves again, so the new row is not taken for a vector no
    metadata names."""
    side, fake, kv = make()
    a = episode(ALICE, "Alice one")
    await side.upsert(KB, [rec(a)])
    other = SidecarVectors(side.inner, kv)
    other.adopt_verdict(KB, DROPS_METADATA, "cosine")
    b = episode(ALICE, "Alice two")
    await other.upsert(KB, [rec(b)])
    assert await side.reconcile(KB) == {"vectors_deleted": 0, "metadata_removed": 0}
    assert sorted(fake.vector_rows(KB)["ids"]) == sorted([a.id, b.id])
    assert await ids(side, ALICE) == {a.id, b.id}


async def test_reconcile_leaves_a_store_that_keeps_metadata_alone() -> None:
    inner = Inner()
    side = SidecarVectors(inner, MemoryKeyValueStore())  # type: ignore[arg-type]
    side.adopt_verdict(KB, KEEPS_METADATA)
    assert await side.reconcile(KB) == {"vectors_deleted": 0, "metadata_removed": 0}
    assert inner.calls == []


async def test_reconcile_pages_through_every_host_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors no metadata names, more than one host listing page of them: every one is deleted."""
    monkeypatch.setattr("ltm.service.sidecar.LIST_PAGE", 3)
    side, fake, kv = make()
    kept = episode(ALICE, "Alice one")
    orphans = [episode(ALICE, f"Alice cut write {n}") for n in range(7)]
    await side.upsert(KB, [rec(e) for e in [kept, *orphans]])
    for e in orphans:  # each deleted, its vector delete refused: the vector stays, named by nothing
        fake.fail_next(A.VECTOR_DELETE)
        await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(e.id,))))
    assert len(fake.vector_rows(KB)["ids"]) == 8
    assert (await side.reconcile(KB))["vectors_deleted"] == 7
    assert fake.vector_rows(KB)["ids"] == [kept.id]


async def test_a_failed_metadata_read_refuses_the_write_before_the_host_sees_it() -> None:
    """Reading a scope's metadata is the write's first step: a failure there is a refusal (a
    BackendError), not an unknown outcome, and the host got nothing."""
    side, fake, kv = make()
    a = episode(ALICE, "Alice one")
    await side.upsert(KB, [rec(a)])
    cold = SidecarVectors(side.inner, kv)  # a process that has not read Alice's scope yet
    cold.adopt_verdict(KB, DROPS_METADATA, "cosine")
    get = kv.get

    async def failing(key: str) -> bytes | None:
        if key.startswith(SIDE_PREFIX):
            raise RuntimeError("storage unavailable")
        return await get(key)

    kv.get = failing  # type: ignore[method-assign]
    with pytest.raises(BackendError):
        await cold.upsert(KB, [rec(episode(ALICE, "Alice two"))])
    assert fake.vector_rows(KB)["ids"] == [a.id]


async def test_a_restarted_process_deletes_a_shard_its_delete_emptied() -> None:
    """Shards stored by one process; after a restart the other deletes their last row: tidy deletes
    the emptied shard's value (the removed row's sealed metadata is in no stored value)."""
    side, _, kv = make()
    a, b = episode(ALICE, "Alice one"), episode(ALICE, "Alice two")
    await side.upsert(KB, [rec(a), rec(b)])
    await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(b.id,))))
    assert await side.tidy() == 1
    shards = set(_scope_values(kv, ALICE.user_key))
    assert shards  # a's shard is stored, no delta
    later = SidecarVectors(side.inner, kv)
    later.adopt_verdict(KB, DROPS_METADATA, "cosine")
    await later.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(a.id,))))
    assert await later.tidy() == 1
    assert _scope_values(kv, ALICE.user_key) == {}


async def test_a_read_overtaken_by_a_write_of_unknown_outcome_is_read_again() -> None:
    """A listing reads a scope while a write to it ends with an unknown outcome (its metadata landed,
    the answer was lost): what the listing read before that write is not kept as the scope's state."""
    first, fake, kv = make()
    a = episode(ALICE, "Alice one")
    await first.upsert(KB, [rec(a)])
    side = SidecarVectors(first.inner, kv)  # a process that has not read Alice's scope yet
    side.adopt_verdict(KB, DROPS_METADATA, "cosine")
    gate, held = asyncio.Event(), []
    get = kv.get

    async def slow_first(key: str) -> bytes | None:
        if key.startswith(SIDE_PREFIX) and not held:
            held.append(key)
            await gate.wait()
        return await get(key)

    kv.get = slow_first  # type: ignore[method-assign]
    reader = asyncio.ensure_future(ids(side, ALICE))
    while not held:
        await asyncio.sleep(0)
    b = episode(ALICE, "Alice two")
    kv.fail = (lambda k: k.startswith(SIDE_PREFIX), ActionCallTimeoutError("timed out"), True)
    with pytest.raises(WriteOutcomeUnknown):
        await side.upsert(KB, [rec(b)])
    gate.set()
    assert await reader == {a.id, b.id}
    assert await ids(side, ALICE) == {a.id, b.id}


async def test_a_listing_without_a_filter_lists_every_scope_with_its_documents() -> None:
    side, _, _ = make()
    a, b = episode(ALICE, "Alice one"), episode(BOB, "Bob one")
    await side.upsert(KB, [rec(a), rec(b)])
    assert await ids(side, ALICE) == {a.id}  # Alice's scope loaded: the unfiltered listing still reads Bob's
    page = await side.list(KB, {}, 10, 0)
    assert {(i.id, i.document) for i in page.items} == {(a.id, "Alice one"), (b.id, "Bob one")}


async def test_a_dropped_knowledge_base_loses_a_vector_no_metadata_names_any_more() -> None:
    """A row deleted while its vector delete failed, its metadata folded away: dropping the
    knowledge base still deletes the vector (every plugin row on the host, not only the named)."""
    side, fake, kv = make()
    a = episode(ALICE, "Alice one")
    await side.upsert(KB, [rec(a)])
    fake.fail_next(A.VECTOR_DELETE)
    await side.delete(KB, scope_filter(ALICE.user_key, Criteria(statuses=None, ids=(a.id,))))
    await side.tidy()
    assert await kv.keys(SIDE_PREFIX) == [] and fake.vector_rows(KB)["ids"] == [a.id]
    await side.drop_collection(KB)
    assert fake.vector_rows(KB)["ids"] == []


async def test_the_stores_metric_is_read_from_the_knowledge_bases_record_when_not_handed_over() -> None:
    inner, kv = Loose(), MemoryKeyValueStore()
    await kv.set(KB_PREFIX + KB, json.dumps({"backend": DROPS_METADATA, "metric": "cosine"}).encode())
    side = SidecarVectors(inner, kv)  # type: ignore[arg-type]  # no verdict handed over
    assert await side.dropping(KB)
    alice = episode(ALICE, "Alice fact")
    await side.upsert(KB, [rec(alice), rec(episode(BOB, "Bob fact"))])
    hits = await side.search(KB, EMBED.embed_one("fact"), 10, scope_filter(ALICE.user_key, Criteria()))
    distance = 0.1 * (sorted(inner.kept).index(alice.id) + 1)
    assert [(h.id, round(h.similarity, 6)) for h in hits] == [(alice.id, round(1.0 - distance, 6))]  # cosine


async def test_a_scopes_user_key_survives_a_delete_by_id_and_a_restart() -> None:
    """A delete by row id (no user key in its filter) then tidy: the stored shards still name the
    scope's user key, so a restarted process lists and reconciles the rest by their file ids."""
    side, fake, kv = make()
    a, b = episode(ALICE, "Alice one"), episode(ALICE, "Alice two")
    await side.upsert(KB, [rec(a), rec(b)])
    await side.delete(KB, _by_id(b.id))
    await side.tidy()
    later = SidecarVectors(side.inner, kv)
    later.adopt_verdict(KB, DROPS_METADATA, "cosine")
    assert [i.id for i in (await later.list(KB, {}, 10, 0)).items] == [a.id]
    assert await later.reconcile(KB) == {"vectors_deleted": 0, "metadata_removed": 0}
    assert fake.vector_rows(KB)["ids"] == [a.id]
