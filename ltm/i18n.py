"""The one translation runtime: language tags, lookup with fallback, formatting, error texts.

Two sets of catalogs go through it:

- :data:`CORE`: ``locales/<lang>/LC_MESSAGES/*.po`` read with babel, merged per language (command
  replies, the prompt block, tool and service errors; :func:`t`). Each surface owns its catalog
  file (domain); keys are unique across domains.
- :data:`CONSOLE`: ``pages/i18n/<locale>.json``, the catalogs the Memory Console page inlines; the
  console API's own refusals are translated from the same files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
LOCALES_DIR = ROOT / "locales"
CONSOLE_DIR = ROOT / "pages" / "i18n"
# The languages LangBot's UI and I18nString offer, in its order.
LANGUAGES = ("en_US", "zh_Hans", "zh_Hant", "ja_JP", "vi_VN", "th_TH", "es_ES")
DEFAULT = "en_US"
# Chinese tags name a script (zh-Hans, zh-Hant) or a region; these regions write Traditional Chinese.
_HANT_REGIONS = ("tw", "hk", "mo")


def read_po_catalog(lang: str) -> dict[str, str]:
    """Every ``.po`` domain of ``lang``, merged."""
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


def read_json_catalog(path: Path) -> dict[str, str]:
    """One ``{key: text}`` JSON catalog; an unreadable file is an empty catalog (logged)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("catalog %s unreadable: %s", path, exc)
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


class Catalogs:
    """One set of per-language catalogs and the lookup every surface shares."""

    def __init__(self, load: Callable[[str], dict[str, str]]) -> None:
        self.catalog: Callable[[str], dict[str, str]] = lru_cache(maxsize=8)(load)

    def t(self, key: str, lang: str | None = None, /, **args: Any) -> str:
        """Translate ``key``; fall back to English, then to the key itself. Never raises."""
        lang = normalize_lang(lang)
        text = self.catalog(lang).get(key) or self.catalog(DEFAULT).get(key) or key
        try:
            return text.format(**args) if args else text
        except (KeyError, IndexError, ValueError):
            return text


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


CORE = Catalogs(read_po_catalog)
CONSOLE = Catalogs(lambda lang: read_json_catalog(CONSOLE_DIR / f"{lang}.json"))
catalog = CORE.catalog
t = CORE.t


MAX_ECHO_CHARS = 120


def _echo(value: Any, limit: int = MAX_ECHO_CHARS) -> Any:
    """An argument an error message repeats back: it may be the very input that was refused, so it
    is made encodable (no lone surrogate) and cut to a length."""
    if not isinstance(value, str):
        return value
    text = value.encode("utf-8", "replace").decode("utf-8").replace("\x00", "?")
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def error_text(exc: Any, lang: str | None = None) -> str:
    """Render a service error (``LtmError``) in the caller's language."""
    raw = dict(getattr(exc, "params", {}) or {})
    args = {k: _echo(v, 4 * MAX_ECHO_CHARS if k == "detail" else MAX_ECHO_CHARS) for k, v in raw.items()}
    return t(getattr(exc, "key", "error.generic"), lang, **args)
