"""Short ids in a real LangBot turn: the model is shown a memory by a short id in the injected block,
and the ``forget`` and ``remember`` tools act on exactly that memory when given it back."""

from __future__ import annotations

import pytest

from e2e.block_reader import read_block
from e2e.stack import Stack
from ltm.service.injection import BEGIN
from tests.e2e.test_langbot_e2e import call_tool, injected_texts, remember

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]


def _shown(messages: list[dict]) -> dict[str, str]:
    """The injected block's rows: text -> the id the model was shown."""
    blocks = [text for text in injected_texts(messages) if BEGIN in text]
    assert len(blocks) == 1, blocks
    data = read_block(blocks[0])
    assert data is not None, blocks[0]
    return {row["content"]: row["id"] for row in data["episodes"]}


def test_the_model_forgets_and_corrects_by_the_short_id_it_was_shown(stack: Stack) -> None:
    with stack.connect() as chat:
        key = remember(chat, "I keep my spare key under the blue flowerpot")
        cello = remember(chat, "I play the cello on Sundays with my sister")
        shown = _shown(chat.send("Where is my spare key, and when do I play the cello?").prompt)
        short_key = shown["I keep my spare key under the blue flowerpot"]
        short_cello = shown["I play the cello on Sundays with my sister"]
        assert key["id"].startswith(f"ep_{short_key}") and len(short_key) < len(key["id"]) - 3, shown
        assert cello["id"].startswith(f"ep_{short_cello}"), shown

        forgot = call_tool(chat, "forget", {"episode_id": short_key, "reason": "moved it"})
        assert forgot.get("ok") is True and forgot.get("id") == key["id"], forgot
        fixed = remember(chat, "I play the cello on Saturdays with my sister", supersedes=[short_cello])
        assert fixed.get("superseded") == [cello["id"]], fixed

        after = _shown(chat.send("Where is my spare key, and when do I play the cello?").prompt)
        assert "I play the cello on Saturdays with my sister" in after  # control: the block still shows memory
        assert "I keep my spare key under the blue flowerpot" not in after
        assert "I play the cello on Sundays with my sister" not in after

        shown_old = chat.command(f"!memory show {short_cello}")  # a command takes the short id too
        assert cello["id"] in shown_old and "supersed" in shown_old.lower(), shown_old

        unknown = call_tool(chat, "forget", {"episode_id": "fffff"})
        assert unknown.get("ok") is False and unknown.get("deleted") == 0, unknown
