"""Documentation links: every link between the docs resolves, every repository file the README names
exists, and the README (which LangBot shows from inside the installed package, without the
repository around it) links only to its own headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
NAMED_DOC = re.compile(r"`((?:docs|readme)/[\w./-]*?\.md|docs/decisions/|CONTRIBUTING\.md|CHANGELOG\.md)`")
READMES = [ROOT / "README.md", *sorted((ROOT / "readme").glob("*.md"))]
REPO_DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- \u3400-\u9fff]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+)$", path.read_text(encoding="utf-8"), re.M)}


def without_code(path: Path) -> str:
    return re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)


def links(path: Path) -> list[str]:
    return LINK.findall(without_code(path))


def broken_links(doc: Path) -> list[str]:
    broken = []
    for target in links(doc):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        if not dest.exists():
            broken.append(f"{doc.relative_to(ROOT)}: {target} does not resolve")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{doc.relative_to(ROOT)}: no heading {anchor!r} in {dest.name}")
    return broken


def test_readmes_link_only_to_their_own_headings() -> None:
    for readme in READMES:
        own = anchors(readme)
        for target in links(readme):
            if target.startswith(("http://", "https://")):
                continue
            assert target.startswith("#"), f"{readme.name}: {target} does not exist inside the installed package"
            assert target[1:] in own, f"{readme.name}: no heading for {target}"


@pytest.mark.parametrize("doc", REPO_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_in_the_repository_docs_resolves(doc: Path) -> None:
    assert doc.is_file()
    assert broken_links(doc) == []


def test_the_docs_link_to_each_other() -> None:
    """Positive control for the link check: the docs do link (relative files and headings), and a
    made-up target is reported."""
    targets = [t for doc in REPO_DOCS for t in links(doc)]
    assert sum("#" in t for t in targets) >= 5 and sum(t.endswith(".md") for t in targets) >= 10
    probe = ROOT / "docs" / "commands.md"
    assert broken_links(probe) == []
    fake = probe.read_text(encoding="utf-8") + "\n[x](nowhere.md) [y](review.md#no-such-heading)\n"
    tmp = probe.with_name(".probe-links.md")
    try:
        tmp.write_text(fake, encoding="utf-8")
        assert len(broken_links(tmp)) == 2
    finally:
        tmp.unlink()


def test_every_doc_the_readmes_name_exists() -> None:
    """The README names docs as paths (it may not link outside itself); each must be in the repo."""
    named = set()
    for doc in [*READMES, *REPO_DOCS]:
        for path in NAMED_DOC.findall(without_code(doc)):
            named.add(path)
            assert (ROOT / path).exists(), f"{doc.relative_to(ROOT)} names {path}, which does not exist"
    assert {"docs/commands.md", "docs/recall.md", "CONTRIBUTING.md"} <= named


def test_every_doc_is_reachable_from_the_readme() -> None:
    """Each file in docs/ is named by the README, so a user can find it."""
    named = set(NAMED_DOC.findall(without_code(ROOT / "README.md")))
    top = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert top - named == set()
