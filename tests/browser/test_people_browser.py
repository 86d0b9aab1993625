"""The console's People panel in a real browser (the stand-in host of test_console_browser.py): find
a person by speaker id, see the same listing as ``!memory me``, export it as JSON, erase it (two-step
confirmation). Another person's memories are never listed and stay (the control). A screenshot goes
to ``test-output/console/people.png`` (the listing) and ``people-erased.png``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_console_browser import CHROMIUM, Console, browser  # noqa: F401 - the fixture
from tests.support.console.seed import Seeded, seeded_service
from tests.support.console.server import ConsoleServer

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    tmp = tmp_path_factory.mktemp("people")
    with ConsoleServer(lambda: seeded_service(tmp)) as srv:
        yield srv


def test_find_export_and_erase_a_person(browser: Any, server: ConsoleServer) -> None:  # noqa: F811
    assert isinstance(server.seeded, Seeded)
    c = Console(browser, server)
    try:
        c.f.locator('#scope-list button[data-session="person_alice"]').wait_for()
        c.tab("people")
        c.f.locator("#panel-people .empty").first.wait_for()
        c.f.locator("#people-find").click()  # no speaker id: a clear message, nothing asked
        assert "speaker id" in c.f.locator("#panel-people > .error").inner_text()
        c.f.locator("#people-bot").fill("bot1")
        c.f.locator("#people-sender").fill("alice")
        c.f.locator("#people-find").click()
        c.f.locator("#people-episodes").wait_for()
        rows = c.f.locator("#people-episodes tbody tr")
        assert rows.count() > 10
        text = c.f.locator("#panel-people").inner_text()
        assert "Alice drinks jasmine tea every morning" in text and "person_alice" in text
        assert "Bob" not in c.f.locator("#people-episodes").inner_text()
        c.shot("people")

        c.f.locator("#people-export").click()
        area = c.f.locator('#panel-people [data-doc="people"] textarea')
        doc = json.loads(area.input_value())
        assert doc["format"] == "ltm-person/1" and doc["sender_id"] == "alice"
        assert len(doc["episodes"]) == rows.count()

        c.f.locator('#panel-people button[data-action="people-erase"]').click()
        c.f.locator('#panel-people button[data-action="confirm"]').click()
        c.f.locator("#people-erased").wait_for()
        c.wait_idle("people")
        assert "Erased" in c.f.locator("#people-erased").inner_text()
        c.f.locator("#panel-people .empty", has_text="No memory this person said").wait_for()
        assert c.f.locator('#panel-people [data-doc="people"]').count() == 0  # the old document is gone
        assert "Candidates\n0" in c.f.locator("#panel-people dl.kv").inner_text()
        c.shot("people-erased")

        # the control: Bob's memory is still there, and was never in Alice's listing
        c.f.locator("#people-sender").fill("bob")
        c.f.locator("#people-find").click()
        c.f.locator("#people-episodes", has_text="vault code").wait_for()
        assert c.f.locator("#people-episodes tbody tr").count() == 1
    finally:
        c.close()
    assert not c.problems, c.problems
