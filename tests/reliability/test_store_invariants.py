"""Two invariants that ranking and re-checks would otherwise hide:

1. Recall filters status INSIDE the store, before the candidate cut. Eighty superseded versions of
   one fact that match the query better than its current version fill any candidate pool; only a
   store query restricted to active rows leaves room for the current one. Checked through every
   engine (numpy, real Chroma, real Qdrant local, the host adapter over the fake LangBot host), and
   on the filter each search and listing actually sends.
2. Consolidation proposals of one memory KB are listed, pruned and dropped only in that KB, even for
   the same chat in another KB.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.host_index import HostVectorIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.filters import Criteria, filter_conditions, scope_filter
from ltm.domain.scope import Scope
from ltm.ports import ListPage, VectorHit
from ltm.service import MemoryService, Settings
from ltm.service import consolidation as consolidation_mod
from ltm.service.consolidation import ConsolidationSettings, Consolidator
from ltm.service.scope_index import ScopeIndex
from tests.contract.test_consolidation import Clock
from tests.contract.test_consolidation import ScriptedModel as ConsolidationModel
from tests.support import ADMIN, KB, DelegatingIndex, make_index, scope_of, with_consolidator
from tests.support.backends import ENGINES_WITH_HOST
from tests.support.host_runtime import FakeHostHandler, make_plugin

# --------------------------------------------------------------------------------------------
# 1. status is filtered in the store, before the cut
# --------------------------------------------------------------------------------------------

N_SUPERSEDED = 80
QUERY = "office door code 4711 version"


class RecordingIndex(DelegatingIndex):
    """Records the filter of every search and listing."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.searches: list[dict[str, Any]] = []
        self.lists: list[dict[str, Any]] = []

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        self.searches.append(where)
        return await self.inner.search(collection, vector, top_k, where)

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        self.lists.append(where)
        return await self.inner.list(collection, where, limit, offset)


def statuses_of(where: dict[str, Any]) -> set[str] | None:
    """The statuses a filter admits (None: every status)."""
    for name, op, value in filter_conditions(where):
        if name == "status":
            return {value} if op == "$eq" else set(value)
    return None


async def _recording(kind: str, tmp_path: Path, strategy: str = "hybrid") -> tuple[MemoryService, Any, Any]:
    fake: FakeHostHandler | None = None
    if kind == "host":
        fake = FakeHostHandler()
        fake.add_knowledge_base(KB)
        inner: Any = HostVectorIndex(make_plugin(fake))
    else:
        inner = make_index(kind, tmp_path)
    index = RecordingIndex(inner)
    emb = HashingEmbedder()
    svc = MemoryService(kv=MemoryKeyValueStore(), vectors=index, embedder_for=lambda c, kb: emb, settings=Settings)
    await svc.register_kb(KB, {"embedding_model": "hash", "retrieval_strategy": strategy})

    def close() -> None:
        getattr(inner, "close", lambda: None)()
        if fake is not None:
            fake.close()

    return svc, index, close


@pytest.fixture(params=list(ENGINES_WITH_HOST))
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _seed(svc: MemoryService) -> tuple[Scope, Any]:
    """80 superseded versions of one fact (each matching the query better than the current one),
    then the current version."""
    alice = await scope_of(svc)
    prev = None
    for n in range(N_SUPERSEDED):
        raw: dict[str, Any] = {"content": f"The office door code is 4711, version {n}."}
        if prev is not None:
            raw["supersedes"] = [prev.id]
        prev, _ = await svc.remember(alice, raw, ADMIN)
    assert prev is not None
    current, retired = await svc.remember(alice, {"content": "Door code changed.", "supersedes": [prev.id]}, ADMIN)
    assert [e.id for e in retired] == [prev.id]
    counts = await svc.count_by_status(alice)
    assert counts["superseded"] == N_SUPERSEDED and counts["active"] == 1
    return alice, current


