"""The stand-in model's small-assistant behaviour, so the demo shows memory working.

With a real model, the model decides when to call ``remember`` and how to use the memory block.
The stand-in does two deterministic things instead:

- a plain statement about the user or the group ("My name is…", "I live in…", "we decided…",
  我叫…, 我住在…, 我们决定…) becomes one ``remember`` call with the statement as its content;
- a question is answered from the memory block the plugin injected into the system prompt (the
  rows between ``<ltm-memory-data>`` markers, read with the stack's ``read_block``,
  ``e2e/block_reader.py``; a JSON body is read too): the memory sharing most words with the question.
"""

from __future__ import annotations

import json
import re
from typing import Any

from e2e.block_reader import BEGIN, END, read_block

_STATEMENT_EN = re.compile(
    r"^\s*(my (name|job|birthday|favou?rite \w+|\w+) (is|are)|i am|i'm|call me|i live|i work|i moved|i like|i love|"
    r"i prefer|i hate|i have|i own|i was born|we decided|we agreed|we will|our \w+ (is|are)|remember that)\b",
    re.IGNORECASE,
)
_STATEMENT_ZH = re.compile(
    r"^\s*(我叫|我是|我住在|我住|我在|我喜欢|我爱|我讨厌|我有|我的|我们决定|我们约定|我们会|记住)"
)
_QUESTION = re.compile(r"[?？]\s*$|^\s*(what|where|who|when|how|which|do|does|did|is|are|can)\b|什么|哪|谁|吗|几", re.I)
_STOP = frozenset(
    "a an the is are was were am i my me you your we our do does did what where who when how which of in at to "
    "for on and or it this that with be can tell".split()
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def statement_to_remember(text: str) -> str | None:
    """The content to remember when ``text`` is a plain statement, else None."""
    text = (text or "").strip()
    if not text or len(text) > 500 or text.startswith(("!", "！")) or "CALLTOOL:" in text or _QUESTION.search(text):
        return None
    return text if _STATEMENT_EN.search(text) or _STATEMENT_ZH.search(text) else None


def is_question(text: str) -> bool:
    return bool(_QUESTION.search(text or ""))


def memory_block(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The injected memory payload, read from the system messages."""
    for m in messages:
        content = m.get("content")
        if m.get("role") != "system" or not isinstance(content, str) or BEGIN not in content:
            continue
        rows = read_block(content)
        if rows and (rows["episodes"] or rows["speaker_profile"] or rows["session_profile"]):
            return rows
        body = content.split(BEGIN, 1)[1].split(END, 1)[0].strip()
        try:
            data = json.loads(body)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def _terms(text: str) -> set[str]:
    words = {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 1}
    return words | set(_CJK.findall(text)) - set("我你的是什么吗哪谁")


def _episode_text(episode: Any) -> str:
    """An episode of the block: a compact row ``[id, when, speaker, text, ...]`` or a named object."""
    if isinstance(episode, list):
        return str(episode[3]) if len(episode) > 3 and episode[3] else ""
    return str(episode.get("content") or "") if isinstance(episode, dict) else ""


def answer_from_memory(question: str, payload: dict[str, Any] | None) -> str | None:
    """A one-line answer citing the best-matching memory, or None when nothing matches."""
    if not payload:
        return None
    facts: list[str] = [t for t in (_episode_text(e) for e in payload.get("episodes") or []) if t]
    for key in ("speaker_profile", "session_profile"):
        prof = payload.get(key) or {}
        if prof.get("name"):
            facts.append(f"name: {prof['name']}")
        facts.extend(f"{k}: {v}" for k, v in (prof.get("preferences") or {}).items())
    asked = _terms(question)
    scored = sorted(((len(asked & _terms(f)), -i, f) for i, f in enumerate(facts)), reverse=True)
    if not scored or scored[0][0] == 0:
        return None
    best = scored[0][2]
    return f"根据我的记忆：{best}" if _CJK.search(question) else f"From what I remember: {best}"
