"""Documentation links: every link between the docs resolves, and the README (which LangBot shows
from inside the installed package, without the repository around it) links only to its own headings."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- \u3400-\u9fff]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+)$", path.read_text(encoding="utf-8"), re.M)}


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return LINK.findall(text)


def test_readmes_link_only_to_their_own_headings() -> None:
    for readme in [ROOT / "README.md", *sorted((ROOT / "readme").glob("*.md"))]:
        own = anchors(readme)
        for target in links(readme):
            if target.startswith(("http://", "https://")):
                continue
            assert target.startswith("#"), f"{readme.name}: {target} does not exist inside the installed package"
            assert target[1:] in own, f"{readme.name}: no heading for {target}"


def test_every_link_between_docs_resolves() -> None:
    docs = sorted((ROOT / "docs").glob("*.md"))
    assert docs
    for doc in docs:
        for target in links(doc):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            assert dest.is_file(), f"{doc.name}: {target} does not resolve"
            if anchor and dest.suffix == ".md":
                assert anchor in anchors(dest), f"{doc.name}: no heading {anchor!r} in {dest.name}"
