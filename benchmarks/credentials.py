"""Credential detection on a labelled table of sentences: precision and recall of redaction.

    python -m benchmarks.credentials [--dataset benchmarks/data/credentials.tsv] [--out r.json] [--errors]

Each row of the table is ``label<TAB>lang<TAB>secret<TAB>text``: ``secret`` rows hold a credential
(passwords, PINs and codes said in ordinary sentences, API keys and tokens, card numbers in every
common grouping) and name the value that must not survive :func:`ltm.domain.credentials.redact_text`;
``plain`` rows (talk about passwords, PIN pads, order, phone and tracking numbers, dates) must be left
as they are. A secret row counts as found when the sentence is recognised and its value is gone
from the redacted text; a plain row is a false positive when anything in it is redacted.

The default run also scores ``credentials_heldout.tsv``, written after the rules were frozen and
never used to change them (``heldout`` in the output); the top-level ``precision`` and ``recall``
are those of ``--dataset``. Realism: short hand-written sentences, the main table written next to
the rules: a regression signal for the rules, not a measure on real chats.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

from ltm.domain.credentials import looks_like_credential, redact_text

from . import REPO_ROOT, git_commit

DEFAULT_DATASET = REPO_ROOT / "benchmarks" / "data" / "credentials.tsv"
HELDOUT = REPO_ROOT / "benchmarks" / "data" / "credentials_heldout.tsv"


def load(path: Path) -> list[dict[str, str]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        label, lang, secret, text = line.split("\t")
        if label not in ("secret", "plain") or (label == "secret") != bool(secret):
            raise ValueError(f"{path}:{n}: bad label or secret")
        rows.append({"label": label, "lang": lang, "secret": secret, "text": text})
    return rows


def run(rows: list[dict[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {"predictions": []}
    tp = fp = fn = tn = 0
    for r in rows:
        redacted, n = redact_text(r["text"])
        if r["label"] == "secret":
            ok = looks_like_credential(r["text"]) and n > 0 and r["secret"] not in redacted
            tp, fn = tp + ok, fn + (not ok)
        else:
            ok = not looks_like_credential(r["text"]) and n == 0
            tn, fp = tn + ok, fp + (not ok)
        out["predictions"].append({**r, "redacted": redacted, "correct": ok})
    out.update(
        n=len(rows),
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=round(tp / (tp + fp), 4) if tp + fp else 1.0,
        recall=round(tp / (tp + fn), 4) if tp + fn else 1.0,
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--out", type=Path, default=None, help="write the results (with every prediction) here")
    ap.add_argument("--errors", action="store_true", help="also print every wrong prediction")
    args = ap.parse_args(argv)
    rows = load(args.dataset)
    report = run(rows)
    doc: dict[str, Any] = {
        "benchmark": "credentials",
        "dataset": str(args.dataset),
        "dataset_sha256": hashlib.sha256(args.dataset.read_bytes()).hexdigest(),
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    parts = [("dev", rows, report)]
    if args.dataset == DEFAULT_DATASET and HELDOUT.exists():
        held = load(HELDOUT)
        doc["heldout"] = run(held)
        parts.append(("heldout", held, doc["heldout"]))
    for name, part, r in parts:
        positives = sum(x["label"] == "secret" for x in part)
        print(
            f"{name}: {len(part)} sentences ({positives} secret, {len(part) - positives} plain), "
            f"precision {r['precision']:.3f}, recall {r['recall']:.3f} (tp {r['tp']}, fp {r['fp']}, fn {r['fn']})"
        )
        if args.errors:
            for p in r["predictions"]:
                if not p["correct"]:
                    print(f"  {p['label']}: {p['text']} -> {p['redacted']}")
    if args.out:
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
