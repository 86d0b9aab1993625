"""Hybrid ranking: fusion, exact-match boosts, time, speaker preference, validity."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.ranking import Candidate, RankSettings, explain, quoted_phrases, rank

NOW = datetime(2024, 6, 30, 12, 0, tzinfo=UTC).timestamp()
DAY = 86400.0


def cand(
    cid: str,
    text: str = "",
    *,
    vec: float | None = None,
    lex: float | None = None,
    age_days: float = 0.0,
    sender: str = "",
    importance: float = 0.5,
    tags: list[str] | None = None,
    status: str = "active",
    event_ts: float | None = None,
    **md: Any,
) -> Candidate:
    ts = NOW - age_days * DAY
    meta = {
        "episode_id": cid,
        "text": text,
        "sender_id": sender,
        "importance": importance,
        "tags": json.dumps(tags or []),
        "status": status,
        "ts": ts,
        "event_ts": ts if event_ts is None else event_ts,
        "valid_from_ts": 0.0,
        "valid_until_ts": 32503680000.0,
        **md,
    }
    return Candidate(id=cid, text=text or cid, metadata=meta, vector_sim=vec, lexical=lex)


def order(cands: list[Candidate], query: str = "q", speaker: str | None = None, **kw: Any) -> list[str]:
    s = kw.pop("settings", None) or RankSettings()
    return [c.id for c, _ in rank(cands, query=query, now_ts=NOW, speaker_id=speaker, settings=s, **kw)]


class TestFusion:
    def test_both_legs_beat_one(self) -> None:
        """A candidate strong in both legs outranks ones strong in only one."""
        pool = [cand(f"v{i}", vec=0.3 + 0.02 * i, lex=None) for i in range(20)]  # the vector leg's pool
        cs = [*pool, cand("vec", vec=0.8, lex=None), cand("lex", vec=None, lex=9.0), cand("both", vec=0.78, lex=8.5)]
        assert order(cs)[0] == "both"

    def test_complete_set_is_returned_sorted(self) -> None:
        cs = [cand(f"c{i}", vec=0.1 * i, lex=float(i)) for i in range(1, 8)]
        ranked = rank(cs, query="q", now_ts=NOW, speaker_id=None, settings=RankSettings())
        assert [c.id for c, _ in ranked] == [f"c{i}" for i in range(7, 0, -1)]
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True)

    def test_missing_vector_score_is_bounded_not_zero(self) -> None:
        """A lexical-only hit gets the vector leg's floor (its upper bound), so a strong BM25 match
        that the vector pool cut off is not sunk below weak vector-only hits."""
        pool = [cand(f"v{i}", vec=0.40 + 0.01 * i, lex=None) for i in range(20)]
        cs = [*pool, cand("both", vec=0.62, lex=4.0), cand("lexonly", vec=None, lex=10.0)]
        got = order(cs)
        assert set(got[:2]) == {"lexonly", "both"}  # above every vector-only hit (at 0 it would be last)

    def test_one_leg_only(self) -> None:
        """With a single leg (strategy vector or lexical) the leg's own order is kept."""
        assert order([cand("a", vec=0.3), cand("b", vec=0.9), cand("c", vec=0.5)]) == ["b", "c", "a"]
        assert order([cand("a", lex=1.0), cand("b", lex=3.0)]) == ["b", "a"]

    def test_rrf_is_available_for_comparison(self) -> None:
        cs = [cand("a", vec=0.9, lex=1.0), cand("b", vec=0.1, lex=0.5)]
        assert order(cs, settings=RankSettings(fusion="rrf")) == ["a", "b"]

    def test_duplicates_by_id_count_once(self) -> None:
        assert order([cand("a", vec=0.5), cand("a", vec=0.5), cand("b", vec=0.4)]) == ["a", "b"]

    def test_empty(self) -> None:
        assert rank([], query="q", now_ts=NOW, speaker_id=None, settings=RankSettings()) == []


