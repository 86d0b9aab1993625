"""Conflict detection on a labelled set of statement pairs: precision and recall per class.

    python -m benchmarks.conflicts [--dataset FILE ...] [--out r.json]

Without ``--dataset`` it reads every ``benchmarks/data/conflict_pairs*.jsonl`` (all seven languages).

Each line of the data set is ``{"id", "split", "lang", "label", "new", "existing"}``: would storing
``new`` contradict the stored ``existing`` statement of the same speaker? Labels:

- ``contradicting``: both cannot hold now for the same subject (a negation flip, another value of
  something that has one value at a time, another preferred choice of the same kind, a switch of
  tool of the same kind);
- ``compatible``: the same subject and topic, and both can hold (including restatements);
- ``unrelated``: another subject or another topic.

``split`` is ``dev`` (pairs the detector was developed against) or ``heldout`` (written after the
detector was frozen and never used to change it). The table reports both, per language too, and the
one number that matters for the write path: precision and recall of ``contradicting`` (a false
positive parks a harmless statement for review; a false negative keeps two contradicting memories).

Realism: the pairs are short, single-speaker, hand-written statements in the style of chat memories;
this measures the pattern detector, not understanding. It is a regression and comparison signal,
not a quality score for real conversations.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ltm.domain.conflict import LABELS, relation

from . import REPO_ROOT, git_commit

DEFAULT_DATASET = REPO_ROOT / "benchmarks" / "data" / "conflict_pairs.jsonl"  # English and Chinese
DEFAULT_DATASETS = tuple(sorted(DEFAULT_DATASET.parent.glob("conflict_pairs*.jsonl")))


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in LABELS or row.get("split") not in ("dev", "heldout"):
            raise ValueError(f"{path}:{n}: bad label or split")
        rows.append(row)
    return rows


def scores(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Per-class precision/recall/F1, accuracy and macro F1 of ``(gold, predicted)`` pairs."""
    out: dict[str, Any] = {"n": len(pairs), "per_class": {}}
    confusion = Counter(pairs)
    f1s = []
    for label in LABELS:
        tp = confusion[(label, label)]
        predicted = sum(v for (g, p), v in confusion.items() if p == label)
        gold = sum(v for (g, p), v in confusion.items() if g == label)
        precision = tp / predicted if predicted else 0.0
        recall = tp / gold if gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        f1s.append(f1)
        out["per_class"][label] = {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
            "gold": gold,
            "predicted": predicted,
        }
    out["accuracy"] = round(sum(confusion[(x, x)] for x in LABELS) / len(pairs), 4) if pairs else 0.0
    out["macro_f1"] = round(sum(f1s) / len(f1s), 4)
    out["confusion"] = {g: {p: confusion[(g, p)] for p in LABELS} for g in LABELS}
    return out


def run(rows: list[dict[str, Any]]) -> dict[str, Any]:
    preds = []
    t0 = time.perf_counter()
    for r in rows:
        v = relation(r["new"], r["existing"])
        preds.append({**r, "predicted": v.label, "attribute": v.attribute, "why": v.reason})
    elapsed = time.perf_counter() - t0
    groups: dict[str, list[tuple[str, str]]] = {}
    for p in preds:
        pair = (p["label"], p["predicted"])
        for key in ("all", p["split"], f"{p['split']}/{p['lang']}"):
            groups.setdefault(key, []).append(pair)
    return {
        "results": {k: scores(v) for k, v in sorted(groups.items())},
        "predictions": preds,
        "ms_per_pair": round(1000 * elapsed / max(1, len(rows)), 3),
    }


def table(results: dict[str, Any]) -> str:
    lines = [
        f"{'subset':<14} {'n':>4} {'acc':>6} {'macroF1':>8}   " + "   ".join(f"{lab[:13]:>13} P/R" for lab in LABELS)
    ]
    for key, r in results.items():
        cells = "   ".join(
            f"{r['per_class'][lab]['precision']:>8.2f}/{r['per_class'][lab]['recall']:.2f}" for lab in LABELS
        )
        lines.append(f"{key:<14} {r['n']:>4} {r['accuracy']:>6.2f} {r['macro_f1']:>8.2f}   {cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, action="append", help="a pairs file (repeatable; default: every one)")
    ap.add_argument("--out", type=Path, default=None, help="write the full results (with every prediction) here")
    ap.add_argument("--errors", action="store_true", help="also print every wrong prediction")
    args = ap.parse_args(argv)
    files = list(args.dataset or DEFAULT_DATASETS)
    rows = [row for f in files for row in load(f)]
    if len({r["id"] for r in rows}) != len(rows):
        raise SystemExit("pair ids repeat across the files")
    report = run(rows)
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
    doc = {
        "benchmark": "conflicts",
        "dataset": [str(f) for f in files],
        "dataset_sha256": digest,
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    names = ", ".join(f.name for f in files)
    print(f"conflict detection on {len(rows)} pairs ({names}; sha256 {digest[:12]})")
    print(table(report["results"]))
    for split in ("dev", "heldout", "all"):
        r = report["results"].get(split)
        if r:
            c = r["per_class"]["contradicting"]
            print(f"{split}: contradicting precision {c['precision']:.2f}, recall {c['recall']:.2f} (n={r['n']})")
    if args.errors:
        for p in report["predictions"]:
            if p["predicted"] != p["label"]:
                print(
                    f"  {p['id']}: gold {p['label']}, got {p['predicted']} ({p['why']}): {p['new']} | {p['existing']}"
                )
    if args.out:
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
