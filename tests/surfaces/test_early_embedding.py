"""The turn's query embedding starts at ``PersonMessageReceived`` (issue 38): the recall of the hook
takes it instead of asking the host again; a wrong guess, a failed start, a chat not served yet, a
group message, a deleted KB and an installed plugin's ended invocation each fall back to the hook's
own embedding, with the same memory in the block."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from langbot_plugin.api.entities import events
from langbot_plugin.api.entities.builtin.platform import message as pm
from langbot_plugin.api.proxies.invocation import bind_invocation
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from components.event_listener.early import plain_text
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component
from tests.surfaces.test_memory_once import SENTENCE, plugin_with_memory
from tests.surfaces.test_plugin_smoke import KB, run_listener

QUESTION = "where is my bicycle?"


def embedding_calls(fake: FakeHostHandler) -> int:
    return len(fake.calls_of(A.INVOKE_EMBEDDING))


async def message(
    ctl: Any, fake: FakeHostHandler, qid: int, text: str, *, group: bool = False, chain: Any = None
) -> None:
    """LangBot's ``Person/GroupMessageReceived`` for query ``qid`` (what the pipeline emits first)."""
    chain = chain if chain is not None else pm.MessageChain([pm.Plain(text=text)])
    kind = events.GroupMessageReceived if group else events.PersonMessageReceived
    where = ("group", "g1") if group else ("person", "u1")
    # the fields the listener reads, as LangBot fills them (the platform event itself is not read)
    ev = kind.model_construct(launcher_type=where[0], launcher_id=where[1], sender_id="u1", message_chain=chain)
    ctx = SimpleNamespace(event=ev, query_id=qid, plugin_runtime_handler=fake)
    listener = component(ctl, "EventListener", "default")
    for handler in listener.registered_handlers.get(type(ev), []):
        await handler(ctx)
    for _ in range(3):
        await asyncio.sleep(0)  # a started embedding's task sends its host call


def block_of(ctx: Any) -> str:
    return "\n".join(str(m.content) for m in ctx.event.default_prompt)


def early_counts(ctl: Any) -> dict[str, int]:
    return component(ctl, "EventListener", "default").plugin.service.registry.queries.counts


async def served_once(ctl: Any, fake: FakeHostHandler) -> None:
    """A first turn, so the listener knows which memory KB this chat uses."""
    ctx = await run_listener(ctl, fake, 2, "what do you remember?")
    assert SENTENCE in block_of(ctx)


async def test_the_hook_takes_the_embedding_started_when_the_message_arrived() -> None:
    ctl, fake, _ = await plugin_with_memory()
    await served_once(ctl, fake)
    before = embedding_calls(fake)
    await message(ctl, fake, 3, QUESTION)
    assert embedding_calls(fake) == before + 1  # started by the message event, before the hook
    ctx = await run_listener(ctl, fake, 3, QUESTION)
    assert SENTENCE in block_of(ctx)
    assert embedding_calls(fake) == before + 1  # ...and the hook's recall asked for no second one
    assert early_counts(ctl)["used"] == 1
    # positive control: the same turn without the message event embeds in the hook
    ctx = await run_listener(ctl, fake, 4, QUESTION)
    assert SENTENCE in block_of(ctx)
    assert embedding_calls(fake) == before + 2
    assert early_counts(ctl)["used"] == 1


async def test_a_message_whose_text_the_host_changed_is_embedded_again_by_the_hook() -> None:
    ctl, fake, _ = await plugin_with_memory()
    await served_once(ctl, fake)
    await message(ctl, fake, 3, "ai " + QUESTION)  # e.g. a trigger prefix LangBot strips later
    before = embedding_calls(fake)
    ctx = await run_listener(ctl, fake, 3, QUESTION)
    assert SENTENCE in block_of(ctx)
    assert embedding_calls(fake) == before + 1  # the hook embedded the text it was given
    assert early_counts(ctl)["used"] == 0


async def test_a_failed_early_embedding_is_redone_by_the_hook_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctl, fake, _ = await plugin_with_memory()
    await served_once(ctl, fake)
    fake.fail_next(A.INVOKE_EMBEDDING, RuntimeError("embedding model busy"))
    with caplog.at_level(logging.INFO):
        await message(ctl, fake, 3, QUESTION)
        await asyncio.sleep(0)
        before = embedding_calls(fake)
        ctx = await run_listener(ctl, fake, 3, QUESTION)
    assert SENTENCE in block_of(ctx)  # the turn had its memory
    assert embedding_calls(fake) == before + 1  # asked again, once
    assert early_counts(ctl)["failed"] == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_nothing_starts_for_a_chat_not_served_yet_a_group_or_a_command() -> None:
    ctl, fake, _ = await plugin_with_memory()
    before = embedding_calls(fake)
    await message(ctl, fake, 3, QUESTION)  # this chat's KB is not known yet: no guess, no host call
    assert embedding_calls(fake) == before
    await served_once(ctl, fake)
    before = embedding_calls(fake)
    await message(ctl, fake, 5, QUESTION, group=True)  # the group's trigger is stripped later
    await message(ctl, fake, 6, "!memory list")
    await message(ctl, fake, 7, "", chain=pm.MessageChain([pm.Plain(text="look"), pm.Image(url="http://x/y.png")]))
    assert embedding_calls(fake) == before
    await message(ctl, fake, 8, QUESTION)  # positive control: the served private chat starts one
    assert embedding_calls(fake) == before + 1


async def test_a_deleted_knowledge_base_forgets_its_started_embeddings() -> None:
    ctl, fake, _ = await plugin_with_memory()
    await served_once(ctl, fake)
    await message(ctl, fake, 3, QUESTION)
    queries = component(ctl, "EventListener", "default").plugin.service.registry.queries
    assert queries.waiting() == 1
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_delete(KB)
    assert queries.waiting() == 0


async def test_an_installed_plugins_message_notes_the_text_and_the_hook_starts_it() -> None:
    """Where a host call ends with the handler's invocation, the message event makes none."""
    ctl, fake, _ = await plugin_with_memory()
    await served_once(ctl, fake)
    before = embedding_calls(fake)
    with bind_invocation(fake):
        await message(ctl, fake, 3, QUESTION)
    assert embedding_calls(fake) == before  # nothing sent from the message event
    ctx = await run_listener(ctl, fake, 3, QUESTION)
    assert SENTENCE in block_of(ctx)
    assert embedding_calls(fake) == before + 1  # started by the hook first thing, used by its recall
    assert early_counts(ctl)["used"] == 1


async def test_the_diagnostics_switch_turns_the_early_start_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.event_listener.early import ENV_SWITCH, EarlyTurns

    monkeypatch.setenv(ENV_SWITCH, "0")
    assert EarlyTurns(object()).enabled is False
    monkeypatch.setenv(ENV_SWITCH, "1")
    assert EarlyTurns(object()).enabled is True


def test_plain_text_is_the_text_langbot_makes_of_the_message() -> None:
    assert (
        plain_text(pm.MessageChain([pm.At(target="bot"), pm.Plain(text="hi "), pm.Plain(text="there")])) == "hi there"
    )
    assert plain_text(pm.MessageChain([pm.Plain(text="see"), pm.Image(url="http://x/y.png")])) is None
    assert plain_text(None) == ""
