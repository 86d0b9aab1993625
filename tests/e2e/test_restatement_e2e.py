"""Issue 27 item 2 in the real LangBot: a restated fact adds no row (`!memory list` count unchanged),
the tool answers already_known; control: a different fact adds a row."""

from __future__ import annotations

import pytest

from e2e.stack import Stack
from tests.e2e.test_langbot_e2e import remember

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]


def _rows(listing: str, word: str) -> int:
    return sum(1 for line in listing.splitlines() if word in line)


def test_a_restated_fact_adds_no_row(stack: Stack) -> None:
    with stack.connect() as chat:
        first = remember(chat, "I live in Lisbon")
        before = chat.command("!memory list")
        again = remember(chat, "I'm living in Lisbon")
        after = chat.command("!memory list")
        other = remember(chat, "My sister lives in Lisbon")
        control = chat.command("!memory list")
    assert again.get("already_known") is True and again["id"] == first["id"], again
    assert first["id"] in str(again.get("note")), again
    assert _rows(before, "Lisbon") == 1 and _rows(after, "Lisbon") == 1, (before, after)
    assert "living in Lisbon" not in after, after
    # control: a similar statement about another person is a new row (the same listing counts it;
    # another city would be a conflict, parked for review by the existing path)
    assert not other.get("already_known") and other["id"] != first["id"], other
    assert _rows(control, "Lisbon") == 2 and "sister" in control, control
