"""The review queue through every surface of the real plugin over a fake LangBot host: the one
EventListener (``NormalMessageResponded``), the ``!memory`` command, the Memory Console, the tools;
and a proof that the command and the console leave identical state."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities import events
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.context import EventContext
from langbot_plugin.api.proxies.event_context import EventContextProxy
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from components.commands.memory import MemoryCommand
from components.event_listener.default import MemoryListener
from components.pages.console import MemoryConsole
from components.tools.recall_memory import RecallMemory
from components.tools.remember import Remember
from ltm.adapters.host_invocation import invocation_probe
from ltm.domain.tombstone import value_key
from ltm.service import Actor, MemoryService, Settings
from ltm.service.background import Background
from ltm.service.compose import build
from ltm.service.consolidation import Consolidator
from ltm.service.index_snapshot import PREFIX as SNAPSHOT_PREFIX
from ltm.service.injection import BEGIN, END
from main import LongTermMemory, compose
from tests.support import build_service
from tests.support.host_runtime import FakeHostHandler, make_plugin
from tests.surfaces.test_command_memory import host_context
from tests.surfaces.test_plugin_smoke import component, load_plugin

KB = "kb-rev"
BOT = "bot-rev"
ADMIN_ID = "admin-1"
ALICE = ("person", "alice")
CANDS = re.compile(r"cand_[0-9a-f]{20}")
ADMIN_ACTOR = Actor(surface="test", sender_id="admin", privilege=2)


@dataclass
class World:
    handler: FakeHostHandler
    plugin: Any
    listener: MemoryListener
    cmd: MemoryCommand
    page: MemoryConsole
    qid: int = 100

    @property
    def service(self) -> Any:
        return self.plugin.service

    @property
    def review(self) -> Any:
        return self.plugin.review

    def query(self, text: str, speaker: str = "alice", chat: tuple[str, str] = ALICE) -> int:
        self.qid += 1
        lt, lid = chat
        self.handler.add_query(
            self.qid,
            {
                "launcher_type": lt,
                "launcher_id": lid,
                "sender_id": speaker,
                "session_id": f"{lt}_{lid}",
                "sender_name": speaker,
                "user_message_text": text,
                "_knowledge_base_uuids": [KB],
            },
            bot_uuid=BOT,
            pipeline_kbs=[KB],
        )
        return self.qid

    async def responded(
        self,
        user_text: str,
        reply_text: str = "Noted!",
        *,
        speaker: str = "alice",
        chat: tuple[str, str] = ALICE,
        first_speaker: str | None = None,
        times: int = 1,
    ) -> int:
        """One chat turn ends: the host emits ``NormalMessageResponded`` (``times`` reply parts)."""
        qid = self.query(user_text, speaker, chat)
        lt, lid = chat
        session = Session(launcher_type=lt, launcher_id=lid, sender_id=first_speaker or speaker, bot_uuid=BOT)
        ev = events.NormalMessageResponded(
            launcher_type=lt,
            launcher_id=lid,
            sender_id=first_speaker or speaker,
            session=session,
            prefix="",
            response_text=reply_text,
            finish_reason="stop",
            funcs_called=[],
        )
        base = EventContext.from_event(ev).model_dump()
        for _ in range(times):
            ctx = EventContextProxy.model_validate({**base, "query_id": qid, "plugin_runtime_handler": self.handler})
            for h in self.listener.registered_handlers[events.NormalMessageResponded]:
                await h(ctx)
        return qid

    async def run(
        self, text: str, *, speaker: str = ADMIN_ID, chat: tuple[str, str] = ALICE, privilege: int = 1
    ) -> str:
        qid = self.query("!" + text, speaker, chat)
        session = Session(launcher_type=chat[0], launcher_id=chat[1], sender_id=speaker, bot_uuid=BOT)
        ctx = host_context(self.handler, text, query_id=qid, session=session, privilege=privilege)
        out = [r async for r in self.cmd._execute(ctx)]
        assert len(out) == 1 and out[0].error is None
        return out[0].text

    async def api(self, endpoint: str, **body: Any) -> Any:
        scope = {"kb_id": KB, "session_name": "person_alice", "bot_uuid": BOT, "sender_id": ""}
        resp = await self.page.answer(
            PageRequest(endpoint=endpoint, method="POST", body={"scope": scope, **body}, caller={"user": "ops@example"})
        )
        json.dumps(resp.model_dump())
        return resp

    async def ok(self, endpoint: str, **body: Any) -> Any:
        resp = await self.api(endpoint, **body)
        assert resp.error is None, resp.error
        return resp.data

    async def scope(self, speaker: str = "alice", chat: tuple[str, str] = ALICE) -> Any:
        return await self.service.scope_for(
            kb_id=KB, launcher_type=chat[0], launcher_id=chat[1], bot_uuid=BOT, sender_id=speaker
        )

    async def tool(self, cls: type, params: dict[str, Any], speaker: str = "alice") -> dict[str, Any]:
        qid = self.query("(tool call)", speaker)
        tool = cls()
        tool.plugin = self.plugin
        session = Session(launcher_type="person", launcher_id="alice", sender_id=speaker, bot_uuid=BOT)
        return await tool.call(params, session, qid)

    def state(self) -> tuple[dict[str, bytes], list[str]]:
        # recall index snapshots are a cache the plugin rewrites in the background, reads included
        storage = {k: v for k, v in self.handler.storage.items() if not k.startswith(SNAPSHOT_PREFIX)}
        return storage, sorted(self.handler.vector_rows(KB)["ids"])


async def world(config: dict[str, Any] | None = None, llm: Any = None, clock: Any = None) -> World:
    """The plugin over a fake host; with ``clock``, its installation is made with that clock."""
    handler = FakeHostHandler(llm_responder=llm)
    handler.add_knowledge_base(KB)
    plugin = LongTermMemory()
    plugin.plugin_runtime_handler = handler
    plugin.config = {"admin_sender_ids": [ADMIN_ID], **(config or {})}
    await plugin.initialize()
    if clock is not None:
        plugin.adopt(compose(plugin, clock=clock))
    await plugin.service.register_kb(KB, {"embedding_model": "emb", "isolation": "session"})
    listener = MemoryListener()
    listener.plugin = plugin
    await listener.initialize()
    cmd = MemoryCommand()
    cmd.plugin = plugin
    await cmd.initialize()
    page = MemoryConsole()
    page.plugin = plugin
    return World(handler, plugin, listener, cmd, page)


ON = {"candidate_extraction_enabled": True}


# ---------------------------------------------------------------------------------------- listener
class TestListener:
    async def test_the_one_listener_component_handles_both_events(self) -> None:
        fake = FakeHostHandler(bots=[BOT])
        ctl = await load_plugin(fake, ON)
        listeners = [c for c in ctl.plugin_container.components if c.manifest.kind == "EventListener"]
        assert len(listeners) == 1
        handlers = component(ctl, "EventListener", "default").registered_handlers
        assert {events.PromptPreProcessing, events.NormalMessageResponded} <= set(handlers)
        assert ctl.plugin_container.plugin_instance.review is not None

    async def test_off_by_default(self) -> None:
        w = await world()
        before = w.state()
        await w.responded("I prefer Python for scripting.")
        assert w.state() == before
        w.plugin.config.update(ON)  # positive control: the same turn with extraction on
        await w.responded("I prefer Python for scripting.")
        (c,) = (await w.review.list(await w.scope())).items
        assert c.content == "I prefer Python for scripting." and c.source_ref.startswith("query:")

    async def test_only_the_users_text_is_evidence(self) -> None:
        w = await world(ON)
        await w.responded("hello there", reply_text="I prefer Python. You live in Paris. My name is Bot.")
        assert (await w.review.list(await w.scope(), all_statuses=True)).items == []
        block = f'{BEGIN}{{"episodes":[{{"content":"I live in Rome."}}]}}{END}'
        await w.responded(f"I live in Oslo. {block}", reply_text="I live in Paris.")
        items = (await w.review.list(await w.scope())).items
        assert [(c.content, c.evidence_quote) for c in items] == [("I live in Oslo.", "I live in Oslo.")]

    async def test_commands_are_not_statements(self) -> None:
        w = await world(ON)
        before = w.state()
        await w.responded("!memory forget ep_x --reason I prefer tea")
        await w.responded("！memory list")
        assert w.state() == before

    async def test_once_per_turn_and_the_model_goes_through_the_host(self) -> None:
        asked: list[list[dict[str, Any]]] = []

        def llm(model: str, messages: list[dict[str, Any]], funcs: list[Any]) -> str:
            asked.append(messages)
            return json.dumps(
                {
                    "candidates": [
                        {
                            "evidence_quote": "I moved to Lisbon.",
                            "classification": "correction",
                            "recommendation": "accept",
                        }
                    ]
                }
            )

        w = await world({**ON, "candidate_model_uuid": "llm-1", "candidate_auto_apply": True}, llm=llm)
        await w.responded("Hi! I moved to Lisbon. My password is hunter22.", times=3)
        assert len(asked) == 1  # three reply parts, one extraction
        (call,) = w.handler.calls_of(A.INVOKE_LLM)
        assert call["llm_model_uuid"] == "llm-1" and call["timeout"] == 30.0
        sent = json.dumps(call["messages"], ensure_ascii=False)
        assert "hunter22" not in sent and "I moved to Lisbon." in sent
        (c,) = (await w.review.list(await w.scope())).items
        assert (c.status, c.origin, c.model_recommendation, c.redactions) == ("pending", "model", "accept", 1)

    async def test_a_paraphrasing_model_writes_nothing(self) -> None:
        """The model may only pick the user's own sentences: a paraphrase proposes nothing, while the
        same model quoting verbatim proposes one (the control: the model path is live)."""
        quotes = {"I moved to Lisbon.": "The user relocated to Lisbon.", "I moved to Porto.": "I moved to Porto."}

        def llm(model: str, messages: list[dict[str, Any]], funcs: list[Any]) -> str:
            said = next(q for q in quotes if q in json.dumps(messages, ensure_ascii=False))
            return json.dumps({"candidates": [{"evidence_quote": quotes[said], "classification": "correction"}]})

        w = await world({**ON, "candidate_model_uuid": "llm-1"}, llm=llm)
        before = w.state()
        await w.responded("I moved to Lisbon.")
        assert len(w.handler.calls_of(A.INVOKE_LLM)) == 1  # the model was asked, and paraphrased
        assert w.state() == before
        await w.responded("I moved to Porto.")
        assert len(w.handler.calls_of(A.INVOKE_LLM)) == 2
        (c,) = (await w.review.list(await w.scope())).items
        assert (c.content, c.origin) == ("I moved to Porto.", "model")

    async def test_a_failing_model_never_breaks_the_turn(self, caplog: pytest.LogCaptureFixture) -> None:
        """A model call that fails is the extraction's own outcome (logged as a model failure, nothing
        proposed), not an exception the listener's last-resort guard has to swallow; the next turn,
        with the model back, proposes again."""
        down = [True]

        def flaky(model: str, messages: Any, funcs: Any) -> str:
            if down[0]:
                raise KeyError("model down")
            return json.dumps({"candidates": [{"evidence_quote": "I moved to Porto.", "classification": "correction"}]})

        w = await world({**ON, "candidate_model_uuid": "llm-1"}, llm=flaky)
        before = w.state()
        with caplog.at_level(logging.WARNING):
            await w.responded("I moved to Lisbon.")
        assert len(w.handler.calls_of(A.INVOKE_LLM)) == 1
        assert w.state() == before
        assert any("candidate model call failed" in r.getMessage() for r in caplog.records)
        assert not any("candidate extraction failed" in r.getMessage() for r in caplog.records)
        down[0] = False
        await w.responded("I moved to Porto.")
        (c,) = (await w.review.list(await w.scope())).items
        assert c.content == "I moved to Porto."

    async def test_the_current_speaker_of_a_group_is_the_candidates_speaker(self) -> None:
        w = await world(ON)
        await w.responded("I live in Oslo.", speaker="carol", chat=("group", "g1"), first_speaker="bob")
        (c,) = (await w.review.list(await w.scope("carol", ("group", "g1")))).items
        assert c.sender_id == "carol"


# ---------------------------------------------------------------------------------------- tools
class TestTools:
    async def test_remember_tells_the_model_about_parking_and_tombstones(self) -> None:
        w = await world()
        first = await w.tool(Remember, {"content": "I live in Paris."})
        assert first["ok"]
        parked = await w.tool(Remember, {"content": "I moved to Berlin."})
        assert parked["ok"] is False and first["id"] in parked["error"] and "supersedes" in parked["error"]
        cid = CANDS.search(parked["error"]).group(0)
        await w.review.reject(await w.scope(), cid, ADMIN_ACTOR, "wrong person")
        refused = await w.tool(Remember, {"content": "I moved to Berlin."})
        assert refused["ok"] is False and value_key("I moved to Berlin.", "alice") in refused["error"]
        fixed = await w.tool(Remember, {"content": "I moved to Madrid.", "supersedes": [first["id"]]})
        assert fixed["ok"] and fixed["superseded"] == [first["id"]]  # explicit corrections still work

    async def test_recall_marks_inferred_memories(self) -> None:
        w = await world()
        await w.tool(Remember, {"content": "Alice probably likes kayaking", "claim_type": "inference"})
        out = await w.tool(RecallMemory, {"query": "kayaking"})
        assert out["episodes"][0]["trust"] == "inferred"


# ---------------------------------------------------------------------------------------- command
class TestCommand:
    async def test_queue_decisions_and_tombstones(self) -> None:
        w = await world(ON)
        scope = await w.scope()
        old, _ = await w.service.remember(scope, {"content": "I live in Paris."}, ADMIN_ACTOR)
        await w.responded("I moved to Berlin. I like tea.")
        listing = await w.run("memory candidates", speaker="alice")  # members may read their queue
        by = {c.content: c.id for c in (await w.review.list(scope)).items}
        conflict_id, pending_id = by["I moved to Berlin."], by["I like tea."]
        assert CANDS.findall(listing) == [pending_id, conflict_id]  # newest first
        assert "[conflict]" in listing and "“I live in Paris.”" in listing and old.id in listing
        refused = await w.run(f"memory candidate accept {pending_id}", speaker="alice")
        assert refused.startswith("Refused") and (await w.review.get(scope, pending_id)).status == "pending"

        accepted = await w.run(f"memory candidate accept {conflict_id} user confirmed the move")
        assert "Accepted" in accepted and old.id in accepted
        cand = await w.review.get(scope, conflict_id)
        assert cand.reason == "user confirmed the move" and cand.decided_by["surface"] == "command"
        assert (await w.service.get_episode(scope, old.id)).status == "superseded"

        rejected = await w.run(f'memory candidate reject {pending_id} --reason "not about tea"')
        tid = value_key("I like tea.", "alice")
        assert tid in rejected
        tombs = await w.run("memory tombstones", speaker="alice")
        assert tid in tombs and "not about tea" in tombs and "tea." not in tombs.replace("not about tea", "")
        again = await w.run(f"memory candidate reject {pending_id}")
        assert "already rejected" in again
        assert tid in await w.run(f"memory tombstone lift {tid} asked again")
        assert "No tombstones" in await w.run("memory tombstones")
        decided = await w.run("memory candidates --all-statuses")
        assert "[accepted]" in decided and "[rejected]" in decided and "user confirmed the move" in decided

    async def test_forget_never_and_confirm(self) -> None:
        w = await world()
        scope = await w.scope()
        ep, _ = await w.service.remember(
            scope, {"content": "Alice maybe owns a boat", "claim_type": "inference"}, ADMIN_ACTOR
        )
        assert "[inferred]" in await w.run("memory list")
        assert "Confirmed" in await w.run(f"memory confirm {ep.id}")
        assert "[inferred]" not in await w.run("memory list")
        assert "already confirmed" in await w.run(f"memory confirm {ep.id}")
        text = await w.run(f'memory forget {ep.id} --never --reason "never again"')
        tid = value_key("Alice maybe owns a boat", "alice")
        assert "Forgot" in text and tid in text
        refusal = await w.tool(Remember, {"content": "alice maybe owns a BOAT"})
        assert refusal["ok"] is False and "never again" in refusal["error"]

    async def test_usage_and_help(self) -> None:
        w = await world()
        for verb in ("candidates", "candidate", "tombstones", "tombstone", "confirm"):
            assert f"!memory {verb}" in await w.run("memory help")
        assert "candidate accept <id>" in await w.run("memory candidate frobnicate x")
        assert "needs a memory id" in await w.run("memory candidate accept")
        assert "not both" in await w.run('memory candidate reject cand_0123456789abcdef0123 words --reason "x"')
        assert "No candidate" in await w.run("memory candidate accept cand_0123456789abcdef0123")

    async def test_without_a_review_queue_the_command_says_so(self, tmp_path: Path) -> None:
        handler = FakeHostHandler()
        plugin = make_plugin(handler, {"admin_sender_ids": [ADMIN_ID]})
        plugin.service = await build_service("numpy", tmp_path, settings=lambda: Settings.from_config(plugin.config))
        cmd = MemoryCommand()
        cmd.plugin = plugin
        await cmd.initialize()
        w = World(handler, plugin, MemoryListener(), cmd, MemoryConsole())
        assert "not available" in await w.run("memory candidates")
        ep, _ = await plugin.service.remember(
            await plugin.service.scope_for(
                kb_id="kb-test", session_name="person_alice", bot_uuid=BOT, sender_id="alice"
            ),
            {"content": "x"},
            ADMIN_ACTOR,
        )
        assert "not available" in await w.run(f"memory forget {ep.id} --never")


# ---------------------------------------------------------------------------------------- console
class TestConsole:
    async def test_review_endpoints(self) -> None:
        w = await world(ON)
        scope = await w.scope()
        assert (await w.ok("/meta"))["features"]["candidates"] is True
        old, _ = await w.service.remember(scope, {"content": "I work at Google."}, ADMIN_ACTOR)
        await w.responded("I work at Stripe. I like tea.")
        listed = await w.ok("/candidates")
        pending, conflict = listed["items"]  # newest first
        assert conflict["status"] == "conflict" and conflict["conflicts_with"][0]["content"] == "I work at Google."
        assert "scope" not in conflict and listed["total"] == 2
        d = await w.ok("/candidate/accept", id=conflict["id"], reason="new job")
        assert d["parked"] is False and d["superseded"] == [old.id] and d["episode"]["origin"] == "candidate"
        r = await w.ok("/candidate/reject", id=pending["id"], reason="no")
        assert r["candidate"]["status"] == "rejected"
        tombs = await w.ok("/tombstones")
        assert [t["id"] for t in tombs["items"]] == [r["candidate"]["result_id"]]
        assert (await w.ok("/tombstone/lift", id=tombs["items"][0]["id"]))["lifted"] == tombs["items"][0]["id"]
        inf, _ = await w.service.remember(
            scope, {"content": "Alice may like chess", "claim_type": "inference"}, ADMIN_ACTOR
        )
        view = await w.ok("/episode", id=inf.id)
        assert view["trust"] == "inferred"
        assert (await w.ok("/episode/confirm", id=inf.id))["trust"] == "confirmed"
        gone = await w.ok("/episode/forget", id=inf.id, never=True, reason="private")
        assert gone == {"forgotten": inf.id, "tombstone": value_key("Alice may like chess", "alice")}

    async def test_refusals_write_nothing(self) -> None:
        w = await world(ON)
        await w.responded("I like tea.")
        before = w.state()
        for endpoint, body in (
            ("/candidate/accept", {"id": "not an id"}),
            ("/candidate/reject", {"id": "cand_0123456789abcdef0123"}),
            ("/tombstone/lift", {"id": "tb_0123456789abcdef"}),
            ("/candidates", {"all_statuses": "yes"}),
            ("/episode/confirm", {"id": "ep_00000000000000000000"}),
        ):
            resp = await w.api(endpoint, **body)
            assert resp.error and w.state() == before, endpoint

    async def test_without_a_review_queue(self) -> None:
        w = await world(ON)
        ep, _ = await w.service.remember(await w.scope(), {"content": "I like tea."}, ADMIN_ACTOR)
        old = w.service
        cons = w.plugin.consolidator
        assert cons is not None
        # the plugin's graph over the same stores, made without a review queue
        service = MemoryService(
            kv=old.kv,
            vectors=old.vectors,
            embedder_for=old.embedder_for,
            settings=lambda: old.settings,
            background=Background(live=invocation_probe(w.plugin)),
            consolidator=lambda svc: Consolidator(svc, cons.model, settings=lambda: cons.settings),
        )
        w.plugin.adopt(build(service))
        assert (await w.ok("/meta"))["features"]["candidates"] is False
        before = w.state()
        for endpoint, body in (("/candidates", {}), ("/episode/forget", {"id": ep.id, "never": True})):
            resp = await w.api(endpoint, **body)
            assert "not available" in resp.error and w.state() == before


# ---------------------------------------------------------------------------------------- same state
def _normalise(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        # who decided, through which surface, and when: the only differences allowed
        drop = ("decided_by", "created_by", "by", "surface", "query_id", "timestamp", "at")
        return {k: _normalise(v, ids) for k, v in value.items() if k not in drop and not k.endswith("_at")}
    if isinstance(value, list):
        return [_normalise(v, ids) for v in value]
    if isinstance(value, str):
        for raw, name in ids.items():
            value = value.replace(raw, name)
        return value
    return value


async def _snapshot(w: World) -> Any:
    scope = await w.scope()
    episodes = (await w.service.list_episodes(scope, statuses=None, page_size=100)).items
    cands = (await w.review.list(scope, all_statuses=True)).items
    ids = {e.id: f"<ep:{e.content}>" for e in episodes} | {c.id: f"<cand:{c.content}>" for c in cands}
    ids |= {op: "<op>" for op in re.findall(r"'op_id': '(\w+)'", str(await w.service.audit.scope_export(scope)))}
    tombs, _ = await w.review.list_tombstones(scope)
    audit = await w.service.audit.scope_export(scope)
    return _normalise(
        {
            "episodes": sorted(
                (
                    {k: v for k, v in e.to_public().items() if k not in ("timestamp", "valid_from", "content_hash")}
                    for e in episodes
                ),
                key=lambda d: d["content"],
            ),
            "candidates": sorted(
                ({k: v for k, v in c.to_dict().items() if not k.endswith(("_at", "seq"))} for c in cands),
                key=lambda d: d["content"],
            ),
            "tombstones": [{k: v for k, v in t.to_dict().items() if k != "at"} for t in tombs],
            "audit": [
                {k: v for k, v in a.items() if k not in ("at", "sender", "surface", "query_id", "operator")}
                for a in audit
            ],
        },
        ids,
    )


class TestSameState:
    async def test_command_and_console_leave_identical_state(self) -> None:
        async def scenario(decide: str) -> Any:
            w = await world(ON)
            scope = await w.scope()
            await w.service.remember(scope, {"content": "I live in Paris."}, ADMIN_ACTOR)
            await w.responded("I moved to Berlin. I like tea. I am a nurse.")
            by = {c.content: c.id for c in (await w.review.list(scope)).items}
            steps = [
                ("accept", by["I moved to Berlin."], "moved"),
                ("reject", by["I like tea."], "no"),
                ("accept", by["I am a nurse."], ""),
            ]
            for verb, cid, reason in steps:
                if decide == "command":
                    await w.run(f"memory candidate {verb} {cid} {reason}".rstrip())
                else:
                    await w.ok(f"/candidate/{verb}", id=cid, reason=reason)
            return await _snapshot(w)

        via_command, via_console = await scenario("command"), await scenario("console")
        assert via_command == via_console
        statuses = sorted((c["content"], c["status"]) for c in via_command["candidates"])
        assert statuses == [
            ("I am a nurse.", "accepted"),
            ("I like tea.", "rejected"),
            ("I moved to Berlin.", "accepted"),
        ]
        assert [e["status"] for e in via_command["episodes"] if e["content"] == "I live in Paris."] == ["superseded"]
