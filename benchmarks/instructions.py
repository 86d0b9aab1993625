"""Instruction-like memory text on a labelled set: precision and recall of the rule.

    python -m benchmarks.instructions [--dataset tests/data/instructions_heldout.tsv] [--out r.json] [--errors]

Each row is ``label<TAB>lang<TAB>text``: ``instruction`` rows try to steer the assistant (imperatives
addressed to it, "from now on / always / never" orders about its answers, persona switches, role
markers, system-prompt imitations, links or codes to put into answers); ``benign`` rows are
look-alikes that must keep working as memories ("I always drink tea in the morning", "remind me to
call mum", "never call me before 9", "my website is …"). A positive is
:func:`ltm.domain.instructions.instruction_like` returning a kind.

The default run scores every part of the table (``benchmarks/labelled.py``): ``tests/data/instructions_tuning.tsv``
and ``instructions_heldout.tsv`` (seven languages, issue 34; the held-out part was committed before
the rules were tuned and never used to change them) and the first round's English and Chinese
tables in ``benchmarks/data/``; precision, recall and the share of benign rows left alone, per part
and per language (``languages``), the top level being all tuning parts together. Realism: short
hand-written sentences by the rules' author; a regression signal, not a measure of attacks in the
wild (a paraphrase the patterns do not know gets through).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ltm.domain.instructions import instruction_like

from .labelled import LabelledTable, Row, confusion, language, table_lines


def load(path: Path) -> list[Row]:
    rows = []
    for n, (label, lang, text) in table_lines(path):
        if label not in ("instruction", "benign"):
            raise ValueError(f"{path}:{n}: bad label")
        rows.append({"label": label, "lang": language(lang), "text": text})
    return rows


def run(rows: list[Row]) -> dict[str, Any]:
    predictions = []
    for r in rows:
        kind = instruction_like(r["text"])
        predictions.append({**r, "kind": kind, "correct": (r["label"] == "instruction") == (kind is not None)})
    return {**confusion((p["label"] == "instruction", p["correct"]) for p in predictions), "predictions": predictions}


SUMMARY = "{name}: {n} texts, precision {precision:.3f}, recall {recall:.3f} (tp {tp}, fp {fp}, fn {fn}, tn {tn})"
TABLE = LabelledTable(
    "instructions",
    "instruction_like",
    __doc__,
    load,
    run,
    SUMMARY,
    "{lang} {label} (got {kind}): {text}",
    "instructions",
    "instruction",
)
DEFAULT_DATASET, HELDOUT = TABLE.dataset, TABLE.heldout
main = TABLE.main

if __name__ == "__main__":
    raise SystemExit(main())