@pytest.mark.parametrize(
    ("engine", "strategy"),
    [("numpy", "hybrid"), ("chroma", "hybrid"), ("qdrant", "hybrid"), ("host", "hybrid")]
    + [("numpy", "vector")],  # the vector leg alone (the lexical leg keeps only active rows in memory)
)
@pytest.mark.parametrize("path", ["recall index", "store"])
async def test_recall_returns_the_current_version_past_80_superseded_ones(
    engine: str, strategy: str, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the scope-local recall index (its rows are the active ones, checked by ``matches``)
    and through the store, which answers the vector leg when the index cannot (rows written
    without a vector): the store search itself filters on status, before the candidate cut."""
    if path == "store":  # as for rows stored before vectors were kept in their metadata
        monkeypatch.setattr(ScopeIndex, "vector_search", lambda self, query, top_k, where, scan=None: None)
    svc, index, close = await _recording(engine, tmp_path, strategy)
    try:
        alice, current = await _seed(svc)
        index.searches.clear()
        result = await svc.recall(alice, QUERY, limit=5)
        assert [r.episode.id for r in result.episodes] == [current.id]
        for where in index.searches:
            assert statuses_of(where) == {"active"}, f"a recall search asked the store for every status: {where}"
        if path == "store":
            assert index.searches, "the vector leg did not search the store"
    finally:
        close()


async def test_the_pool_would_lose_the_current_version_without_the_store_filter(engine: str, tmp_path: Path) -> None:
    """Positive control for the test above: the same rows, searched WITHOUT a status filter at the
    recall's pool size, hold no current version at all - so a store query for every status cannot
    pass it by luck."""
    svc, index, close = await _recording(engine, tmp_path)
    try:
        alice, current = await _seed(svc)
        qv = HashingEmbedder().embed_one(QUERY)
        pool = 40  # MemoryService._ranked: max(4 * k, 40)
        store = svc.vectors  # the store as the service searches it (a dropping one: through the sidecar)
        unfiltered = await store.search(KB, qv, pool, scope_filter(alice.user_key, Criteria(statuses=None)))
        assert len(unfiltered) == pool and current.id not in {h.id for h in unfiltered}
        filtered = await store.search(KB, qv, pool, scope_filter(alice.user_key, Criteria()))
        assert [h.id for h in filtered] == [current.id]
    finally:
        close()


# --------------------------------------------------------------------------------------------
# 2. consolidation proposals stay in their memory KB
# --------------------------------------------------------------------------------------------

KB_A, KB_B = "kb-a", "kb-b"


async def _two_kb_env(tmp_path: Path) -> tuple[MemoryService, Consolidator, Clock]:
    clock = Clock()
    emb = HashingEmbedder()
    settings = ConsolidationSettings(enabled=True, model_uuid="model-1", min_age_days=7)
    svc = MemoryService(
        kv=MemoryKeyValueStore(),
        vectors=make_index("chroma", tmp_path),
        embedder_for=lambda c, kb: emb,
        clock=clock,
        consolidator=with_consolidator(ConsolidationModel(), settings=lambda: settings),
    )
    for kb in (KB_A, KB_B):
        await svc.register_kb(kb, {"embedding_model": "hash"})
    assert svc.consolidator is not None
    return svc, svc.consolidator, clock


async def _chat(svc: MemoryService, kb: str) -> Scope:
    return await svc.scope_for(kb_id=kb, session_name="person_alice", bot_uuid="bot1", sender_id="alice")


async def _stored(svc: MemoryService) -> dict[str, str]:
    """Every stored proposal: id -> collection."""
    import json

    out = {}
    for key in await svc.kv.keys(consolidation_mod.PREFIX):
        data = json.loads(await svc.kv.get(key) or b"{}")
        out[data["id"]] = data["collection"]
    return out


async def test_proposals_are_listed_pruned_and_dropped_only_in_their_kb(tmp_path: Path) -> None:
    svc, cons, clock = await _two_kb_env(tmp_path)
    a, b = await _chat(svc, KB_A), await _chat(svc, KB_B)
    assert a.user_key == b.user_key  # the same chat: the proposals share a key prefix
    for scope in (a, b):
        for text in ("Alice drinks green tea", "Alice buys tea in Hangzhou", "Alice likes oolong"):
            await svc.remember(scope, {"content": text}, ADMIN)
            clock.advance(1 / 1440)
    clock.advance(10)
    b_ids = []
    for _ in range(2):
        p = await cons.preview(b, ADMIN)
        assert p.proposal is not None, p.draft_error
        b_ids.append(p.proposal.id)
    assert {p.id for p in await cons.list_proposals(b)} == set(b_ids)  # positive control
    assert await cons.list_proposals(a) == []  # B's proposals are not A's

    # A's pruning (beyond the cap, then after expiry) removes A's own oldest and never B's
    a_ids = []
    for _ in range(consolidation_mod.MAX_PENDING_PER_SCOPE + 2):
        p = await cons.preview(a, ADMIN)
        assert p.proposal is not None, p.draft_error
        a_ids.append(p.proposal.id)
        clock.advance(1 / 1440)
    listed_a = {p.id for p in await cons.list_proposals(a)}
    assert listed_a == set(a_ids[-consolidation_mod.MAX_PENDING_PER_SCOPE :])  # A pruned its own
    assert not listed_a & set(b_ids)
    stored = await _stored(svc)
    assert all(stored.get(pid) == KB_B for pid in b_ids), "pruning in KB A touched KB B's proposals"

    clock.advance(consolidation_mod.PROPOSAL_TTL_DAYS + 1)  # everything pending is now expired
    p = await cons.preview(a, ADMIN)
    assert p.proposal is not None
    assert {q.id for q in await cons.list_proposals(a)} == {p.proposal.id}  # A's expired ones went
    stored = await _stored(svc)
    assert all(stored.get(pid) == KB_B for pid in b_ids), "expiry pruning in KB A touched KB B's proposals"

    assert await cons.on_kb_deleted(KB_A) == 1
    assert set(await _stored(svc)) == set(b_ids)
    assert {q.id for q in await cons.list_proposals(b)} == set(b_ids)
