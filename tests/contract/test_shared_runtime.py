"""The shared plugin runtime: one object graph, two installations with different configs and stores,
driven through the SDK's own controller (``initialize_slot``) and invocation binding. Nothing of one
installation (config, memories, storage keys, caches, served-turn marks) reaches the other, and
revoking one releases only its state. The dedicated runtime (every other test) keeps one state."""

from __future__ import annotations

from typing import Any

from langbot_plugin.api.entities.builtin.command.context import ExecuteContext
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy
from langbot_plugin.api.proxies.invocation import bind_invocation
from langbot_plugin.entities.io.context import InstallationBinding

from ltm.service.served_turns import identity
from main import DEDICATED
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin

BOT = "bot-shared"
SESSION = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)


def binding(n: int, fake: FakeHostHandler) -> InstallationBinding:
    return InstallationBinding(
        instance_uuid=fake.instance_uuid,
        workspace_uuid=f"00000000-0000-4000-8000-00000000000{n}",
        installation_uuid=f"10000000-0000-4000-8000-00000000000{n}",
        runtime_revision=1,
        artifact_digest="0" * 64,
    )


class Installation:
    """One installation's slot: every call runs inside its invocation (config + binding)."""

    def __init__(self, ctl: Any, fake: FakeHostHandler, bind: InstallationBinding, kb: str, config: dict) -> None:
        self.ctl, self.fake, self.binding, self.kb, self.config = ctl, fake, bind, kb, config

    async def attach(self) -> None:
        self.slot = await self.ctl.initialize_slot(
            self.binding, {"enabled": True, "priority": 0, "plugin_config": self.config}
        )

    async def run(self, fn: Any) -> Any:
        with bind_invocation(self.fake, config=self.slot.plugin_config, binding=self.binding):
            return await fn()


async def test_two_installations_share_one_object_graph_and_nothing_else() -> None:
    fake = FakeHostHandler(bots=[BOT])
    ctl = await load_plugin(fake)
    plugin = component(ctl, "Tool", "remember").plugin
    a = Installation(ctl, fake, binding(1, fake), "kb-a", {"language": "zh_Hans", "admin_sender_ids": ["u1"]})
    b = Installation(ctl, fake, binding(2, fake), "kb-b", {"language": "en_US", "admin_sender_ids": []})
    for inst, secret in ((a, "A's locker number is 1111"), (b, "B's locker number is 2222")):
        fake.add_knowledge_base(inst.kb)
        await inst.attach()
        engine = component(ctl, "KnowledgeEngine", "memory_engine")
        await inst.run(
            lambda inst=inst, engine=engine: engine.on_knowledge_base_create(inst.kb, {"embedding_model": "e"})
        )
        fake.add_query(1, {"launcher_type": "person", "launcher_id": "u1", "sender_id": "u1"}, bot_uuid=BOT)
        out = await inst.run(lambda s=secret: component(ctl, "Tool", "remember").call({"content": s}, SESSION, 1))
        assert out["ok"], out

    # one object graph (the same component objects), one state per installation
    states = {k: await inst.run(lambda: _state(plugin)) for k, inst in (("a", a), ("b", b))}
    assert states["a"] is not states["b"] and states["a"].service is not states["b"].service
    assert plugin.installation_key() == DEDICATED  # outside any invocation: the dedicated state

    async def recall() -> list[str]:
        res = await component(ctl, "Tool", "recall_memory").call({"query": "locker number"}, SESSION, 1)
        return [e["content"] for e in res["episodes"]]

    assert await a.run(recall) == ["A's locker number is 1111"]  # positive control and exclusion, both ways
    assert await b.run(recall) == ["B's locker number is 2222"]
    store_a = fake.installation_storage[a.binding.installation_uuid]
    store_b = fake.installation_storage[b.binding.installation_uuid]
    assert any("kb-a" in k for k in store_a) and not any("kb-b" in k for k in store_a)
    assert any("kb-b" in k for k in store_b) and not any("kb-a" in k for k in store_b)
    assert fake.storage == {}  # nothing was written outside an installation

    # config per invocation: u1 is a memory admin in A only, and each speaks its own language
    async def bulk() -> str:
        cmd = component(ctl, "Command", "memory")
        return await _command(cmd, fake, "delete --status superseded")

    assert "管理员" not in await a.run(bulk) and "admin" not in (await a.run(bulk)).lower()
    refused = await b.run(bulk)
    assert "admin" in refused.lower(), refused

    # served-turn marks are the installation's own
    who = identity(a.kb, "person_u1", BOT, "u1")
    await a.run(lambda: _mark(plugin, who))
    assert await a.run(lambda: _served(plugin, who)) is True
    assert await b.run(lambda: _served(plugin, who)) is False

    # revoking A releases A's state only; B keeps its own objects and memories; A's storage stays
    state_b = states["b"]
    await plugin.on_installation_revoked(a.binding)
    assert await b.run(lambda: _state(plugin)) is state_b
    assert await b.run(recall) == ["B's locker number is 2222"]
    fresh = await a.run(lambda: _state(plugin))
    assert fresh is not states["a"] and await a.run(recall) == ["A's locker number is 1111"]


async def _state(plugin: Any) -> Any:
    return plugin.state()


async def _mark(plugin: Any, who: Any) -> None:
    plugin.served_turns.mark(who)


async def _served(plugin: Any, who: Any) -> bool:
    return plugin.served_turns.served(who)


async def _command(cmd: Any, fake: FakeHostHandler, args: str) -> str:
    words = args.split()
    ectx = ExecuteContextProxy.model_validate(
        {
            **ExecuteContext(
                query_id=1,
                session=SESSION,
                command_text="memory " + args,
                full_command_text="!memory " + args,
                command="memory",
                crt_command="memory",
                params=["memory", *words],
                crt_params=words,
                privilege=1,
            ).model_dump(),
            "plugin_runtime_handler": fake,
        }
    )
    return "\n".join(r.text for r in [r async for r in cmd._execute(ectx)] if r.text)


async def test_engine_retrieve_is_per_installation() -> None:
    fake = FakeHostHandler(bots=[BOT])
    ctl = await load_plugin(fake)
    a = Installation(ctl, fake, binding(3, fake), "kb-c", {})
    fake.add_knowledge_base("kb-c")
    await a.attach()
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    await a.run(lambda: engine.on_knowledge_base_create("kb-c", {"embedding_model": "e"}))
    fake.add_query(1, {"launcher_type": "person", "launcher_id": "u1", "sender_id": "u1"}, bot_uuid=BOT)
    await a.run(lambda: component(ctl, "Tool", "remember").call({"content": "C keeps a red kite"}, SESSION, 1))
    rs = {"top_k": 3, "session_name": "person_u1", "bot_uuid": BOT, "sender_id": "u1"}
    ask = RetrievalContext(query="kite", knowledge_base_id="kb-c", collection_id="kb-c", retrieval_settings=rs)
    got = await a.run(lambda: engine.retrieve(ask))
    assert [c.text for r in got.results for c in r.content] == ["C keeps a red kite"]
    outside = await engine.retrieve(ask)  # the dedicated state never registered kb-c
    assert outside.results == []
