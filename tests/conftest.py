"""Shared fixtures: a MemoryService over real engines (numpy, Chroma, Qdrant local)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings

from ltm.service import MemoryService
from tests.support import build_service

# CI (CI=true) draws the same examples every run, so a green run here is the run CI makes;
# locally the examples vary from run to run and keep finding new cases.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


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