class TestTime:
    def test_durable_old_preference_not_buried(self) -> None:
        """A 60-day-old, clearly relevant preference outranks a fresh, weakly related chat line."""
        old_pref = cand("pref", "Alice prefers oat milk", vec=0.80, lex=6.0, age_days=60, tags=["preference"])
        fresh = cand("fresh", "Alice had coffee today", vec=0.70, lex=4.0, age_days=0)
        assert order([fresh, old_pref], query="what milk does Alice like")[0] == "pref"

    def test_old_untagged_fact_loses_at_most_recency_weight(self) -> None:
        """Even without a durable tag, recency takes at most ``recency_weight`` off the score."""
        s = RankSettings()
        old = cand("old", vec=0.8, lex=5.0, age_days=365)
        new = cand("new", vec=0.8, lex=5.0, age_days=0)
        scores = dict((c.id, sc) for c, sc in rank([old, new], query="q", now_ts=NOW, speaker_id=None, settings=s))
        assert scores["new"] > scores["old"] >= scores["new"] * (1 - s.recency_weight)

    def test_recency_breaks_near_ties(self) -> None:
        cs = [cand("older", vec=0.80, lex=5.0, age_days=90), cand("newer", vec=0.80, lex=5.0, age_days=1)]
        assert order(cs) == ["newer", "older"]

    def test_durable_by_importance(self) -> None:
        cs = [cand("vital", vec=0.8, lex=5.0, age_days=300, importance=0.9), cand("new", vec=0.8, lex=5.0)]
        assert order(cs)[0] == "vital"

    def test_time_window_in_query_favours_events_inside(self) -> None:
        may = datetime(2024, 5, 10, tzinfo=UTC).timestamp()
        april = datetime(2024, 4, 10, tzinfo=UTC).timestamp()
        cs = [cand("april", vec=0.75, lex=5.0, event_ts=april), cand("may", vec=0.70, lex=4.5, event_ts=may)]
        assert order(cs, query="what did we cook in May") == ["may", "april"]
        assert order(cs, query="what did we cook") == ["april", "may"]

    def test_time_window_filter_mode(self) -> None:
        may = datetime(2024, 5, 10, tzinfo=UTC).timestamp()
        cs = [cand("out", vec=0.9, lex=5.0, event_ts=may - 40 * DAY), cand("in", vec=0.2, lex=1.0, event_ts=may)]
        assert order(cs, query="in May", settings=RankSettings(time_window_mode="filter")) == ["in"]
        assert order(cs, query="in May", settings=RankSettings(time_window_mode="off"))[0] == "out"

    def test_explicit_window_overrides_parsing(self) -> None:
        t = datetime(2024, 1, 5, tzinfo=UTC).timestamp()
        cs = [cand("jan", vec=0.5, lex=1.0, event_ts=t), cand("other", vec=0.55, lex=1.1)]
        assert order(cs, query="anything", time_window=(t - DAY, t + DAY))[0] == "jan"
        assert order(cs, query="in January", time_window=None)[0] == "other"


class TestValidity:
    def test_not_yet_valid_and_expired_are_dropped(self) -> None:
        cs = [
            cand("future", vec=0.9, valid_from_ts=NOW + DAY),
            cand("expired", vec=0.9, valid_until_ts=NOW - DAY),
            cand("ok", vec=0.1),
        ]
        assert order(cs) == ["ok"]

    def test_as_of_reads_the_past(self) -> None:
        cs = [cand("expired", vec=0.9, valid_until_ts=NOW - DAY), cand("ok", vec=0.1)]
        got = rank(cs, query="q", now_ts=NOW, speaker_id=None, settings=RankSettings(), as_of_ts=NOW - 2 * DAY)
        assert [c.id for c, _ in got] == ["expired", "ok"]

    def test_inactive_dropped(self) -> None:
        assert order([cand("gone", vec=0.9, status="superseded"), cand("ok", vec=0.2)]) == ["ok"]


class TestSpeaker:
    def test_current_speaker_preferred_on_a_tie(self) -> None:
        cs = [cand("bob", "likes jazz", vec=0.7, lex=3.0, sender="bob"), cand("me", vec=0.7, lex=3.0, sender="alice")]
        assert order(cs, speaker="alice")[0] == "me"

    def test_speaker_preference_does_not_hide_shared_facts(self) -> None:
        """A clearly more relevant shared fact (or another member's) still ranks first, and every
        candidate stays in the ranking."""
        shared = cand("shared", "the group meets on Fridays", vec=0.85, lex=7.0, sender="")
        other = cand("bob", "Bob books the room", vec=0.80, lex=6.5, sender="bob")
        mine = cand("mine", "Alice once mentioned a meeting", vec=0.55, lex=2.0, sender="alice")
        got = order([mine, other, shared], query="when does the group meet", speaker="alice")
        assert got[0] == "shared"
        assert set(got) == {"shared", "bob", "mine"}
        assert got.index("bob") < got.index("mine")


