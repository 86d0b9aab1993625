"""Backends that drop metadata (issue 25, item 3): Milvus, pgvector and Valkey Search keep only
``text``, ``file_id`` and the chunk uuid, so they cannot keep chats apart. The fake host's
``vdb="milvus"`` answers like LangBot's Milvus (``pkg/vector/vdbs/milvus.py``). Such a KB is kept
(LangBot answers an exception in ``on_knowledge_base_create`` with a bare 500) but marked unusable:
every surface answers with one message naming the supported backends, nothing is written, and no
collection of the wrong dimension is created. Each test has its positive control on Chroma."""

from __future__ import annotations

from typing import Any

from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.i18n import t
from tests.support.host_runtime import MILVUS_DEFAULT_DIM, FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.surfaces.test_command_memory import host_context
from tests.surfaces.test_plugin_smoke import BOT, KB, query_vars, run_listener

ADMIN_ID = "boss"
SESSION = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
MESSAGE = t("error.backend_unsupported", "en_US")


async def plugin_on(vdb: str) -> tuple[FakeHostHandler, Any]:
    fake = FakeHostHandler(bots=[BOT], vdb=vdb)
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake, {"admin_sender_ids": [ADMIN_ID]})
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(
        KB, {"embedding_model": "emb-1", "isolation": "session"}
    )
    return fake, ctl


async def command(ctl: Any, fake: FakeHostHandler, qid: int, text: str, speaker: str = "u1") -> str:
    fake.add_query(qid, {**query_vars("!" + text), "sender_id": speaker}, bot_uuid=BOT, pipeline_kbs=[KB])
    session = Session(launcher_type="person", launcher_id="u1", sender_id=speaker, bot_uuid=BOT)
    ctx = host_context(fake, text, query_id=qid, session=session, privilege=1)
    cmd = component(ctl, "Command", "memory")
    return "\n".join(r.text for r in [r async for r in cmd._execute(ctx)])


async def remember(ctl: Any, fake: FakeHostHandler, qid: int) -> dict[str, Any]:
    fake.add_query(qid, query_vars("remember my tea"), bot_uuid=BOT, pipeline_kbs=[KB])
    return await component(ctl, "Tool", "remember").call({"content": "Ursula drinks jasmine tea"}, SESSION, qid)


async def test_a_chat_turn_first_never_creates_a_collection_of_the_wrong_size() -> None:
    """The issue's breakage: recall before the first memory made Milvus create a 1536-dim
    collection and every remember afterwards failed."""
    fake, ctl = await plugin_on("milvus")
    await run_listener(ctl, fake, 1, "hello, what do you know about me?")
    assert fake.milvus_dims.get(KB) != MILVUS_DEFAULT_DIM
    out = await remember(ctl, fake, 2)
    assert out["ok"] is False and out["error"] == MESSAGE, out
    assert fake.vector_rows(KB)["ids"] == []  # nothing written


async def test_chroma_control_same_turns_work() -> None:
    fake, ctl = await plugin_on("chroma")
    await run_listener(ctl, fake, 1, "hello, what do you know about me?")
    out = await remember(ctl, fake, 2)
    assert out["ok"] is True, out
    assert len(fake.vector_rows(KB)["ids"]) == 1
    assert MESSAGE not in await command(ctl, fake, 3, "memory health", speaker=ADMIN_ID)


async def test_every_surface_answers_with_the_one_message() -> None:
    fake, ctl = await plugin_on("milvus")
    assert "Chroma, Qdrant or SeekDB" in MESSAGE
    # the listener: no block, no recall, nothing written
    ctx = await run_listener(ctl, fake, 1, "what tea do I like?")
    assert len(ctx.event.default_prompt) == 1
    # the tools
    assert (await remember(ctl, fake, 2))["error"] == MESSAGE
    fake.add_query(3, query_vars("tea"), bot_uuid=BOT, pipeline_kbs=[KB])
    rec = await component(ctl, "Tool", "recall_memory").call({"query": "tea"}, SESSION, 3)
    assert rec.get("ok") is False and rec["error"] == MESSAGE, rec
    # the command, for members and admins, health included
    for speaker in ("u1", ADMIN_ID):
        for line in ("memory health", "memory list", "memory"):
            reply = await command(ctl, fake, 10 + len(line) + len(speaker), line, speaker=speaker)
            assert MESSAGE in reply, (speaker, line, reply)
    # the engine: the runner's retrieval gets nothing and the reason
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    u1 = {"top_k": 3, "session_name": "person_u1", "bot_uuid": BOT, "sender_id": "u1"}
    got = await engine.retrieve(
        RetrievalContext(query="tea", knowledge_base_id=KB, collection_id=KB, retrieval_settings=u1)
    )
    assert got.results == [] and got.metadata.get("error") == MESSAGE
    # the console
    page = component(ctl, "Page", "console")
    scope = {"kb_id": KB, "session_name": "person_u1", "bot_uuid": BOT, "sender_id": "u1"}
    for endpoint in ("/overview", "/diagnostics"):
        resp = await page.answer(PageRequest(endpoint=endpoint, method="POST", body=scope))
        assert resp.error == MESSAGE, (endpoint, resp)
    listed = await page.answer(PageRequest(endpoint="/kbs", method="GET", body={}))
    assert listed.data["knowledge_bases"][0]["backend"] == "drops_metadata"
    # nothing of it reached the store, and no probe row is left behind
    assert fake.vector_rows(KB)["ids"] == []
    assert fake.milvus_dims.get(KB) != MILVUS_DEFAULT_DIM


async def test_the_verdict_survives_a_restart() -> None:
    fake, ctl = await plugin_on("milvus")
    upserts = len(fake.calls_of(A.VECTOR_UPSERT))
    again = await load_plugin(fake, {"admin_sender_ids": [ADMIN_ID]})
    assert (await remember(again, fake, 1))["error"] == MESSAGE
    assert len(fake.calls_of(A.VECTOR_UPSERT)) == upserts  # no second probe: the verdict is stored
