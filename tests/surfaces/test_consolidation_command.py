"""``!memory consolidate`` through the real command component (host-shaped ExecuteContext)."""

from __future__ import annotations

from langbot_plugin.api.entities.builtin.command.context import ExecuteContext
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy

from tests.support.host_runtime import FakeHostHandler
from tests.surfaces.test_plugin_smoke import BOT, KB, component, load_plugin, query_vars


async def _run(ctl, fake: FakeHostHandler, qid: int, line: str, privilege: int) -> list[str]:
    fake.add_query(qid, query_vars(line), bot_uuid=BOT, pipeline_kbs=[KB])
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    params = line.split(" ")
    ctx = ExecuteContextProxy.model_validate(
        {
            **ExecuteContext(
                query_id=qid,
                session=session,
                command_text=line,
                full_command_text="!" + line,
                command="memory",
                crt_command="memory",
                params=params,
                crt_params=params[1:],
                privilege=privilege,
            ).model_dump(),
            "plugin_runtime_handler": fake,
        }
    )
    return [r.text async for r in component(ctl, "Command", "memory")._execute(ctx)]


async def test_consolidate_preview_then_run_archives_only_superseded() -> None:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake, {"consolidation_enabled": True, "consolidation_min_age_days": 0})
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
    service = ctl.plugin_container.plugin_instance.service
    session = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
    fake.add_query(1, query_vars("x"), bot_uuid=BOT, pipeline_kbs=[KB])
    remember = component(ctl, "Tool", "remember")
    old = await remember.call({"content": "I live in Paris"}, session, 1)
    new = await remember.call({"content": "I live in Berlin", "supersedes": [old["id"]]}, session, 1)
    assert new["ok"], new

    refused = await _run(ctl, fake, 2, "memory consolidate run", privilege=1)
    scope = await service.scope_for(kb_id=KB, session_name="person_u1", bot_uuid=BOT, sender_id="u1")
    assert (await service.get_episode(scope, old["id"])).status == "superseded"  # a member changes nothing
    assert refused and refused[0]

    preview = "\n".join(await _run(ctl, fake, 3, "memory consolidate preview", privilege=2))
    assert old["id"] in preview
    assert (await service.get_episode(scope, old["id"])).status == "superseded"  # preview changes nothing
    await _run(ctl, fake, 4, "memory consolidate run", privilege=2)
    assert (await service.get_episode(scope, old["id"])).status == "archived"
    assert (await service.get_episode(scope, new["id"])).status == "active"
