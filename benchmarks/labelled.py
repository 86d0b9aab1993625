"""The runner the labelled-table benchmarks share (``benchmarks.credentials``,
``benchmarks.instructions``): tab-separated tables of labelled texts in seven languages, one rule of
the plugin scored on every row, precision and recall per part and per language.

The parts of a table (:data:`PARTS`): ``tuning`` (``tests/data/<prefix>_tuning.tsv``, the rules were
changed until it passed), ``heldout`` (``tests/data/<prefix>_heldout.tsv``, written and committed
before the rules were tuned for it, never used to change them), and the two tables of the first
round (``benchmarks/data/<table>.tsv`` and ``<table>_heldout.tsv``, English and Chinese; seen by the
second round, so they count as tuning now), and the spelling evasions in seven languages
(``<prefix>_evasion_tuning.tsv`` and ``<prefix>_evasion_heldout.tsv``: accents on Latin letters,
Vietnamese and Spanish typed without accents, spaced-out words, separators, digits for letters; the
held-out one committed before the fold learned any of them), and where it exists
``<prefix>_phrasing_heldout.tsv``, ``<prefix>_pairs_heldout.tsv``, ``<prefix>_valuefirst_heldout.tsv`` and
``<prefix>_wordpairs_heldout.tsv`` (credentials: plain-word values said the way each language ends a
sentence; login pairs and password rules given as a count; a password said before its keyword; login
pairs whose password is letters or digits only, and sayings of a password to something) and
``instructions_forms_heldout.tsv`` (orders in the negative and orders to forget), all held out. The
top-level scores of the JSON are those of all the tuning parts together, with ``languages`` per
language; ``heldout`` and ``evasion_heldout`` have the same shape; ``parts`` scores each file on its
own; ``targets`` says whether each target of issue 34 is met on the tuning parts and on each held-out part.

Each benchmark gives a :class:`LabelledTable`: how a line becomes a row, how the rule scores the
rows, and the print formats of a part's summary and of a wrong prediction. :func:`main` is its command line
(``--dataset`` scores one file alone, ``--out``, ``--errors``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import REPO_ROOT, git_commit

Row = dict[str, str]
DATA = REPO_ROOT / "benchmarks" / "data"
TESTS_DATA = REPO_ROOT / "tests" / "data"
LANGUAGES = ("en", "zh_Hans", "zh_Hant", "ja", "vi", "th", "es")
# Issue 34's targets, per guard: recall overall and in every language, and the share of benign
# look-alikes left alone (a rule's "specificity" on the negatives).
TARGETS = {"recall": 0.95, "recall_per_language": 0.85, "benign_left_alone": 0.97}


def language(code: str) -> str:
    """The first round's tables wrote ``zh`` for Simplified Chinese."""
    return "zh_Hans" if code == "zh" else code


def table_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, tab-separated fields)`` of every line that is neither blank nor a ``#`` comment."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            yield n, line.split("\t")


def confusion(outcomes: Iterable[tuple[bool, bool]]) -> dict[str, Any]:
    """``n``, ``tp``, ``fp``, ``fn``, ``tn``, ``precision`` and ``recall`` over ``(positive row,
    scored correctly)`` pairs (precision and recall are 1.0 when nothing counts towards them)."""
    tp = fp = fn = tn = 0
    for positive, correct in outcomes:
        tp += positive and correct
        fn += positive and not correct
        tn += not positive and correct
        fp += not positive and not correct
    return {
        "n": tp + fp + fn + tn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "benign_left_alone": round(tn / (tn + fp), 4) if tn + fp else 1.0,
    }


def by_language(predictions: list[dict[str, Any]], positive: str) -> dict[str, dict[str, Any]]:
    """:func:`confusion` of the predictions of each language (``positive``: the label of a positive row)."""
    out: dict[str, dict[str, Any]] = {}
    order = {lang: i for i, lang in enumerate(LANGUAGES)}
    for lang in sorted({p["lang"] for p in predictions}, key=lambda x: (order.get(x, len(order)), x)):
        rows = [p for p in predictions if p["lang"] == lang]
        out[lang] = confusion((p["label"] == positive, p["correct"]) for p in rows)
    return out


def scored(table: LabelledTable, rows: list[Row]) -> dict[str, Any]:
    """The rule's scores on ``rows``, overall and per language, with every prediction."""
    report = table.run(rows)
    return {**report, "languages": by_language(report["predictions"], table.positive)}


def targets_met(report: dict[str, Any]) -> dict[str, bool]:
    """Issue 34's targets on a scored part (every language of :data:`LANGUAGES` must be present)."""
    langs = report["languages"]
    return {
        "recall": report["recall"] >= TARGETS["recall"],
        "recall_per_language": all(lang in langs for lang in LANGUAGES)
        and all(v["recall"] >= TARGETS["recall_per_language"] for v in langs.values()),
        "benign_left_alone": report["benign_left_alone"] >= TARGETS["benign_left_alone"],
    }


