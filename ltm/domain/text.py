"""Untrusted text, pure: what may be stored, and what a model or a person is shown.

- :func:`unstorable` / :func:`check_text` / :func:`check_data`: a lone surrogate is not UTF-8 (it
  cannot be encoded, so every storage write would fail) and NUL ends strings in several backends.
  Such text is refused at validation, before the first write, with the field named.
- :func:`neutralize`: the text a model or a chat reader sees. Invisible and direction-changing
  characters are removed (zero-width characters, bidi overrides and isolates, tag characters,
  other format and control characters, private-use and unassigned code points), line and paragraph
  separators become ``\\n`` (which JSON escapes), and look-alikes of the markup characters
  ``< > &`` become those characters, so that an escaper that handles ``< > &`` also handles a
  full-width ``＜/ltm-memory-data＞``. What is stored is never changed.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from .errors import ValidationError

MAX_REASON = 500  # the reason a person gives for a change (audited), on every surface

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

# Letters that render as nothing (category Lo or Mn, so the category rule below keeps them).
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180e\u3164\uffa0")
# Look-alikes of the characters that open and close markup; NFKC folds most of them, not all.
_MARKUP_LOOKALIKES = {
    "\u2039": "<",  # ‹
    "\u203a": ">",  # ›
    "\u2329": "<",  # 〈
    "\u232a": ">",  # 〉
    "\u27e8": "<",  # ⟨
    "\u27e9": ">",  # ⟩
    "\u3008": "<",  # 〈
    "\u3009": ">",  # 〉
    "\u02c2": "<",  # ˂
    "\u02c3": ">",  # ˃
    "\u1438": "<",  # ᐸ
    "\u1433": ">",  # ᐳ
    "\u276e": "<",  # ❮
    "\u276f": ">",  # ❯
}
_LINE_BREAKS = frozenset("\r\x0b\x0c\x1c\x1d\x1e\x85")


def unstorable(value: str) -> bool:
    """True when ``value`` holds a lone surrogate or NUL."""
    return _UNSTORABLE.search(value) is not None


def check_text(value: str, field: str) -> str:
    """``value`` unchanged, or :class:`ValidationError` naming ``field``."""
    if unstorable(value):
        raise ValidationError(f"{field}: contains a character that is not text", key="error.field_chars", field=field)
    return value


def check_data(value: Any, field: str, _depth: int = 0) -> None:
    """:func:`check_text` over every string (keys included) of a JSON-like value."""
    if _depth > 64:
        raise ValidationError(f"{field}: nested too deeply", key="error.field_type", field=field, detail="")
    if isinstance(value, str):
        check_text(value, field)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                check_text(k, field)
            check_data(v, field, _depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_data(v, field, _depth + 1)


def _markup_of(ch: str) -> str | None:
    if ch in _MARKUP_LOOKALIKES:
        return _MARKUP_LOOKALIKES[ch]
    if ord(ch) > 0x7F:
        folded = unicodedata.normalize("NFKC", ch)
        if folded in ("<", ">", "&"):
            return folded
    return None


def neutralize(value: Any) -> str:
    """The text of ``value`` as a model or a reader may see it (see the module docstring)."""
    text = "" if value is None else str(value)
    if text.isascii() and text.isprintable():
        return text
    out: list[str] = []
    for ch in text.replace("\r\n", "\n"):
        if ch in "\n\t":
            out.append(ch)
            continue
        cat = unicodedata.category(ch)
        if cat in ("Zl", "Zp") or ch in _LINE_BREAKS:
            out.append("\n")
        elif cat in ("Cc", "Cf", "Cs", "Co", "Cn") or ch in _INVISIBLE:
            continue
        else:
            out.append(_markup_of(ch) or ch)
    return "".join(out)


def neutralize_data(value: Any) -> Any:
    """:func:`neutralize` over every string (keys included) of a JSON-like value."""
    if isinstance(value, str):
        return neutralize(value)
    if isinstance(value, dict):
        return {neutralize(k) if isinstance(k, str) else k: neutralize_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [neutralize_data(v) for v in value]
    if isinstance(value, tuple):
        return tuple(neutralize_data(v) for v in value)
    return value
