"""The house's layering, pinned: components and pages never touch adapters; the domain is pure;
the service knows nothing of LangBot; plugin code never prints (stdout is the RPC channel)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[: -node.level])
                base = f"{pkg}.{base}" if base else pkg
            out.add(base)
    return out


def files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


@pytest.mark.parametrize("path", files("components", "pages"), ids=lambda p: str(p.relative_to(ROOT)))
def test_surfaces_do_not_import_adapters(path: Path) -> None:
    assert not [m for m in imports_of(path) if m.startswith("ltm.adapters")]


@pytest.mark.parametrize("path", files("ltm/domain"), ids=lambda p: str(p.relative_to(ROOT)))
def test_domain_is_pure(path: Path) -> None:
    ours = [m for m in imports_of(path) if m.startswith(("ltm", "components", "pages", "langbot_plugin"))]
    assert all(m.startswith("ltm.domain") for m in ours), ours
    assert not {"asyncio", "sqlite3", "chromadb", "qdrant_client"} & imports_of(path)


@pytest.mark.parametrize("path", files("ltm/service"), ids=lambda p: str(p.relative_to(ROOT)))
def test_service_knows_no_langbot_or_adapters(path: Path) -> None:
    bad = [m for m in imports_of(path) if m.startswith(("langbot_plugin", "ltm.adapters", "components", "pages"))]
    assert not bad


@pytest.mark.parametrize(
    "path", [ROOT / "main.py", *files("components", "pages", "ltm")], ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_print_in_plugin_code(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "print"]
    assert not calls


def private_reaches(source: str) -> list[str]:
    """Where ``source`` uses another module's private name: ``x._name`` (unless ``x`` is ``self`` or
    ``cls``, or ``_name`` is an attribute this module's own classes define, e.g. a classmethod filling
    a fresh instance) or ``from m import _name``. Dunders are public."""
    tree = ast.parse(source)
    own = _own_private_attributes(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out += [f"{node.lineno}: from {node.module} import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def _own_private_attributes(tree: ast.Module) -> set[str]:
    """Private attributes the module's classes define: methods, class-level names, ``self._x = ...``."""
    own: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _private(node.id):
                own.add(node.id)
    return own


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_the_private_name_check_flags_what_it_should() -> None:
    snippet = (
        "from ltm.service.settings import _int\n"
        "class A:\n"
        "    def f(self, svc):\n"
        "        self._own()\n"
        "        svc._fetch()\n"
        "        self.service._backend()\n"
        "        return cls._table, self.__class__, svc.__dict__\n"
        "class B:\n"
        "    def __init__(self):\n"
        "        self._size = 0\n"
        "    @classmethod\n"
        "    def fresh(cls):\n"
        "        b = cls()\n"
        "        b._size = 1\n"
        "        return b\n"
    )
    assert private_reaches(snippet) == [
        "1: from ltm.service.settings import _int",
        "5: svc._fetch",
        "6: self.service._backend",
    ]


@pytest.mark.parametrize(
    "path", [ROOT / "main.py", *files("ltm", "components", "pages")], ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_module_reaches_into_another_modules_private_names(path: Path) -> None:
    assert private_reaches(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "path",
    [p for p in files("components", "pages", "ltm") if p != ROOT / "ltm" / "i18n.py"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_one_translation_runtime(path: Path) -> None:
    """Catalogs are read and looked up only by ``ltm.i18n`` (core .po and console JSON alike)."""
    text = path.read_text(encoding="utf-8")
    assert not {"babel", "read_po"} & imports_of(path) and "read_po" not in text
    assert '"i18n"' not in text and "LC_MESSAGES" not in text
