"""The optional rerank model: the pure reordering, and the service's one bounded call with its fallback.

The host's rerank model is replaced by deterministic stand-ins at the runtime boundary (no
cross-encoder that loads offline ships on PyPI for this machine).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.host_rerank import HostReranker
from ltm.adapters.numpy_index import NumpyIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain import rerank
from ltm.service import MemoryService
from ltm.service.settings import KbSettings
from tests.support import ADMIN, KB, scope_of


class TestParseScores:
    def test_reads_host_items_and_pairs(self) -> None:
        got = rerank.parse_scores([{"index": 2, "relevance_score": 0.9}, {"index": 0, "score": 0.1}, (1, 0.5)], 3)
        assert got == {2: 0.9, 0: 0.1, 1: 0.5}

    def test_drops_malformed_items(self) -> None:
        items: list[Any] = [
            {"index": 1, "relevance_score": 0.7},  # positive control
            {"index": 5, "relevance_score": 1.0},  # out of range
            {"index": -1, "relevance_score": 1.0},
            {"index": True, "relevance_score": 1.0},  # a bool is not an index
            {"index": "0", "relevance_score": 1.0},
            {"index": 0, "relevance_score": float("nan")},
            {"index": 0, "relevance_score": "high"},
            {"index": 1, "relevance_score": 0.0},  # repeated: the first one counts
            "garbage",
            None,
        ]
        assert rerank.parse_scores(items, 3) == {1: 0.7}

    def test_empty_or_none(self) -> None:
        assert rerank.parse_scores([], 3) == {}
        assert rerank.parse_scores(None, 3) == {}  # type: ignore[arg-type]


class TestApply:
    def test_scored_first_then_fused_order(self) -> None:
        head = ["a", "b", "c", "d"]
        assert rerank.apply(head, {3: 0.9, 1: 0.2}) == ["d", "b", "a", "c"]

    def test_no_scores_keeps_fused_order(self) -> None:
        assert rerank.apply(["a", "b", "c"], {}) == ["a", "b", "c"]

    def test_ties_keep_fused_order(self) -> None:
        assert rerank.apply(["a", "b", "c"], {2: 0.5, 0: 0.5, 1: 0.5}) == ["a", "b", "c"]

    @given(
        st.lists(st.integers(), min_size=0, max_size=30, unique=True),
        st.dictionaries(st.integers(-5, 40), st.floats(allow_nan=False, allow_infinity=False), max_size=40),
    )
    def test_is_a_permutation(self, head: list[int], scores: dict[int, float]) -> None:
        """Whatever the model answers, no candidate is lost or repeated."""
        out = rerank.apply(head, rerank.parse_scores(scores.items(), len(head)))
        assert sorted(out) == sorted(head)


class OverlapReranker:
    """Deterministic stand-in for a cross-encoder: scores a document by the query words it contains."""

    def __init__(self, delay: float = 0.0, fail: bool = False, words: frozenset[str] = frozenset()) -> None:
        self.delay = delay
        self.fail = fail
        self.words = words  # score by these words instead of the query's
        self.calls: list[tuple[str, list[str], float]] = []

    async def rerank(self, query: str, documents: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        self.calls.append((query, list(documents), timeout))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("model unavailable")
        words = self.words or set(query.lower().split())
        return [
            {"index": i, "relevance_score": float(len(words & set(d.lower().split())))} for i, d in enumerate(documents)
        ]


async def _service(tmp_path: Path, reranker: OverlapReranker | None, creation: dict[str, Any]) -> MemoryService:
    emb = HashingEmbedder()
    svc = MemoryService(
        kv=MemoryKeyValueStore(),
        vectors=NumpyIndex(),
        embedder_for=lambda c, kb: emb,
        reranker_for=(lambda c, kb: reranker) if reranker is not None else None,
    )
    await svc.register_kb(KB, {"embedding_model": "hash", **creation})
    return svc


DOCS = [
    "tea tea tea tea green tea in the morning",  # fused favourite for "tea"
    "alice keeps a tea garden on the balcony with mint",
    "bob bakes bread",
]
MINT = frozenset({"mint"})


async def _recall_order(svc: MemoryService) -> list[str]:
    scope = await scope_of(svc)
    for d in DOCS:
        await svc.remember(scope, {"content": d}, ADMIN)
    res = await svc.recall(scope, "tea", limit=3, with_profiles=False)
    return [r.episode.content for r in res.episodes]


class TestServiceRerank:
    async def test_model_reorders_the_head(self, tmp_path: Path) -> None:
        model = OverlapReranker()
        svc = await _service(tmp_path, model, {"rerank_model": "rr-1"})
        scope = await scope_of(svc)
        for d in DOCS:
            await svc.remember(scope, {"content": d}, ADMIN)
        res = await svc.recall(scope, "green tea garden", limit=3, with_profiles=False)
        got = [r.episode.content for r in res.episodes]
        assert len(model.calls) == 1
        query, documents, timeout = model.calls[0]
        assert query == "green tea garden" and timeout == 3.0 and set(documents) <= set(DOCS)
        # the stand-in's order: most query words first (garden + tea beats tea + green? both 2; fused breaks ties)
        scores = {d: len({"green", "tea", "garden"} & set(d.split())) for d in got}
        assert [scores[d] for d in got] == sorted(scores.values(), reverse=True)
        assert [r.score for r in res.episodes] == sorted((r.score for r in res.episodes), reverse=True)

    async def test_no_model_set_means_no_call(self, tmp_path: Path) -> None:
        model = OverlapReranker()
        svc = await _service(tmp_path, model, {})
        scope = await scope_of(svc)
        await svc.remember(scope, {"content": "tea"}, ADMIN)
        await svc.remember(scope, {"content": "tea garden"}, ADMIN)
        res = await svc.recall(scope, "tea", limit=3, with_profiles=False)
        assert len(res.episodes) == 2 and model.calls == []

    async def test_bounded_candidates(self, tmp_path: Path) -> None:
        model = OverlapReranker()
        svc = await _service(tmp_path, model, {"rerank_model": "rr-1"})
        scope = await scope_of(svc)
        for i in range(40):
            await svc.remember(scope, {"content": f"tea note number {i}"}, ADMIN)
        res = await svc.recall(scope, "tea note", limit=5, with_profiles=False)
        assert len(res.episodes) == 5
        assert len(model.calls) == 1 and len(model.calls[0][1]) == rerank.DEFAULT_POOL

    @pytest.mark.parametrize(
        "model", [OverlapReranker(delay=0.5, words=MINT), OverlapReranker(fail=True, words=MINT)], ids=["slow", "fails"]
    )
    async def test_timeout_or_error_keeps_fused_order(self, tmp_path: Path, model: OverlapReranker) -> None:
        plain = await _service(tmp_path, None, {})
        reranked = await _service(tmp_path, model, {"rerank_model": "rr-1", "rerank_timeout_s": 0.1})
        want = await _recall_order(plain)
        got = await _recall_order(reranked)
        assert got == want and want[:2] == DOCS[:2]
        assert model.calls  # it was asked (positive control of the fallback path)

    async def test_working_model_changes_the_order(self, tmp_path: Path) -> None:
        """Positive control for the fallback test: the same data with a prompt answer is reordered."""
        plain = await _service(tmp_path, None, {})
        reranked = await _service(tmp_path, OverlapReranker(words=MINT), {"rerank_model": "rr-1"})
        want = await _recall_order(plain)
        got = await _recall_order(reranked)
        assert want[:2] == DOCS[:2] and got[:2] == [DOCS[1], DOCS[0]]


class TestSettingsAndAdapter:
    def test_kb_settings_round_trip(self) -> None:
        kb = KbSettings.from_creation("kb", {"rerank_model": " rr-1 ", "rerank_timeout_s": "99"})
        assert kb.rerank_model == "rr-1" and kb.rerank_timeout_s == 30.0
        again = KbSettings.from_creation("kb", kb.to_dict())
        assert again == kb
        assert KbSettings.from_creation("kb", {}).rerank_model == ""

    async def test_host_reranker_calls_invoke_rerank(self) -> None:
        seen: list[tuple[Any, ...]] = []

        class Plugin:
            async def invoke_rerank(self, uuid: str, query: str, documents: list[str], **kw: Any) -> list[dict]:
                seen.append((uuid, query, documents, kw))
                return [{"index": 0, "relevance_score": 0.4}]

        got = await HostReranker(Plugin(), "rr-1").rerank("q", ("a", "b"), 2.5)
        assert got == [{"index": 0, "relevance_score": 0.4}]
        assert seen == [("rr-1", "q", ["a", "b"], {"timeout": 2.5})]
        with pytest.raises(ValueError):
            HostReranker(Plugin(), "")
