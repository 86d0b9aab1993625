"""A contradiction is parked for a person in the real LangBot 4.11.2: an age said in words
("thirty-one") against the age stored in digits. Control: another statement about the speaker,
with nothing to contradict, is stored."""

from __future__ import annotations

import pytest

from e2e.stack import Stack
from tests.e2e.test_langbot_e2e import call_tool, remember

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]


def test_an_age_said_in_words_is_parked_against_the_age_in_digits(stack: Stack) -> None:
    with stack.connect() as chat:
        age = remember(chat, "I am 30 years old")
        parked = call_tool(chat, "remember", {"content": "I am thirty-one years old now"})
        nurse = remember(chat, "I work as a nurse")
        listing = chat.command("!memory candidates")
        memories = chat.command("!memory list")
    assert isinstance(parked, dict) and parked.get("ok") is False, parked
    assert f"contradicts the active memory {age['id']}" in str(parked.get("error")), parked
    lines = listing.splitlines()
    head = [i for i, line in enumerate(lines) if "thirty-one" in line]
    assert head and "[conflict]" in lines[head[0]], listing
    block = "\n".join(lines[head[0] : head[0] + 4])
    assert "\u2194" in block and age["id"] in block and "(age)" in block, listing  # against the stored age
    assert "thirty-one" not in memories, memories  # not an active memory until a person accepts it
    # control: a statement with nothing to contradict is stored at once
    assert nurse["content"] == "I work as a nurse" and "nurse" in memories and "nurse" not in listing, listing


def test_a_time_before_the_speaker_is_parked_and_a_brothers_home_is_stored(stack: Stack) -> None:
    """ "These days I live in Bristol" after "I live in Leeds" is the speaker's move: parked against
    it (before, the time was read as part of who, and both homes stayed active). "These days my
    brother lives in Bristol" is the brother's: stored, the speaker's home untouched."""
    with stack.connect() as chat:
        home = remember(chat, "I live in Leeds")
        moved = call_tool(chat, "remember", {"content": "These days I live in Bristol"})
        brother = remember(chat, "These days my brother lives in Bristol")
        memories = chat.command("!memory list")
    assert isinstance(moved, dict) and moved.get("ok") is False, moved
    assert f"contradicts the active memory {home['id']}" in str(moved.get("error")), moved
    assert brother["content"] == "These days my brother lives in Bristol", brother
    assert "my brother lives in Bristol" in memories and "I live in Leeds" in memories, memories
    assert "These days I live in Bristol" not in memories, memories


def test_leaving_a_job_is_parked_against_it_and_a_wifes_new_job_is_stored(stack: Stack) -> None:
    """ "I left Netflix in March" after "I work at Netflix": parked against it (before, an event met
    no state, and both stayed active). "My wife just got a job at Airbnb" is hers: stored."""
    with stack.connect() as chat:
        job = remember(chat, "I work at Netflix")
        left = call_tool(chat, "remember", {"content": "I left Netflix in March"})
        wife = remember(chat, "My wife just got a job at Airbnb")
        memories = chat.command("!memory list")
    assert isinstance(left, dict) and left.get("ok") is False, left
    assert f"contradicts the active memory {job['id']}" in str(left.get("error")), left
    assert wife["content"] == "My wife just got a job at Airbnb", wife
    assert "I work at Netflix" in memories and "Airbnb" in memories and "left Netflix" not in memories, memories
