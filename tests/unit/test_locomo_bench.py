"""The LoCoMo benchmark runs the service's recall only: ``--rank`` and the leave-one-out grid change
the weights of the service's own ranking (nothing else), and the run reports what it ranked with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.locomo import main, rank_point, ranking_overrides
from ltm.domain import ranking
from tests.unit.test_ranking import NOW, TestLoCoMoHarness, cand


def order(**kw: Any) -> list[str]:
    dense = cand("dense", "a walk by the lake", vec=0.9, lex=0.1)
    lexical = cand("lexical", "lake lake lake", vec=0.1, lex=3.0)
    return [c.id for c, _ in ranking.rank([dense, lexical], query="lake", now_ts=NOW, speaker_id=None, **kw)]


class TestRankingOverrides:
    def test_the_named_fields_change_and_nothing_else(self) -> None:
        real = ranking.rank
        settings = ranking.RankSettings(half_life_days=7.0, require_active=False)
        seen: list[ranking.RankSettings] = []

        def spy(candidates: list[ranking.Candidate], **kwargs: Any) -> list[tuple[ranking.Candidate, float]]:
            seen.append(kwargs["settings"])
            return []

        ranking.rank = spy  # type: ignore[assignment]
        try:
            with ranking_overrides({"vector_weight": 0.2}):
                ranking.rank([], query="q", now_ts=NOW, speaker_id=None, settings=settings)
            assert ranking.rank is spy  # restored on the way out
        finally:
            ranking.rank = real  # type: ignore[assignment]
        assert seen == [ranking.RankSettings(half_life_days=7.0, require_active=False, vector_weight=0.2)]

    def test_the_weights_move_the_order(self) -> None:
        assert order(settings=ranking.RankSettings(vector_weight=1.0))[0] == "dense"  # positive control
        with ranking_overrides({"vector_weight": 0.0}):
            assert order(settings=ranking.RankSettings(vector_weight=1.0))[0] == "lexical"
        assert order(settings=ranking.RankSettings(vector_weight=1.0))[0] == "dense"

    def test_an_empty_point_swaps_nothing(self) -> None:
        real = ranking.rank
        with ranking_overrides({}):
            assert ranking.rank is real


class TestRankPoint:
    def test_values_take_the_fields_types(self) -> None:
        assert rank_point(["vector_weight=0.6", "time_window_mode=filter", "rrf_k=30", "time_from_text=false"]) == {
            "vector_weight": 0.6,
            "time_window_mode": "filter",
            "rrf_k": 30,
            "time_from_text": False,
        }

    @pytest.mark.parametrize("bad", ["vector_weight", "no_such_knob=1", "durable_tags=x"])
    def test_unknown_or_malformed_names_are_refused(self, bad: str) -> None:
        with pytest.raises(SystemExit, match="--rank"):
            rank_point([bad])


def test_a_run_reports_the_ranking_it_used(tmp_path: Any) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "1.json").write_text(json.dumps(TestLoCoMoHarness.CONV), encoding="utf-8")
    out = tmp_path / "r.json"
    assert main([str(data), "--out", str(out), "--embedder", "hashing", "--rank", "vector_weight=0.6"]) == 0
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["config"]["engine"] == "service"
    assert res["config"]["recall"]["rank"]["vector_weight"] == 0.6
    assert res["config"]["recall"]["rank_overrides"] == {"vector_weight": 0.6}
    assert res["config"]["recall"]["rank"]["info_weight"] == ranking.RankSettings().info_weight
    assert ranking.rank.__module__ == "ltm.domain.ranking"  # the run left the real function in place


def test_loo_knobs_tune_only_the_named_knobs(tmp_path: Any) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("1", "2"):
        (data / f"{name}.json").write_text(json.dumps(TestLoCoMoHarness.CONV), encoding="utf-8")
    out = tmp_path / "r.json"
    args = [str(data), "--out", str(out), "--embedder", "hashing", "--loo"]
    assert main([*args, "--loo-knobs", "proximity_weight"]) == 0
    res = json.loads(out.read_text(encoding="utf-8"))
    assert list(res["leave_one_out"]["grid"]) == ["proximity_weight"]
    assert all(set(f["picked"]) == {"proximity_weight"} for f in res["leave_one_out"]["folds"])
    with pytest.raises(SystemExit, match="--loo-knobs"):
        main([*args, "--loo-knobs", "no_such_knob"])
