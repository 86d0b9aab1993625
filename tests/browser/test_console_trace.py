"""The recall trace in the console's Injection panel, in a real browser: "why this memory" on an
injected row, the near misses with their reasons, and a question typed by the operator.

Same stand-in host and Chromium as ``test_console_browser.py``; screenshots go to
``test-output/console/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ltm.service.snapshots import InjectionSnapshot
from tests.browser.test_console_browser import CHROMIUM, SHOTS, Console, browser, server  # noqa: F401
from tests.support import ADMIN
from tests.support.console.seed import Seeded
from tests.support.console.server import ConsoleServer

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium")


@pytest.fixture
def console(browser: Any, server: ConsoleServer) -> Iterator[Console]:  # noqa: F811
    c = Console(browser, server)
    yield c
    c.close()
    assert not c.problems, c.problems


def test_trace_in_the_injection_panel(console: Console, server: ConsoleServer) -> None:  # noqa: F811
    c, seeded = console, server.seeded
    assert isinstance(seeded, Seeded)
    svc, alice = seeded.service, seeded.alice
    best, _ = server.run(
        svc.remember(alice, {"content": "Alice bakes sourdough bread on Sundays", "importance": 0.9}, ADMIN)
    )
    rep, _ = server.run(
        svc.remember(
            # another event (its own time), so not a restatement: a second row the block folds
            alice,
            {
                "content": "Alice bakes sourdough bread on Sundays too",
                "importance": 0.1,
                "event_at": "2024-01-01T08:00:00Z",
            },
            ADMIN,
        )
    )
    trace = server.run(svc.why(alice, "sourdough bread Sundays", ADMIN)).trace
    assert trace is not None
    injected = [r.id for r in trace.rows if r.injected]
    assert best.id in injected and rep.id not in injected
    server.run(
        svc.save_injection(
            alice,
            InjectionSnapshot.from_record(
                {"at": "2026-01-01T10:00:00Z", "episodes": injected, "tokens": 9, "trace": trace.to_public()}
            ),
        )
    )
    c.f.locator('#scope-list button[data-session="person_alice"]').wait_for()
    c.open("person_alice")
    c.tab("injection")
    c.f.locator("#panel-injection h3", has_text="Near misses").wait_for()
    why = c.f.locator(f'#panel-injection details[data-why="{best.id}"]')
    why.locator("summary", has_text="Why this memory").click()
    assert "rank #1" in why.inner_text() and "dense" in why.inner_text()
    miss = c.f.locator(f'#inj-near-misses li[data-near-miss="{rep.id}"]')
    assert miss.get_attribute("data-reason") == "repeat" and "folded as a repeat" in miss.inner_text()
    # control: the injected row is not listed as a near miss
    assert c.f.locator(f'#inj-near-misses li[data-near-miss="{best.id}"]').count() == 0
    c.shot("06b-injection-trace")

    # a question typed by the operator: the same recall, traced
    c.f.locator("#why-query").fill("sourdough bread Sundays")
    c.f.locator("#why-run").click()
    c.f.locator(f'#why-injected li[data-why-row="{best.id}"]').wait_for()
    assert c.f.locator(f'#why-near-misses li[data-near-miss="{rep.id}"]').get_attribute("data-reason") == "repeat"
    c.shot("06c-injection-why")
    assert (SHOTS / "06c-injection-why.png").exists()
