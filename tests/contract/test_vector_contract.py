"""One contract for every VectorIndex: numpy, real Chroma, real Qdrant (local) and the host adapter
over a real ``BasePlugin`` whose runtime handler is the fake LangBot host.

Every filter comes from :func:`ltm.domain.scope.scope_filter` and every record's metadata from
:meth:`ltm.domain.models.Episode.to_metadata`, so the real filter builder and record shape are what
each engine is tested with. Each exclusion is preceded by a positive control (the row is visible
where it should be) so that an empty result cannot pass by accident.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError

from ltm.adapters.chroma_index import ChromaIndex
from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.host_index import HostVectorIndex, similarity_of, strip_host_keys
from ltm.adapters.numpy_index import NumpyIndex, _Row, _Snapshot, filter_mask
from ltm.adapters.qdrant_index import QdrantIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.backends import DROPS_METADATA
from ltm.domain.models import Episode, EpisodeInput, build_episode
from ltm.domain.scope import Criteria, Scope, derive_scope, matches, scope_filter
from ltm.domain.timefields import OPEN_END_TS, parse_instant
from ltm.ports import VectorHit, VectorIndex, VectorRecord
from ltm.service.sidecar import SidecarVectors
from tests.support.backends import DROPPING_HOSTS, ENGINES_WITH_HOST
from tests.support.host_runtime import PG_ALLOWED_DIMS, FakeHostHandler, make_plugin

# what each dropping backend's search reports (the backend probe measures it on a real host)
METRIC_OF = {"milvus": "similarity", "pgvector": "cosine", "valkey": "cosine"}

DIM = 64
EMBED = HashingEmbedder(dim=DIM)
BACKENDS = ENGINES_WITH_HOST

ALICE = derive_scope(launcher_type="person", launcher_id="alice", bot_uuid="bot-1")
BOB = derive_scope(launcher_type="person", launcher_id="bob", bot_uuid="bot-1")
GROUP = derive_scope(launcher_type="group", launcher_id="g1", bot_uuid="bot-1")


@dataclass
class Backend:
    name: str
    index: VectorIndex
    collection: str
    reopen: Callable[[], VectorIndex] | None = None
    fake: FakeHostHandler | None = None


def _make_backend(name: str, tmp_path: Any) -> tuple[Backend, Callable[[], None]]:
    collection = f"kb-{uuid.uuid4()}"
    if name == "numpy":
        return Backend(name, NumpyIndex(), collection), lambda: None
    if name == "chroma":
        path = str(tmp_path / "chroma")
        return Backend(name, ChromaIndex(path), collection, reopen=lambda: ChromaIndex(path)), lambda: None
    if name == "qdrant":
        path = str(tmp_path / "qdrant")
        idx = QdrantIndex(path)
        return Backend(name, idx, collection, reopen=lambda: (idx.close(), QdrantIndex(path))[1]), idx.close
    if name in DROPPING_HOSTS:  # through the sidecar, as the service serves a dropping backend
        fake = FakeHostHandler(vdb=name)
        fake.pg_allowed_dims = (*PG_ALLOWED_DIMS, DIM)
        fake.add_knowledge_base(collection)
        side = SidecarVectors(HostVectorIndex(make_plugin(fake)), MemoryKeyValueStore())
        side.adopt_verdict(collection, DROPS_METADATA, METRIC_OF[name])
        return Backend(name, side, collection, fake=fake), fake.close
    fake = FakeHostHandler()
    fake.add_knowledge_base(collection)
    return Backend(name, HostVectorIndex(make_plugin(fake)), collection, fake=fake), fake.close


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Backend]:
    be, close = _make_backend(request.param, tmp_path)
    assert isinstance(be.index, VectorIndex)
    try:
        yield be
    finally:
        close()


# ------------------------------------------------------------------------------------------
# factories
# ------------------------------------------------------------------------------------------


def make_episode(scope: Scope, content: str, *, timestamp: str = "2024-05-01T10:00:00Z", **fields: Any) -> Episode:
    status = fields.pop("status", "active")
    data = EpisodeInput(content=content, status=status, **fields)
    return build_episode(data, scope, origin="tool", timestamp=timestamp)


def record(ep: Episode, vector: list[float] | None = None) -> VectorRecord:
    return VectorRecord(
        id=ep.id, vector=vector or EMBED.embed_one(ep.content), metadata=ep.to_metadata(), document=ep.content
    )


async def put(be: Backend, *episodes: Episode) -> list[Episode]:
    await be.index.upsert(be.collection, [record(e) for e in episodes])
    return list(episodes)


async def search_ids(be: Backend, text: str, where: dict[str, Any], k: int = 50) -> list[str]:
    return [h.id for h in await be.index.search(be.collection, EMBED.embed_one(text), k, where)]


async def list_ids(be: Backend, where: dict[str, Any], page: int = 7) -> list[str]:
    out: list[str] = []
    offset = 0
    while True:
        res = await be.index.list(be.collection, where, page, offset)
        out.extend(i.id for i in res.items)
        if len(res.items) < page:
            return out
        offset += page


def ts_of(iso: str) -> float:
    return parse_instant(iso, "t").timestamp()


# ------------------------------------------------------------------------------------------
# the contract
# ------------------------------------------------------------------------------------------


class TestScopeIsolation:
    async def test_search_returns_only_the_filtered_scope(self, backend: Backend) -> None:
        (a1,) = await put(backend, make_episode(ALICE, "Alice likes green tea"))
        (b1,) = await put(backend, make_episode(BOB, "Bob likes green tea"))
        assert a1.id in await search_ids(backend, "green tea", scope_filter(ALICE.user_key))  # positive control
        bob_hits = await search_ids(backend, "green tea", scope_filter(BOB.user_key))
        assert a1.id not in bob_hits
        assert bob_hits == [b1.id]

    async def test_list_returns_only_the_filtered_scope(self, backend: Backend) -> None:
        (a1,) = await put(backend, make_episode(ALICE, "Alice moved to Berlin"))
        (b1,) = await put(backend, make_episode(BOB, "Bob moved to Paris"))
        assert await list_ids(backend, scope_filter(ALICE.user_key)) == [a1.id]  # positive control
        assert await list_ids(backend, scope_filter(BOB.user_key)) == [b1.id]

    async def test_nearest_first_with_cosine_like_similarity(self, backend: Backend) -> None:
        e1 = [1.0] + [0.0] * (DIM - 1)
        mid = [2**-0.5, 2**-0.5] + [0.0] * (DIM - 2)
        e2 = [0.0, 1.0] + [0.0] * (DIM - 2)
        eps = [make_episode(ALICE, f"vector {i}") for i in range(3)]
        recs = [record(ep, vec) for ep, vec in zip(eps, (e2, mid, e1), strict=True)]
        await backend.index.upsert(backend.collection, recs)
        hits: list[VectorHit] = await backend.index.search(backend.collection, e1, 3, scope_filter(ALICE.user_key))
        assert [h.id for h in hits] == [eps[2].id, eps[1].id, eps[0].id]
        assert [round(h.similarity, 3) for h in hits] == [1.0, 0.707, 0.0]

    async def test_top_k_bounds_the_result(self, backend: Backend) -> None:
        await put(backend, *[make_episode(ALICE, f"note number {i}") for i in range(6)])
        assert len(await search_ids(backend, "note", scope_filter(ALICE.user_key), k=4)) == 4


class TestStatusFilter:
    async def test_default_filter_hides_superseded_and_archived(self, backend: Backend) -> None:
        active, superseded, archived = await put(
            backend,
            make_episode(ALICE, "lives in Berlin"),
            make_episode(ALICE, "lives in Munich", status="superseded"),
            make_episode(ALICE, "lives in Hamburg", status="archived"),
        )
        every = scope_filter(ALICE.user_key, Criteria(statuses=None))
        assert set(await search_ids(backend, "lives in", every)) == {active.id, superseded.id, archived.id}
        assert set(await list_ids(backend, every)) == {active.id, superseded.id, archived.id}  # positive control
        default = scope_filter(ALICE.user_key)
        assert await search_ids(backend, "lives in", default) == [active.id]
        assert await list_ids(backend, default) == [active.id]

    async def test_requested_statuses_are_included(self, backend: Backend) -> None:
        _active, superseded, archived = await put(
            backend,
            make_episode(ALICE, "works at ACME"),
            make_episode(ALICE, "works at Initech", status="superseded"),
            make_episode(ALICE, "works at Hooli", status="archived"),
        )
        where = scope_filter(ALICE.user_key, Criteria(statuses=("superseded", "archived")))
        assert set(await search_ids(backend, "works at", where)) == {superseded.id, archived.id}
        where_one = scope_filter(ALICE.user_key, Criteria(statuses=("archived",)))
        assert await list_ids(backend, where_one) == [archived.id]


class TestListPaging:
    async def test_pages_cover_the_scope_exactly_once_in_a_stable_order(self, backend: Backend) -> None:
        mine = await put(backend, *[make_episode(ALICE, f"memory {i}") for i in range(23)])
        await put(backend, *[make_episode(BOB, f"memory {i}") for i in range(5)])
        where = scope_filter(ALICE.user_key)
        first = await list_ids(backend, where, page=5)
        assert len(first) == len(set(first)) == 23
        assert set(first) == {e.id for e in mine}
        assert await list_ids(backend, where, page=5) == first  # stable order
        assert await list_ids(backend, where, page=4) == first  # page size does not change the order

    async def test_page_fields(self, backend: Backend) -> None:
        mine = await put(backend, *[make_episode(ALICE, f"fact {i}") for i in range(6)])
        where = scope_filter(ALICE.user_key)
        page = await backend.index.list(backend.collection, where, 4, 0)
        assert len(page.items) == 4
        assert page.total in (-1, 6)
        by_id = {e.id: e for e in mine}
        for item in page.items:
            assert item.document == by_id[item.id].content
            assert item.metadata["episode_id"] == item.id
            assert not any(k.startswith("_langbot_") for k in item.metadata)
        beyond = await backend.index.list(backend.collection, where, 4, 8)
        assert beyond.items == []


class TestDelete:
    async def test_delete_by_scope_removes_from_search_and_list_only_in_that_scope(self, backend: Backend) -> None:
        alice = await put(
            backend, make_episode(ALICE, "coffee black"), make_episode(ALICE, "tea green", status="archived")
        )
        (bob,) = await put(backend, make_episode(BOB, "coffee with milk"))
        alice_all = scope_filter(ALICE.user_key, Criteria(statuses=None))
        assert set(await search_ids(backend, "coffee", alice_all)) == {e.id for e in alice}  # positive control
        assert set(await list_ids(backend, alice_all)) == {e.id for e in alice}

        await backend.index.delete(backend.collection, alice_all)

        assert await search_ids(backend, "coffee", alice_all) == []
        assert await list_ids(backend, alice_all) == []
        assert await search_ids(backend, "coffee", scope_filter(BOB.user_key)) == [bob.id]
        assert await list_ids(backend, scope_filter(BOB.user_key)) == [bob.id]

    async def test_delete_by_ids_removes_only_those(self, backend: Backend) -> None:
        a, b, c = await put(backend, *[make_episode(ALICE, f"item {i}") for i in range(3)])
        where = scope_filter(ALICE.user_key, Criteria(ids=(a.id, c.id), statuses=None))
        assert set(await list_ids(backend, where)) == {a.id, c.id}  # positive control
        await backend.index.delete(backend.collection, where)
        assert await list_ids(backend, scope_filter(ALICE.user_key)) == [b.id]

    async def test_delete_refuses_an_empty_filter(self, backend: Backend) -> None:
        await put(backend, make_episode(ALICE, "keep me"))
        with pytest.raises(ValueError):
            await backend.index.delete(backend.collection, {})
        assert len(await list_ids(backend, scope_filter(ALICE.user_key))) == 1

    async def test_drop_collection_forgets_everything_and_allows_reuse(self, backend: Backend) -> None:
        (a1,) = await put(backend, make_episode(ALICE, "to be dropped"))
        assert await list_ids(backend, scope_filter(ALICE.user_key)) == [a1.id]  # positive control
        await backend.index.drop_collection(backend.collection)
        assert await list_ids(backend, scope_filter(ALICE.user_key)) == []
        assert await search_ids(backend, "dropped", scope_filter(ALICE.user_key)) == []
        (a2,) = await put(backend, make_episode(ALICE, "written after the drop"))
        assert await list_ids(backend, scope_filter(ALICE.user_key)) == [a2.id]


class TestReplace:
    async def test_reupsert_replaces_metadata_and_leaves_the_active_filter(self, backend: Backend) -> None:
        (ep,) = await put(backend, make_episode(ALICE, "favourite colour is blue"))
        assert await search_ids(backend, "favourite colour", scope_filter(ALICE.user_key)) == [ep.id]  # control
        await put(backend, ep.retagged(status="superseded", superseded_by="ep_new"))
        assert await search_ids(backend, "favourite colour", scope_filter(ALICE.user_key)) == []
        assert await list_ids(backend, scope_filter(ALICE.user_key)) == []
        superseded = scope_filter(ALICE.user_key, Criteria(statuses=("superseded",)))
        hits = await backend.index.search(backend.collection, EMBED.embed_one(ep.content), 5, superseded)
        assert [h.id for h in hits] == [ep.id]
        assert hits[0].metadata["status"] == "superseded"
        assert hits[0].metadata["superseded_by"] == "ep_new"
        assert await list_ids(backend, scope_filter(ALICE.user_key, Criteria(statuses=None))) == [ep.id]

    async def test_reupsert_drops_optional_keys_the_new_record_lacks(self, backend: Backend) -> None:
        (ep,) = await put(backend, make_episode(ALICE, "on holiday", valid_until="2024-06-01T00:00:00Z"))
        (before,) = (await backend.index.list(backend.collection, scope_filter(ALICE.user_key), 5, 0)).items
        assert before.metadata["valid_until"] == "2024-06-01T00:00:00Z"  # positive control
        await put(backend, ep.retagged(valid_until=None))
        (after,) = (await backend.index.list(backend.collection, scope_filter(ALICE.user_key), 5, 0)).items
        assert "valid_until" not in after.metadata
        assert after.metadata["valid_until_ts"] == OPEN_END_TS
        assert Episode.from_metadata(after.metadata).valid_until is None


class TestTimeFilters:
    async def test_validity_as_of(self, backend: Backend) -> None:
        spring, always, later = await put(
            backend,
            make_episode(ALICE, "team lead", valid_from="2024-01-01T00:00:00Z", valid_until="2024-06-01T00:00:00Z"),
            make_episode(ALICE, "speaks German"),
            make_episode(ALICE, "manager", valid_from="2025-01-01T00:00:00Z"),
        )

        async def valid_at(iso: str) -> set[str]:
            return set(await list_ids(backend, scope_filter(ALICE.user_key, Criteria(as_of_ts=ts_of(iso)))))

        assert await valid_at("2024-03-01T00:00:00Z") == {spring.id, always.id}
        assert await valid_at("2024-01-01T00:00:00Z") == {spring.id, always.id}  # valid_from is inclusive
        assert await valid_at("2024-06-01T00:00:00Z") == {always.id}  # valid_until is exclusive
        assert await valid_at("2025-02-01T00:00:00Z") == {always.id, later.id}
        hits = await search_ids(
            backend, "team lead", scope_filter(ALICE.user_key, Criteria(as_of_ts=ts_of("2024-07-01T00:00:00Z")))
        )
        assert spring.id not in hits and always.id in hits

    async def test_event_time_range(self, backend: Backend) -> None:
        march, may, undated = await put(
            backend,
            make_episode(ALICE, "concert", event_at="2024-03-10T20:00:00Z"),
            make_episode(ALICE, "wedding", event_at="2024-05-20T12:00:00Z"),
            make_episode(ALICE, "no date", timestamp="2024-09-01T00:00:00Z"),
        )
        crit = Criteria(event_from_ts=ts_of("2024-03-01T00:00:00Z"), event_until_ts=ts_of("2024-04-01T00:00:00Z"))
        assert await list_ids(backend, scope_filter(ALICE.user_key, crit)) == [march.id]
        crit = Criteria(event_from_ts=ts_of("2024-03-01T00:00:00Z"))
        assert set(await list_ids(backend, scope_filter(ALICE.user_key, crit))) == {march.id, may.id, undated.id}
        crit = Criteria(event_until_ts=ts_of("2024-05-20T12:00:00Z"))  # exclusive upper bound
        assert await search_ids(backend, "wedding", scope_filter(ALICE.user_key, crit)) == [march.id]

    async def test_stored_before(self, backend: Backend) -> None:
        old, new = await put(
            backend,
            make_episode(ALICE, "old note", timestamp="2023-01-01T00:00:00Z"),
            make_episode(ALICE, "new note", timestamp="2024-01-01T00:00:00Z"),
        )
        assert set(await list_ids(backend, scope_filter(ALICE.user_key))) == {old.id, new.id}  # control
        crit = Criteria(before_ts=ts_of("2023-06-01T00:00:00Z"))
        assert await list_ids(backend, scope_filter(ALICE.user_key, crit)) == [old.id]


class TestFilterShapes:
    async def test_multi_field_and(self, backend: Backend) -> None:
        u1 = await put(backend, make_episode(GROUP.with_sender("u1"), "u1 plays chess"))
        u2 = await put(backend, make_episode(GROUP.with_sender("u2"), "u2 plays chess"))
        where = scope_filter(GROUP.user_key, Criteria(sender_id="u1"))
        assert "$and" in where and len(where["$and"]) == 3
        assert set(await search_ids(backend, "chess", scope_filter(GROUP.user_key))) == {u1[0].id, u2[0].id}
        assert await search_ids(backend, "chess", where) == [u1[0].id]
        assert await list_ids(backend, where) == [u1[0].id]

    async def test_single_condition_filter(self, backend: Backend) -> None:
        eps = await put(backend, make_episode(ALICE, "a", status="archived"), make_episode(ALICE, "b"))
        await put(backend, make_episode(BOB, "c"))
        where = scope_filter(ALICE.user_key, Criteria(statuses=None))
        assert where == {"user_key": {"$eq": ALICE.user_key}}  # bare, no $and
        assert set(await list_ids(backend, where)) == {e.id for e in eps}
        assert set(await search_ids(backend, "a b", where)) == {e.id for e in eps}

    async def test_ids_in_and_document_id(self, backend: Backend) -> None:
        a, b, _c = await put(
            backend,
            make_episode(ALICE, "x1"),
            make_episode(ALICE, "x2"),
            make_episode(ALICE, "x3"),
        )
        assert set(await list_ids(backend, scope_filter(ALICE.user_key, Criteria(ids=(a.id, b.id))))) == {a.id, b.id}
        assert await list_ids(backend, scope_filter(ALICE.user_key, Criteria(ids=(b.id,)))) == [b.id]
        doc_ep = build_episode(EpisodeInput(content="from a file"), ALICE, origin="document", document_id="doc-9")
        await put(backend, doc_ep)
        assert await list_ids(backend, scope_filter(ALICE.user_key, Criteria(document_id="doc-9"))) == [doc_ep.id]

    async def test_two_top_level_keys_are_rejected(self, backend: Backend) -> None:
        await put(backend, make_episode(ALICE, "anything"))
        bad = {"user_key": {"$eq": ALICE.user_key}, "status": {"$eq": "active"}}
        with pytest.raises((ValueError, ActionCallError)):
            await backend.index.search(backend.collection, EMBED.embed_one("anything"), 3, bad)


class TestRoundTrip:
    async def test_unicode_text_and_tags_round_trip(self, backend: Backend) -> None:
        content = "我昨天在北京吃了烤鸭 🦆 — naïve café «ok»"
        (ep,) = await put(backend, make_episode(ALICE, content, tags=["美食", "旅行"]))
        (hit,) = await backend.index.search(
            backend.collection, EMBED.embed_one(content), 3, scope_filter(ALICE.user_key)
        )
        assert hit.metadata["text"] == content
        back = Episode.from_metadata(hit.metadata)
        assert (back.id, back.content, back.tags) == (ep.id, content, ["美食", "旅行"])
        (item,) = (await backend.index.list(backend.collection, scope_filter(ALICE.user_key), 5, 0)).items
        assert item.document == content
        assert Episode.from_metadata(item.metadata).to_public() == ep.to_public()

    async def test_unwritten_collection_reads_empty(self, backend: Backend) -> None:
        """Engines answer empty; the host refuses a collection that is not a knowledge base."""
        other = f"never-written-{uuid.uuid4()}"
        where = scope_filter(ALICE.user_key)
        if backend.fake is not None:
            with pytest.raises(ActionCallError, match="Knowledge base not found"):
                await backend.index.search(other, EMBED.embed_one("x"), 3, where)
            return
        assert await backend.index.search(other, EMBED.embed_one("x"), 3, where) == []
        assert (await backend.index.list(other, where, 3, 0)).items == []
        await backend.index.delete(other, where)


@pytest.mark.parametrize("name", ["chroma", "qdrant"])
async def test_persistent_backends_survive_reopen(name: str, tmp_path: Any) -> None:
    be, close = _make_backend(name, tmp_path)
    try:
        (ep,) = await put(be, make_episode(ALICE, "persisted across restarts"))
        assert be.reopen is not None
        reopened = be.reopen()
        hits = await reopened.search(be.collection, EMBED.embed_one(ep.content), 3, scope_filter(ALICE.user_key))
        assert [h.id for h in hits] == [ep.id]
        assert hits[0].metadata["text"] == ep.content
        if isinstance(reopened, QdrantIndex):
            reopened.close()
    finally:
        if name == "chroma":
            close()


# ------------------------------------------------------------------------------------------
# host adapter specifics (host ref §4)
# ------------------------------------------------------------------------------------------


@pytest.fixture
def host() -> Iterator[Backend]:
    be, close = _make_backend("host", None)
    yield be
    close()


class TestHostSpecifics:
    async def test_text_goes_to_metadata_and_documents(self, host: Backend) -> None:
        (ep,) = await put(host, make_episode(ALICE, "likes hiking"))
        (sent,) = host.fake.calls_of(A.VECTOR_UPSERT)
        assert sent["documents"] == ["likes hiking"]
        assert sent["metadata"][0]["text"] == "likes hiking"
        assert sent["ids"] == [ep.id]

    async def test_host_keys_are_stored_but_stripped_on_read(self, host: Backend) -> None:
        await put(host, make_episode(ALICE, "secret garden"))
        raw = host.fake.vector_rows(host.collection)["metadatas"][0]
        assert raw["_langbot_knowledge_base_uuid"] == host.collection  # positive control: the host added them
        (hit,) = await host.index.search(
            host.collection, EMBED.embed_one("secret garden"), 1, scope_filter(ALICE.user_key)
        )
        assert not any(k.startswith("_langbot_") for k in hit.metadata)

    async def test_search_distance_is_squared_l2(self, host: Backend) -> None:
        (ep,) = await put(host, make_episode(ALICE, "exact match"))
        (hit,) = await host.index.search(host.collection, EMBED.embed_one(ep.content), 1, scope_filter(ALICE.user_key))
        assert hit.distance == pytest.approx(0.0, abs=1e-5)
        assert hit.similarity == pytest.approx(1.0, abs=1e-5)

    async def test_delete_sends_the_filter_and_ignores_the_count(self, host: Backend) -> None:
        (ep,) = await put(host, make_episode(ALICE, "forget me"))
        where = scope_filter(ALICE.user_key, Criteria(ids=(ep.id,), statuses=None))
        await host.index.delete(host.collection, where)
        (sent,) = host.fake.calls_of(A.VECTOR_DELETE)
        assert sent["filters"] == where and sent["file_ids"] is None
        assert await list_ids(host, scope_filter(ALICE.user_key)) == []

    async def test_fake_delete_counts_follow_the_host(self, host: Backend) -> None:
        plugin = host.index._plugin  # the real BasePlugin
        eps = await put(host, make_episode(ALICE, "one"), make_episode(ALICE, "two"))
        assert await plugin.vector_delete(host.collection, filters={"file_id": eps[0].id}) == 0
        assert await plugin.vector_delete(host.collection, file_ids=[eps[1].id, "missing"]) == 2
        assert await list_ids(host, scope_filter(ALICE.user_key)) == []

    async def test_filtered_list_total_is_unknown(self, host: Backend) -> None:
        await put(host, make_episode(ALICE, "one"))
        page = await host.index.list(host.collection, scope_filter(ALICE.user_key), 5, 0)
        assert page.total == -1 and len(page.items) == 1

    async def test_unknown_knowledge_base_raises(self, host: Backend) -> None:
        with pytest.raises(ActionCallError, match="Knowledge base not found"):
            await host.index.search("not-a-kb", EMBED.embed_one("x"), 3, scope_filter(ALICE.user_key))
        with pytest.raises(ActionCallError, match="Knowledge base not found"):
            await host.index.upsert("not-a-kb", [record(make_episode(ALICE, "x"))])

    async def test_host_errors_propagate(self, host: Backend) -> None:
        host.fake.fail_next(A.VECTOR_LIST)
        with pytest.raises(ActionCallError, match="injected"):
            await host.index.list(host.collection, scope_filter(ALICE.user_key), 5, 0)

    async def test_drop_collection_is_best_effort(self, host: Backend) -> None:
        await host.index.drop_collection("not-a-kb")  # logged, not raised
        (sent,) = host.fake.calls_of(A.VECTOR_DELETE)
        assert sent["filters"] == {"schema": {"$eq": "ltm/1"}}


@pytest.mark.parametrize(
    ("metric", "distance", "similarity"),
    [("l2sq", 0.0, 1.0), ("l2sq", 2.0, 0.0), ("l2sq", 4.0, -1.0), ("cosine", 0.25, 0.75), ("ip", 0.25, 0.75)],
)
def test_host_similarity_conversion(metric: Any, distance: float, similarity: float) -> None:
    assert similarity_of(distance, metric) == pytest.approx(similarity)


def test_adapters_package_imports_no_optional_engine() -> None:
    """Production installs only langbot-plugin and numpy: ``import ltm.adapters`` must stay light."""
    code = (
        "import sys, ltm.adapters, ltm.adapters.host_index, ltm.adapters.host_kv, ltm.adapters.numpy_index;"
        "print(sorted(m for m in ('chromadb', 'qdrant_client', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"
    import ltm.adapters

    assert ltm.adapters.NumpyIndex is NumpyIndex


def test_strip_host_keys() -> None:
    assert strip_host_keys({"a": 1, "_langbot_x": 2, "_other": 3}) == {"a": 1, "_other": 3}
    assert strip_host_keys(None) == {}


# ------------------------------------------------------------------------------------------
# numpy filter evaluation == the reference semantics
# ------------------------------------------------------------------------------------------

_values = st.one_of(
    st.none(), st.sampled_from(["a", "b", "active", ""]), st.integers(-3, 3), st.floats(-3, 3), st.booleans()
)
_fields = st.sampled_from(["f", "g", "h"])
_ops = st.sampled_from(["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte"])


@st.composite
def _condition(draw: st.DrawFn) -> dict[str, Any]:
    op = draw(_ops)
    if op in ("$in", "$nin"):
        val: Any = draw(st.lists(_values.filter(lambda v: v is not None), max_size=3))
    elif op in ("$gt", "$gte", "$lt", "$lte"):
        val = draw(st.one_of(st.integers(-3, 3), st.floats(-3, 3)))
    else:
        val = draw(_values.filter(lambda v: v is not None))
    return {draw(_fields): {op: val}}


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.dictionaries(_fields, _values, max_size=3), min_size=1, max_size=12),
    conds=st.lists(_condition(), min_size=1, max_size=3),
)
def test_numpy_filter_mask_equals_matches(rows: list[dict[str, Any]], conds: list[dict[str, Any]]) -> None:
    where = conds[0] if len(conds) == 1 else {"$and": conds}
    snap = _Snapshot(ids=[str(i) for i in range(len(rows))], matrix=None, rows=[_Row(None, r, "") for r in rows])  # type: ignore[arg-type]
    assert list(filter_mask(snap, where)) == [matches(r, where) for r in rows]
