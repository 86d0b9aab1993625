"""The session gist: sessions by time gaps, BM25 over a session as one document, and the ranking
stage that lifts the memories of the best session."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain import gist
from ltm.domain.lexical import BM25Index, tokenize
from ltm.domain.ranking import Candidate, RankSettings, explain, rank
from tests.support.ranking import NOW, cand

HOUR = 3600.0
OFF = RankSettings(gist_weight=0.0)


def scores(
    cands: list[Candidate], query: str, s: RankSettings, sessions: gist.SessionScores | None
) -> dict[str, float]:
    got = rank(cands, query=query, now_ts=NOW, speaker_id=None, settings=s, time_window=None, sessions=sessions)
    return {c.id: v for c, v in got}


class TestSessions:
    def test_gaps_split(self) -> None:
        times = [0.0, 600.0, 1200.0, 10 * HOUR, 10 * HOUR + 60.0, 30 * HOUR]
        assert gist.sessions(times, HOUR) == [0, 0, 0, 1, 1, 2]

    def test_order_of_the_input_does_not_matter(self) -> None:
        assert gist.sessions([10 * HOUR, 0.0, 600.0], HOUR) == [1, 0, 0]

    def test_a_chain_of_small_gaps_is_one_session(self) -> None:
        times = [i * 0.9 * HOUR for i in range(6)]  # each within the gap of the next, 4.5 h end to end
        assert set(gist.sessions(times, HOUR)) == {0}

    def test_untimed_memory_is_alone(self) -> None:
        assert gist.sessions([0.0, math.nan, 60.0, math.inf], HOUR) == [0, 1, 0, 2]

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.floats(0.0, 1e6), min_size=0, max_size=40), st.floats(1.0, 1e5))
    def test_labels_follow_time_and_gaps(self, times: list[float], gap: float) -> None:
        labels = gist.sessions(times, gap)
        assert len(labels) == len(times)
        order = sorted(range(len(times)), key=lambda i: times[i])
        for a, b in zip(order, order[1:], strict=False):
            same = times[b] - times[a] <= gap
            assert (labels[a] == labels[b]) == same
            assert labels[b] >= labels[a]
        assert sorted(set(labels)) == list(range(len(set(labels))))


class TestSessionBM25:
    def test_equals_bm25_of_the_joined_texts(self) -> None:
        """A session scored as one document: the same figures as the lexical index over each
        session's texts joined (the sums stand in for the joined document)."""
        sess = {
            0: ["we made clay cups at the pottery class", "the kids loved the kiln"],
            1: ["coffee cups on sale", "I bought a new mug"],
            2: ["camping by the lake"],
        }
        joined = BM25Index()
        for s, texts in sess.items():
            joined.add(str(s), "\n".join(texts))
        query = "clay cups pottery kids"
        query_tf: dict[str, int] = {}
        term_tf: dict[str, np.ndarray] = {}
        for t in tokenize(query):
            query_tf[t] = query_tf.get(t, 0) + 1
            term_tf[t] = np.array([sum(tokenize(x).count(t) for x in sess[s]) for s in range(3)], dtype=float)
        lengths = np.array([sum(len(tokenize(x)) for x in sess[s]) for s in range(3)], dtype=float)
        got = gist.session_bm25(query_tf, term_tf, lengths)
        want = dict(joined.search(query, 10))
        assert {s for s in range(3) if got[s] > 0} == {int(k) for k in want}
        for k, v in want.items():
            assert abs(got[int(k)] - v) < 1e-9
        assert int(np.argmax(got)) == 0

    def test_nothing_shared_nothing_scored(self) -> None:
        assert not gist.session_bm25({"zebra": 1}, {"zebra": np.zeros(2)}, np.array([5.0, 5.0])).any()
        assert not gist.session_bm25({}, {}, np.array([5.0])).any()
        assert gist.session_bm25({"a": 1}, {"a": np.ones(0)}, np.zeros(0)).size == 0


class TestFactors:
    SCORES = gist.SessionScores(
        dense=np.array([0.4, 0.2, 0.1]), lexical=np.array([3.0, 6.0, 0.0]), of={"a": 0, "b": 1, "c": 2}
    )

    def test_best_session_only(self) -> None:
        # fused at 0.5: session 0 = 0.5 * 1 + 0.5 * 0.5 = 0.75; session 1 = 0.25 + 0.5 = 0.75 -> tie, lower label first
        got = gist.factors(self.SCORES, ["a", "b", "c"], vector_weight=0.5, top=1, weight=0.1)
        assert got == {"a": 1.1}
        # the dense share decides: all dense -> session 0, all lexical -> session 1
        assert gist.factors(self.SCORES, ["a", "b"], vector_weight=1.0, top=1, weight=0.1) == {"a": 1.1}
        assert gist.factors(self.SCORES, ["a", "b"], vector_weight=0.0, top=1, weight=0.1) == {"b": 1.1}

    def test_more_sessions_relative_to_the_best(self) -> None:
        got = gist.factors(self.SCORES, ["a", "b", "c"], vector_weight=1.0, top=2, weight=0.2)
        assert got == {"a": 1.2, "b": 1.0 + 0.2 * 0.5}

    def test_off_or_one_session(self) -> None:
        assert gist.factors(self.SCORES, ["a"], vector_weight=0.5, top=1, weight=0.0) == {}
        assert gist.factors(self.SCORES, ["a"], vector_weight=0.5, top=0, weight=0.1) == {}
        one = gist.SessionScores(dense=np.array([0.5]), lexical=np.array([2.0]), of={"a": 0})
        assert gist.factors(one, ["a"], vector_weight=0.5, top=1, weight=0.1) == {}