class TestExactMatch:
    def test_episode_id_in_query(self) -> None:
        cs = [cand("ep_abc123", vec=0.3, lex=2.0), cand("ep_other", vec=0.9, lex=3.0)]
        assert order(cs, query="show me ep_abc123")[0] == "ep_abc123"
        assert order(cs, query="show me ep_abc1234")[0] == "ep_other"  # whole ids only

    def test_sender_named_in_query(self) -> None:
        cs = [
            cand("mel", "I painted a sunrise", vec=0.6, lex=3.0, sender="Melanie"),
            cand("car", "I painted a sunrise too", vec=0.62, lex=3.1, sender="Caroline"),
        ]
        assert order(cs, query="When did Melanie paint a sunrise?")[0] == "mel"

    def test_tag_named_in_query(self) -> None:
        cs = [cand("tagged", vec=0.6, lex=3.0, tags=["travel"]), cand("plain", vec=0.62, lex=3.1)]
        assert order(cs, query="my travel notes")[0] == "tagged"

    def test_chinese_sender_and_tag(self) -> None:
        cs = [cand("a", vec=0.6, lex=3.0, sender="小明", tags=["旅行"]), cand("b", vec=0.65, lex=3.2, sender="小红")]
        assert order(cs, query="小明的旅行计划")[0] == "a"

    def test_quoted_phrase(self) -> None:
        cs = [
            cand("exact", "the password hint is blue falcon", vec=0.5, lex=3.0),
            cand("near", "a falcon that is blue", vec=0.55, lex=3.2),
        ]
        assert order(cs, query='what was "blue falcon" about')[0] == "exact"
        assert quoted_phrases("say “Hello There” and 「你好」") == ["hello there", "你好"]

    def test_importance(self) -> None:
        cs = [cand("low", vec=0.7, lex=3.0, importance=0.1), cand("high", vec=0.7, lex=3.0, importance=0.75)]
        assert order(cs)[0] == "high"


def test_explain_lists_parts() -> None:
    rows = explain([cand("a", vec=0.5, lex=1.0), cand("b", vec=0.4)], query="q", now_ts=NOW, speaker_id=None)
    assert [r["id"] for r in rows] == ["a", "b"]
    assert {"relevance", "boost", "recency", "score"} <= set(rows[0])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(-1, 1)),
            st.one_of(st.none(), st.floats(0, 30)),
            st.floats(0, 400),
            st.floats(0, 1),
        ),
        max_size=25,
    )
)
def test_rank_is_a_total_order_of_the_valid_set(rows: list[tuple[float | None, float | None, float, float]]) -> None:
    """Every active valid candidate comes back exactly once, scores non-increasing and finite."""
    cs = [cand(f"c{i}", vec=v, lex=lx, age_days=a, importance=imp) for i, (v, lx, a, imp) in enumerate(rows)]
    got = rank(cs, query="anything at all", now_ts=NOW, speaker_id=None, settings=RankSettings())
    assert sorted(c.id for c, _ in got) == sorted(c.id for c in cs)
    scores = [s for _, s in got]
    assert all(s == pytest.approx(s) and s >= 0 for s in scores)
    assert scores == sorted(scores, reverse=True)


