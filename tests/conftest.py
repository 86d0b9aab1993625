"""Shared fixtures: a MemoryService over real engines (numpy, Chroma, Qdrant local)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from ltm.service import MemoryService
from tests.support import build_service
from tests.support.chroma_clients import closed_after, record_clients

# CI (CI=true) draws the same examples every run, so a green run here is the run CI makes;
# locally the examples vary from run to run and keep finding new cases.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

record_clients()

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


@pytest.fixture(params=["numpy", "chroma", "qdrant"])
async def service(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryService]:
    svc = await build_service(request.param, tmp_path)
    yield svc
    close = getattr(svc.vectors, "close", None)
    if close:
        close()


@pytest.fixture
async def fast_service(tmp_path: Path) -> MemoryService:
    return await build_service("numpy", tmp_path)