class TestStage:
    def _case(self) -> tuple[list[Candidate], gist.SessionScores]:
        # the distractor is a little stronger alone; the evidence sits in the conversation about it
        evidence = cand("a_evidence", "the kids made clay cups", vec=0.50, lex=2.0)
        distractor = cand("b_distractor", "cups of coffee every morning", vec=0.52, lex=2.0)
        sessions = gist.SessionScores(
            dense=np.array([0.45, 0.20]), lexical=np.array([8.0, 2.0]), of={"a_evidence": 0, "b_distractor": 1}
        )
        return [evidence, distractor], sessions

    def test_the_best_session_leads_to_its_memory(self) -> None:
        cs, sessions = self._case()
        q = "what did the kids make at the pottery class"
        off = scores(cs, q, OFF, sessions)
        assert off["b_distractor"] > off["a_evidence"]  # control: without the stage
        assert scores(cs, q, RankSettings(), None) == off  # and without the sessions read
        on = scores(cs, q, RankSettings(), sessions)
        assert on["a_evidence"] > on["b_distractor"]
        assert abs(on["a_evidence"] - off["a_evidence"] * 1.1) < 1e-12
        assert on["b_distractor"] == off["b_distractor"]

    def test_explain_and_trace_agree(self) -> None:
        cs, sessions = self._case()
        q = "pottery"
        got = scores(cs, q, RankSettings(), sessions)
        rows = {
            r["id"]: r for r in explain(cs, query=q, now_ts=NOW, speaker_id=None, time_window=None, sessions=sessions)
        }
        trace: dict[str, Any] = {}
        rank(cs, query=q, now_ts=NOW, speaker_id=None, time_window=None, trace=trace, sessions=sessions)
        assert rows["a_evidence"]["gist"] == trace["parts"]["a_evidence"]["gist"] == 1.1
        assert rows["b_distractor"]["gist"] == trace["parts"]["b_distractor"]["gist"] == 1.0
        for cid, v in got.items():
            assert abs(rows[cid]["score"] - v) < 1e-12


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.floats(0.0, 1.0), st.one_of(st.none(), st.floats(0.0, 20.0)), st.integers(0, 4)),
        min_size=1,
        max_size=30,
    ),
    dense=st.lists(st.floats(-1.0, 1.0), min_size=5, max_size=5),
    lexical=st.lists(st.floats(0.0, 30.0), min_size=5, max_size=5),
    top=st.integers(0, 5),
    weight=st.floats(0.0, 1.0),
    vw=st.floats(0.0, 1.0),
)
def test_the_stage_only_lifts_the_best_sessions(
    rows: list[tuple[float, float | None, int]],
    dense: list[float],
    lexical: list[float],
    top: int,
    weight: float,
    vw: float,
) -> None:
    """Never lowers a score, never adds or drops a candidate, lifts each by at most ``1 + weight``,
    and only memories of at most ``top`` sessions."""
    cs = [cand(f"c{i:02d}", f"text {i}", vec=v, lex=lx) for i, (v, lx, _) in enumerate(rows)]
    of = {f"c{i:02d}": s for i, (_, _, s) in enumerate(rows)}
    sessions = gist.SessionScores(dense=np.array(dense), lexical=np.array(lexical), of=of)
    base = scores(cs, "text", OFF, sessions)
    got = scores(cs, "text", RankSettings(gist_weight=weight, gist_top=top, gist_vector_weight=vw), sessions)
    assert got.keys() == base.keys()
    lifted: set[int] = set()
    for cid, v in got.items():
        assert v >= base[cid] - 1e-12
        assert v <= base[cid] * (1.0 + weight) + 1e-9
        if v > base[cid] + 1e-12:
            lifted.add(of[cid])
    assert len(lifted) <= top


class TestIndexAccessors:
    """What the service reads of the lexical index for the gist."""

    def test_postings_and_lengths(self) -> None:
        idx = BM25Index()
        idx.add("a", "clay cups, clay bowls")
        idx.add("b", "coffee cups")
        clay = tokenize("clay")[0]  # an index term (stemmed)
        assert dict(idx.postings(clay)) == {"a": 2}
        assert dict(idx.postings(tokenize("cups")[0])) == {"a": 1, "b": 1}
        assert dict(idx.postings("zebra")) == {}
        assert idx.doc_length("a") == 4 and idx.doc_length("b") == 2 and idx.doc_length("zz") == 0

    def test_postings_are_read_only(self) -> None:
        idx = BM25Index()
        idx.add("a", "clay")
        clay = tokenize("clay")[0]
        post = idx.postings(clay)
        with pytest.raises(TypeError):
            post["b"] = 1  # type: ignore[index]
        assert dict(idx.postings(clay)) == {"a": 1}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0.0, 1e6), st.just(math.nan), st.just(math.inf)), min_size=0, max_size=40),
    st.floats(1.0, 1e5),
)
def test_the_service_labels_sessions_as_the_domain_does(times: list[float], gap: float) -> None:
    from ltm.service.session_gist import session_labels

    assert session_labels(np.asarray(times, dtype=np.float64), gap).tolist() == gist.sessions(times, gap)
