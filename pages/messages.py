"""The console's own messages: the same ``pages/i18n/<locale>.json`` catalogs the page has inlined.

The router's refusals (malformed body, unknown endpoint, unknown knowledge base...) are console
strings, so they live next to the console's other strings; service errors and health texts come
from the core catalogs through :mod:`ltm.i18n`.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any

from ltm.i18n import DEFAULT, normalize_lang

log = logging.getLogger(__name__)

I18N_DIR = Path(__file__).resolve().parent / "i18n"


@lru_cache(maxsize=8)
def catalog(lang: str) -> dict[str, str]:
    path = I18N_DIR / f"{lang}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("console catalog %s unreadable: %s", path, exc)
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def msg(key: str, lang: str | None = None, /, **args: Any) -> str:
    """Translate a console key; fall back to English, then to the key. Never raises."""
    lang = normalize_lang(lang)
    text = catalog(lang).get(key) or catalog(DEFAULT).get(key) or key
    try:
        return text.format(**args) if args else text
    except (KeyError, IndexError, ValueError):
        return text
