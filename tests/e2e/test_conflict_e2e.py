"""A contradiction is parked for a person in the real LangBot 4.11.2, one case per reading this
round added: an age said in words against the age in digits, a time said before the speaker, and
a job left (an event against the state it ends). Each with a control told of someone else, or with
nothing to contradict, which is stored at once."""

from __future__ import annotations

import pytest

from e2e.stack import Stack
from tests.e2e.test_langbot_e2e import call_tool, remember

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]

CASES = [
    # (stored, the contradiction (before: stored beside it, both active), the control)
    ("I am 30 years old", "I am thirty-one years old now", "I work as a nurse"),
    ("I live in Leeds", "These days I live in Bristol", "These days my brother lives in Bristol"),
    ("I work at Netflix", "I left Netflix in March", "My wife just got a job at Airbnb"),
]


@pytest.mark.parametrize(("stored", "contradiction", "control"), CASES, ids=["age-in-words", "time-lead", "job-left"])
def test_a_contradiction_is_parked_and_the_control_is_stored(
    stack: Stack, stored: str, contradiction: str, control: str
) -> None:
    with stack.connect() as chat:
        first = remember(chat, stored)
        parked = call_tool(chat, "remember", {"content": contradiction})
        kept = remember(chat, control)
        candidates = chat.command("!memory candidates")
        memories = chat.command("!memory list")
    assert isinstance(parked, dict) and parked.get("ok") is False, parked
    assert f"contradicts the active memory {first['id']}" in str(parked.get("error")), parked
    lines = candidates.splitlines()
    head = [i for i, line in enumerate(lines) if contradiction in line]
    assert head and "[conflict]" in lines[head[0]], candidates
    assert "\u2194" in "\n".join(lines[head[0] : head[0] + 4]) and first["id"] in candidates, candidates
    assert contradiction not in memories and stored in memories, memories  # active only once accepted
    assert kept["content"] == control and control in memories and control not in candidates, candidates
