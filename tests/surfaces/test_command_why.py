"""``!memory why <question>``: the recall trace in chat, for admins, short and localized."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.surfaces.test_command_memory import ADMIN_ID, ALICE, Harness, host_harness


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    yield await host_harness()


async def test_admin_sees_injected_rows_and_near_misses_with_reasons(h: Harness) -> None:
    kept = await h.remember(ALICE, "alice", "Alice drinks green tea every morning", importance=0.9)
    rep = await h.remember(
        ALICE, "alice", "Alice drinks green tea every single morning", importance=0.1, event_at="2024-01-01T08:00:00Z"
    )
    text = await h.one("memory why green tea morning", speaker=ADMIN_ID, first_speaker=ADMIN_ID, privilege=2)
    assert text.startswith("Why, for")
    assert f"#1 {kept.id} injected (dense" in text
    assert f"{rep.id} not injected: folded as a repeat" in text
    # control: the injected row carries no reason, the repeat is not called injected
    assert f"{kept.id} not injected" not in text and f"{rep.id} injected" not in text


async def test_localized(h: Harness) -> None:
    await h.remember(ALICE, "alice", "Alice drinks green tea")
    h.plugin.config = {**h.plugin.config, "language": "zh_Hans"}
    text = await h.one("memory why green tea", speaker=ADMIN_ID, privilege=2)
    assert "召回原因" in text and "已注入" in text


async def test_member_is_refused(h: Harness) -> None:
    await h.remember(ALICE, "alice", "Alice drinks green tea")
    text = await h.one("memory why green tea", speaker="alice")
    assert text.startswith("Refused:") and "green tea" not in text
    # control: the same member may search
    assert "Alice drinks green tea" in await h.one("memory search green tea", speaker="alice")
