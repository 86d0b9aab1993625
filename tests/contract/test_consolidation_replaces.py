"""A reviewed summary replaces what it summarises, through the plugin's components: the ``remember``
tool, the listener's injection, ``!memory consolidate preview/run`` by an admin, ``recall_memory``
(default and as-of), ``!memory list`` and the ``forget`` tool.

Measured: the injected block of a consolidated scope is smaller and still carries the facts
(:data:`FACTS`); the token estimates before and after are in the assertion messages and in
``benchmarks/consolidation.py``'s report.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langbot_plugin.api.entities.builtin.provider.session import Session

from ltm.domain.budget import estimate_tokens
from ltm.service.injection import BEGIN
from tests.support import ADMIN
from tests.support.host_runtime import FakeHostHandler
from tests.surfaces.test_consolidation_command import _run
from tests.surfaces.test_plugin_smoke import BOT, KB, component, load_plugin, query_vars, run_listener

SOURCES = (
    "Ursula drinks her coffee black",
    "Ursula has her first coffee every morning at 7",
    "Ursula's favourite coffee shop is Blue Bottle on Main Street",
    "Ursula buys Ethiopian coffee beans",
    "Ursula grinds her coffee beans by hand",
    "Ursula stopped putting sugar in her coffee in 2023",
)
SUMMARY = (
    "Ursula drinks black coffee without sugar (since 2023), first at 7 every morning, from Ethiopian "
    "beans she grinds by hand; her favourite coffee shop is Blue Bottle on Main Street."
)
FACTS = ("black", "sugar", "7", "Ethiopian", "by hand", "Blue Bottle")
CONFIG = {
    "consolidation_enabled": True,
    "consolidation_min_age_days": 0,
    "consolidation_model_uuid": "model-sum",
}


def _summariser(model: str, messages: list[dict[str, Any]], funcs: list[Any]) -> str:
    """The consolidation model: cites every id it was given (the sources block is JSON data)."""
    ids = sorted(set(re.findall(r"ep_[0-9a-f]{20}", messages[-1]["content"])))
    return json.dumps({"summary": SUMMARY, "cited_ids": ids})


class Chat:
    def __init__(self, fake: FakeHostHandler, ctl: Any) -> None:
        self.fake, self.ctl, self.qid = fake, ctl, 100
        self.session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)

    @property
    def service(self) -> Any:
        return self.ctl.plugin_container.plugin_instance.service

    async def tool(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        self.qid += 1
        self.fake.add_query(self.qid, query_vars("x"), bot_uuid=BOT, pipeline_kbs=[KB])
        return await component(self.ctl, "Tool", name).call(params, self.session, self.qid)

    async def injected(self, text: str = "how do I take my coffee?") -> tuple[str, list[str]]:
        """The injected system block of one turn and the ids of the episodes in it."""
        self.qid += 1
        ctx = await run_listener(self.ctl, self.fake, self.qid, text)
        block = ctx.event.default_prompt[1].content if len(ctx.event.default_prompt) > 1 else ""
        ids = [e["id"] for e in self.fake.queries[self.qid].variables["_ltm_context"]["episodes"]]
        return block, ids

    async def command(self, line: str, privilege: int = 2) -> str:
        self.qid += 1
        return "\n".join(await _run(self.ctl, self.fake, self.qid, line, privilege))


async def _rows(chat: Chat, scope: Any) -> dict[str, Any]:
    page = await chat.service.list_episodes(scope, statuses=None, page_size=100)
    return {e.id: e for e in page.items}


async def _chat() -> Chat:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    fake.llm_responder = _summariser
    ctl = await load_plugin(fake, CONFIG)
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
    return Chat(fake, ctl)


async def _consolidated(chat: Chat) -> tuple[list[str], str, tuple[str, list[str]]]:
    ids = []
    for text in SOURCES:
        out = await chat.tool("remember", {"content": text, "tags": ["coffee"]})
        assert out["ok"], out
        ids.append(out["id"])
    before = await chat.injected()
    preview = await chat.command("memory consolidate preview")
    (pid,) = set(re.findall(r"cp_[0-9a-f]{20}", preview))
    ran = await chat.command(f"memory consolidate run {pid}")
    (summary_id,) = {i for i in re.findall(r"ep_[0-9a-f]{20}", ran) if i not in ids}
    return ids, summary_id, before


async def test_an_approved_summary_replaces_its_sources_in_injection_and_recall() -> None:
    chat = await _chat()
    ids, summary_id, (block_before, injected_before) = await _consolidated(chat)
    # before: the sources compete for the top-5 slots of the injected block
    assert len(injected_before) == 5 and set(injected_before) <= set(ids)

    block_after, injected_after = await chat.injected()
    tokens_before, tokens_after = estimate_tokens(block_before), estimate_tokens(block_after)
    assert injected_after == [summary_id]
    assert tokens_after < tokens_before, f"injected block: {tokens_before} -> {tokens_after} tokens"
    for fact in FACTS:  # smaller, and it still carries every fact
        assert fact in block_after, fact
    # the memories part (the fixed header aside) is what a summary shrinks
    data_before, data_after = (estimate_tokens(b.split(BEGIN, 1)[1]) for b in (block_before, block_after))
    assert data_after <= 0.7 * data_before, f"memories in the block: {data_before} -> {data_after} tokens"

    # default recall: the summary, never a replaced source
    now = await chat.tool("recall_memory", {"query": "coffee", "limit": 20})
    assert [e["id"] for e in now["episodes"]] == [summary_id]
    # as-of recall and the history still show the sources (superseded by the summary)
    then = await chat.tool("recall_memory", {"query": "coffee", "limit": 20, "as_of": "2030-01-01T00:00:00Z"})
    seen = {e["id"]: e for e in then["episodes"]}
    assert set(ids) <= set(seen) and all(seen[i]["superseded_by"] == summary_id for i in ids)
    listed = await chat.command("memory list --include-superseded", privilege=1)
    assert all(i in listed for i in ids) and summary_id in listed


@pytest.mark.parametrize("how", ["forget_tool", "archive_command"])
async def test_removing_the_summary_gives_the_sources_back(how: str) -> None:
    chat = await _chat()
    ids, summary_id, (_, injected_before) = await _consolidated(chat)
    scope = await chat.service.scope_for(kb_id=KB, session_name="person_u1", bot_uuid=BOT, sender_id="u1")
    if how == "forget_tool":
        out = await chat.tool("forget", {"episode_id": summary_id})
        assert out["ok"], out
    else:
        reply = await chat.command(f"memory archive {summary_id}")
        assert (await chat.service.get_episode(scope, summary_id)).status == "archived", reply
    rows = await _rows(chat, scope)
    assert all((rows[i].status, rows[i].superseded_by) == ("active", "") for i in ids)
    _, injected = await chat.injected()
    assert sorted(injected) == sorted(injected_before) and summary_id not in injected
    entries, _ = await chat.service.audit_page(scope, 1, 5)
    restore = next(e for e in entries if e["operation"] == "consolidation.restore")
    assert sorted(restore["targets"]) == sorted(ids)


async def test_discarding_a_pending_proposal_or_a_corrected_summary_changes_no_source() -> None:
    chat = await _chat()
    ids = [(await chat.tool("remember", {"content": t}))["id"] for t in SOURCES]
    preview = await chat.command("memory consolidate preview")
    (pid,) = set(re.findall(r"cp_[0-9a-f]{20}", preview))
    scope = await chat.service.scope_for(kb_id=KB, session_name="person_u1", bot_uuid=BOT, sender_id="u1")
    cons = chat.ctl.plugin_container.plugin_instance.consolidator
    assert await cons.discard(scope, ADMIN, pid)
    rows = await _rows(chat, scope)
    assert all(rows[i].status == "active" for i in ids)  # a pending proposal never touched them

    # a summary that a correction superseded gives nothing back: the correction replaced it
    preview = await chat.command("memory consolidate preview")
    (pid,) = set(re.findall(r"cp_[0-9a-f]{20}", preview))
    ran = await chat.command(f"memory consolidate run {pid}")
    (summary_id,) = {i for i in re.findall(r"ep_[0-9a-f]{20}", ran) if i not in ids}
    correction = {"content": "Ursula now drinks tea instead of coffee", "supersedes": [summary_id]}
    fixed = await chat.tool("remember", correction)
    assert fixed["superseded"] == [summary_id]
    await chat.tool("forget", {"episode_id": summary_id})
    rows = await _rows(chat, scope)
    assert all(rows[i].status == "superseded" for i in ids)
