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

from pathlib import Path
from typing import Any

from ltm.domain.instructions import instruction_like

from .labelled import LabelledTable, Row, confusion, table_lines


def load(path: Path) -> list[Row]:
    rows = []
    for n, (label, lang, text) in table_lines(path):
        if label not in ("instruction", "benign"):
            raise ValueError(f"{path}:{n}: bad label")
        rows.append({"label": label, "lang": lang, "text": text})
    return rows


def run(rows: list[Row]) -> dict[str, Any]:
    predictions = []
    for r in rows:
        kind = instruction_like(r["text"])
        predictions.append({**r, "kind": kind, "correct": (r["label"] == "instruction") == (kind is not None)})
    return {**confusion((p["label"] == "instruction", p["correct"]) for p in predictions), "predictions": predictions}


SUMMARY = "{name}: {n} texts, precision {precision:.3f}, recall {recall:.3f} (tp {tp}, fp {fp}, fn {fn}, tn {tn})"
TABLE = LabelledTable("instructions", "instruction_like", __doc__, load, run, SUMMARY, "{label} (got {kind}): {text}")
DEFAULT_DATASET, HELDOUT = TABLE.dataset, TABLE.heldout
main = TABLE.main

if __name__ == "__main__":
    raise SystemExit(main())
