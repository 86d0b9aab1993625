"""One turn, one scope: the listener, a tool and the command derive the same memory scope from the
same host facts (``components.turn_scope.scope_of_turn``), also for a query an earlier version's listener
had taken the memory KB off ``_knowledge_base_uuids`` for. Observed where every surface ends: the scope each asks the
service for."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langbot_plugin.api.entities import events
from langbot_plugin.api.entities.builtin.command.context import ExecuteContext
from langbot_plugin.api.entities.builtin.provider.message import Message
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.context import EventContext
from langbot_plugin.api.proxies.event_context import EventContextProxy
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy

from components.turn_scope import turn_identity
from ltm.domain.scope import Scope, derive_scope
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin

KB = "kb-turn"
BOT = "bot-turn"


def turn_vars(launcher: str, lid: str, sender: str | None) -> dict[str, Any]:
    out = {
        "launcher_type": launcher,
        "launcher_id": lid,
        "session_id": f"{launcher}_{lid}",
        "user_message_text": "what do I drink?",
        "_knowledge_base_uuids": [KB, "other-kb"],
    }
    if sender is not None:
        out["sender_id"] = sender
    return out


class Turns:
    def __init__(self, fake: FakeHostHandler, ctl: Any) -> None:
        self.fake, self.ctl, self.qid = fake, ctl, 0
        self.service = component(ctl, "Tool", "remember").plugin.service
        self.asked: list[Scope] = []
        inner = self.service.scope_for

        async def spy(**kw: Any) -> Scope:
            scope = await inner(**kw)
            self.asked.append(scope)
            return scope

        self.service.scope_for = spy  # type: ignore[method-assign]

    def query(self, launcher: str, lid: str, sender: str | None) -> int:
        self.qid += 1
        self.fake.add_query(self.qid, turn_vars(launcher, lid, sender), bot_uuid=BOT, pipeline_kbs=[KB])
        return self.qid

    async def listener(self, qid: int, session_name: str) -> Scope:
        ev = events.PromptPreProcessing(
            session_name=session_name, default_prompt=[Message(role="system", content="hi")], prompt=[]
        )
        base = EventContext.from_event(ev).model_dump()
        ctx = EventContextProxy.model_validate({**base, "query_id": qid, "plugin_runtime_handler": self.fake})
        for handler in component(self.ctl, "EventListener", "default").registered_handlers[events.PromptPreProcessing]:
            await handler(ctx)
        return self.asked[-1]

    async def tool(self, qid: int, session: Session) -> Scope:
        out = await component(self.ctl, "Tool", "recall_memory").call({"query": "drink"}, session, qid)
        assert out["ok"] is True, out
        return self.asked[-1]

    async def command(self, qid: int, session: Session) -> Scope:
        ctx = ExecuteContext(
            query_id=qid,
            session=session,
            command_text="memory",
            full_command_text="!memory",
            command="memory",
            crt_command="memory",
            params=["memory"],
            crt_params=[],
            privilege=1,
        ).model_dump()
        ectx = ExecuteContextProxy.model_validate({**ctx, "plugin_runtime_handler": self.fake})
        replies = [r async for r in component(self.ctl, "Command", "memory")._execute(ectx)]
        assert replies and replies[0].text
        return self.asked[-1]


@pytest.fixture
async def turns() -> Turns:
    fake = FakeHostHandler(bots=[BOT])
    ctl = await load_plugin(fake)
    for kb in (KB, "kb-elsewhere"):  # two memory KBs: no "the only one" fallback hides a lost KB
        fake.add_knowledge_base(kb)
        await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(kb, {"embedding_model": "e"})
    return Turns(fake, ctl)


def same(a: Scope, b: Scope) -> None:
    assert a.describe() == b.describe()


async def three(turns: Turns, launcher: str, lid: str, session: Session) -> list[Scope]:
    qid = turns.query(launcher, lid, "alice")
    heard = await turns.listener(qid, f"{launcher}_{lid}")
    assert turns.fake.queries[qid].variables["_knowledge_base_uuids"] == [KB, "other-kb"]  # left as the host set it
    used = await turns.tool(qid, session)  # the same query, after the listener's edit
    typed = await turns.command(turns.query(launcher, lid, "alice"), session)
    return [heard, used, typed]


async def test_listener_tool_and_command_agree_in_a_group(turns: Turns) -> None:
    # the host's cached group Session names the group's first speaker, not the one typing now
    session = Session(launcher_type="group", launcher_id="g1", sender_id="first-speaker", bot_uuid=BOT)
    heard, used, typed = await three(turns, "group", "g1", session)
    same(heard, used)
    same(heard, typed)
    assert (heard.session_name, heard.collection, heard.sender_id) == ("group_g1", KB, "alice")


async def test_group_and_private_turns_differ(turns: Turns) -> None:
    """The control: the same person in a group and in private is two scopes on every surface."""
    group = await three(turns, "group", "g1", Session(launcher_type="group", launcher_id="g1", bot_uuid=BOT))
    private = await three(
        turns, "person", "alice", Session(launcher_type="person", launcher_id="alice", sender_id="alice", bot_uuid=BOT)
    )
    for p in private:
        same(p, private[0])
    for g, p in zip(group, private, strict=True):
        assert g.user_key != p.user_key and g.session_name == "group_g1" and p.session_name == "person_alice"
        assert g.collection == p.collection == KB


async def test_a_group_session_never_lends_its_first_speaker(turns: Turns) -> None:
    """Without the ``sender_id`` variable a group turn has no known speaker: never the Session's
    (the group's first speaker); in private the Session's sender is the person."""
    group = Session(launcher_type="group", launcher_id="g1", sender_id="first-speaker", bot_uuid=BOT)
    assert (await turns.tool(turns.query("group", "g1", None), group)).sender_id == ""
    assert (await turns.command(turns.query("group", "g1", None), group)).sender_id == ""
    private = Session(launcher_type="person", launcher_id="bob", sender_id="bob", bot_uuid=BOT)
    assert (await turns.tool(turns.query("person", "bob", None), private)).sender_id == "bob"


IDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(launcher=st.sampled_from(["person", "group"]), lid=IDS, sender=IDS, first=IDS, bot=IDS)
def test_the_three_call_shapes_name_one_identity(launcher: str, lid: str, sender: str, first: str, bot: str) -> None:
    """What each surface has at hand (the listener: the event's session name; a tool: the Session;
    the command: the Session and the bot) names one identity, hence one scope."""
    variables = turn_vars(launcher, lid, sender)
    session = Session(launcher_type=launcher, launcher_id=lid, sender_id=first, bot_uuid=bot)
    heard = turn_identity(variables, session_name=f"{launcher}_{lid}", bot_uuid=bot)
    used = turn_identity(variables, session=session)
    typed = turn_identity(variables, session=session, bot_uuid=bot)
    assert heard == used == typed
    assert derive_scope(**heard) == derive_scope(**used)
    other = "group" if launcher == "person" else "person"  # the control: another chat, another scope
    assert derive_scope(**turn_identity(turn_vars(other, lid, sender), session=session)) != derive_scope(**used)


async def test_a_query_an_earlier_version_edited_resolves_the_same_kb(turns: Turns) -> None:
    """Earlier versions took the memory KB off ``_knowledge_base_uuids`` and wrote it to
    ``_ltm_memory_kb``; a tool call on such a query still finds the memory KB. The control: without
    that variable the same edited query finds no memory KB of its own."""
    session = Session(launcher_type="person", launcher_id="alice", sender_id="alice", bot_uuid=BOT)
    qid = turns.query("person", "alice", "alice")
    variables = turns.fake.queries[qid].variables
    variables["_knowledge_base_uuids"] = ["other-kb"]
    variables["_ltm_memory_kb"] = KB
    assert (await turns.tool(qid, session)).collection == KB
    del variables["_ltm_memory_kb"]
    out = await component(turns.ctl, "Tool", "recall_memory").call({"query": "drink"}, session, qid)
    assert out.get("ok") is not True or turns.asked[-1].collection != KB, out
