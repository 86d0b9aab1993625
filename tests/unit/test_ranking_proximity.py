"""The proximity stage of the ranking: query terms next to each other in the text, as in the query."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.ranking import Candidate, RankSettings, adjacent_pairs, explain, proximity, rank
from tests.support.ranking import NOW, cand

OFF = RankSettings(proximity_weight=0.0)


def order(cands: list[Candidate], query: str, s: RankSettings | None = None, **kw: Any) -> list[str]:
    return [c.id for c, _ in rank(cands, query=query, now_ts=NOW, speaker_id=None, settings=s or RankSettings(), **kw)]


def scores(cands: list[Candidate], query: str, s: RankSettings | None = None) -> dict[str, float]:
    got = rank(cands, query=query, now_ts=NOW, speaker_id=None, settings=s or RankSettings(), time_window=None)
    return {c.id: v for c, v in got}


class TestPairs:
    def test_stopwords_between_do_not_separate(self) -> None:
        assert ("support", "group") in adjacent_pairs("support for the group")
        assert ("support", "group") in adjacent_pairs("I joined a support group")

    def test_words_apart_are_not_a_pair(self) -> None:
        assert ("support", "group") not in adjacent_pairs("the group was a great support")  # reversed
        assert ("support", "group") not in adjacent_pairs("support from my old friends group")

    def test_stemmed_like_the_lexical_leg(self) -> None:
        assert adjacent_pairs("support groups") == adjacent_pairs("supporting group")

    def test_cjk_runs(self) -> None:
        q = adjacent_pairs("支持小组")
        assert q and proximity(q, "我参加了支持小组") == 1.0
        assert proximity(q, "小组给了我很多支持") == 0.0

    def test_share(self) -> None:
        q = adjacent_pairs("pottery class on friday")  # (pottery, class), (class, friday)
        assert proximity(q, "a pottery class") == 0.5
        assert proximity(q, "my pottery class on Friday") == 1.0
        assert proximity(frozenset(), "anything") == 0.0


class TestStage:
    def test_adjacent_terms_rank_first(self) -> None:
        apart = cand("a_apart", "the group gave me support")
        adjacent = cand("b_adjacent", "I joined a support group")
        # control: without the stage the two tie and the id decides
        assert order([apart, adjacent], "support group", OFF) == ["a_apart", "b_adjacent"]
        assert order([apart, adjacent], "support group") == ["b_adjacent", "a_apart"]

    def test_factor_is_the_share(self) -> None:
        apart = cand("a", "the group gave me support")
        adjacent = cand("b", "I joined a support group")
        base = scores([apart, adjacent], "support group", OFF)
        got = scores([apart, adjacent], "support group", RankSettings(proximity_weight=0.4))
        assert got["a"] == base["a"]
        assert abs(got["b"] - base["b"] * 1.4) < 1e-9

    def test_only_lexical_matches_are_read(self) -> None:
        """A candidate the lexical leg did not match gets no factor (its text is not read)."""
        no_lex = cand("b", "a support group", lex=None)
        other = cand("a", "something else", lex=None)
        base = scores([no_lex, other], "support group", OFF)
        assert scores([no_lex, other], "support group") == base
        # positive control: the same text with a lexical score is lifted
        with_lex = cand("b", "a support group", lex=2.0)
        assert scores([with_lex, other], "support group")["b"] > scores([with_lex, other], "support group", OFF)["b"]

    def test_only_the_head_is_read(self) -> None:
        head = [cand(f"h{i:02d}", f"filler text {i}", vec=0.9, lex=3.0) for i in range(3)]
        tail = cand("tail", "a support group", vec=0.2, lex=0.5)
        cs = [*head, tail]
        base = scores(cs, "support group", OFF)
        assert scores(cs, "support group", RankSettings(proximity_top=3)) == base
        # positive control: a head of four includes it
        assert scores(cs, "support group", RankSettings(proximity_top=4))["tail"] > base["tail"]

    def test_one_term_query_changes_nothing(self) -> None:
        cs = [cand("a", "support"), cand("b", "support group"), cand("c", "group support")]
        assert scores(cs, "support", RankSettings()) == scores(cs, "support", OFF)

    def test_explain_agrees_with_rank(self) -> None:
        cs = [cand("a", "the group gave me support"), cand("b", "I joined a support group", lex=1.0)]
        rows = {r["id"]: r for r in explain(cs, query="support group", now_ts=NOW, speaker_id=None, time_window=None)}
        got = scores(cs, "support group")
        assert rows["b"]["proximity"] > 1.0 and rows["a"]["proximity"] == 1.0
        for cid, v in got.items():
            assert abs(rows[cid]["score"] - v) < 1e-12

    def test_trace_reports_the_factor(self) -> None:
        trace: dict[str, Any] = {}
        cs = [cand("a", "the group gave me support"), cand("b", "I joined a support group")]
        rank(cs, query="support group", now_ts=NOW, speaker_id=None, time_window=None, trace=trace)
        assert trace["parts"]["b"]["proximity"] == 1.4
        assert trace["parts"]["a"]["proximity"] == 1.0


WORDS = ["support", "group", "pottery", "class", "friday", "the", "a", "for", "camping", "trip", "支持", "小组"]


@settings(max_examples=150, deadline=None)
@given(
    query=st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join),
    rows=st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join),
            st.one_of(st.none(), st.floats(0.0, 1.0)),
            st.one_of(st.none(), st.floats(0.0, 20.0)),
        ),
        min_size=1,
        max_size=40,
    ),
    top=st.integers(0, 50),
    weight=st.floats(0.0, 2.0),
)
def test_the_stage_only_lifts_and_keeps_the_set(
    query: str, rows: list[tuple[str, float | None, float | None]], top: int, weight: float
) -> None:
    """Never lowers a score, never adds or drops a candidate, lifts at most ``proximity_top`` of
    them, each by at most ``1 + weight``; the share is always within [0, 1]."""
    cs = [cand(f"c{i:02d}", text or "x", vec=v, lex=lx) for i, (text, v, lx) in enumerate(rows)]
    base = scores(cs, query, OFF)
    got = scores(cs, query, RankSettings(proximity_weight=weight, proximity_top=top))
    assert got.keys() == base.keys()
    lifted = 0
    for cid, v in got.items():
        assert v >= base[cid] - 1e-12
        assert v <= base[cid] * (1.0 + weight) + 1e-9
        lifted += v > base[cid] + 1e-12
    assert lifted <= top
    pairs = adjacent_pairs(query)
    for text, _, _ in rows:
        assert 0.0 <= proximity(pairs, text) <= 1.0
