"""Shared fixtures: a MemoryService over real engines (numpy, Chroma, Qdrant local)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ltm.service import MemoryService
from tests.support import build_service


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
