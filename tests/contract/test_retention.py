"""Retention (issue 35): ``retention_days`` deletes episodes whose last sighting is older, by a
daily background sweep; ``audit_retention_days`` drops whole audit chunks that are older. Both off
by default (the control: nothing is swept). A restated memory counts from its last sighting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ltm.service import Actor, MemoryService, Settings
from ltm.service.audit import CHUNK
from ltm.service.retention import CHECK_EVERY_S
from tests.support import build_service, scope_of

ALICE = Actor(surface="tool", sender_id="alice")
T0 = datetime(2025, 1, 1, tzinfo=UTC)


async def service(tmp: Path, config: dict[str, Any]) -> tuple[MemoryService, list[datetime]]:
    now = [T0]
    svc = await build_service("numpy", tmp, settings=lambda: Settings.from_config(config), clock=lambda: now[0])
    return svc, now


async def contents(svc: MemoryService) -> list[str]:
    scope = (await scope_of(svc)).as_operator()
    return sorted(e.content for e in (await svc.list_episodes(scope, statuses=None, page_size=100)).items)


async def test_old_episodes_go_recent_and_restated_ones_stay(tmp_path: Path) -> None:
    svc, now = await service(tmp_path, {"retention_days": 30})
    scope = await scope_of(svc)
    await svc.remember(scope, {"content": "I used to live in Oslo"}, ALICE)
    await svc.remember(scope, {"content": "I like green tea very much"}, ALICE)
    now[0] = T0 + timedelta(days=20)
    restated = await svc.remember(scope, {"content": "I like green tea very much"}, ALICE)
    assert restated.already_known  # its last sighting is now day 20
    now[0] = T0 + timedelta(days=25)
    await svc.remember(scope, {"content": "I started learning Go"}, ALICE)
    now[0] = T0 + timedelta(days=40)
    swept = await svc.retention.sweep_if_due()
    assert swept.ran and swept.episodes == 1
    assert await contents(svc) == ["I like green tea very much", "I started learning Go"]
    entries, _ = await svc.audit_page(scope.as_operator(), 1, 5)
    assert entries[0]["operation"] == "episode.erase" and entries[0]["operator"] == "retention"
    assert "Oslo" not in str(entries[0])
    now[0] += timedelta(hours=1)
    assert not (await svc.retention.sweep_if_due()).ran  # once a day


async def test_off_by_default_nothing_is_swept(tmp_path: Path) -> None:
    svc, now = await service(tmp_path, {})
    scope = await scope_of(svc)
    await svc.remember(scope, {"content": "I used to live in Oslo"}, ALICE)
    now[0] = T0 + timedelta(days=4000)
    assert svc.retention.poke() is None and svc.background.counts["started"] == 0
    assert await contents(svc) == ["I used to live in Oslo"]


async def test_poke_submits_the_sweep_once_an_hour(tmp_path: Path) -> None:
    svc, now = await service(tmp_path, {"retention_days": 1})
    scope = await scope_of(svc)
    await svc.remember(scope, {"content": "I used to live in Oslo"}, ALICE)
    now[0] = T0 + timedelta(days=3)
    mono = [0.0]
    svc.retention.monotonic = lambda: mono[0]
    started = svc.background.counts["started"]
    first = svc.retention.poke()
    assert first is not None and svc.retention.poke() is None  # within the hour: not again
    assert (await first).episodes == 1
    assert svc.background.counts["started"] == started + 1
    assert await contents(svc) == []
    mono[0] += CHECK_EVERY_S + 1
    again = svc.retention.poke()
    assert again is not None and not (await again).ran  # submitted, but the day is not over
    assert svc.background.counts["started"] == started + 2


async def test_audit_retention_drops_whole_old_chunks(tmp_path: Path) -> None:
    svc, now = await service(tmp_path, {"audit_retention_days": 10})
    scope = await scope_of(svc)
    for i in range(CHUNK + 5):
        await svc.remember(scope, {"content": f"I own {i} books"}, ALICE)
    now[0] = T0 + timedelta(days=30)
    await svc.remember(scope, {"content": "I moved to Lisbon"}, ALICE)
    total = await svc.audit_count(scope)
    swept = await svc.retention.sweep()
    assert swept.audit_entries == CHUNK  # the first chunk; the newest stays
    assert await svc.audit_count(scope) == total  # numbering goes on
    entries, _ = await svc.audit_page(scope, 1, 100)
    assert len(entries) == total - CHUNK and entries[0]["summary"].startswith("remembered")
