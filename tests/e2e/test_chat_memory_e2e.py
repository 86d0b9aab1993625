"""Chat as a LangBot user meets it: each memory reaches the model once per turn, and the stand-in
model's demo behaviour (tell it something, ask in a later turn) works through the real pipeline.

The memory for the once-per-turn checks is added through the host's knowledge-base file flow, so
no earlier chat turn carries the sentence in the conversation history: every occurrence the model
sees in this turn's request comes from memory, through the plugin's block or the runner's knowledge
results.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, ChatSession, Stack
from tests.e2e.test_langbot_e2e import all_texts, injected_texts, is_runner_rag, system_texts

pytestmark = pytest.mark.e2e
needs_fake_model = pytest.mark.usefixtures("fake_model_only")


def add_memory(stack: Stack, chat: ChatSession, content: str) -> None:
    doc = {
        "bot_uuid": WEBCHAT_BOT_UUID,
        "episodes": [{"session_name": chat.session_name, "sender_id": chat.sender_id, "content": content}],
    }
    row = stack.kb_add_document(json.dumps(doc).encode("utf-8"), filename=f"{chat.connection_id}.json")
    assert row.get("status") == "completed", f"the host did not complete the ingest: {row}"


def occurrences(sentence: str, request: dict[str, Any]) -> int:
    return sum(t.count(sentence) for t in all_texts(request.get("messages") or []))


@needs_fake_model
def test_each_memory_reaches_the_model_once_per_turn(stack: Stack) -> None:
    """The pipeline selects the memory KB in its runner (the README's setup): the injected block
    carries the memory and the runner's knowledge results do not repeat it."""
    sentence = "Ada keeps the violin in the attic cupboard"
    with stack.connect() as chat:
        add_memory(stack, chat, sentence)
        turn = chat.send("Where does Ada keep the violin?")
        assert turn.requests, "the fake model received no request for this turn"
        for request in turn.requests:
            assert occurrences(sentence, request) == 1, json.dumps(request.get("messages"), ensure_ascii=False)[:3000]
        assert any(sentence in t for t in injected_texts(turn.prompt))  # the one copy is the escaped block
        rag = [t for t in system_texts(turn.prompt) if is_runner_rag(t)]
        assert not any(sentence in t for t in rag), rag


@needs_fake_model
def test_with_auto_recall_off_the_runner_still_gets_the_memory_once(stack: Stack) -> None:
    sentence = "Ada's bicycle is the green one by the gate"
    previous = stack.plugin_config()
    with stack.connect() as chat:
        add_memory(stack, chat, sentence)
        stack.set_plugin_config({"auto_recall": False})
        try:
            turn = chat.send("Which bicycle is Ada's?")
        finally:
            stack.set_plugin_config({"auto_recall": previous.get("auto_recall", True)})
        assert turn.requests
        assert occurrences(sentence, turn.requests[0]) == 1  # served by the engine as knowledge results
        assert not any(sentence in t for t in injected_texts(turn.prompt))
        assert any(sentence in t for t in system_texts(turn.prompt) if is_runner_rag(t))


@needs_fake_model
def test_tell_it_your_name_then_ask_in_a_later_turn(stack: Stack) -> None:
    """The demo a newcomer tries in the dashboard's chat, through the real pipeline and tools."""
    with stack.connect() as chat:
        told = chat.send("My name is Ada")
        assert "remember" in told.reply.lower() or "记住" in told.reply, told.reply
        asked = chat.send("What is my name?")
        first_line = asked.reply.splitlines()[0] if asked.reply else ""
        assert "Ada" in first_line, asked.reply
        assert any("My name is Ada" in t for t in injected_texts(asked.prompt))
    with stack.connect() as other:  # control: another chat is not told
        elsewhere = other.send("What is my name?")
        assert "Ada" not in elsewhere.reply.splitlines()[0], elsewhere.reply
