"""Restatement detection on a labelled set of statement pairs: precision and recall of "duplicate".

    python -m benchmarks.restate [--dataset benchmarks/data/restate_pairs.tsv] [--embedder minilm|hashing]
                                 [--out r.json]

Each data line is ``label<TAB>kind<TAB>stored<TAB>new``: label 1 when ``new`` restates ``stored``
(the same fact in other words, English or Chinese), 0 when it is a similar but different fact
(``kind``: another number, another person or name, a negation, another time, another value).
A false "duplicate" loses a fact (the new row is never written), so precision must stay >= 0.97;
recall is what the write path saves in duplicate rows. The test is
:func:`ltm.domain.restate.restates` with the cosine of the chosen embedder (the plugin's local
MiniLM by default; ``hashing`` is the offline stand-in the tests use).

Realism: short hand-written chat-style statements, built for issue 27; a regression signal, not a
quality score for real conversations.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.embeddings import Embeddings
from ltm.domain.restate import COSINE_MIN, LEXICAL_MIN, restates

log = logging.getLogger("benchmarks.restate")
DATASET = Path(__file__).parent / "data" / "restate_pairs.tsv"


def load(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, kind, stored, new = line.split("\t")
        lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in stored) else "en"
        out.append({"label": int(label), "kind": kind, "stored": stored, "new": new, "lang": lang})
    return out


def run(pairs: list[dict[str, Any]], emb: Embeddings) -> dict[str, Any]:
    texts = sorted({p["stored"] for p in pairs} | {p["new"] for p in pairs})
    matrix = emb.matrix(texts)
    vec = {t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, matrix, strict=True)}
    rows = []
    for p in pairs:
        a, b = vec[p["stored"]], vec[p["new"]]
        cos = float(a @ b / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))
        v = restates(p["new"], p["stored"], cos)
        rows.append(
            {**p, "duplicate": v.duplicate, "reason": v.reason, "lexical": round(v.lexical, 3), "cosine": round(cos, 3)}
        )
    return {
        **_score(rows),
        "by_lang": {lang: _score([r for r in rows if r["lang"] == lang]) for lang in ("en", "zh")},
        "rows": rows,
    }


def _score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tp = sum(1 for r in rows if r["duplicate"] and r["label"])
    fp = sum(1 for r in rows if r["duplicate"] and not r["label"])
    fn = sum(1 for r in rows if not r["duplicate"] and r["label"])
    return {
        "pairs": len(rows),
        "positives": tp + fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "false_duplicates": [f"{r['stored']} | {r['new']}" for r in rows if r["duplicate"] and not r["label"]],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=DATASET)
    ap.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    emb = Embeddings(kind=args.embedder)
    result = run(load(args.dataset), emb)
    report = {
        "precision": result["precision"],
        "recall": result["recall"],
        "pairs": result["pairs"],
        "positives": result["positives"],
        "by_lang": result["by_lang"],
        "false_duplicates": result["false_duplicates"],
        "embedder": emb.name,
        "thresholds": {"lexical_min": LEXICAL_MIN, "cosine_min": COSINE_MIN},
        "rows": result["rows"],
    }
    if args.out:
        args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    # the figures go to stderr through logging: stdout is nobody's RPC channel here, but the house rule holds
    log.info(
        "restatement: %d pairs, precision %.3f, recall %.3f (%s)",
        report["pairs"],
        report["precision"],
        report["recall"],
        emb.name,
    )
    for lang, s in report["by_lang"].items():
        log.info("  %s: %d pairs, precision %.3f, recall %.3f", lang, s["pairs"], s["precision"], s["recall"])
    for fd in report["false_duplicates"]:
        log.info("  false duplicate: %s", fd)
    return 0 if report["precision"] >= 0.97 else 1


if __name__ == "__main__":
    raise SystemExit(main())
