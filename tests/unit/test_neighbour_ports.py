"""The neighbours' ports (ltm/service/neighbours.py) are exactly what each neighbour uses: every
attribute a neighbour reads off its service is a member of its host protocol, every member is read
by it, no neighbour imports the façade or the write engine, and a real MemoryService has them all."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

from ltm.service import neighbours
from ltm.service.neighbours import ConsolidationHost, HealthHost, ReviewHost, TransferHost
from tests.support import build_service

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "ltm" / "service"
NEIGHBOURS: dict[str, tuple[type, list[Path]]] = {
    "review": (ReviewHost, sorted((SERVICE / "review").glob("*.py"))),
    "consolidation": (ConsolidationHost, sorted((SERVICE / "consolidation").glob("*.py"))),
    "transfer": (TransferHost, [SERVICE / "transfer.py"]),
    "health": (HealthHost, [SERVICE / "health.py"]),
}


def members(protocol: type) -> dict[str, Any]:
    """A protocol's own and inherited members: name -> the nested protocol (for a property whose
    type is one of ours) or None."""
    out: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or not getattr(klass, "_is_protocol", False) or klass.__module__ != neighbours.__name__:
            continue
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            nested = None
            if isinstance(value, property):
                ret = inspect.signature(value.fget).return_annotation  # type: ignore[arg-type]
                nested = getattr(neighbours, str(ret), None)
                ours = isinstance(nested, type) and nested.__module__ == neighbours.__name__
                nested = nested if ours and getattr(nested, "_is_protocol", False) else None
            out[name] = nested
    return out


def used_chains(source: str) -> set[tuple[str, ...]]:
    """Attribute chains (one or two levels) read off ``service``/``svc``/``self.service``, and off a
    local ``writes`` bound to ``<service>.writes``."""
    out: set[tuple[str, ...]] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        parts: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        parts.reverse()
        if isinstance(base, ast.Name) and base.id in ("service", "svc"):
            out.add(tuple(parts[:2]))
        elif isinstance(base, ast.Name) and base.id == "self" and parts[:1] == ["service"] and len(parts) > 1:
            out.add(tuple(parts[1:3]))
        elif isinstance(base, ast.Name) and base.id == "writes":
            out.add(("writes", parts[0]))
    return out


def undeclared(protocol: type, chains: set[tuple[str, ...]]) -> list[str]:
    declared = members(protocol)
    missing = []
    for chain in sorted(chains):
        if chain[0] not in declared:
            missing.append(".".join(chain))
        elif len(chain) > 1 and declared[chain[0]] is not None and chain[1] not in members(declared[chain[0]]):
            missing.append(".".join(chain))
    return missing


def chains_of(files: list[Path]) -> set[tuple[str, ...]]:
    return set().union(*(used_chains(f.read_text(encoding="utf-8")) for f in files))


@pytest.mark.parametrize("name", sorted(NEIGHBOURS))
def test_a_neighbour_uses_only_its_port(name: str) -> None:
    protocol, files = NEIGHBOURS[name]
    assert files  # positive control: there is code to read
    chains = chains_of(files)
    assert len(chains) >= 4  # ... and it does reach its service
    assert undeclared(protocol, chains) == []


@pytest.mark.parametrize("name", sorted(NEIGHBOURS))
def test_every_member_of_a_port_is_used(name: str) -> None:
    protocol, files = NEIGHBOURS[name]
    chains = chains_of(files)
    heads = {c[0] for c in chains}
    assert sorted(set(members(protocol)) - heads) == []
    for member, nested in members(protocol).items():
        if nested is not None:
            seconds = {c[1] for c in chains if c[0] == member and len(c) > 1}
            assert sorted(set(members(nested)) - seconds) == [], member


def test_a_reach_past_the_port_is_reported() -> None:
    """The check's positive control: a synthetic neighbour reaching the registry and an unnamed
    write-engine method is caught."""
    source = "async def f(service):\n    await service.registry.kb(1)\n    service.writes.journal.recover()\n"
    assert {"registry.kb", "writes.journal"} <= set(undeclared(ReviewHost, used_chains(source)))
    assert undeclared(ReviewHost, used_chains("def f(service):\n    service.writes.mutate\n")) == []


@pytest.mark.parametrize("name", sorted(NEIGHBOURS))
def test_no_neighbour_imports_the_facade_or_the_engine(name: str) -> None:
    for f in NEIGHBOURS[name][1]:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = {a.name for a in node.names}
                assert not (node.module or "").endswith("memory_service"), f
                assert not (node.module or "").endswith("writes.engine"), f
                assert "WriteEngine" not in names and "MemoryService" not in names, f


async def test_a_memory_service_has_every_port(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path)
    for protocol, _ in NEIGHBOURS.values():
        for member, nested in members(protocol).items():
            value = getattr(svc, member)
            if nested is not None:
                for inner in members(nested):
                    assert hasattr(value, inner), f"{protocol.__name__}.{member}.{inner}"
            else:
                assert value is not None, f"{protocol.__name__}.{member}"
