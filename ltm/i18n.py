"""Message catalogs: ``locales/<lang>/LC_MESSAGES/*.po`` read with babel, merged per language.

Every user-facing string goes through :func:`t`. Each surface owns its own catalog file (domain),
so parallel work never edits the same file; keys must be unique across domains.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po

log = logging.getLogger(__name__)

LOCALES_DIR = Path(__file__).resolve().parent.parent / "locales"
LANGUAGES = ("en_US", "zh_Hans")
DEFAULT = "en_US"


@lru_cache(maxsize=8)
def catalog(lang: str) -> dict[str, str]:
    out: dict[str, str] = {}
    folder = LOCALES_DIR / lang / "LC_MESSAGES"
    for po in sorted(folder.glob("*.po")):
        with po.open("rb") as fh:
            cat = read_po(fh)
        for msg in cat:
            if msg.id and msg.string:
                if msg.id in out:
                    log.warning("duplicate message key %s in %s", msg.id, po.name)
                out[str(msg.id)] = str(msg.string)
    return out


def normalize_lang(lang: str | None) -> str:
    if not lang:
        return DEFAULT
    v = lang.replace("-", "_")
    if v.lower().startswith("zh"):
        return "zh_Hans"
    return v if v in LANGUAGES else DEFAULT


def t(key: str, lang: str | None = None, /, **args: Any) -> str:
    """Translate ``key``; fall back to English, then to the key itself. Never raises."""
    lang = normalize_lang(lang)
    text = catalog(lang).get(key) or catalog(DEFAULT).get(key) or key
    try:
        return text.format(**args) if args else text
    except (KeyError, IndexError, ValueError):
        return text


MAX_ECHO_CHARS = 120


def _echo(value: Any, limit: int = MAX_ECHO_CHARS) -> Any:
    """An argument an error message repeats back: it may be the very input that was refused, so it
    is made encodable (no lone surrogate) and cut to a length."""
    if not isinstance(value, str):
        return value
    text = value.encode("utf-8", "replace").decode("utf-8").replace("\x00", "?")
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def error_text(exc: Any, lang: str | None = None) -> str:
    """Render a service error (``MemoryError_``) in the caller's language."""
    raw = dict(getattr(exc, "args_", {}) or {})
    args = {k: _echo(v, 4 * MAX_ECHO_CHARS if k == "detail" else MAX_ECHO_CHARS) for k, v in raw.items()}
    return t(getattr(exc, "key", "error.generic"), lang, **args)