@dataclass(frozen=True)
class LabelledTable:
    """One labelled-table benchmark: its name, table, row reader, scoring and print formats."""

    name: str  # ``python -m benchmarks.<name>``, and the ``benchmark`` field of the result
    table: str  # ``benchmarks/data/<table>.tsv``; ``<table>_heldout.tsv`` is scored with it
    doc: str  # the benchmark module's docstring (its first line is the command's description)
    load: Callable[[Path], list[Row]]
    run: Callable[[list[Row]], dict[str, Any]]  # the scores, with every prediction under "predictions"
    summary: str  # per part ("tuning", "heldout", …): a format of name, positives, negatives and the scores
    error: str  # one line per wrong prediction (``--errors``): a format of the prediction's fields
    prefix: str  # ``tests/data/<prefix>_tuning.tsv`` and ``<prefix>_heldout.tsv``
    positive: str  # the label of a positive row ("secret", "instruction")

    @property
    def dataset(self) -> Path:
        return DATA / f"{self.table}.tsv"

    @property
    def heldout(self) -> Path:
        return DATA / f"{self.table}_heldout.tsv"

    @property
    def parts(self) -> dict[str, tuple[Path, bool]]:
        """Each part's file and whether it is a tuning part (False: held out)."""
        parts = {
            "tuning": (TESTS_DATA / f"{self.prefix}_tuning.tsv", True),
            "heldout": (TESTS_DATA / f"{self.prefix}_heldout.tsv", False),
            "round1": (self.dataset, True),
            "round1_heldout": (self.heldout, True),
            "evasion": (TESTS_DATA / f"{self.prefix}_evasion_tuning.tsv", True),
            "evasion_heldout": (TESTS_DATA / f"{self.prefix}_evasion_heldout.tsv", False),
        }
        for extra in ("phrasing_heldout", "pairs_heldout", "valuefirst_heldout", "wordpairs_heldout", "forms_heldout"):
            path = TESTS_DATA / f"{self.prefix}_{extra}.tsv"
            if path.exists():
                parts[extra] = (path, False)
        return parts

    def load_part(self, name: str) -> list[Row]:
        path, _ = self.parts[name]
        return self.load(path) if path.exists() else []

    def report(self) -> dict[str, Any]:
        """The scores of every part; top level: all tuning parts together; ``heldout``; ``targets``."""
        parts = {name: scored(self, self.load_part(name)) for name in self.parts}
        tuning_rows = [r for name, (_, tuning) in self.parts.items() if tuning for r in self.load_part(name)]
        top = scored(self, tuning_rows)
        return {
            **top,
            "heldout": parts["heldout"],
            "evasion_heldout": parts["evasion_heldout"],
            "parts": parts,
            "targets": {
                "thresholds": TARGETS,
                "tuning": targets_met(top),
                "heldout": targets_met(parts["heldout"]),
                "evasion_heldout": targets_met(parts["evasion_heldout"]),
            },
        }

    def main(self, argv: Sequence[str] | None = None) -> int:
        return main(self, argv)


def main(table: LabelledTable, argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks.{table.name}", description=table.doc.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=table.dataset)
    ap.add_argument("--out", type=Path, default=None, help="write the results (with every prediction) here")
    ap.add_argument("--errors", action="store_true", help="also print every wrong prediction")
    args = ap.parse_args(argv)
    default = args.dataset == table.dataset
    report = table.report() if default else scored(table, table.load(args.dataset))
    doc: dict[str, Any] = {
        "benchmark": table.name,
        "dataset": str(args.dataset),
        "dataset_sha256": hashlib.sha256(args.dataset.read_bytes()).hexdigest(),
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    parts = [("all tuning parts" if default else "dataset", report)]
    if default:
        parts += list(report["parts"].items())
    for name, r in parts:
        print(table.summary.format(name=name, positives=r["tp"] + r["fn"], negatives=r["tn"] + r["fp"], **r))
        for lang, v in r["languages"].items():
            print(
                f"    {lang:8} n {v['n']:3}  precision {v['precision']:.3f}  recall {v['recall']:.3f}"
                f"  benign left alone {v['benign_left_alone']:.3f}"
            )
        if args.errors and name != "all tuning parts":
            for p in r["predictions"]:
                if not p["correct"]:
                    print("  " + table.error.format(**p))
    if default:
        print(
            f"targets {report['targets']['thresholds']}: tuning {report['targets']['tuning']}, "
            f"heldout {report['targets']['heldout']}, evasion_heldout {report['targets']['evasion_heldout']}"
        )
    if args.out:
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0
