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
# The languages LangBot's UI and I18nString offer, in its order.
LANGUAGES = ("en_US", "zh_Hans", "zh_Hant", "ja_JP", "vi_VN", "th_TH", "es_ES")
DEFAULT = "en_US"
# Chinese tags name a script (zh-Hans, zh-Hant) or a region; these regions write Traditional Chinese.
_HANT_REGIONS = ("tw", "hk", "mo")


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
    """Map a language tag (``zh-Hant``, ``zh_TW``, ``ja``, ``es-MX``, ``en-US``...) to a catalog name.

    Exact names win; otherwise the base language decides (any ``zh`` is Simplified unless it names
    the Traditional script or a region writing it); anything unknown is English.
    """
    if not lang or not isinstance(lang, str):
        return DEFAULT
    v = lang.strip().replace("-", "_")
    if v in LANGUAGES:
        return v
    parts = [p.lower() for p in v.split("_") if p]
    if not parts:
        return DEFAULT
    base = parts[0]
    if base == "zh":
        rest = parts[1:]
        traditional = "hant" in rest or ("hans" not in rest and any(r in _HANT_REGIONS for r in rest))
        return "zh_Hant" if traditional else "zh_Hans"
    for name in LANGUAGES:
        if name.split("_")[0].lower() == base:
            return name
    return DEFAULT


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
