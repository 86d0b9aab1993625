"""The listener's early start (components/event_listener/early.py) on its own, over a stand-in
service: which chats it remembers (the newest kept, a chat forgotten with its KB), which messages
start an embedding (a served private chat's text, when memory recalls) and which never do (each
condition alone, beside a positive control), and the installed plugin's noted messages, bounded.
The cases a mutation pass (``scripts/mutate``) showed the plugin-level tests leave open."""

from __future__ import annotations

import contextvars
from types import SimpleNamespace
from typing import Any

import pytest
from langbot_plugin.api.entities.builtin.platform import message as pm
from langbot_plugin.api.proxies.invocation import bind_invocation

from components.event_listener.early import EarlyTurns

TEXT = "where is my bicycle?"


class Registry:
    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    def start_query_embedding(self, kb: str, text: str) -> bool:
        self.started.append((kb, text))
        return True


def early(auto_recall: bool = True, **bounds: Any) -> tuple[EarlyTurns, Registry]:
    registry = Registry()
    service = SimpleNamespace(settings=SimpleNamespace(auto_recall=auto_recall), registry=registry)
    return EarlyTurns(SimpleNamespace(service=service), enabled=True, **bounds), registry


def chain(text: str = TEXT) -> Any:
    return pm.MessageChain([pm.Plain(text=text)])


def test_the_newest_chats_are_remembered_and_a_chat_forgets_its_kb() -> None:
    turns, _ = early(chats=2, noted=5)
    turns.learn("", "kb1")  # no chat: nothing learnt
    assert turns.kb_of("") == ""
    turns.learn("person_a", "kb1")
    turns.learn("person_b", "kb2")
    turns.learn("person_a", "kb1")  # a's turn again: a is the newest now
    turns.learn("person_c", "kb3")  # over the bound of 2: the oldest (b) goes
    assert [turns.kb_of(s) for s in ("person_a", "person_b", "person_c")] == ["kb1", "", "kb3"]
    turns.learn("person_a", "")  # a's turn had no memory KB: forgotten
    assert turns.kb_of("person_a") == "" and turns.kb_of("person_c") == "kb3"


def test_a_served_private_chats_message_starts_its_embedding() -> None:
    turns, registry = early()
    turns.learn("person_u1", "kb1")
    assert turns.message(3, "person", "u1", chain()) is True
    assert registry.started == [("kb1", TEXT)]


@pytest.mark.parametrize(
    "case",
    ["disabled", "no service", "not served", "group", "no auto recall", "command", "empty", "image"],
)
def test_each_reason_to_start_nothing(case: str) -> None:
    turns, registry = early(auto_recall=case != "no auto recall")
    if case == "no service":  # the plugin before its service is up
        turns = EarlyTurns(SimpleNamespace(), enabled=True)
    turns.learn("person_u1", "kb1")
    turns.learn("group_u1", "kb1")  # a served group: its trigger is stripped later, still nothing
    kind, who, body = "person", "u1", chain()
    if case == "disabled":
        turns.enabled = False
    elif case == "not served":
        who = "u2"
    elif case == "group":
        kind = "group"
    elif case == "command":
        body = chain("!memory list")
    elif case == "empty":
        body = chain("   ")
    elif case == "image":
        body = pm.MessageChain([pm.Plain(text="look"), pm.Image(url="http://x/y.png")])
    assert turns.message(3, kind, who, body) is False
    assert registry.started == []
    assert turns.message(4, "person", "u1", chain()) is (case not in ("disabled", "no service", "no auto recall"))


def test_an_installed_plugins_messages_are_noted_bounded_and_started_by_their_hook() -> None:
    turns, registry = early(noted=2)
    turns.learn("person_u1", "kb1")
    with bind_invocation(object()):
        for qid in (1, 2, 3):
            assert turns.message(qid, "person", "u1", chain(f"{TEXT} {qid}")) is False
        assert turns.message(None, "person", "u1", chain()) is False  # no query id: nothing noted
    assert registry.started == []
    assert turns.hook(1) is False  # over the bound of 2: the oldest note went
    assert turns.hook(3) is True and turns.hook(2) is True
    assert registry.started == [("kb1", f"{TEXT} 3"), ("kb1", f"{TEXT} 2")]
    assert turns.hook(3) is False and turns.hook(None) is False  # each note is started once
    assert len(registry.started) == 2


def test_work_left_over_from_an_ended_invocation_notes_rather_than_calls_the_host() -> None:
    """A message handled in a context whose invocation has ended (background work that escaped its
    handler): a host call would be refused, so the text is noted for the hook, as when bound."""
    turns, registry = early()
    turns.learn("person_u1", "kb1")
    with bind_invocation(object()):
        ended = contextvars.copy_context()
    assert ended.run(turns.message, 5, "person", "u1", chain()) is False
    assert registry.started == []
    assert turns.hook(5) is True and registry.started == [("kb1", TEXT)]
