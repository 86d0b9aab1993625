"""The Japanese, Thai and traditional Chinese conflict pairs
(benchmarks/data/conflict_pairs_conf-asia.jsonl): their shape, and a regression floor on what the
rules measure on them (held-out: the first run's figures, the detector not changed for them)."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks import REPO_ROOT
from benchmarks import conflicts as bench
from ltm.domain.conflict import COMPATIBLE, CONTRADICTING, UNRELATED

_PAIRS = REPO_ROOT / "benchmarks" / "data" / "conflict_pairs_conf-asia.jsonl"
_LANGS = ("ja", "th", "zh_hant")


def test_labelled_set_shape() -> None:
    rows = bench.load(_PAIRS)
    assert len({r["id"] for r in rows}) == len(rows)
    by = Counter((r["split"], r["lang"], r["label"]) for r in rows)
    for split in ("dev", "heldout"):
        for lang in _LANGS:
            assert sum(by[(split, lang, label)] for label in (CONTRADICTING, COMPATIBLE, UNRELATED)) >= 30
            for label in (CONTRADICTING, COMPATIBLE, UNRELATED):
                assert by[(split, lang, label)] >= 10, (split, lang, label)


@pytest.mark.parametrize("lang", _LANGS)
def test_measured_precision_and_recall_hold(lang: str) -> None:
    results = bench.run(bench.load(_PAIRS))["results"]
    dev = results[f"dev/{lang}"]["per_class"][CONTRADICTING]
    held = results[f"heldout/{lang}"]["per_class"][CONTRADICTING]
    assert dev["precision"] >= 0.95 and dev["recall"] >= 0.95
    assert held["precision"] >= 0.85 and held["recall"] >= 0.7
