"""The token budget of the injected block: estimate, limit, near-duplicates, lowest value dropped first."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.budget import estimate_tokens, evidence_budget, fit_budget


class TestEstimate:
    def test_ascii_is_a_third_of_the_characters_rounded_up(self) -> None:
        assert estimate_tokens("") == 0
        assert estimate_tokens("abc") == 1
        assert estimate_tokens("abcd") == 2
        assert estimate_tokens("x" * 300) == 100

    def test_cjk_counts_one_each(self) -> None:
        assert estimate_tokens("我喜欢咖啡") == 5
        assert estimate_tokens("我喜欢coffee") == 3 + 2

    def test_is_conservative_for_english(self) -> None:
        """At least one token per 4 characters (real BPE tokenizers average about 4 for English)."""
        text = "I went to a LGBTQ support group yesterday and it was so powerful."
        assert estimate_tokens(text) >= math.ceil(len(text) / 4)


class TestFitBudget:
    def test_limit_respected(self) -> None:
        items = [(f"id{i}", f"topic{i} " * 18 + "xx", float(10 - i)) for i in range(10)]  # 150 chars each
        kept = fit_budget(items, 200, overhead_per_item=10)
        cost = sum(estimate_tokens(t) + 10 for i, t, _ in items if i in kept)
        assert cost <= 200
        assert kept == ["id0", "id1", "id2"]  # 3 * (50 + 10) = 180; a fourth would need 240

    def test_lowest_value_dropped_first(self) -> None:
        """Whatever the input order, the kept items are the most valuable ones."""
        items = [("low", "a" * 90, 0.1), ("high", "b" * 90, 0.9), ("mid", "c" * 90, 0.5)]
        assert fit_budget(items, 2 * (30 + 5), overhead_per_item=5) == ["high", "mid"]
        assert fit_budget(items, 1 * (30 + 5), overhead_per_item=5) == ["high"]

    def test_near_duplicates_suppressed(self) -> None:
        """A near-copy of a more valuable item is dropped even when there is room."""
        items = [
            ("a", "Alice prefers green tea in the morning.", 0.9),
            ("b", "alice prefers green tea in the morning", 0.8),
            ("c", "Alice prefers green tea in the morning!!", 0.7),
            ("d", "Bob is allergic to peanuts.", 0.6),
        ]
        assert fit_budget(items, 10_000) == ["a", "d"]

    def test_similar_but_different_facts_are_kept(self) -> None:
        items = [("a", "Alice likes green tea", 0.9), ("b", "Alice dislikes green tea since May", 0.8)]
        assert fit_budget(items, 10_000) == ["a", "b"]

    def test_near_duplicates_of_different_speakers_are_both_kept(self) -> None:
        """Ann and Bob both said it: folding them into one would lose who said what (issue 27)."""
        items = [("ann", "I live in Lisbon", 0.9), ("bob", "I live in Lisbon", 0.8), ("ann2", "I live in Lisbon.", 0.7)]
        speakers = {"ann": "ann", "bob": "bob", "ann2": "ann"}
        assert fit_budget(items, 10_000, speakers=speakers) == ["ann", "bob"]
        # control: without speakers (or for one speaker) the copies still fold
        assert fit_budget(items, 10_000) == ["ann"]

    def test_chinese_near_duplicates(self) -> None:
        items = [("a", "小明喜欢喝绿茶。", 0.9), ("b", "小明喜欢喝绿茶", 0.5), ("c", "小红喜欢跑步", 0.4)]
        assert fit_budget(items, 10_000) == ["a", "c"]

    def test_an_item_larger_than_the_whole_budget_is_skipped(self) -> None:
        items = [("huge", "x" * 3000, 0.9), ("small", "short note", 0.5)]
        assert fit_budget(items, 100) == ["small"]

    def test_empty_and_zero_budget(self) -> None:
        assert fit_budget([], 100) == []
        assert fit_budget([("a", "text", 1.0)], 0) == []

    def test_returns_best_first(self) -> None:
        items = [("a", "one thing", 0.2), ("b", "another matter", 0.7), ("c", "third topic", 0.5)]
        assert fit_budget(items, 1000) == ["b", "c", "a"]


class TestEvidenceBudget:
    def test_profiles_cannot_take_the_whole_block(self) -> None:
        assert evidence_budget(1500, 100) == 1400
        assert evidence_budget(1500, 5000) == 900  # profile capped at 40 %
        assert evidence_budget(1500, 0) == 1500


_texts = st.text(alphabet=st.sampled_from(list("abcdefgh 我你他的")), min_size=1, max_size=120)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_texts, st.floats(0, 1)), max_size=15), st.integers(0, 400), st.integers(0, 20))
def test_budget_properties(raw: list[tuple[str, float]], budget: int, overhead: int) -> None:
    """Kept items fit, are unique ids, and no dropped-for-room item outranks a kept one."""
    items = [(f"i{n}", text, value) for n, (text, value) in enumerate(raw)]
    kept = fit_budget(items, budget, overhead_per_item=overhead)
    by_id = {i: (t, v) for i, t, v in items}
    assert len(kept) == len(set(kept))
    assert sum(estimate_tokens(by_id[i][0]) + overhead for i in kept) <= max(budget, 0)
    if kept:
        lowest_kept = min(by_id[i][1] for i in kept)
        # Every more valuable item not kept was either a near-duplicate or too large on its own.
        for i, t, v in items:
            if i not in kept and v > lowest_kept:
                too_big = estimate_tokens(t) + overhead > budget
                dup = any(by_id[k][1] >= v for k in kept)
                assert too_big or dup
