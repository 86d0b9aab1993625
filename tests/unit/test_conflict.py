"""Conflict detection (pure) and its benchmark: negation flips, changed values of one attribute,
compatible and unrelated pairs, English and Chinese; the labelled set and the harness."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import conflicts as bench
from ltm.domain.conflict import (
    COMPATIBLE,
    CONTRADICTING,
    UNRELATED,
    find_conflicts,
    parse_claims,
    relation,
    same_value,
)


class TestIssueExamples:
    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("prefers Go", "prefers Python"),
            ("moved to Berlin", "lives in Paris"),
            ("别上 Postgres", "用 Postgres"),
            ("I don't like tea anymore.", "I like tea."),
        ],
    )
    def test_contradicting(self, new: str, old: str) -> None:
        assert relation(new, old).label == CONTRADICTING

    def test_the_verdict_names_both_sides(self) -> None:
        v = relation("I moved to Berlin.", "I live in Paris.")
        assert (v.attribute, v.new_value, v.old_value) == ("location", "berlin", "paris")


class TestEnglish:
    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("My name is Robert.", "My name is Alice."),
            ("I'm 34.", "I am 33 years old."),
            ("I work at Stripe now.", "I work at Google."),
            ("We switched to MySQL.", "We use Postgres."),
            ("I am not vegetarian.", "I'm a vegetarian."),
            ("I eat meat every day.", "I am vegetarian."),
            ("The meeting was moved to Tuesday.", "The meeting is on Monday."),
            ("I hate cilantro.", "I love cilantro."),
            ("My favorite color is green.", "My favorite color is blue."),
            ("I have 3 kids.", "I have two kids."),
        ],
    )
    def test_contradicting(self, new: str, old: str) -> None:
        assert relation(new, old).label == CONTRADICTING

    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("I like coffee.", "I like tea."),  # liking is not exclusive
            ("I have a dog.", "I have a cat."),
            ("I prefer Python for scripting.", "I like Go."),  # a preference and a liking
            ("I don't live in London.", "I live in Berlin."),  # a negation of another value
            ("I really love jazz.", "I like jazz."),  # a restatement
            ("I live in Berlin.", "I grew up in Munich."),
            ("We use Redis for caching.", "We use Postgres."),  # different kinds of tool, one topic
        ],
    )
    def test_compatible(self, new: str, old: str) -> None:
        assert relation(new, old).label == COMPATIBLE

    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("Alice lives in Paris.", "Bob lives in Berlin."),  # other subject
            ("I prefer window seats.", "I live in Paris."),  # other attribute
            ("I prefer Go.", "I prefer tea."),  # other kind of thing
            ("The deadline is Friday.", "I am 30 years old."),
        ],
    )
    def test_unrelated(self, new: str, old: str) -> None:
        assert relation(new, old).label == UNRELATED


class TestChinese:
    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("我搬到上海了。", "我住在北京。"),
            ("我不喝咖啡了。", "我每天都喝咖啡。"),
            ("我更喜欢 Go。", "我更喜欢 Python。"),
            ("我今年31岁。", "我30岁。"),
            ("我已经不吃素了。", "我吃素。"),
            ("周会改到周四了。", "周会在周三。"),
            ("我的生日是6月1日。", "我的生日是5月3日。"),
        ],
    )
    def test_contradicting(self, new: str, old: str) -> None:
        assert relation(new, old).label == CONTRADICTING

    @pytest.mark.parametrize(
        ("new", "old", "label"),
        [
            ("我喜欢绿茶。", "我喜欢咖啡。", COMPATIBLE),
            ("我养了一只猫。", "我养了一只狗。", COMPATIBLE),
            ("我不住在上海。", "我住在北京。", COMPATIBLE),
            ("小明住在上海。", "小红住在广州。", UNRELATED),
            ("我喜欢喝茶。", "我住在北京。", UNRELATED),
        ],
    )
    def test_not_contradicting(self, new: str, old: str, label: str) -> None:
        assert relation(new, old).label == label


class TestEndedStates:
    """A state said to have ended denies the same state said as current, and nothing else."""

    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("I used to live in Lisbon.", "I live in Lisbon."),
            ("I used to like tea.", "I like tea."),
            ("I used to work at Google.", "I work at Google."),
            ("I previously lived in Lisbon.", "I live in Lisbon."),
            ("I used to have a cat.", "I have a cat."),
            ("I live in Lisbon.", "I used to live in Lisbon."),
            ("我以前住在里斯本。", "我住在里斯本。"),
            ("我以前喜欢茶。", "我喜欢茶。"),
        ],
    )
    def test_the_same_state_ended_contradicts(self, new: str, old: str) -> None:
        v = relation(new, old)
        assert (v.label, v.reason) == (CONTRADICTING, "no longer so")

    @pytest.mark.parametrize(
        ("new", "old"),
        [
            ("I used to live in Paris.", "I live in Berlin."),  # another value: both held
            ("I used to live in Paris.", "I used to live in Berlin."),
            ("I lived in Lisbon in 2019.", "I live in Lisbon."),  # a plain past says nothing of now
            ("I am used to the cold.", "I like the cold."),  # "be used to" is being accustomed
            ("我以前住在巴黎。", "我住在柏林。"),
        ],
    )
    def test_other_values_and_plain_past_do_not(self, new: str, old: str) -> None:
        assert relation(new, old).label != CONTRADICTING

    def test_the_marker_is_read_off_the_claim(self) -> None:
        (c,) = parse_claims("I used to like tea.")
        assert (c.subject, c.attribute, c.value, c.ended) == ("self", "affinity", "tea", True)
        (d,) = parse_claims("I like tea.")
        assert not d.ended


class TestMechanics:
    def test_subjects_and_aliases(self) -> None:
        assert relation("I live in Berlin.", "Alice lives in Paris.").label == UNRELATED
        assert relation("I live in Berlin.", "Alice lives in Paris.", aliases=["Alice"]).label == CONTRADICTING
        assert relation("The user prefers Go.", "I prefer Python.").label == CONTRADICTING  # "the user" is the speaker

    def test_unreadable_statements_fall_back_to_a_negation_flip(self) -> None:
        assert parse_claims("The report was finished on time.") == ()
        assert (
            relation("The report was not finished on time.", "The report was finished on time.").label == CONTRADICTING
        )
        assert relation("The report was finished on time.", "The report was finished on time!").label == COMPATIBLE
        assert relation("Plain memory number 01", "Plain memory number 02").label != CONTRADICTING

    def test_values_compare_after_normalisation(self) -> None:
        assert same_value("PostgreSQL", "postgres") and same_value("golang", "Go")
        assert same_value("tea", "green tea")
        assert not same_value("go", "python")

    def test_find_conflicts_returns_only_contradicted_ids(self) -> None:
        existing = [("a", "I live in Paris."), ("b", "I like tea."), ("c", "I prefer Python.")]
        got = find_conflicts("I moved to Berlin and I prefer Go.", existing)
        assert sorted(rid for rid, _ in got) == ["a", "c"]
        assert find_conflicts("I like coffee.", existing) == []


class TestBenchmark:
    def test_labelled_set_shape(self) -> None:
        rows = bench.load(bench.DEFAULT_DATASET)
        assert len(rows) >= 100
        assert len({r["id"] for r in rows}) == len(rows)
        by = Counter((r["split"], r["lang"], r["label"]) for r in rows)
        for split in ("dev", "heldout"):
            for lang in ("en", "zh"):
                for label in (CONTRADICTING, COMPATIBLE, UNRELATED):
                    assert by[(split, lang, label)] >= 5, (split, lang, label)

    def test_measured_precision_and_recall_hold(self) -> None:
        """A regression floor (the numbers themselves are in benchmarks/results/conflicts.txt)."""
        results = bench.run(bench.load(bench.DEFAULT_DATASET))["results"]
        dev, held = results["dev"]["per_class"][CONTRADICTING], results["heldout"]["per_class"][CONTRADICTING]
        assert dev["precision"] >= 0.95 and dev["recall"] >= 0.95
        assert held["precision"] >= 0.85 and held["recall"] >= 0.7

    def test_harness_writes_a_reproducible_record(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = tmp_path / "pairs.jsonl"
        rows = [
            {
                "id": "1",
                "split": "dev",
                "lang": "en",
                "label": CONTRADICTING,
                "new": "I hate tea.",
                "existing": "I love tea.",
            },
            {
                "id": "2",
                "split": "heldout",
                "lang": "zh",
                "label": UNRELATED,
                "new": "我喜欢茶。",
                "existing": "我住在北京。",
            },
        ]
        data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
        out = tmp_path / "r.json"
        assert bench.main(["--dataset", str(data), "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "contradicting precision" in printed and "heldout" in printed
        doc = json.loads(out.read_text(encoding="utf-8"))
        assert len(doc["dataset_sha256"]) == 64 and "git_commit" in doc
        assert doc["results"]["all"]["per_class"][CONTRADICTING] == {
            "precision": 1.0,
            "recall": 1.0,
            "f1": 1.0,
            "gold": 1,
            "predicted": 1,
        }
        assert [p["predicted"] for p in doc["predictions"]] == [CONTRADICTING, UNRELATED]

    def test_bad_rows_are_refused(self, tmp_path: Path) -> None:
        data = tmp_path / "bad.jsonl"
        data.write_text(json.dumps({"id": "1", "split": "dev", "label": "maybe", "new": "a", "existing": "b"}))
        with pytest.raises(ValueError):
            bench.load(data)
