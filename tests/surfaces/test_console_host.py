"""The console through the SDK's controller and the host fake: what it learns from the host."""

from __future__ import annotations

from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin

KB = "0b1c2d3e-kb-named"


async def kbs(page: object) -> list[dict]:
    resp = await page.answer(PageRequest(endpoint="/kbs", method="GET", body={}))  # type: ignore[attr-defined]
    assert resp.error is None, resp.error
    return resp.data["knowledge_bases"]


async def test_memory_kbs_are_listed_with_the_names_the_host_gives_them() -> None:
    fake = FakeHostHandler()
    fake.add_knowledge_base(KB, name="Team memory")
    fake.add_knowledge_base("other-kb", name="Product docs")  # not a memory KB: never listed
    ctl = await load_plugin(fake)
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
    page = component(ctl, "Page", "console")
    listed = await kbs(page)
    assert [(k["kb_id"], k["name"]) for k in listed] == [(KB, "Team memory")]

    fake.fail_next(A.LIST_KNOWLEDGE_BASES)  # the host not answering hides the names, not the list
    assert [(k["kb_id"], k["name"]) for k in await kbs(page)] == [(KB, "")]
