"""Memory once per turn: after the listener's block served a chat, the memory engine hands the
runner no second copy of the same memories; without such a turn it serves as any knowledge base."""

from __future__ import annotations

from typing import Any

from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext

from ltm.service.served_turns import ServedTurns, identity
from main import compose
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.surfaces.test_plugin_smoke import BOT, KB, query_vars, run_listener

SENTENCE = "Ursula keeps her bicycle in the blue shed"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def plugin_with_memory(config: dict[str, Any] | None = None) -> tuple[Any, FakeHostHandler, str]:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake, config)
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    await engine.on_knowledge_base_create(KB, {"embedding_model": "emb-1", "isolation": "session"})
    fake.add_query(1, query_vars("note this"), bot_uuid=BOT, pipeline_kbs=[KB])
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    out = await component(ctl, "Tool", "remember").call({"content": SENTENCE}, session, 1)
    assert out["ok"], out
    return ctl, fake, out["id"]


def ask(session: str = "person_u1", sender: str = "u1") -> RetrievalContext:
    rs = {"top_k": 5, "session_name": session, "bot_uuid": BOT, "sender_id": sender}
    return RetrievalContext(
        query="where is the bicycle?", knowledge_base_id=KB, collection_id=KB, retrieval_settings=rs
    )


def count(text: str, haystack: list[str]) -> int:
    return sum(h.count(text) for h in haystack)


async def test_after_the_block_served_a_turn_the_engine_adds_no_second_copy() -> None:
    ctl, fake, mem_id = await plugin_with_memory()
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    clock = Clock()
    engine.plugin.adopt(compose(engine.plugin, served_turns=ServedTurns(clock=clock)))

    before = await engine.retrieve(ask())  # control: no listener turn yet, the engine serves the runner
    assert [r.id for r in before.results] == [mem_id]

    ctx = await run_listener(ctl, fake, 2, "where is my bicycle?")
    block = [m.content for m in ctx.event.default_prompt]
    assert count(SENTENCE, block) == 1  # the block carries it once
    during = await engine.retrieve(ask())
    assert during.results == []  # ...and the runner's knowledge results do not repeat it
    assert count(SENTENCE, block + [c.text for r in during.results for c in r.content]) == 1

    other = await engine.retrieve(ask(session="person_u2", sender="u2"))  # another chat was not served
    assert other.results == [] and other.metadata.get("reason") != "served by the memory block"

    clock.now += ServedTurns().window_s + 1  # the turn is over: a later runner call is served again
    after = await engine.retrieve(ask())
    assert [r.id for r in after.results] == [mem_id], after.metadata


async def test_with_auto_recall_off_the_engine_serves_the_runner() -> None:
    ctl, fake, mem_id = await plugin_with_memory({"auto_recall": False})
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    engine.plugin.served_turns.mark(identity(KB, "person_u1", BOT, "u1"))  # a stale mark from an earlier turn
    ctx = await run_listener(ctl, fake, 2, "where is my bicycle?")
    assert count(SENTENCE, [m.content for m in ctx.event.default_prompt]) == 0  # nothing injected
    got = await engine.retrieve(ask())
    assert [r.id for r in got.results] == [mem_id]  # so the engine is the one copy


def test_served_turns_window_and_bound() -> None:
    clock = Clock()
    turns = ServedTurns(window_s=10, max_entries=2, clock=clock)
    a, b, c = (identity("kb", f"person_{n}", "bot", n) for n in "abc")
    assert not turns.served(a)
    turns.mark(a)
    assert turns.served(a) and not turns.served(identity("kb", "person_a", "bot", "other"))
    clock.now += 11
    assert not turns.served(a) and len(turns) == 0  # expired marks are dropped
    turns.mark(a)
    turns.mark(b)
    turns.mark(c)
    assert len(turns) == 2 and not turns.served(a) and turns.served(b) and turns.served(c)
    turns.clear(b)
    assert not turns.served(b) and turns.served(c)
