"""No passage is copied between the README and docs/, or between two documents: each fact lives in
one file and the others link to it. A unit is a prose sentence or a table row of 60+ characters."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIN_CHARS = 60
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
SPLIT = re.compile(r"(?<=[.;:!?])\s+|\s+-\s+|(?:^|\s)[-*]\s+|(?:^|\s)\d+\.\s+")


def units(text: str) -> set[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out: set[str] = set()
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        out.update(re.sub(r"\s+", " ", line) for line in lines if line.startswith("|"))
        prose = " ".join(line for line in lines if not line.startswith("|"))
        out.update(re.sub(r"\s+", " ", part).strip(" -*") for part in SPLIT.split(prose))
    return {unit for unit in out if len(unit) >= MIN_CHARS}


def copies(files: list[tuple[str, str]]) -> list[str]:
    found = []
    sets = [(name, units(text)) for name, text in files]
    for (a, ua), (b, ub) in itertools.combinations(sets, 2):
        found += [f"{a} and {b}: {unit[:100]}" for unit in sorted(ua & ub)]
    return found


def test_no_passage_is_copied_between_documents() -> None:
    files = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in DOCS]
    assert len(files) >= 10
    assert copies(files) == []


def test_a_copied_sentence_or_row_is_found() -> None:
    """Positive control: a sentence copied with other line breaks, and a table row, are reported."""
    sentence = "Every mutation writes exactly one entry to the scope's audit log, with the reason when given."
    row = "| `auto_recall` | `true` | recall and inject memory before each reply, every turn |"
    a = f"# A\n\nIntro text. {sentence}\n\n{row}\n"
    b = "# B\n\n" + sentence.replace(" the scope's", "\nthe scope's") + " Other text.\n\n" + row + "\n"
    assert len(copies([("a", a), ("b", b)])) == 2
    assert copies([("a", a), ("c", "# C\n\nSomething else entirely, said in a different way here.\n")]) == []
