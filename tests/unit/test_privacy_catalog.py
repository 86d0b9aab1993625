"""The ``privacy`` catalog domain (issue 35): every ``privacy.*`` key the code names exists in all
seven languages, and the domain holds no key the code does not use (the command catalog's own test
reads only ``cmd.*`` keys, so it would not notice)."""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.pofile import read_po

from ltm.i18n import DEFAULT, LANGUAGES, LOCALES_DIR, catalog

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *sorted((ROOT / "components" / "commands").glob("*.py")),
    *sorted((ROOT / "ltm" / "service").glob("*.py")),
]
KEY = re.compile(
    r"[\"'](privacy\.[a-z0-9_]+\.[a-z0-9_.]*[a-z0-9_])[\"']"
)  # two dots: an audit operation ("privacy.optout") has one


def used() -> set[str]:
    return {k for src in SOURCES for k in KEY.findall(src.read_text(encoding="utf-8"))}


def domain(lang: str) -> set[str]:
    with (LOCALES_DIR / lang / "LC_MESSAGES" / "privacy.po").open("rb") as fh:
        return {str(m.id) for m in read_po(fh) if m.id}


def test_every_used_privacy_key_exists_in_every_language() -> None:
    keys = used()
    assert {"privacy.error.opted_out", "privacy.me.private_only", "privacy.forget_me.bad_code"} <= keys  # control
    for lang in LANGUAGES:
        missing = sorted(k for k in keys if k not in catalog(lang))
        assert not missing, (lang, missing)


def test_the_domain_holds_only_used_keys() -> None:
    own = {k for k in domain(DEFAULT) if k.startswith("privacy.")}
    assert own - used() == set()
