"""Session neighbourhood: candidates told in the conversation where the strong ones cluster."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.neighbourhood import session_density
from ltm.domain.ranking import Candidate, RankSettings, rank

H = 3600.0


def test_densest_conversation_is_one_and_far_away_is_zero() -> None:
    times = [0.0, 60.0, 120.0, 10 * H, 100 * H]
    scores = [1.0, 0.9, 0.8, 0.7, 0.1]
    got = session_density(times, scores, top=4, gap_s=H)
    assert got[2] == 1.0 and 0.85 < got[0] < got[1] < 1.0  # the others' mass around each
    assert got[3] == 0.0  # alone: no other strong candidate near it
    assert got[4] == 0.0  # not in the head and far from it


def test_no_time_means_no_density() -> None:
    assert session_density([math.nan, 0.0, 1.0], [1.0, 1.0, 1.0]) == [0.0, 1.0, 1.0]
    assert session_density([], []) == []


def _cand(i: str, ts: float, lex: float) -> Candidate:
    md = {"status": "active", "ts": ts, "event_ts": ts, "importance": 0.5}
    return Candidate(id=i, text="x", metadata=md, vector_sim=0.5, lexical=lex)


def test_in_ranking_a_memory_of_the_topic_conversation_wins_a_near_tie() -> None:
    now = 1000 * H
    topic = [_cand(f"t{i}", 500 * H + i, 1.0) for i in range(3)]
    lone = _cand("lone", 700 * H, 0.99)
    near = _cand("near", 500 * H + 10, 0.97)
    cands = [*topic, lone, near]
    got = [
        c.id for c, _ in rank(cands, query="x", now_ts=now, speaker_id=None, settings=RankSettings(recency_weight=0))
    ]
    assert got.index("near") < got.index("lone")
    off = RankSettings(recency_weight=0, session_weight=0)
    got = [c.id for c, _ in rank(cands, query="x", now_ts=now, speaker_id=None, settings=off)]
    assert got.index("lone") < got.index("near")  # positive control: without it, relevance alone decides


@given(
    st.lists(st.tuples(st.one_of(st.floats(-1e9, 1e9), st.just(math.nan)), st.floats(0, 10)), min_size=0, max_size=40),
    st.integers(1, 30),
)
def test_bounded(rows: list[tuple[float, float]], top: int) -> None:
    got = session_density([t for t, _ in rows], [s for _, s in rows], top=top)
    assert len(got) == len(rows) and all(0.0 <= d <= 1.0 for d in got)


def test_explain_agrees_with_rank() -> None:
    from ltm.domain.ranking import explain

    now = 1000 * H
    cands = [_cand(f"t{i}", 500 * H + i, 1.0 - i / 10) for i in range(3)] + [_cand("lone", 700 * H, 0.95)]
    ranked = [(c.id, round(v, 9)) for c, v in rank(cands, query="x", now_ts=now, speaker_id=None)]
    rows = explain(cands, query="x", now_ts=now, speaker_id=None)
    assert [(r["id"], round(r["score"], 9)) for r in rows] == ranked
    assert any(r["session"] > 1.0 for r in rows) and next(r for r in rows if r["id"] == "lone")["session"] == 1.0
