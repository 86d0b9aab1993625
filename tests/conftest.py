"""Shared fixtures: a MemoryService over real engines (numpy, Chroma, Qdrant local)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from ltm.service import MemoryService
from tests.support import Clock, build_service
from tests.support.backends import ENGINES
from tests.support.chroma_clients import closed_after, record_clients

# CI (CI=true) draws the same examples every run, so a green run here is the run CI makes;
# locally the examples vary from run to run and keep finding new cases.
# No deadline: a per-example time limit is a timed test, and fails on a loaded machine.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")

record_clients()

# Parallel runs (``-n 2 --dist loadgroup``, as scripts/test does): a test file runs whole on one worker,
# in file order, so its module-scoped fixtures are built once and no file sees another interleave.
# The browser files share one worker (one Chromium at a time). Two long files are split where they
# hold nothing across the split: the stateful retirement model per engine (its TestCase classes),
# the isolation probes per engine (the parameter of their module-scoped world).
BROWSER = "tests/browser/"
SPLIT_BY_CLASS = {"tests/reliability/test_retirement_model.py"}
SPLIT_BY_PARAM = {"tests/reliability/test_isolation_random.py": "world"}


def xdist_group(item: pytest.Item) -> str:
    """The worker group of a test: its file, or a part of a split file."""
    path, *inner = item.nodeid.split("::")
    if path.startswith(BROWSER):
        return BROWSER
    if path in SPLIT_BY_CLASS and len(inner) > 1:
        return f"{path}::{inner[0]}"
    param = SPLIT_BY_PARAM.get(path)
    callspec = getattr(item, "callspec", None)
    if param and callspec is not None and param in callspec.params:
        return f"{path}[{callspec.params[param]}]"
    return path


@pytest.hookimpl(tryfirst=True)  # before xdist adds the group to the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group(item)))


@pytest.fixture(autouse=True, scope="module")
def _close_module_chroma_clients() -> Iterator[None]:
    """Module-scoped fixtures' Chroma clients close when the module's fixtures are torn down."""
    with closed_after():
        yield


@pytest.fixture(autouse=True)
def _close_test_chroma_clients() -> Iterator[None]:
    """A test's own Chroma clients close after it (see tests/support/chroma_clients.py)."""
    with closed_after():
        yield


@pytest.fixture
def clock() -> Clock:
    """The clock ``service`` and ``fast_service`` are made with: now, until the test moves it."""
    return Clock()


@pytest.fixture(params=list(ENGINES))
async def service(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> AsyncIterator[MemoryService]:
    svc = await build_service(request.param, tmp_path, clock=clock)
    yield svc
    close = getattr(svc.vectors, "close", None)
    if close:
        close()


@pytest.fixture
async def fast_service(tmp_path: Path, clock: Clock) -> MemoryService:
    return await build_service("numpy", tmp_path, clock=clock)
