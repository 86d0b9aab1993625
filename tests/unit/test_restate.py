"""The restatement rule (ltm.domain.restate): a guard difference always vetoes; both signals must be
high; every veto has a positive control that passes."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.restate import COSINE_MIN, cosine, guards, lexical_overlap, normalise, restates


class TestGuards:
    def test_each_guard_vetoes_and_its_control_passes(self) -> None:
        cases = [
            ("numbers", "I have two kids", "I have three kids", "I have 2 kids"),
            ("names", "Ann lives in Lisbon", "Bob lives in Lisbon", "Ann lives in Lisbon now"),
            ("negation", "I eat pork", "I don't eat pork", "I eat pork."),
            ("time", "I went to Rome last week", "I went to Rome last month", "I went to Rome last week!"),
            ("people", "My sister lives in Berlin", "My brother lives in Berlin", "My sister is living in Berlin"),
            ("numbers", "我有两个孩子", "我有三个孩子", "我有2个孩子"),
            ("negation", "我吃猪肉", "我不吃猪肉", "我吃猪肉。"),
            ("time", "我明天飞东京", "我今天飞东京", "我明天飞东京。"),
            ("people", "我妈妈是老师", "我爸爸是老师", "我妈妈是一名老师"),
        ]
        for why, stored, other, control in cases:
            assert guards(other, stored) == why, (stored, other)
            assert restates(other, stored, 1.0).duplicate is False
            assert guards(control, stored) == "", (stored, control)

    def test_a_han_substitution_is_never_a_restatement(self) -> None:
        """The local embedder scores these 1.0: the rule must not rely on it for Han text."""
        assert restates("我喜欢喝红茶", "我喜欢喝绿茶", 1.0).reason == "substitution"
        assert restates("我很喜欢喝绿茶", "我喜欢喝绿茶", 0.9).duplicate  # control: an added filler


class TestSignals:
    def test_both_signals_must_be_high(self) -> None:
        assert restates("I'm living in Lisbon", "I live in Lisbon", 0.94).duplicate
        assert not restates("I'm living in Lisbon", "I live in Lisbon", COSINE_MIN - 0.01).duplicate
        assert not restates("I'm living in Lisbon", "I live in Lisbon", None).duplicate
        assert not restates("I live in Lisbon with a view of the sea", "I live in Lisbon", 0.99).duplicate

    def test_the_same_normalised_text_needs_no_embedding(self) -> None:
        assert normalise("Actually, I'M vegetarian!") == normalise("i am vegetarian")
        assert restates("Actually, I'M vegetarian!", "i am vegetarian", None).duplicate

    def test_cosine(self) -> None:
        assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
        assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
        assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0


@given(st.text(max_size=80), st.text(max_size=80), st.one_of(st.none(), st.floats(-1, 1)))
def test_never_raises_and_is_bounded(a: str, b: str, cos: float | None) -> None:
    v = restates(a, b, cos)
    assert 0.0 <= lexical_overlap(a, b) <= 1.0
    assert isinstance(v.duplicate, bool)
    assert restates(a, a, cos).duplicate  # a text always restates itself


def test_the_benchmark_runs_offline_with_the_hashing_embedder(tmp_path) -> None:
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "benchmarks.restate", "--embedder", "hashing", "--out", str(out)], check=True)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert {"precision", "recall", "pairs"} <= set(report) and report["pairs"] >= 150
    assert report["precision"] >= 0.97
