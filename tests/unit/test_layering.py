"""The house's layering, pinned: components and pages never touch adapters (and import only the public
API, `ltm.service`, and `ltm.i18n`: tests/unit/test_surface_api.py); the domain is pure;
the service knows nothing of LangBot; plugin code never prints (stdout is the RPC channel)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

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


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def violations(paths: list[Path], bad: Callable[[Path], list[str]]) -> dict[str, list[str]]:
    """``path -> [what breaks the rule]`` for every file that breaks it (one test per rule, one report)."""
    found = {rel(p): sorted(bad(p)) for p in paths}
    return {p: v for p, v in found.items() if v}


def adapter_imports(path: Path) -> list[str]:
    return [m for m in imports_of(path) if m.startswith("ltm.adapters")]


def impure_imports(path: Path) -> list[str]:
    ours = [m for m in imports_of(path) if m.startswith(("ltm", "components", "pages", "langbot_plugin"))]
    io = {"asyncio", "sqlite3", "chromadb", "qdrant_client"} & imports_of(path)
    return [m for m in ours if not m.startswith("ltm.domain")] + sorted(io)


def host_imports(path: Path) -> list[str]:
    return [m for m in imports_of(path) if m.startswith(("langbot_plugin", "ltm.adapters", "components", "pages"))]


def print_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "print"]
    return [f"{n.lineno}: print" for n in calls]


def test_surfaces_do_not_import_adapters() -> None:
    assert violations(files("components", "pages"), adapter_imports) == {}


def test_domain_is_pure() -> None:
    assert violations(files("ltm/domain"), impure_imports) == {}


def test_service_knows_no_langbot_or_adapters() -> None:
    assert violations(files("ltm/service"), host_imports) == {}


def test_no_print_in_plugin_code() -> None:
    assert violations([ROOT / "main.py", *files("components", "pages", "ltm")], print_calls) == {}


def test_each_rule_reports_the_file_and_what_it_imports(tmp_path: Path) -> None:
    """Positive control: every rule names a breaking file and the import (or call) that breaks it."""
    bad = tmp_path / "probe.py"
    bad.write_text("import asyncio\nfrom ltm.adapters import numpy_index\nfrom ltm.service import x\nprint(1)\n")
    assert violations([bad], impure_imports) == {"probe.py": ["asyncio", "ltm.adapters", "ltm.service"]}
    assert violations([bad], adapter_imports) == {"probe.py": ["ltm.adapters"]}
    assert violations([bad], host_imports) == {"probe.py": ["ltm.adapters"]}
    assert violations([bad], print_calls) == {"probe.py": ["4: print"]}


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


def test_no_module_reaches_into_another_modules_private_names() -> None:
    paths = [ROOT / "main.py", *files("ltm", "components", "pages")]
    assert violations(paths, lambda p: private_reaches(p.read_text(encoding="utf-8"))) == {}


def translation_reaches(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    found = sorted({"babel", "read_po"} & imports_of(path))
    found += [word for word in ("read_po", '"i18n"', "LC_MESSAGES") if word in text and word not in found]
    return found


def test_one_translation_runtime() -> None:
    """Catalogs are read and looked up only by ``ltm.i18n`` (core .po and console JSON alike)."""
    paths = [p for p in files("components", "pages", "ltm") if p != ROOT / "ltm" / "i18n.py"]
    assert violations(paths, translation_reaches) == {}
    assert translation_reaches(ROOT / "ltm" / "i18n.py")  # control: the runtime itself reads them
