"""A reader of the memory block in its shipped layout (the inverse of ``memory_block.j2``), as a model
reads it: the stand-in model of the end-to-end stack (``e2e/demo_assistant.py``) answers from it, and
the tests read injected blocks with it. The plugin never reads its own block back, so this lives
beside the stand-in model, not in the plugin; its markers are the block's text
(``tests/surfaces/test_demo_assistant.py`` holds them equal to ``ltm.service.injection``'s)."""

from __future__ import annotations

import json
import re
from typing import Any

BEGIN, END = "<ltm-memory-data>", "</ltm-memory-data>"  # the data markers of the shipped block

_FIELD = re.compile(r'"(?:[^"\\]|\\.)*"|[^|]*')


def _fields(line: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while True:
        m = _FIELD.match(line, pos)
        assert m is not None  # the pattern matches the empty string
        raw = m.group(0)
        out.append(json.loads(raw) if raw.startswith('"') else raw)
        pos = m.end()
        if pos >= len(line) or line[pos] != "|":
            if pos < len(line):
                raise ValueError(f"unexpected text after a field: {line[pos:][:40]!r}")
            return out
        pos += 1


def read_block(block: str) -> dict[str, Any] | None:
    """The data of a block in the shipped layout (the inverse of ``memory_block.j2``), for tests and
    stand-in models: ``{"now": [...], "session_profile", "speaker_profile", "episodes": [{id, when,
    speaker, content, marks}]}``; None when ``block`` holds no data markers or rows it cannot read."""
    if BEGIN not in block or END not in block:
        return None
    body = block.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    out: dict[str, Any] = {"now": [], "session_profile": None, "speaker_profile": None, "episodes": []}
    try:
        for line in body.split("\n") if body else []:
            head, _, rest = line.partition("|")
            if head == "now":
                out["now"] = _fields(rest)
            elif head in ("chat profile", "speaker profile"):
                out["session_profile" if head == "chat profile" else "speaker_profile"] = json.loads(rest)
            else:
                eid, when, speaker, content, *marks = _fields(line)
                out["episodes"].append(
                    {"id": eid, "when": when, "speaker": speaker, "content": content, "marks": marks}
                )
    except (ValueError, TypeError):
        return None
    return out
