"""The command catalogs: same keys and placeholders in en_US and zh_Hans, and every key the command
and the transfer service use exists."""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.pofile import read_po

from components.commands.render import HELP_ORDER
from ltm.domain.privilege import POLICY, READ
from ltm.domain.scope import STATUSES
from ltm.i18n import LOCALES_DIR, catalog

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    ROOT / "components" / "commands" / "memory.py",
    ROOT / "components" / "commands" / "parser.py",
    ROOT / "components" / "commands" / "render.py",
    ROOT / "ltm" / "service" / "transfer.py",
]
PLACEHOLDER = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")


def _po(lang: str) -> dict[str, str]:
    with (LOCALES_DIR / lang / "LC_MESSAGES" / "commands.po").open("rb") as fh:
        return {str(m.id): str(m.string) for m in read_po(fh) if m.id}


def used_keys() -> set[str]:
    keys: set[str] = set()
    for src in SOURCES:
        keys |= set(re.findall(r"[\"'](cmd\.[a-z0-9_.]+[a-z0-9_])[\"']", src.read_text(encoding="utf-8")))
    keys |= {f"cmd.status.{s}" for s in STATUSES}
    keys |= {f"cmd.refused.{r.kind}" for r in POLICY.values() if r.kind != READ}
    keys |= {f"cmd.usage.{v}" for v in HELP_ORDER} | {f"cmd.help.{v}" for v in HELP_ORDER}
    keys |= {f"{k}.empty" for k in ("cmd.list.title", "cmd.superseded.title", "cmd.archived.title")}
    keys |= {f"health.verdict.{v}" for v in ("green", "amber", "red")}
    return keys


def test_same_keys_and_placeholders() -> None:
    en, zh = _po("en_US"), _po("zh_Hans")
    assert set(en) == set(zh)
    assert all(k.startswith("cmd.") for k in en)
    for key in en:
        assert sorted(PLACEHOLDER.findall(en[key])) == sorted(PLACEHOLDER.findall(zh[key])), key
        assert en[key].strip() and zh[key].strip(), key


def test_every_used_key_exists() -> None:
    for lang in ("en_US", "zh_Hans"):
        missing = sorted(k for k in used_keys() if k not in catalog(lang))
        assert not missing, (lang, missing)


def test_no_unused_keys() -> None:
    unused = sorted(set(_po("en_US")) - used_keys())
    assert not unused, unused
