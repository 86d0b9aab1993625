"""docs/architecture.md says which layer imports which, and which modules write storage outside the
write engine: both tables are held against the code, in both directions (an import or a writer the
doc does not list fails, and so does a listed one the code no longer has)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit.test_layering import ROOT, files, imports_of

DOC = ROOT / "docs" / "architecture.md"
MODULES = {
    "domain": "ltm.domain",
    "ports": "ltm.ports",
    "i18n": "ltm.i18n",
    "templates": "ltm.templates",
    "service": "ltm.service",
    "adapters": "ltm.adapters",
    "standalone": "ltm.standalone",
    "pages": "pages",
    "components": "components",
    "main": "main",
    "sdk": "langbot_plugin",
}
MUTATIONS = {"set", "delete", "upsert", "drop_collection"}
STORES = ("kv", "vectors", "store")


def table(name: str) -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    body = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", text, re.S)
    assert body, f"docs/architecture.md has no {name} table"
    rows = [line.strip() for line in body.group(1).splitlines() if line.strip().startswith("|")]
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows[2:]]


def part_of(module: str) -> str | None:
    for part, prefix in MODULES.items():
        if module == prefix or module.startswith(prefix + "."):
            return part
    return None


def part_imports(path: Path) -> set[str]:
    """The parts ``path`` imports; ``from ltm import i18n`` counts as ``ltm.i18n``."""
    mods = set(imports_of(path))
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level and (node.module or "") == "":
            pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[: -node.level])
            mods.update(f"{pkg}.{a.name}" for a in node.names)
    return {p for m in mods if (p := part_of(m)) is not None}


def files_of(spec: str) -> list[Path]:
    path = ROOT / spec
    return [path] if path.is_file() else files(spec.rstrip("/"))


LAYERS = table("layers")


@pytest.mark.parametrize("row", LAYERS, ids=lambda r: r[0])
def test_each_layer_imports_exactly_what_the_doc_says(row: list[str]) -> None:
    part, spec, listed = row
    claimed = set() if listed == "none" else {p.strip() for p in listed.split(",")}
    found: dict[str, list[str]] = {}
    for path in files_of(spec):
        for other in part_imports(path) - {part}:
            found.setdefault(other, []).append(str(path.relative_to(ROOT)))
    assert claimed <= set(MODULES), claimed - set(MODULES)
    assert set(found) - claimed == set(), {p: found[p][:3] for p in set(found) - claimed}
    assert claimed - set(found) == set(), f"the doc lists imports no file of {part} makes"


def test_the_layer_table_covers_every_product_file() -> None:
    covered = {p for row in LAYERS for p in files_of(row[1])}
    product = {ROOT / "main.py", *files("ltm", "components", "pages")}
    small = {p for p in product if p.name == "__init__.py" and p.parent == ROOT / "ltm"}
    assert product - covered - small == set()


def storage_writers(source: str) -> list[str]:
    """Calls of a mutating store method (``set``, ``delete``, ``upsert``, ``drop_collection``) on
    a receiver named as a store (``kv``, ``vectors``, ``store``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATIONS:
            receiver = ast.unparse(node.func.value).lower()
            if any(s in receiver for s in STORES):
                out.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return out


def test_the_writer_check_flags_what_it_should() -> None:
    snippet = (
        "async def f(self):\n"
        "    await self.writes.kv.set(k, v)\n"
        "    await cache.set(k)\n"
        "    await self.vectors.upsert(c, r)\n"
    )
    assert storage_writers(snippet) == ["2: self.writes.kv.set", "4: self.vectors.upsert"]


def test_only_the_listed_modules_write_storage_outside_the_write_engine() -> None:
    listed = {row[0] for row in table("direct-writers")}
    found = {
        str(p.relative_to(ROOT))
        for p in files("ltm/service")
        if "writes" not in p.relative_to(ROOT / "ltm" / "service").parts[:-1]
        and storage_writers(p.read_text(encoding="utf-8"))
    }
    assert found - listed == set(), "writes storage outside ltm/service/writes/ and not in the doc"
    assert listed - found == set(), "listed in the doc as a direct writer, but writes nothing"
    engine = [p for p in files("ltm/service/writes") if storage_writers(p.read_text(encoding="utf-8"))]
    assert engine  # control: the check sees the engine's own writes
