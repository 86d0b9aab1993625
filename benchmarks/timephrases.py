"""Time phrases: precision and recall of the query time parser on a suite built from the grammar.

    python -m benchmarks.timephrases [--suite tests/data/time_phrases.tsv] [--out r.json] [--errors]
    python -m benchmarks.timephrases --write-suite      # regenerate the suite from the grammar

Each row of the suite (``benchmarks.timephrase_grammar``) is a phrase, its language and group, a
reference instant (with its timezone) and the window it names, or none for a negative. For every
row ``ltm.domain.timewindow.parse_time_window(text, ref)`` is asked:

- the PARSE: was a window found? precision over the rows where one was found (a negative with a
  window is a false positive), recall over the positive rows;
- the WINDOW: is it exactly the expected ``[start, end)``? precision over the rows where a window
  was found, recall over the positive rows.

Realism: short phrases, one expression each, read at four fixed instants in three timezones. It
measures the rule set's coverage of the grammar and the correctness of its calendar arithmetic,
not how often people phrase things this way; a regression and comparison signal.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import platform
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from ltm.domain.timewindow import parse_time_window

from . import REPO_ROOT, git_commit
from .timephrase_grammar import Phrase, generate

DEFAULT_SUITE = REPO_ROOT / "tests" / "data" / "time_phrases.tsv"
# Hand-written after the parser's rules were changed against the generated suite, never used to
# change them: the check that the rules fit the grammar rather than the suite's own phrasings.
HELDOUT_SUITE = REPO_ROOT / "tests" / "data" / "time_phrases_heldout.tsv"
COLUMNS = ("text", "lang", "group", "ref", "start", "end")


def to_rows(phrases: list[Phrase]) -> list[dict[str, str]]:
    return [
        {
            "text": p.text,
            "lang": p.lang,
            "group": p.group,
            "ref": p.ref.isoformat(),
            "start": p.start.isoformat() if p.start else "",
            "end": p.end.isoformat() if p.end else "",
        }
        for p in phrases
    ]


def render(rows: list[dict[str, str]]) -> str:
    lines = ["\t".join(COLUMNS)]
    lines += ["\t".join(r[c] for c in COLUMNS) for r in rows]
    return "\n".join(lines) + "\n"


def load(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return [{**r, "split": path.stem} for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


def _ratio(a: int, b: int) -> float:
    return round(a / b, 4) if b else 0.0


def score(rows: list[dict[str, str]]) -> dict[str, Any]:
    """The four figures overall, per language and per group, and every row's outcome."""
    preds: list[dict[str, Any]] = []
    for r in rows:
        ref = datetime.fromisoformat(r["ref"])
        got = parse_time_window(r["text"], ref)
        want = (
            (datetime.fromisoformat(r["start"]).timestamp(), datetime.fromisoformat(r["end"]).timestamp())
            if r["start"]
            else None
        )
        preds.append(
            {
                **r,
                "found": got is not None,
                "right": got is not None and want is not None and got == want,
                "got": [datetime.fromtimestamp(t, ref.tzinfo).isoformat() for t in got] if got else None,
            }
        )

    def figures(ps: list[dict[str, Any]]) -> dict[str, Any]:
        pos = [p for p in ps if p["start"]]
        found = [p for p in ps if p["found"]]
        tp = sum(1 for p in found if p["start"])
        right = sum(1 for p in ps if p["right"])
        return {
            "n": len(ps),
            "positives": len(pos),
            "parse_precision": _ratio(tp, len(found)),
            "parse_recall": _ratio(tp, len(pos)),
            "window_precision": _ratio(right, len(found)),
            "window_recall": _ratio(right, len(pos)),
        }

    by_lang: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in preds:
        by_lang[p["lang"]].append(p)
        by_group[p["group"]].append(p)
        by_split[p.get("split", "")].append(p)
    return {
        **figures(preds),
        "per_split": {k: figures(v) for k, v in sorted(by_split.items())},
        "per_language": {k: figures(v) for k, v in sorted(by_lang.items())},
        "per_group": {k: figures(v) for k, v in sorted(by_group.items())},
        "predictions": preds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", type=Path, action="append", help="a suite file (repeatable); default: both committed")
    ap.add_argument("--out", type=Path, default=None, help="write the figures (with every prediction) here")
    ap.add_argument("--errors", action="store_true", help="also print every miss and wrong window")
    ap.add_argument("--write-suite", action="store_true", help="regenerate the suite file from the grammar")
    args = ap.parse_args(argv)
    if args.write_suite:
        DEFAULT_SUITE.parent.mkdir(parents=True, exist_ok=True)
        DEFAULT_SUITE.write_text(render(to_rows(generate())), encoding="utf-8")
        print(f"wrote {DEFAULT_SUITE}")
        return 0
    suites = args.suite or [DEFAULT_SUITE, HELDOUT_SUITE]
    rows = [r for path in suites for r in load(path)]
    report = score(rows)
    doc = {
        "benchmark": "timephrases",
        "suites": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in suites},
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    print(
        f"time phrases: {report['n']} rows, {report['positives']} with a window ({', '.join(p.name for p in suites)})"
    )
    print(f"{'subset':<14} {'n':>4} {'parse P':>8} {'parse R':>8} {'window P':>9} {'window R':>9}")
    subsets = {"all": report, **report["per_split"], **report["per_language"], **report["per_group"]}
    for key, f in subsets.items():
        print(
            f"{key:<14} {f['n']:>4} {f['parse_precision']:>8.3f} {f['parse_recall']:>8.3f}"
            f" {f['window_precision']:>9.3f} {f['window_recall']:>9.3f}"
        )
    if args.errors:
        for p in report["predictions"]:
            if p["found"] != bool(p["start"]) or (p["found"] and not p["right"]):
                print(f"  [{p['group']}] {p['text']!r} @ {p['ref']}: want {p['start']}..{p['end']} got {p['got']}")
    if args.out:
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
