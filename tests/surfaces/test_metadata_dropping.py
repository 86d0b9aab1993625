"""Backends that drop metadata (issue 37, ADR 0008): Milvus and pgvector keep only ``text``,
``file_id`` and the chunk uuid; Valkey Search keeps everything but filters on ``file_id`` alone. The
fake host's ``vdb="milvus"`` / ``"pgvector"`` / ``"valkey"`` answer like LangBot's adapters
(``pkg/vector/vdbs/``). A memory KB there is fully supported through the sidecar
(``ltm/service/sidecar.py``): every surface works, two chats stay apart, and the store's own
``file_id`` filter is what keeps them apart. Each exclusion has its positive control."""

from __future__ import annotations

from typing import Any

import pytest
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.domain.backends import FILE_ID_MARK, scope_tag_of
from ltm.i18n import t
from tests.support.host_runtime import MILVUS_DEFAULT_DIM, FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.surfaces.test_command_memory import host_context
from tests.surfaces.test_plugin_smoke import BOT, KB, query_vars, run_listener

ADMIN_ID = "boss"
U1 = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
U2 = Session(launcher_type="person", launcher_id="u2", sender_id="u2", bot_uuid=BOT)
DROPPING = ("milvus", "pgvector", "valkey")
WITH_CONTROL = ("chroma", *DROPPING)
OLD_REFUSAL = "Chroma, Qdrant or SeekDB"


async def plugin_on(vdb: str) -> tuple[FakeHostHandler, Any]:
    fake = FakeHostHandler(bots=[BOT], vdb=vdb)
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake, {"admin_sender_ids": [ADMIN_ID]})
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(
        KB, {"embedding_model": "emb-1", "isolation": "session"}
    )
    return fake, ctl


async def command(ctl: Any, fake: FakeHostHandler, qid: int, text: str, speaker: str = "u1") -> str:
    fake.add_query(qid, {**query_vars("!" + text, session=speaker, sender=speaker)}, bot_uuid=BOT, pipeline_kbs=[KB])
    session = Session(launcher_type="person", launcher_id=speaker, sender_id=speaker, bot_uuid=BOT)
    ctx = host_context(fake, text, query_id=qid, session=session, privilege=1)
    cmd = component(ctl, "Command", "memory")
    return "\n".join(r.text for r in [r async for r in cmd._execute(ctx)])


async def remember(ctl: Any, fake: FakeHostHandler, qid: int, content: str, session: Session = U1) -> dict[str, Any]:
    who = str(session.launcher_id)
    fake.add_query(qid, query_vars("remember this", session=who, sender=who), bot_uuid=BOT, pipeline_kbs=[KB])
    return await component(ctl, "Tool", "remember").call({"content": content}, session, qid)


async def recall(ctl: Any, fake: FakeHostHandler, qid: int, query: str, session: Session = U1) -> str:
    who = str(session.launcher_id)
    fake.add_query(qid, query_vars(query, session=who, sender=who), bot_uuid=BOT, pipeline_kbs=[KB])
    out = await component(ctl, "Tool", "recall_memory").call({"query": query}, session, qid)
    assert out.get("ok", True) is not False, out
    return str(out)


async def test_a_chat_turn_first_never_creates_a_collection_of_the_wrong_size() -> None:
    """The issue-25 breakage: recall before the first memory made Milvus create a 1536-dim
    collection and every remember afterwards failed. The probe writes first, with the KB's model."""
    fake, ctl = await plugin_on("milvus")
    await run_listener(ctl, fake, 1, "hello, what do you know about me?")
    assert fake.milvus_dims.get(KB) != MILVUS_DEFAULT_DIM
    out = await remember(ctl, fake, 2, "Ursula drinks jasmine tea")
    assert out["ok"] is True, out
    assert len(fake.vector_rows(KB)["ids"]) == 1


