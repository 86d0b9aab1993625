"""Instruction-like memory text on a labelled set: precision and recall of the rule.

    python -m benchmarks.instructions [--dataset benchmarks/data/instruction_like.tsv] [--out r.json] [--errors]

Each row is ``label<TAB>lang<TAB>text``: ``instruction`` rows try to steer the assistant (imperatives
addressed to it, "from now on / always / never" orders about its answers, persona switches, role
markers, system-prompt imitations, links or codes to put into answers); ``benign`` rows are
look-alikes that must keep working as memories ("I always drink tea in the morning", "remind me to
call mum", "never call me before 9", "my website is …"). A positive is
:func:`ltm.domain.instructions.instruction_like` returning a kind.

The default run also scores ``instruction_like_heldout.tsv``, written after the rules were frozen
and never used to change them (``heldout`` in the output); the top-level ``precision`` and
``recall`` are those of ``--dataset``. Realism: short hand-written sentences; a regression signal,
not a measure of attacks in the wild (a paraphrase the patterns do not know gets through).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

from ltm.domain.instructions import instruction_like

from . import REPO_ROOT, git_commit

DEFAULT_DATASET = REPO_ROOT / "benchmarks" / "data" / "instruction_like.tsv"
HELDOUT = REPO_ROOT / "benchmarks" / "data" / "instruction_like_heldout.tsv"


def load(path: Path) -> list[dict[str, str]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        label, lang, text = line.split("\t")
        if label not in ("instruction", "benign"):
            raise ValueError(f"{path}:{n}: bad label")
        rows.append({"label": label, "lang": lang, "text": text})
    return rows


def run(rows: list[dict[str, str]]) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    predictions = []
    for r in rows:
        kind = instruction_like(r["text"])
        gold = r["label"] == "instruction"
        tp, fp = tp + (gold and kind is not None), fp + (not gold and kind is not None)
        fn, tn = fn + (gold and kind is None), tn + (not gold and kind is None)
        predictions.append({**r, "kind": kind, "correct": gold == (kind is not None)})
    return {
        "n": len(rows),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "predictions": predictions,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--out", type=Path, default=None, help="write the results (with every prediction) here")
    ap.add_argument("--errors", action="store_true", help="also print every wrong prediction")
    args = ap.parse_args(argv)
    report = run(load(args.dataset))
    doc: dict[str, Any] = {
        "benchmark": "instructions",
        "dataset": str(args.dataset),
        "dataset_sha256": hashlib.sha256(args.dataset.read_bytes()).hexdigest(),
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    parts = [("dev", report)]
    if args.dataset == DEFAULT_DATASET and HELDOUT.exists():
        doc["heldout"] = run(load(HELDOUT))
        parts.append(("heldout", doc["heldout"]))
    for name, r in parts:
        print(
            f"{name}: {r['n']} texts, precision {r['precision']:.3f}, recall {r['recall']:.3f} "
            f"(tp {r['tp']}, fp {r['fp']}, fn {r['fn']}, tn {r['tn']})"
        )
        if args.errors:
            for p in r["predictions"]:
                if not p["correct"]:
                    print(f"  {p['label']} (got {p['kind']}): {p['text']}")
    if args.out:
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
