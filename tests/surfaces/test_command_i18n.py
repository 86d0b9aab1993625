"""The gettext catalogs: every language has every domain (commands, consolidation, core, review) with
the same keys and placeholders as en_US, and every key the command and the transfer service use exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from components.commands.render import HELP_ORDER
from ltm.domain.filters import STATUSES
from ltm.domain.privilege import POLICY, READ
from ltm.domain.trace import REASONS
from ltm.domain.vocabulary import CANDIDATE_STATUSES, candidate_status_key
from ltm.i18n import DEFAULT, LANGUAGES, LOCALES_DIR, catalog

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    ROOT / "components" / "commands" / "memory.py",
    ROOT / "components" / "commands" / "parser.py",
    ROOT / "components" / "commands" / "render.py",
    ROOT / "ltm" / "service" / "transfer.py",
    *sorted((ROOT / "ltm" / "templates" / "replies").glob("*.j2")),  # the reply layouts
]
PLACEHOLDER = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")
DOMAINS = sorted(p.stem for p in (LOCALES_DIR / DEFAULT / "LC_MESSAGES").glob("*.po"))
OTHERS = [lang for lang in LANGUAGES if lang != DEFAULT]


def _po(lang: str, domain: str = "commands") -> dict[str, str]:
    with (LOCALES_DIR / lang / "LC_MESSAGES" / f"{domain}.po").open("rb") as fh:
        return {str(m.id): str(m.string) for m in read_po(fh) if m.id}


def _shape(text: str) -> tuple[list[str], int, int, str]:
    """What a translation must keep: its placeholders, literal (doubled) braces, an indent (two or more
    leading spaces; a single one only joins a fragment, and Chinese joins with its own comma)."""
    indent = text[: len(text) - len(text.lstrip())]
    return sorted(PLACEHOLDER.findall(text)), text.count("{{"), text.count("}}"), indent if len(indent) > 1 else ""


def used_keys() -> set[str]:
    keys: set[str] = set()
    for src in SOURCES:
        keys |= set(re.findall(r"[\"'](cmd\.[a-z0-9_.]+[a-z0-9_])[\"']", src.read_text(encoding="utf-8")))
    keys |= {f"cmd.status.{s}" for s in STATUSES}
    keys |= {candidate_status_key(s) for s in CANDIDATE_STATUSES}  # ltm.domain.vocabulary
    keys |= {f"cmd.refused.{r.kind}" for r in POLICY.values() if r.kind != READ}
    keys |= {f"cmd.usage.{v}" for v in HELP_ORDER} | {f"cmd.help.{v}" for v in HELP_ORDER}
    keys |= {f"{k}.empty" for k in ("cmd.list.title", "cmd.superseded.title", "cmd.archived.title")}
    keys |= {f"health.verdict.{v}" for v in ("green", "amber", "red")}
    keys |= {f"cmd.why.reason.{r}" for r in REASONS}  # render.why: t(f"cmd.why.reason.{reason}")
    return keys


def test_every_language_has_every_domain_and_nothing_else() -> None:
    assert {"commands", "consolidation", "core", "review"} <= set(DOMAINS)
    on_disk = sorted(p.name for p in LOCALES_DIR.iterdir() if p.is_dir())
    assert on_disk == sorted(LANGUAGES)
    for lang in LANGUAGES:
        assert sorted(p.stem for p in (LOCALES_DIR / lang / "LC_MESSAGES").glob("*.po")) == DOMAINS, lang


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("lang", OTHERS)
def test_same_keys_and_placeholders(lang: str, domain: str) -> None:
    en, other = _po(DEFAULT, domain), _po(lang, domain)
    assert not set(en) - set(other), ("missing", lang, sorted(set(en) - set(other)))
    assert not set(other) - set(en), ("extra", lang, sorted(set(other) - set(en)))
    for key in en:
        assert other[key].strip(), (lang, key)
        assert _shape(en[key]) == _shape(other[key]), (lang, key, other[key])
    # translated, not copied: only ids, usage lines and command words may stay as in English
    words = re.compile(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}")
    same = [k for k in en if en[k] == other[k] and words.search(en[k]) and not k.startswith("cmd.usage.")]
    assert not same, (lang, domain, same)


def test_domains_own_their_key_prefixes() -> None:
    prefixes = {"commands": ("cmd.",), "consolidation": ("consol.",), "review": ("review.",)}
    for domain, starts in prefixes.items():
        assert all(k.startswith(starts) for k in _po(DEFAULT, domain)), domain
    keys = [k for domain in DOMAINS for k in _po(DEFAULT, domain)]
    assert len(keys) == len(set(keys))  # unique across domains: the merged catalog loses nothing


def test_every_used_key_exists() -> None:
    for lang in LANGUAGES:
        missing = sorted(k for k in used_keys() if k not in catalog(lang))
        assert not missing, (lang, missing)


def test_no_unused_keys() -> None:
    unused = sorted(set(_po("en_US")) - used_keys())
    assert not unused, unused
