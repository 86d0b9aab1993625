"""The usage ledger in the real LangBot 4.11.2: after chat turns (one where the model calls
``remember``, one it answers with the memory block), the ledger has both turns, ties the tool call
to its own turn by the host's query id, and shows them in the console inside the dashboard and in
``!memory``. Screenshot: ``test-output/dashboard/usage.png``."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack
from tests.e2e.test_console_dashboard import CHROMIUM, SHOTS, Dashboard, browser  # noqa: F401 - the fixture
from tests.e2e.test_langbot_e2e import remember

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed")]
log = logging.getLogger(__name__)


def test_a_chat_turn_shows_in_the_ledger_console_and_summary(stack: Stack, browser: Any) -> None:  # noqa: F811
    if stack.request_log is None:
        pytest.skip("needs the fake model server (CALLTOOL)")
    kb = stack.kb_uuid
    with stack.connect() as chat:
        stored = remember(chat, "I keep bees on the roof of my flat")
        chat.send("What do I keep on the roof?")  # a turn with the memory block
        scope = {"session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID, "kb_id": kb}
        got = stack.page_api("/usage", {"scope": scope})
        turns = got["turns"]
        log.info("ledger turns: %s", turns)
        assert len(turns) == 2, turns
        answer, tool_turn = turns  # newest first
        assert tool_turn["tools"] == {"remember": 1}, turns  # the tool call carried its turn's query id
        assert answer["tools"] == {} and answer["memories"] >= 1 and answer["tokens"] > 0, answer
        assert answer["host_calls"] > 0 and answer["hook_ms"] >= 0, answer
        assert got["today"]["turns"] == 2 and got["today"]["tool_turns"] == 1, got["today"]
        summary = chat.command("!memory")
        assert "Today (UTC): 2 turns" in summary, summary
        assert stored["content"] not in str(got)

    d = Dashboard(browser, stack)
    try:
        d.login()
        d.open_console()
        d.f.locator("#kb-select").select_option(kb)
        d.f.locator(f'#scope-list button[data-session="{chat.session_name}"]').click()
        d.f.locator("#scope-banner", has_text=chat.session_name).wait_for()
        d.tab("usage")
        d.f.locator("#usage-turns").wait_for()
        assert d.f.locator("#usage-turns tbody tr").count() == 2
        row = d.f.locator(f'#usage-turns tr[data-query-id="{tool_turn["query_id"]}"]').inner_text()
        assert "remember" in row, row
        assert "Turns followed by a memory tool" in d.f.locator("#usage-today").inner_text()
        SHOTS.mkdir(parents=True, exist_ok=True)
        d.shot("usage")
    finally:
        d.close()
    assert not d.problems, d.problems