@pytest.mark.parametrize("vdb", WITH_CONTROL)
async def test_every_surface_works_and_two_chats_stay_apart(vdb: str) -> None:
    fake, ctl = await plugin_on(vdb)
    assert (await remember(ctl, fake, 1, "Ursula drinks jasmine tea"))["ok"] is True
    assert (await remember(ctl, fake, 2, "Viktor drinks rooibos tea", U2))["ok"] is True
    # recall, each chat its own (positive control: the own memory is found)
    mine, theirs = await recall(ctl, fake, 3, "what tea"), await recall(ctl, fake, 4, "what tea", U2)
    assert "jasmine" in mine and "rooibos" not in mine
    assert "rooibos" in theirs and "jasmine" not in theirs
    # the engine: the runner's retrieval gets the scope's rows (before the listener: a turn whose
    # block was served answers nothing)
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    u1 = {"top_k": 3, "session_name": "person_u1", "bot_uuid": BOT, "sender_id": "u1"}
    got = await engine.retrieve(
        RetrievalContext(query="tea", knowledge_base_id=KB, collection_id=KB, retrieval_settings=u1)
    )
    texts = " ".join(str(r.content) for r in got.results)
    assert "jasmine" in texts and "rooibos" not in texts
    # the listener injects the own memory only
    ctx = await run_listener(ctl, fake, 5, "which tea do I like?")
    block = str(ctx.event.default_prompt)
    assert "jasmine" in block and "rooibos" not in block
    # the command: list, health (with the isolation probe, for the admin)
    listed = await command(ctl, fake, 6, "memory list")
    assert "jasmine" in listed and "rooibos" not in listed
    health = await command(ctl, fake, 7, "memory health", speaker=ADMIN_ID)
    assert t("health.isolation_ok", "en_US") in health, health
    assert OLD_REFUSAL not in health
    # the console
    page = component(ctl, "Page", "console")
    scope = {"kb_id": KB, "session_name": "person_u1", "bot_uuid": BOT, "sender_id": "u1"}
    for endpoint in ("/overview", "/diagnostics"):
        resp = await page.answer(PageRequest(endpoint=endpoint, method="POST", body=scope))
        assert not resp.error, (endpoint, resp.error)
    listed_kbs = await page.answer(PageRequest(endpoint="/kbs", method="GET", body={}))
    verdict = "keeps_metadata" if vdb == "chroma" else "drops_metadata"
    assert listed_kbs.data["knowledge_bases"][0]["backend"] == verdict
    if vdb == "chroma":  # the control: the rows carry their metadata, no sidecar
        assert not [k for k in fake.storage if k.startswith("side/")]
        return
    # what the store holds: each row's file id names its scope, and no memory text
    rows = fake.vector_rows(KB)
    tags = {scope_tag_of(str(md["file_id"])) for md in rows["metadatas"]}
    assert len(rows["ids"]) == 2 and len(tags) == 2 and None not in tags
    assert all(str(md["file_id"]).startswith(FILE_ID_MARK) for md in rows["metadatas"])
    assert "jasmine" not in str(rows) and "rooibos" not in str(rows)


@pytest.mark.parametrize("vdb", DROPPING)
async def test_forget_removes_the_row_from_the_store_and_the_sidecar(vdb: str) -> None:
    fake, ctl = await plugin_on(vdb)
    out = await remember(ctl, fake, 1, "Ursula drinks jasmine tea")
    assert out["ok"] is True and len(fake.vector_rows(KB)["ids"]) == 1
    side = [k for k in fake.storage if k.startswith("side/")]
    assert side  # positive control: the metadata is stored
    reply = await command(ctl, fake, 2, f"memory forget {out['id']}")
    assert "jasmine" not in await recall(ctl, fake, 3, "what tea"), reply
    assert fake.vector_rows(KB)["ids"] == []
    assert not [k for k in fake.storage if k.startswith("side/")]


async def test_the_verdict_survives_a_restart() -> None:
    fake, ctl = await plugin_on("milvus")
    upserts = len(fake.calls_of(A.VECTOR_UPSERT))
    again = await load_plugin(fake, {"admin_sender_ids": [ADMIN_ID]})
    assert (await remember(again, fake, 1, "Ursula drinks jasmine tea"))["ok"] is True
    assert len(fake.calls_of(A.VECTOR_UPSERT)) == upserts + 1  # no second probe: the verdict is stored
