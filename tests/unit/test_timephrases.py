"""The time-expression suite (tests/data/time_phrases.tsv) and the parser's figures on it."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import pytest

from benchmarks.timephrase_grammar import REFERENCES, generate
from benchmarks.timephrases import DEFAULT_SUITE, load, render, score, to_rows


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return load(DEFAULT_SUITE)


@pytest.fixture(scope="module")
def report(rows: list[dict[str, str]]) -> dict:
    return score(rows)


def test_suite_file_is_the_grammar_output() -> None:
    """The committed data is what the generator writes (``--write-suite``), so neither drifts."""
    assert DEFAULT_SUITE.read_text(encoding="utf-8") == render(to_rows(generate()))


def test_suite_size_languages_groups_and_negatives(rows: list[dict[str, str]]) -> None:
    assert len(rows) >= 200
    langs = Counter(r["lang"] for r in rows)
    assert langs["en"] >= 100 and langs["zh"] >= 100
    groups = Counter(r["group"] for r in rows)
    for g in ("relative_day", "n_ago", "calendar", "weekday", "weekend", "month", "season", "holiday", "range"):
        assert groups[g] >= 20, g
    assert groups["negative"] >= 40
    assert {r["ref"] for r in rows} == {ref.isoformat() for ref in REFERENCES}


def test_expected_windows_are_well_formed(rows: list[dict[str, str]]) -> None:
    """Positives have a non-empty window in the reference's timezone; negatives have none."""
    for r in rows:
        if r["group"] == "negative":
            assert not r["start"] and not r["end"], r
            continue
        ref, start, end = (datetime.fromisoformat(r[k]) for k in ("ref", "start", "end"))
        assert start < end, r
        assert start.utcoffset() == ref.utcoffset() == end.utcoffset(), r


def test_scoring_counts_what_it_claims() -> None:
    """The four figures on a hand-made suite: one right, one wrong window, one miss, one false alarm."""
    ref = "2024-03-13T15:00:00+00:00"
    rows = [
        {"text": "yesterday", "lang": "en", "group": "g", "ref": ref,
         "start": "2024-03-12T00:00:00+00:00", "end": "2024-03-13T00:00:00+00:00"},
        {"text": "last week", "lang": "en", "group": "g", "ref": ref,
         "start": "2024-03-01T00:00:00+00:00", "end": "2024-03-02T00:00:00+00:00"},
        {"text": "nothing here", "lang": "en", "group": "g", "ref": ref,
         "start": "2024-03-01T00:00:00+00:00", "end": "2024-03-02T00:00:00+00:00"},
        {"text": "today", "lang": "en", "group": "negative", "ref": ref, "start": "", "end": ""},
    ]  # fmt: skip
    got = score(rows)
    assert (got["parse_precision"], got["parse_recall"]) == (round(2 / 3, 4), round(2 / 3, 4))
    assert (got["window_precision"], got["window_recall"]) == (round(1 / 3, 4), round(1 / 3, 4))


def test_parser_figures_on_the_suite(report: dict) -> None:
    """Precision first: a found window must be right; recall well above the LoCoMo-fitted rules'."""
    assert report["parse_precision"] >= 0.99
    assert report["window_precision"] >= 0.97
    assert report["window_recall"] >= 0.90
    for lang in ("en", "zh"):
        assert report["per_language"][lang]["window_precision"] >= 0.95, lang
        assert report["per_language"][lang]["window_recall"] >= 0.85, lang


def test_heldout_phrasings() -> None:
    """Hand-written phrasings never used to change the rules: precision holds off the suite too."""
    from benchmarks.timephrases import HELDOUT_SUITE

    rows = load(HELDOUT_SUITE)
    assert len(rows) >= 60 and any(not r["start"] for r in rows)
    got = score(rows)
    assert got["parse_precision"] >= 0.99
    assert got["window_precision"] >= 0.9
    assert got["window_recall"] >= 0.8
