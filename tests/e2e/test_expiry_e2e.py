"""Facts that expire in a real LangBot turn. The plugin's clock is the wall clock (there is no
documented seam to move it), and the ends its words give fall on a day's boundary, so:

- the model stores "I'm working from the Lisbon office this week": the tool result gives the
  ``valid_until`` the words set (the end of this UTC week) and says so; the next turn's block shows
  the memory with that end;
- a memory whose ``valid_until`` is a few seconds away is in the block, then, once that instant has
  passed, leaves it, while a durable memory stays (the control);
- "I'm at the Porto office today" said yesterday (``event_at``) is over already: never in the block,
  still in the full list and in an as-of listing of yesterday.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from e2e.block_reader import read_block
from e2e.stack import Stack
from ltm.domain.timefields import to_iso
from ltm.service.injection import BEGIN
from tests.e2e.test_langbot_e2e import call_tool, injected_texts, remember

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]

WEEK = "I'm working from the Lisbon office this week"
SOON = "The visitor badge for the Lisbon office is number 4471"
DURABLE = "My desk at the Lisbon office is by the window"
YESTERDAY = "I'm at the Porto office today"
ASK = "Where am I working, which badge do I use and where is my desk in the Lisbon office?"


def _rows(messages: list[dict]) -> dict[str, dict]:
    blocks = [text for text in injected_texts(messages) if BEGIN in text]
    if not blocks:
        return {}
    data = read_block(blocks[0])
    assert data is not None, blocks[0]
    return {row["content"]: row for row in data["episodes"]}


def test_an_expiring_fact_is_in_the_block_then_leaves_it(stack: Stack) -> None:
    now = datetime.now(UTC)
    end_of_week = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=7 - now.weekday())
    with stack.connect() as chat:
        week = remember(chat, WEEK)
        assert week.get("valid_until") == to_iso(end_of_week), week
        assert "this week" in str(week.get("expires")), week
        durable = remember(chat, DURABLE)
        assert "valid_until" not in durable and "expires" not in durable, durable  # control: stays open
        soon_until = datetime.now(UTC) + timedelta(seconds=25)
        soon = remember(chat, SOON, valid_until=to_iso(soon_until))
        assert soon.get("ok") and "expires" not in soon, soon  # the caller's end, not the words'
        porto = remember(chat, YESTERDAY, event_at=to_iso(now - timedelta(days=1)))
        assert porto.get("valid_until") == to_iso(now.replace(hour=0, minute=0, second=0, microsecond=0)), porto

        before = _rows(chat.send(ASK).prompt)
        assert WEEK in before and SOON in before and DURABLE in before, before
        assert to_iso(end_of_week).removesuffix("Z")[:10] in str(before[WEEK].get("marks")), before[WEEK]
        assert YESTERDAY not in before  # over when it was written

        time.sleep(max(0.0, (soon_until - datetime.now(UTC)).total_seconds()) + 2)
        after = _rows(chat.send(ASK).prompt)
        assert SOON not in after, after  # its time has passed: it left the block
        assert WEEK in after and DURABLE in after, after  # control: the others stay

        everything = chat.command("!memory list --status all")
        assert "4471" in everything and "Porto" in everything, everything  # history keeps both
        then = chat.command(f"!memory list --as-of {to_iso(now - timedelta(days=1))}")
        assert "Porto" in then, then


def test_a_stay_is_not_parked_as_a_move_but_a_move_is(stack: Stack) -> None:
    with stack.connect() as chat:
        remember(chat, "I live in Tokyo")
        stay = remember(chat, "I am staying at my parents' place until Friday")
        assert stay.get("valid_until"), stay
        moved = call_tool(chat, "remember", {"content": "I moved to Osaka"})
        assert moved.get("ok") is False and "cand_" in str(moved.get("error")), moved  # control: parked
