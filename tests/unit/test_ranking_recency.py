"""Recency in the ranking: how much it may take off an old memory (issue 36 part 2).

The default weight, 0.05, is what leave-one-conversation-out picks on LoCoMo among the weights
that keep recency on (``benchmarks.locomo --loo --loo-knobs recency_weight``; docs/retrieval.md):
recency orders memories that are otherwise equal, and no longer sinks a clearly more relevant
memory because it was said months ago.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.ranking import Candidate, RankSettings, rank
from tests.support.ranking import NOW
from tests.support.ranking import cand as ranking_cand

DAY = 86400.0


def cand(cid: str, *, vec: float, lex: float, age_days: float) -> Candidate:
    """A memory said ``age_days`` before NOW (the information prior held fixed: 30 terms)."""
    return ranking_cand(cid, cid, vec=vec, lex=lex, ts=NOW - age_days * DAY, terms=30)


def scores(cands: list[Candidate], s: RankSettings | None = None) -> dict[str, float]:
    got = rank(cands, query="q", now_ts=NOW, speaker_id=None, settings=s or RankSettings())
    return {c.id: v for c, v in got}


def test_default_weight_is_the_one_leave_one_out_picked() -> None:
    assert RankSettings().recency_weight == 0.05


def test_a_year_old_memory_loses_at_most_five_percent() -> None:
    """An equally relevant memory said a year ago scores below the fresh one (recency still orders
    ties: the positive control) and at most 5 % below it (the new bound)."""
    got = scores([cand("old", vec=0.8, lex=5.0, age_days=365), cand("new", vec=0.8, lex=5.0, age_days=0)])
    assert got["new"] > got["old"]
    assert got["old"] >= got["new"] * 0.95
    assert got["old"] < got["new"] * 0.96  # a year is many half-lives: nearly the whole 5 % is taken


def test_a_clearly_more_relevant_old_memory_is_no_longer_sunk() -> None:
    """A memory 6 % more relevant but half a year old: first at the default weight, second at the
    former 0.1 (the same pair, so the test sees what the change does)."""
    cs = [cand("old", vec=0.848, lex=5.3, age_days=180), cand("new", vec=0.8, lex=5.0, age_days=0)]
    now_w = scores(cs)
    assert now_w["old"] > now_w["new"]
    before = scores(cs, RankSettings(recency_weight=0.1))
    assert before["new"] > before["old"]


@settings(max_examples=80, deadline=None)
@given(
    age=st.floats(0, 3650),
    older=st.floats(0, 3650),
    weight=st.floats(0, 0.5),
    half_life=st.floats(1, 365),
)
def test_recency_takes_at_most_its_weight_and_never_favours_the_older(
    age: float, older: float, weight: float, half_life: float
) -> None:
    """For any ages, weight and half-life: the older of two otherwise equal memories keeps at
    least ``1 - weight`` of the other's score and never scores above it."""
    a, b = sorted((age, older))
    s = RankSettings(recency_weight=weight, half_life_days=half_life)
    got = scores([cand("younger", vec=0.7, lex=3.0, age_days=a), cand("elder", vec=0.7, lex=3.0, age_days=b)], s)
    assert got["elder"] <= got["younger"] + 1e-12
    assert got["elder"] >= got["younger"] * (1 - weight) - 1e-12
