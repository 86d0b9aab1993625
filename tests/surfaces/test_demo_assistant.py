"""The stand-in model's demo behaviour: statements become one remember call, questions are answered
from the injected memory block (and only from it)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from e2e.demo_assistant import answer_from_memory, memory_block, statement_to_remember
from e2e.fake_openai import plan_reply
from ltm.service.injection import BEGIN, END, escape_json, render_block

REMEMBER_TOOL = {"type": "function", "function": {"name": "remember", "parameters": {}}}


def block(episodes: list[str], name: str = "") -> str:
    """The block as the plugin renders it (the shipped template)."""
    payload = {
        "speaker": {"id": "u1", "name": ""},
        "speaker_profile": {"name": name} if name else None,
        "episodes": [{"id": f"e{i}", "content": c, "speaker": "u1"} for i, c in enumerate(episodes)],
    }
    return render_block(payload, "en_US")


def json_block(episodes: list[str]) -> str:
    body = {"episodes": [{"id": f"e{i}", "content": c} for i, c in enumerate(episodes)]}
    return "\n".join(["Memory header", BEGIN, escape_json(body), END])


def test_statements_become_one_remember_call_and_the_result_is_acknowledged() -> None:
    for text in ("My name is Ada", "I live in Lisbon", "we decided to meet on Fridays", "我叫小明", "我住在上海"):
        body = {"messages": [{"role": "user", "content": text}], "tools": [REMEMBER_TOOL]}
        first = plan_reply(body)
        calls = first["tool_calls"]
        assert [c["function"]["name"] for c in calls] == ["remember"]
        assert json.loads(calls[0]["function"]["arguments"]) == {"content": text}
        body["messages"] += [first, {"role": "tool", "tool_call_id": calls[0]["id"], "content": '{"ok": true}'}]
        second = plan_reply(body)
        assert "tool_calls" not in second and second["content"].splitlines()[0] in (
            "Noted: I will remember that.",
            "好的，我记住了。",
        )


def test_questions_and_commands_are_not_remembered() -> None:
    for text in ("What is my name?", "where do I live", "!memory list", "我叫什么名字？", "hello there", ""):
        assert statement_to_remember(text) is None, text
        reply = plan_reply({"messages": [{"role": "user", "content": text}], "tools": [REMEMBER_TOOL]})
        assert "tool_calls" not in reply, text
    # without the tool offered, a statement is not called either
    assert "tool_calls" not in plan_reply({"messages": [{"role": "user", "content": "My name is Ada"}]})


def test_a_question_is_answered_from_the_injected_block_only() -> None:
    messages = [
        {"role": "system", "content": block(["My name is Ada", "I live in Lisbon"])},
        {"role": "user", "content": "What is my name?"},
    ]
    assert plan_reply({"messages": messages})["content"].splitlines()[0] == "From what I remember: My name is Ada"
    messages[1]["content"] = "Where do I live?"
    assert "Lisbon" in plan_reply({"messages": messages})["content"].splitlines()[0]
    # control: the same question with no memory block gets no invented answer
    bare = plan_reply({"messages": [{"role": "user", "content": "What is my name?"}]})
    assert "Ada" not in bare["content"] and not bare["content"].startswith("From what I remember")
    zh = [{"role": "system", "content": json_block(["我叫小明"])}, {"role": "user", "content": "我叫什么名字？"}]
    assert plan_reply({"messages": zh})["content"].startswith("根据我的记忆：我叫小明")
    assert answer_from_memory("What is my name?", {"speaker_profile": {"name": "Ada"}}) == (
        "From what I remember: name: Ada"
    )


@given(st.text(max_size=300))
def test_memory_block_parsing_never_raises(text: str) -> None:
    got = memory_block([{"role": "system", "content": f"{BEGIN}{text}{END}"}, {"role": "user", "content": text}])
    assert got is None or isinstance(got, dict)
    statement_to_remember(text)


def test_answers_from_the_compact_rows_of_the_injected_block() -> None:
    rows = {"episodes": [["ep_1", "2026-12-01 10:00", "u1", "I keep the violin in the attic"]]}
    assert "attic" in (answer_from_memory("Where do I keep the violin?", rows) or "")
    assert answer_from_memory("Where do I keep the violin?", {"episodes": [["ep_1"]]}) is None  # control


def test_the_stacks_block_reader_reads_the_plugins_markers() -> None:
    """The stand-in model reads the block as text: its markers are the plugin's, and a rendered block
    reads back (the control: a block without the markers reads as nothing)."""
    from e2e import block_reader

    assert (block_reader.BEGIN, block_reader.END) == (BEGIN, END)
    data = block_reader.read_block(block(["Alice lives in Lisbon"]))
    assert data is not None and [e["content"] for e in data["episodes"]] == ["Alice lives in Lisbon"]
    assert block_reader.read_block("no markers here") is None
