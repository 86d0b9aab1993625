"""Whole-plugin smoke: the SDK's own discovery and controller load every component (manifest,
every kind, the Page ``execution`` block); each tool, the listener and the engine run once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities import events
from langbot_plugin.api.entities.builtin.command.context import ExecuteContext
from langbot_plugin.api.entities.builtin.provider.message import Message
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.api.entities.context import EventContext
from langbot_plugin.api.proxies.event_context import EventContextProxy
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy
from langbot_plugin.cli.run.controller import PluginRuntimeController

from main import compose
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin  # the one plugin loader of the tests

ROOT = Path(__file__).resolve().parents[2]
KB = "kb-smoke"
BOT = "bot-smoke"


def query_vars(text: str, session: str = "u1", sender: str = "u1") -> dict[str, Any]:
    return {
        "launcher_type": "person",
        "launcher_id": session,
        "sender_id": sender,
        "session_id": f"person_{session}",
        "sender_name": "Ursula",
        "user_message_text": text,
        "_knowledge_base_uuids": [KB, "other-kb"],
    }


async def run_listener(
    ctl: PluginRuntimeController, fake: FakeHostHandler, qid: int, text: str, session: str = "u1"
) -> EventContextProxy:
    fake.add_query(qid, query_vars(text, session), bot_uuid=BOT, pipeline_kbs=[KB])
    ev = events.PromptPreProcessing(
        session_name=f"person_{session}",
        default_prompt=[Message(role="system", content="You are helpful.")],
        prompt=[],
    )
    base = EventContext.from_event(ev).model_dump()
    ctx = EventContextProxy.model_validate({**base, "query_id": qid, "plugin_runtime_handler": fake})
    listener = component(ctl, "EventListener", "default")
    for handler in listener.registered_handlers[events.PromptPreProcessing]:
        await handler(ctx)
    return ctx


async def test_whole_plugin_loads_and_every_surface_runs_once() -> None:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake)
    kinds = {(c.manifest.kind, c.manifest.metadata.name) for c in ctl.plugin_container.components}
    assert kinds >= {
        ("EventListener", "default"),
        ("Tool", "remember"),
        ("Tool", "recall_memory"),
        ("Tool", "update_profile"),
        ("Tool", "forget"),
        ("Command", "memory"),
        ("KnowledgeEngine", "memory_engine"),
        ("Page", "console"),
    }
    pages = ctl.plugin_container.manifest.manifest["spec"]["pages"]
    assert pages[0]["id"] == "console" and pages[0]["path"].endswith("console.html")

    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    await engine.on_knowledge_base_create(KB, {"embedding_model": "emb-1", "isolation": "session"})

    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    fake.add_query(1, query_vars("remember my tea"), bot_uuid=BOT, pipeline_kbs=[KB])
    remember = component(ctl, "Tool", "remember")
    out = await remember.call({"content": "Ursula drinks jasmine tea"}, session, 1)
    assert out["ok"] is True, out
    first_id = out["id"]
    json.dumps(out)  # the host json-serialises tool results

    upd = await component(ctl, "Tool", "update_profile").call(
        {"name": "Ursula", "set_preferences": {"drink": "tea"}}, session, 1
    )
    assert upd["ok"] and upd["profile"]["name"] == "Ursula"

    # The listener injects profile + episode as an escaped data block on a later turn.
    ctx = await run_listener(ctl, fake, 2, "what tea do I like?")
    prompt = ctx.event.default_prompt
    assert len(prompt) == 2 and "<ltm-memory-data>" in prompt[1].content
    assert "jasmine tea" in prompt[1].content and "Ursula" in prompt[1].content
    qv = fake.queries[2].variables
    assert qv["_ltm_context"]["episodes"][0]["id"] == first_id
    ref = qv["_ltm_context"]["episodes"][0]["ref"]
    assert first_id.startswith(f"ep_{ref}") and f"\n{ref}|" in prompt[1].content  # the block's short id
    # the pipeline's KB list is left as the host set it (editing it does not stop a runner: host ref)
    assert qv["_knowledge_base_uuids"] == [KB, "other-kb"] and "_ltm_memory_kb" not in qv

    # Another session of the same bot: positive control above, nothing here.
    other = await run_listener(ctl, fake, 3, "what tea do I like?", session="u2")
    assert len(other.event.default_prompt) == 1
    assert fake.queries[3].variables["_ltm_context"]["episodes"] == []

    rec = await component(ctl, "Tool", "recall_memory").call({"query": "tea"}, session, 1)
    assert [e["id"] for e in rec["episodes"]] == [first_id]

    u1 = {"top_k": 3, "session_name": "person_u1", "bot_uuid": BOT, "sender_id": "u1"}
    ask = RetrievalContext(query="jasmine tea", knowledge_base_id=KB, collection_id=KB, retrieval_settings=u1)
    served = await engine.retrieve(ask)  # the listener's block of this turn already carries it
    assert served.results == [] and served.metadata == {"reason": "served by the memory block"}
    engine.plugin.adopt(compose(engine.plugin))  # a restarted installation: no listener turn, the engine serves
    got = await engine.retrieve(ask)
    assert [r.id for r in got.results] == [first_id]
    none = await engine.retrieve(
        RetrievalContext(query="jasmine tea", knowledge_base_id=KB, collection_id=KB, retrieval_settings={"top_k": 3})
    )
    assert none.results == []

    forget = await component(ctl, "Tool", "forget").call({"episode_id": first_id}, session, 1)
    assert forget == {"ok": True, "deleted": 1, "id": first_id, "content": "Ursula drinks jasmine tea"}
    again = await component(ctl, "Tool", "forget").call({"episode_id": first_id}, session, 1)
    assert again["ok"] is False and again["deleted"] == 0
    assert fake.vector_rows(KB)["ids"] == []

    page = component(ctl, "Page", "console")
    resp = await page.handle_api(
        PageRequest(endpoint="/derive", method="POST", body={"session_name": "person_u1", "bot_uuid": BOT})
    )
    assert resp.data["user_key"] == f"{BOT}:person_u1"
    # The console has no pipeline of its own: its Pipeline check reads the one of the space's last
    # turn (the listener's, above, listed this KB); a space without a turn cannot tell.
    for session_name, verdict, key in (
        ("person_u1", "green", "health.pipeline_seen"),
        ("person_u9", "amber", "health.pipeline_unknown"),
    ):
        space = {"kb_id": KB, "session_name": session_name, "bot_uuid": BOT, "sender_id": ""}
        diag = await page.handle_api(
            PageRequest(endpoint="/diagnostics", method="POST", body={"scope": space, "probe": False})
        )
        check = next(c for c in diag.data["health"]["checks"] if c["name"] == "kb_in_pipeline")
        assert (check["verdict"], check["key"]) == (verdict, key), diag.data

    cmd = component(ctl, "Command", "memory")
    ectx = ExecuteContextProxy.model_validate(
        {
            **ExecuteContext(
                query_id=1,
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
    replies = [r async for r in cmd._execute(ectx)]
    assert replies and replies[0].text


async def test_tool_errors_are_clear_and_change_nothing() -> None:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake)
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    fake.add_query(1, query_vars("x"), bot_uuid=BOT, pipeline_kbs=[KB])
    out = await component(ctl, "Tool", "remember").call({"content": "x", "event_at": "tomorrow"}, session, 1)
    assert out["ok"] is False and "ISO-8601" in out["error"]
    assert fake.vector_rows(KB)["ids"] == []
