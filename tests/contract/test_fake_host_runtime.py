"""The fake LangBot host answers like host 4.11.2 through the real SDK proxies (host ref §4, SDK ref §4)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from langbot_plugin.api.entities.builtin.platform import message as platform_message
from langbot_plugin.api.proxies.query_based_api import QueryBasedAPIProxy
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError

from ltm.adapters.embedders import HashingEmbedder, HostEmbedder
from tests.support.host_runtime import FakeHostHandler, make_plugin


def query_api(fake: FakeHostHandler, query_id: int = 7) -> QueryBasedAPIProxy:
    return QueryBasedAPIProxy(query_id=query_id, plugin_runtime_handler=fake)


class TestVectors:
    async def test_two_top_level_keys_fail_like_chroma(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        fake.add_knowledge_base("kb")
        await plugin.vector_upsert("kb", [[1.0, 0.0]], ["v1"], [{"a": "x", "b": "y"}])
        assert len(await plugin.vector_search("kb", [1.0, 0.0], filters={"a": "x"})) == 1  # positive control
        with pytest.raises(ActionCallError, match="Expected where to have exactly one operator") as info:
            await plugin.vector_search("kb", [1.0, 0.0], filters={"a": "x", "b": "y"})
        assert str(info.value).startswith("ActionCallError: [VectorStoreError/ValueError] [collection_id=kb]")

    async def test_search_shape_has_no_text_and_squared_l2(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        fake.add_knowledge_base("kb")
        await plugin.vector_upsert(
            "kb", [[1.0, 0.0], [0.0, 1.0]], ["a", "b"], [{"t": 1}, {"t": 2}], documents=["A", "B"]
        )
        res = await plugin.vector_search("kb", [1.0, 0.0], top_k=2)
        assert [set(r) for r in res] == [{"id", "distance", "metadata"}] * 2
        assert [r["id"] for r in res] == ["a", "b"]
        assert res[1]["distance"] == pytest.approx(2.0)  # |e1 - e2|^2
        assert res[0]["metadata"]["_langbot_knowledge_base_uuid"] == "kb"

    async def test_collection_id_alias_resolves(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        fake.add_knowledge_base("kb-uuid", collection_id="kb-coll")
        await plugin.vector_upsert("kb-coll", [[1.0]], ["x"], [{"k": 1}])
        assert (await plugin.vector_list("kb-uuid"))["total"] == 1

    async def test_upsert_merges_metadata_like_chroma(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        fake.add_knowledge_base("kb")
        await plugin.vector_upsert("kb", [[1.0]], ["x"], [{"old": 1, "keep": 1}], documents=["first"])
        await plugin.vector_upsert("kb", [[1.0]], ["x"], [{"keep": 2, "old": None}])
        (item,) = (await plugin.vector_list("kb"))["items"]
        assert item["document"] == "first"  # documents omitted: the old text stays
        assert item["metadata"]["keep"] == 2 and "old" not in item["metadata"]

    async def test_full_text_search(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        fake.add_knowledge_base("kb")
        await plugin.vector_upsert("kb", [[1.0], [1.0]], ["a", "b"], [{"k": 1}, {"k": 1}], documents=["in Berlin", "x"])
        res = await plugin.vector_search("kb", [], search_type="full_text", query_text="Berlin")
        assert [(r["id"], r["distance"]) for r in res] == [("a", 0.0)]

    async def test_non_json_payload_fails_like_the_wire(self) -> None:
        fake = FakeHostHandler()
        fake.add_knowledge_base("kb")
        with pytest.raises(ActionCallError, match="TypeError"):
            await make_plugin(fake).vector_upsert("kb", [[np.float32(1.0)]], ["x"], [{"k": 1}])

    async def test_kb_listing(self) -> None:
        fake = FakeHostHandler()
        fake.add_knowledge_base("kb1", name="Memory", description="d")
        fake.add_query(7, pipeline_kbs=["kb1", "gone"])
        assert await make_plugin(fake).list_knowledge_bases() == [{"uuid": "kb1", "name": "Memory", "description": "d"}]
        assert [k["uuid"] for k in await query_api(fake).list_pipeline_knowledge_bases()] == ["kb1"]


class TestQueries:
    async def test_query_vars(self) -> None:
        fake = FakeHostHandler()
        fake.add_query(7, {"launcher_type": "person", "sender_id": "u1"}, bot_uuid="bot-9")
        api = query_api(fake)
        assert await api.get_query_var("sender_id") == "u1"
        assert (await api.get_query_vars())["launcher_type"] == "person"
        assert await api.get_bot_uuid() == "bot-9"
        await api.set_query_var("_ltm_context", {"n": 1})
        assert fake.queries[7].variables["_ltm_context"] == {"n": 1}

    async def test_missing_var_and_unknown_query_raise(self) -> None:
        fake = FakeHostHandler()
        fake.add_query(7)
        with pytest.raises(ActionCallError, match="KeyError"):
            await query_api(fake).get_query_var("nope")
        with pytest.raises(ActionCallError, match="Query with query_id 8 not found"):
            await query_api(fake, 8).get_query_vars()

    async def test_reserved_vars_are_refused(self) -> None:
        fake = FakeHostHandler()
        fake.add_query(7)
        with pytest.raises(ActionCallError, match="reserved"):
            await query_api(fake).set_query_var("_pipeline_bound_plugins", [])
        await query_api(fake).set_query_var("_knowledge_base_uuids", ["kb"])  # writable (host ref §1)

    async def test_reply_is_recorded(self) -> None:
        fake = FakeHostHandler()
        fake.add_query(7)
        await query_api(fake).reply(platform_message.MessageChain([platform_message.Plain(text="hi")]))
        (reply,) = fake.queries[7].replies
        assert reply["message_chain"][0]["text"] == "hi"


class TestModelsAndFaults:
    async def test_invoke_embedding_default_and_registered(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        (vec,) = await plugin.invoke_embedding("any", ["hello"])
        assert len(vec) == 64
        fake.add_embedding_model("m1", HashingEmbedder(dim=16))
        assert len((await plugin.invoke_embedding("m1", ["x"]))[0]) == 16
        with pytest.raises(ActionCallError, match="Embedding model with embedding_model_uuid m2 not found"):
            await plugin.invoke_embedding("m2", ["x"])

    async def test_host_embedder_normalises(self) -> None:
        class Unnormalised:
            async def embed(self, texts: list[str]) -> list[list[float]]:
                return [[3.0, 4.0] for _ in texts]

        fake = FakeHostHandler(embedder=Unnormalised())
        emb = HostEmbedder(make_plugin(fake), "m", batch_size=2)
        out = await emb.embed(["a", "b", "c"])
        assert out == [[0.6, 0.8]] * 3 and emb.dim == 2
        assert len(fake.calls_of(A.INVOKE_EMBEDDING)) == 2

    async def test_invoke_llm_with_responder(self) -> None:
        from langbot_plugin.api.entities.builtin.provider.message import Message

        fake = FakeHostHandler(llm_responder=lambda model, msgs, funcs: f"echo {msgs[-1]['content']}")
        msg = await make_plugin(fake).invoke_llm("llm", [Message(role="user", content="hi")])
        assert msg.content == "echo hi"
        with pytest.raises(ActionCallError, match="not found"):
            await make_plugin(FakeHostHandler()).invoke_llm("llm", [Message(role="user", content="hi")])

    async def test_fail_next_fires_once_and_calls_are_recorded(self) -> None:
        fake = FakeHostHandler()
        plugin = make_plugin(fake)
        fake.fail_next(A.SET_PLUGIN_STORAGE, RuntimeError("boom"))
        with pytest.raises(RuntimeError, match="boom"):
            await plugin.set_plugin_storage("k", b"v")
        await plugin.set_plugin_storage("k", b"v")
        assert [a for a, _ in fake.calls] == [A.SET_PLUGIN_STORAGE, A.SET_PLUGIN_STORAGE]
        assert fake.calls[1][1] == {"key": "k", "value_base64": "dg=="}

    async def test_unfaked_action_is_an_assertion(self) -> None:
        with pytest.raises(AssertionError, match="not faked"):
            await make_plugin(FakeHostHandler()).get_tool_detail("x")

    async def test_storage_key_rules(self) -> None:
        plugin = make_plugin(FakeHostHandler())
        with pytest.raises(ActionCallError, match="key are required"):
            await plugin.set_plugin_storage("", b"v")
        with pytest.raises(ActionCallError, match="longer than 255"):
            await plugin.set_plugin_storage("k" * 256, b"v")
        assert await plugin.get_plugin_storage_keys() == []


async def test_an_answer_after_the_invocation_ended_is_refused_like_the_sdk() -> None:
    """The SDK re-checks the invocation after the host answered: the write happened, the caller is
    told it failed. The fake does the same (and answers normally outside any invocation)."""
    import asyncio

    from langbot_plugin.api.proxies.invocation import bind_invocation
    from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as Act
    from langbot_plugin.entities.io.errors import ActionCallError as Refused

    fake = FakeHostHandler()
    gate = asyncio.Event()

    class Slow(FakeHostHandler):
        async def _answer(self, action: Any, data: dict[str, Any]) -> dict:
            await gate.wait()
            return await super()._answer(action, data)

    slow = Slow()
    with bind_invocation(slow, config={}):
        task = asyncio.create_task(slow.call_action(Act.SET_WORKSPACE_STORAGE, {"key": "k", "value_base64": "eA=="}))
        await asyncio.sleep(0)
    gate.set()
    with pytest.raises(Refused, match="invocation has ended"):
        await task
    assert slow.workspace_storage == {"k": b"x"}  # applied all the same
    assert await fake.call_action(Act.GET_BOTS, {}) == {"bots": ["fake-bot"]}  # control: no invocation
