"""The usage ledger through the whole plugin: the listener's turn, the model's tool call of the same
query, the console's /usage, today's totals in `!memory`, and storage holding no memory text."""

from __future__ import annotations

import asyncio
import json

from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.command.context import ExecuteContext
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy

from ltm.domain.ledger import MAX_RECORD_BYTES
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.surfaces.test_plugin_smoke import BOT, KB, query_vars, run_listener

TEXTS = ["Ursula drinks jasmine tea", "我住在里斯本", "Die Katze heißt Mia", "日本語のメモです", "ursula-secret-42"]


async def plugin() -> tuple[object, FakeHostHandler]:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake)
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(
        KB, {"embedding_model": "emb-1", "isolation": "session"}
    )
    return ctl, fake


async def command(ctl: object, fake: FakeHostHandler) -> str:
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    fake.add_query(900, query_vars("!memory"), bot_uuid=BOT, pipeline_kbs=[KB])
    ectx = ExecuteContextProxy.model_validate(
        {
            **ExecuteContext(
                query_id=900,
                session=session,
                command_text="memory",
                full_command_text="!memory",
                command="memory",
                crt_command="memory",
                params=["memory"],
                crt_params=[],
                privilege=1,
            ).model_dump(),
            "plugin_runtime_handler": fake,
        }
    )
    replies = [r async for r in component(ctl, "Command", "memory")._execute(ectx)]
    return "\n".join(r.text or "" for r in replies)


async def usage(ctl: object) -> dict:
    resp = await component(ctl, "Page", "console").handle_api(
        PageRequest(endpoint="/usage", method="POST", body={"kb_id": KB, "session_name": "person_u1", "bot_uuid": BOT})
    )
    assert resp.data is not None, resp
    return resp.data


async def test_a_turn_and_its_tool_call_show_up_in_the_console_and_the_summary() -> None:
    ctl, fake = await plugin()
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    fake.add_query(1, query_vars("remember my tea"), bot_uuid=BOT, pipeline_kbs=[KB])
    assert (await component(ctl, "Tool", "remember").call({"content": TEXTS[0]}, session, 1))["ok"]

    before = await usage(ctl)
    assert before["turns"] == [] and before["today"]["turns"] == 0  # control: nothing before a turn

    calls_before = len(fake.calls)
    await run_listener(ctl, fake, 2, "what tea do I like?")
    for _ in range(50):  # the snapshot's write is sent once the turn's own writes were answered
        if any(str(d.get("key", "")).startswith("inject/") for _a, d in fake.calls[calls_before:]):
            break
        await asyncio.sleep(0.01)
    during = [d for _a, d in fake.calls[calls_before:]]
    # every host action the hook made, as the host saw it; the snapshot is written after the turn,
    # as background work that counts for no turn (issue 38)
    hook_calls = sum(1 for d in during if not str(d.get("key", "")).startswith("inject/"))
    assert not [d for d in during if str(d.get("key", "")).startswith("ledger/")]  # written after the hook
    assert any(str(d.get("key", "")).startswith("inject/") for d in during)  # control: the snapshot was
    fake.add_query(2, query_vars("what tea do I like?"), bot_uuid=BOT, pipeline_kbs=[KB])
    await component(ctl, "Tool", "recall_memory").call({"query": "tea"}, session, 2)
    await run_listener(ctl, fake, 3, "and coffee?")  # a turn the model answers without a tool

    got = await usage(ctl)
    assert [t["query_id"] for t in got["turns"]] == [3, 2]  # newest first
    t2 = got["turns"][1]
    assert t2["memories"] == 1 and t2["tokens"] > 0 and t2["hook_ms"] >= 0
    assert t2["host_calls"] == hook_calls, (t2, hook_calls)  # the count is the host's own count
    assert t2["tools"] == {"recall_memory": 1} and got["turns"][0]["tools"] == {}
    today = got["today"]
    assert today["turns"] == 2 and today["memories"] == got["turns"][0]["memories"] + 1
    assert today["tool_turns"] == 1 and today["tool_calls"] == 2  # remember (no turn yet) + recall
    assert got["days"][0]["date"] == today["date"] and got["limits"]["bytes"] == MAX_RECORD_BYTES

    text = await command(ctl, fake)
    assert "Today (UTC): 2 turns" in text, text
    assert f"{today['tokens']} tokens injected" in text and "a memory tool followed in 1 turns" in text

    # the stored record: bounded, and none of the memory or chat text in it
    ledger_keys = [k for k in fake.storage if k.startswith("ledger/")]
    assert len(ledger_keys) == 1
    raw = fake.storage[ledger_keys[0]]
    assert len(raw) <= MAX_RECORD_BYTES and json.loads(raw)["turns"]
    for secret in (TEXTS[0], "jasmine", "tea", "coffee", "Ursula"):
        assert secret.encode() not in raw


async def test_no_memory_text_reaches_the_ledger_storage() -> None:
    ctl, fake = await plugin()
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    for i, text in enumerate(TEXTS, start=10):
        fake.add_query(i, query_vars(text), bot_uuid=BOT, pipeline_kbs=[KB])
        assert (await component(ctl, "Tool", "remember").call({"content": text}, session, i))["ok"]
        await run_listener(ctl, fake, 100 + i, text)
    got = await usage(ctl)
    assert len(got["turns"]) == len(TEXTS) and sum(t["memories"] for t in got["turns"]) > 0  # control
    raw = b"".join(v for k, v in fake.storage.items() if k.startswith("ledger/"))
    assert raw
    blob = raw.decode("ascii")  # the record is ASCII JSON: any non-ASCII memory text would show as \\u
    for text in TEXTS:
        assert text not in blob and json.dumps(text)[1:-1] not in blob


async def test_the_ledger_does_not_slow_the_hook() -> None:
    """The hook never waits for the ledger's write: with the write held shut, every turn of the hook
    returns, and the reports land once it opens. The hook's report is a queue append; how long the
    hook takes, the report included, is a benchmark figure (benchmarks/latency.py), not a test."""
    ctl, fake = await plugin()
    service = component(ctl, "EventListener", "default").plugin.service
    gate, finished = asyncio.Event(), []
    real_flush, real_turn = service.ledger.flush, service.ledger.turn

    async def held_flush() -> None:
        await gate.wait()
        await real_flush()
        finished.append(1)

    service.ledger.flush = held_flush  # type: ignore[method-assign]
    for i in range(24):
        off = i % 2 == 1
        service.ledger.turn = (lambda *a, **k: None) if off else real_turn  # type: ignore[method-assign]
        await asyncio.wait_for(run_listener(ctl, fake, 1000 + i, f"question {i}"), timeout=30)
    service.ledger.turn = real_turn  # type: ignore[method-assign]
    assert finished == []  # every hook above returned while the ledger's write was held
    gate.set()
    await held_flush()
    got = await usage(ctl)
    assert len(got["turns"]) == 12  # control: the reports of the metered runs all landed
