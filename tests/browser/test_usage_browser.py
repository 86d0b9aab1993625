"""The console's Usage panel in a real browser (the stand-in host of test_console_browser.py): the
last turns, today's totals and the daily roll-up of the usage ledger; a screenshot goes to
``test-output/console/usage.png``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.ledger import TurnUsage
from tests.browser.test_console_browser import CHROMIUM, Console, browser  # noqa: F401 - the fixture
from tests.support.console.seed import Seeded, seeded_service
from tests.support.console.server import ConsoleServer

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium")


async def seeded_with_usage(tmp: Path) -> Seeded:
    s = await seeded_service(tmp)
    day = s.service.clock().strftime("%Y-%m-%d")
    led = s.service.ledger
    led.turn(s.alice, TurnUsage(at=f"{day}T09:00:00Z", query_id=41, memories=2, tokens=120, host_calls=9, hook_ms=33))
    led.turn(s.alice, TurnUsage(at=f"{day}T09:05:00Z", query_id=42, memories=3, tokens=180, host_calls=11, hook_ms=27))
    led.turn(s.alice, TurnUsage(at="2024-05-30T12:00:00Z", query_id=7, memories=1, tokens=50, host_calls=6, hook_ms=20))
    led.tool_called(s.alice, 42, "remember")
    await led.flush()
    return s


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    tmp = tmp_path_factory.mktemp("usage")
    with ConsoleServer(lambda: seeded_with_usage(tmp)) as srv:
        yield srv


def test_usage_panel_shows_turns_today_and_days(browser: Any, server: ConsoleServer) -> None:  # noqa: F811
    c = Console(browser, server)
    try:
        c.f.locator('#scope-list button[data-session="person_alice"]').wait_for()
        c.open("person_alice")
        c.tab("usage")
        c.f.locator("#usage-turns").wait_for()
        rows = c.f.locator("#usage-turns tbody tr")
        assert rows.count() == 3
        assert rows.nth(0).get_attribute("data-query-id") == "7"  # the ring is in report order, newest first
        q42 = c.f.locator('#usage-turns tr[data-query-id="42"]').inner_text()
        assert "180" in q42 and "11" in q42 and "remember" in q42
        q41 = c.f.locator('#usage-turns tr[data-query-id="41"]').inner_text()
        assert "remember" not in q41  # control: the tool call is on its own turn only
        today = c.f.locator("#usage-today").inner_text()
        assert "300" in today and "Turns followed by a memory tool" in today  # 120 + 180 tokens today
        days = c.f.locator("#usage-days tbody tr")
        assert days.count() == 2
        assert c.f.locator('#usage-days tr[data-date="2024-05-30"]').inner_text().split()[1] == "1"
        assert "no memory text" in c.f.locator("#panel-usage").inner_text()
        c.shot("usage")

        # another space: nothing recorded there (the ledger is per memory space)
        c.open("person_bob")
        c.tab("usage")
        c.f.locator("#panel-usage .empty").first.wait_for()
        assert c.f.locator("#usage-turns").count() == 0
    finally:
        c.close()
    assert not c.problems, c.problems
