"""Credential detection on a labelled table of sentences: precision and recall of redaction.

    python -m benchmarks.credentials [--dataset tests/data/credentials_heldout.tsv] [--out r.json] [--errors]

Each row of the table is ``label<TAB>lang<TAB>secret<TAB>text``: ``secret`` rows hold a credential
(passwords, PINs and codes said in ordinary sentences, API keys and tokens, card numbers in every
common grouping) and name the value that must not survive :func:`ltm.domain.credentials.redact_text`;
``plain`` rows (talk about passwords, PIN pads, order, phone and tracking numbers, dates) must be left
as they are. A secret row counts as found when the sentence is recognised and its value is gone
from the redacted text; a plain row is a false positive when anything in it is redacted.

The default run scores every part of the table (``benchmarks/labelled.py``): ``tests/data/credentials_tuning.tsv``
and ``credentials_heldout.tsv`` (seven languages, issue 34; the held-out part was committed before
the rules were tuned and never used to change them) and the first round's English and Chinese
tables in ``benchmarks/data/``; precision, recall and the share of plain rows left alone, per part
and per language (``languages``), the top level being all tuning parts together. Realism: short
hand-written sentences, all written by the rules' author: a regression signal for the rules, not a
measure on real chats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ltm.domain.credentials import looks_like_credential, redact_text

from .labelled import LabelledTable, Row, confusion, language, table_lines


def load(path: Path) -> list[Row]:
    rows = []
    for n, (label, lang, secret, text) in table_lines(path):
        if label not in ("secret", "plain") or (label == "secret") != bool(secret):
            raise ValueError(f"{path}:{n}: bad label or secret")
        rows.append({"label": label, "lang": language(lang), "secret": secret, "text": text})
    return rows


def run(rows: list[Row]) -> dict[str, Any]:
    predictions = []
    for r in rows:
        redacted, n = redact_text(r["text"])
        if r["label"] == "secret":
            ok = looks_like_credential(r["text"]) and n > 0 and r["secret"] not in redacted
        else:
            ok = not looks_like_credential(r["text"]) and n == 0
        predictions.append({**r, "redacted": redacted, "correct": ok})
    return {"predictions": predictions, **confusion((p["label"] == "secret", p["correct"]) for p in predictions)}


SUMMARY = (
    "{name}: {n} sentences ({positives} secret, {negatives} plain), precision {precision:.3f}, recall {recall:.3f}"
    " (tp {tp}, fp {fp}, fn {fn})"
)
TABLE = LabelledTable(
    "credentials",
    "credentials",
    __doc__,
    load,
    run,
    SUMMARY,
    "{lang} {label}: {text} -> {redacted}",
    "credentials",
    "secret",
)
DEFAULT_DATASET, HELDOUT = TABLE.dataset, TABLE.heldout
main = TABLE.main

if __name__ == "__main__":
    raise SystemExit(main())
