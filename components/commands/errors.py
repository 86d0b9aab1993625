"""The one error mapper of the ``!memory`` surface: an :class:`LtmError` to a localized, cleaned line.

Service errors may echo stored or typed text, so every string argument is cleaned before it is
formatted (it stays data, never markup).
"""

from __future__ import annotations

from typing import Any

from components.commands import render
from ltm.i18n import error_text
from ltm.service import LtmError


class _Cleaned:
    """An error's key with display-safe arguments (what ``ltm.i18n.error_text`` reads)."""

    def __init__(self, key: str, args: dict[str, Any]) -> None:
        self.key = key
        self.params = args


def error_line(lang: str, exc: LtmError) -> str:
    """``error_text`` with every string argument cleaned."""
    exc_args = dict(getattr(exc, "params", {}) or {})
    cleaned = {k: render.clean(v, 160) if isinstance(v, str) else v for k, v in exc_args.items()}
    return error_text(_Cleaned(exc.key, cleaned), lang)
