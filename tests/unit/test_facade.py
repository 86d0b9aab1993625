"""The façade's verbs are real methods (go-to-definition and the type checker see a signature),
each the same signature as the capability method it calls, so the two cannot drift apart."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from ltm.service.memory_service import MemoryService
from tests.support import build_service

SOURCE = Path(__file__).resolve().parents[2] / "ltm" / "service" / "memory_service.py"


def delegations() -> dict[str, list[str]]:
    """Façade method -> the attribute path it calls (``self.episodes.remember`` -> [episodes, remember])."""
    out: dict[str, list[str]] = {}
    cls = next(
        n for n in ast.parse(SOURCE.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "MemoryService"
    )
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or len(fn.body) != 2:
            continue
        ret = fn.body[1]
        call = ret.value.value if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Await) else None
        call = call or (ret.value if isinstance(ret, ast.Return) else None)
        if not isinstance(call, ast.Call):
            continue
        path: list[str] = []
        node = call.func
        while isinstance(node, ast.Attribute):
            path.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == "self" and len(path) >= 2:
            out[fn.name] = list(reversed(path))
    return out


def test_the_verbs_are_methods() -> None:
    verbs = delegations()
    assert {"remember", "recall", "forget", "update_profile", "scope_for", "ingest_document"} <= set(verbs)
    assert all(inspect.isfunction(vars(MemoryService)[name]) for name in verbs)


async def test_each_verb_has_its_capabilitys_signature(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path)
    checked = 0
    for name, path in delegations().items():
        target = svc
        for attr in path:
            target = getattr(target, attr)
        facade = inspect.signature(getattr(svc, name))
        assert facade == inspect.signature(target), name
        assert inspect.iscoroutinefunction(getattr(svc, name)) == inspect.iscoroutinefunction(target), name
        checked += 1
    assert checked >= 30


def test_the_signature_check_sees_a_difference() -> None:
    """Positive control: a changed default is a different signature."""

    def a(x: int, y: int = 1) -> int: ...

    def b(x: int, y: int = 2) -> int: ...

    assert inspect.signature(a) != inspect.signature(b)