class TestLoCoMoHarness:
    """The retrieval benchmark runs the plugin's recall and writes the agreed JSON keys."""

    CONV = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso last week."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I started violin lessons."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Violin sounds hard, good luck."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "We hiked up Mount Tam on Sunday.", "blip_caption": "a trail"},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Miso knocked my coffee over again."},
        ],
        "session_3_date_time": "9:00 am on 1 July, 2023",
        "qa": [
            {"question": "What is the name of Ann's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "Which instrument does Bob learn?", "answer": "violin", "evidence": ["D1:2"], "category": 1},
            {
                "question": "Where did Bob hike in June 2023?",
                "answer": "Mount Tam",
                "evidence": ["D2:1"],
                "category": 2,
            },
            {"question": "What does Ann's dog eat?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
            {"question": "Broken evidence", "answer": "x", "evidence": ["D:9"], "category": 4},
        ],
    }

    def test_session_dates_parse_to_utc(self) -> None:
        from benchmarks.locomo import parse_session_datetime

        assert parse_session_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert parse_session_datetime("12:06 am on 11 November, 2022") == datetime(2022, 11, 11, 0, 6, tzinfo=UTC)
        with pytest.raises(ValueError):
            parse_session_datetime("yesterday")

    def test_runs_end_to_end(self, tmp_path: Any) -> None:
        from benchmarks.locomo import main

        data = tmp_path / "data"
        data.mkdir()
        (data / "1.json").write_text(json.dumps(self.CONV), encoding="utf-8")
        out = tmp_path / "r.json"
        assert main([str(data), "--out", str(out), "--embedder", "hashing"]) == 0
        res = json.loads(out.read_text(encoding="utf-8"))
        assert res["questions"] == 3 and res["skipped_questions"] == 1
        assert res["recall_at_5"] == 1.0 and res["recall_at_10"] == 1.0
        assert {"per_category", "baselines", "config", "dataset", "git_commit", "median_injected_tokens"} <= set(res)
        assert set(res["baselines"]) == {"dense", "bm25"}
        assert len(res["dataset"]["sha256"]) == 64

    def test_leave_one_out_per_category_and_rerank_standin(self, tmp_path: Any) -> None:
        from benchmarks.locomo import main

        data = tmp_path / "data"
        data.mkdir()
        for name in ("1", "2"):
            (data / f"{name}.json").write_text(json.dumps(self.CONV), encoding="utf-8")
        out = tmp_path / "r.json"
        assert main([str(data), "--out", str(out), "--embedder", "hashing", "--loo", "--rerank-standin"]) == 0
        res = json.loads(out.read_text(encoding="utf-8"))
        assert list(res)[:2] == ["recall_at_5", "recall_at_10"]
        loo = res["leave_one_out"]
        assert [f["held_out"] for f in loo["folds"]] == ["1", "2"]
        for part in ("in_sample", "held_out", "gap"):
            assert {"recall_at_5", "recall_at_10", "2-temporal_at_5", "4-single-hop_at_10"} <= set(loo[part])
        assert loo["in_sample"]["recall_at_5"] == res["recall_at_5"] == 1.0
        assert loo["max_gap"] == max(loo["gap"].values())
        # the held-out figures per category at the top of the result, next to recall_at_5/10
        assert res["loo_recall_at_5"] == loo["held_out"]["recall_at_5"]
        assert res["loo_per_category_at_5"]["2-temporal"] == loo["held_out"]["2-temporal_at_5"]
        assert res["loo_gap_per_category_at_10"]["4-single-hop"] == loo["gap"]["4-single-hop_at_10"]
        assert res["loo_max_gap"] == loo["max_gap"]
        # and the in-sample figures beside them
        assert res["loo_in_sample_recall_at_10"] == loo["in_sample"]["recall_at_10"]
        assert res["loo_in_sample_per_category_at_5"]["2-temporal"] == loo["in_sample"]["2-temporal_at_5"]
        rr = res["rerank_standin"]
        assert rr["calls"] == res["questions"] and rr["documents_per_call"] > 1  # one bounded call per recall
        assert "recall_at_5" in rr and "not a cross-encoder" in rr["reranker"]


class TestInformation:
    """A memory that says something outranks chit-chat at equal relevance; never a filter."""

    def test_content_rich_memory_first_on_a_tie(self) -> None:
        rich = cand("rich", "I signed up for a pottery class at the community center on Friday with my sister",
                    vec=0.5, lex=1.0)  # fmt: skip
        chat = cand("chat", "Wow, great!", vec=0.5, lex=1.0)
        got = [c.id for c, _ in rank([chat, rich], query="pottery", now_ts=NOW, speaker_id=None)]
        assert got == ["rich", "chat"]
        off = RankSettings(info_weight=0.0)
        got = [c.id for c, _ in rank([chat, rich], query="pottery", now_ts=NOW, speaker_id=None, settings=off)]
        assert set(got) == {"rich", "chat"}  # positive control: both kept without the prior

    def test_bounded(self) -> None:
        """At most ``info_weight`` more: a much more relevant short memory still wins."""
        rich = cand("rich", " ".join(f"word{i}" for i in range(100)), vec=0.3, lex=0.5)
        short = cand("short", "pottery", vec=0.9, lex=3.0)
        got = [c.id for c, _ in rank([rich, short], query="pottery", now_ts=NOW, speaker_id=None)]
        assert got[0] == "short"
