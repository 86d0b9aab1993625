"""The runner the labelled-table benchmarks share (``benchmarks.credentials``,
``benchmarks.instructions``): a tab-separated table of labelled texts, one rule of the plugin scored
on every row, precision and recall over the rows, and the same scoring of a held-out table.

Each benchmark gives a :class:`LabelledTable`: how a line becomes a row, how the rule scores the
rows, and the print formats of a part's summary and of a wrong prediction. :func:`main` is its command line
(``--dataset``, ``--out``, ``--errors``).
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
    }


@dataclass(frozen=True)
class LabelledTable:
    """One labelled-table benchmark: its name, table, row reader, scoring and print formats."""

    name: str  # ``python -m benchmarks.<name>``, and the ``benchmark`` field of the result
    table: str  # ``benchmarks/data/<table>.tsv``; ``<table>_heldout.tsv`` is scored with it
    doc: str  # the benchmark module's docstring (its first line is the command's description)
    load: Callable[[Path], list[Row]]
    run: Callable[[list[Row]], dict[str, Any]]  # the scores, with every prediction under "predictions"
    summary: str  # per part ("dev", "heldout"): a format of name, positives, negatives and the scores
    error: str  # one line per wrong prediction (``--errors``): a format of the prediction's fields

    @property
    def dataset(self) -> Path:
        return DATA / f"{self.table}.tsv"

    @property
    def heldout(self) -> Path:
        return DATA / f"{self.table}_heldout.tsv"

    def main(self, argv: Sequence[str] | None = None) -> int:
        return main(self, argv)


def main(table: LabelledTable, argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks.{table.name}", description=table.doc.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=table.dataset)
    ap.add_argument("--out", type=Path, default=None, help="write the results (with every prediction) here")
    ap.add_argument("--errors", action="store_true", help="also print every wrong prediction")
    args = ap.parse_args(argv)
    rows = table.load(args.dataset)
    report = table.run(rows)
    doc: dict[str, Any] = {
        "benchmark": table.name,
        "dataset": str(args.dataset),
        "dataset_sha256": hashlib.sha256(args.dataset.read_bytes()).hexdigest(),
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    parts = [("dev", report)]
    if args.dataset == table.dataset and table.heldout.exists():
        doc["heldout"] = table.run(table.load(table.heldout))
        parts.append(("heldout", doc["heldout"]))
    for name, r in parts:
        print(table.summary.format(name=name, positives=r["tp"] + r["fn"], negatives=r["tn"] + r["fp"], **r))
        if args.errors:
            for p in r["predictions"]:
                if not p["correct"]:
                    print("  " + table.error.format(**p))
    if args.out:
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0
