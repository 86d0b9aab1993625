"""One privilege policy and one read rule, whatever the surface: the model's tools, ``!memory``,
the console. Driven through the real components over the fake host (query variables, plugin
storage, host vectors), as LangBot calls them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities import events
from langbot_plugin.api.entities.builtin.provider.message import Message
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.context import EventContext
from langbot_plugin.api.proxies.event_context import EventContextProxy

from components.event_listener.default import MemoryListener
from components.pages.console import MemoryConsole
from components.tools.forget import Forget
from components.tools.recall_memory import RecallMemory
from components.tools.remember import Remember
from components.tools.update_profile import UpdateProfile
from ltm.domain.errors import NotFoundError, PermissionDenied
from ltm.service import Actor
from tests.surfaces.test_command_memory import ADMIN_ID, BOT, Harness, host_context, host_harness, joined_document

ALICE = ("person", "alice")
BOB = ("person", "bob")
G1 = ("group", "g1")
G2 = ("group", "g2")
SEED = Actor(surface="test", sender_id="seed")


async def tool(h: Harness, cls: type, params: dict[str, Any], *, speaker: str, chat: tuple[str, str]) -> Any:
    """Call a tool as the host does: the query's variables name the chat and the current speaker."""
    h.qid += 1
    lt, lid = chat
    variables = {
        "launcher_type": lt,
        "launcher_id": lid,
        "sender_id": speaker,
        "session_id": f"{lt}_{lid}",
        "_knowledge_base_uuids": [h.kb],
    }
    h.handler.add_query(h.qid, variables, bot_uuid=BOT, pipeline_kbs=[h.kb])
    t = cls()
    t.plugin = h.plugin
    return await t.call(params, Session(launcher_type=lt, launcher_id=lid, sender_id=speaker, bot_uuid=BOT), h.qid)


async def console(h: Harness, endpoint: str, chat: tuple[str, str], **body: Any) -> Any:
    page = MemoryConsole()
    page.plugin = h.plugin
    scope = {"kb_id": h.kb, "session_name": f"{chat[0]}_{chat[1]}", "bot_uuid": BOT, "sender_id": ""}
    resp = await page.handle_api(
        PageRequest(endpoint=endpoint, method="POST", body={"scope": scope, **body}, caller={"user": "ops@example"})
    )
    assert resp.error is None, resp.error
    return resp.data


async def injected(h: Harness, text: str, *, speaker: str, chat: tuple[str, str]) -> str:
    """The system prompt the listener builds for one turn of ``speaker`` in ``chat``."""
    h.qid += 1
    lt, lid = chat
    variables = {"launcher_type": lt, "launcher_id": lid, "sender_id": speaker, "user_message_text": text}
    h.handler.add_query(h.qid, {**variables, "_knowledge_base_uuids": [h.kb]}, bot_uuid=BOT, pipeline_kbs=[h.kb])
    listener = MemoryListener()
    listener.plugin = h.plugin
    await listener.initialize()
    prompt = [Message(role="system", content="You are helpful.")]
    ev = events.PromptPreProcessing(session_name=f"{lt}_{lid}", default_prompt=prompt, prompt=[])
    base = EventContext.from_event(ev).model_dump()
    ctx = EventContextProxy.model_validate({**base, "query_id": h.qid, "plugin_runtime_handler": h.handler})
    for handler in listener.registered_handlers[events.PromptPreProcessing]:
        await handler(ctx)
    return "\n".join(str(m.content) for m in ctx.event.default_prompt)


def rows(h: Harness) -> set[str]:
    return set(h.handler.vector_rows(h.kb)["ids"])


# ---------------------------------------------------------------------------------------- forget
class TestForgetOnePolicy:
    async def test_tool_refuses_another_speakers_memory_in_a_group(self) -> None:
        """The bypass: ``!memory forget`` refused a member, the tool deleted the same id."""
        h = await host_harness()
        carols = await h.remember(G1, "carol", "Carol's flat is number 12")
        before, audit = rows(h), await h.state(G1)
        out = await tool(h, Forget, {"episode_id": carols.id}, speaker="bob", chat=G1)
        assert out["ok"] is False and out["deleted"] == 0 and carols.id in out["error"]
        assert rows(h) == before and await h.state(G1) == audit  # nothing deleted, nothing audited
        command = await h.one(f"memory forget {carols.id}", chat=G1, speaker="bob")
        assert command.startswith("Refused:") and carols.id in command  # the same answer on both surfaces
        assert rows(h) == before

    async def test_without_query_variables_the_groups_first_speaker_is_nobody(self) -> None:
        """The host's group Session names the group's first speaker; without the query variable the
        current speaker is unknown, and an unknown speaker owns nothing."""
        h = await host_harness()
        firsts = await h.remember(G1, "carol", "Carol likes jazz")
        session = Session(launcher_type="group", launcher_id="g1", sender_id="carol", bot_uuid=BOT)
        ctx = host_context(h.handler, f"memory forget {firsts.id}", query_id=999, session=session, privilege=1)
        (reply,) = [r.text async for r in h.cmd._execute(ctx)]  # query 999 is unknown: no variables
        assert reply.startswith("Refused:") and firsts.id in rows(h)
        own = await h.remember(ALICE, "alice", "Alice likes tea")  # positive control: a private chat's one person
        session = Session(launcher_type="person", launcher_id="alice", sender_id="alice", bot_uuid=BOT)
        ctx = host_context(h.handler, f"memory forget {own.id}", query_id=998, session=session, privilege=1)
        (reply,) = [r.text async for r in h.cmd._execute(ctx)]
        assert reply.startswith("Forgot") and own.id not in rows(h)

    async def test_owner_and_admin_may(self) -> None:
        """Positive controls: the owner forgets their own through the tool; a memory admin anyone's."""
        h = await host_harness()
        bobs = await h.remember(G1, "bob", "Bob is moving to Oslo")
        carols = await h.remember(G1, "carol", "Carol likes jazz")
        out = await tool(h, Forget, {"episode_id": bobs.id}, speaker="bob", chat=G1)
        assert out == {"ok": True, "deleted": 1, "id": bobs.id, "content": "Bob is moving to Oslo"}
        out = await tool(h, Forget, {"episode_id": carols.id}, speaker=ADMIN_ID, chat=G1)
        assert out["ok"] is True and out["deleted"] == 1
        assert not {bobs.id, carols.id} & rows(h)

    async def test_a_shared_memory_needs_an_admin(self) -> None:
        """A record no speaker owns (a document's) is nobody's to forget but an admin's."""
        h = await host_harness()
        doc = {"session_name": "group_g1", "bot_uuid": BOT, "episodes": [{"content": "The office opens at 9"}]}
        await h.service.ingest_document(h.kb, "doc-1", doc, Actor(surface="engine"))
        (shared,) = (await h.service.list_episodes(await h.scope(G1, "bob"))).items
        assert shared.sender_id == ""
        for speaker in ("bob", ""):
            out = await tool(h, Forget, {"episode_id": shared.id}, speaker=speaker, chat=G1)
            assert out["ok"] is False, speaker
        assert (await h.one(f"memory forget {shared.id}", chat=G1, speaker="bob")).startswith("Refused:")
        assert shared.id in rows(h)
        assert (await h.one(f"memory forget {shared.id}", chat=G1, speaker=ADMIN_ID)).startswith("Forgot")

    async def test_console_is_the_operator(self) -> None:
        h = await host_harness()
        carols = await h.remember(G1, "carol", "Carol likes jazz")
        assert (await console(h, "/episode/forget", G1, id=carols.id))["forgotten"] == carols.id
        assert carols.id not in rows(h)

    async def test_bot_isolation_private_chat_cannot_be_forgotten_from_a_group(self) -> None:
        """In ``bot`` isolation a member of any group could delete memories of others' private chats."""
        h = await host_harness(isolation="bot")
        private = await h.remember(ALICE, "alice", "Alice's diagnosis is private")
        for speaker in ("bob", ADMIN_ID):  # not even an admin reaches it from a group: it is not readable there
            out = await tool(h, Forget, {"episode_id": private.id}, speaker=speaker, chat=G1)
            assert out["ok"] is False and "No memory" in out["error"], speaker
            assert "No memory" in await h.one(f"memory forget {private.id}", chat=G1, speaker=speaker)
        assert private.id in rows(h)
        out = await tool(h, Forget, {"episode_id": private.id}, speaker="alice", chat=ALICE)  # positive control
        assert out["ok"] is True and private.id not in rows(h)


class TestAdminVerbsInTheService:
    async def test_archive_restore_confirm_need_an_admin_whoever_calls(self) -> None:
        """No member surface offers them, and a new one could not skip the check either."""
        h = await host_harness()
        own = await h.remember(G1, "bob", "Bob likes tea")
        scope, member = await h.scope(G1, "bob"), Actor(surface="tool", sender_id="bob")
        for call in (
            h.service.set_status(scope, own.id, "archived", member),
            h.service.confirm_episode(scope, own.id, member),
        ):
            with pytest.raises(PermissionDenied):
                await call
        assert (await h.service.get_episode(scope, own.id)).status == "active"
        admin = Actor(surface="tool", sender_id=ADMIN_ID)  # listed in admin_sender_ids: positive control
        assert (await h.service.confirm_episode(scope, own.id, admin)).confidence == "confirmed"
        assert (await h.service.set_status(scope, own.id, "archived", admin)).status == "archived"
        with pytest.raises(PermissionDenied):
            await h.service.set_status(scope, own.id, "active", member)

    async def test_bulk_delete_export_import_need_an_admin_in_the_plugins_service(self) -> None:
        """The verbs only ``!memory`` guarded before: the plugin's own service refuses a member
        whatever surface calls it, and writes nothing (no row, no audit entry)."""
        from ltm.domain.filters import Criteria
        from ltm.service.transfer import export_scope, import_scope

        h = await host_harness()
        await h.remember(G1, "carol", "Carol likes jazz")
        scope, member = await h.scope(G1, "bob"), Actor(surface="tool", sender_id="bob")
        before, audit = rows(h), await h.state(G1)
        for call in (
            h.service.bulk_delete(scope, Criteria(statuses=None), member),
            export_scope(h.service, scope, member),
            import_scope(h.service, scope, [{"content": "Bob is the boss now"}], member),
            h.service.audit_export(scope, member),
        ):
            with pytest.raises(PermissionDenied):
                await call
        assert rows(h) == before and await h.state(G1) == audit
        admin = Actor(surface="tool", sender_id=ADMIN_ID)  # listed in admin_sender_ids: positive control
        assert (await export_scope(h.service, scope, admin))["count"] == 1
        assert await h.service.bulk_delete(scope, Criteria(statuses=None), admin) == 1

    async def test_the_console_acts_as_its_named_operator(self) -> None:
        """The console's actor is the dashboard operator the host names; every audit entry it
        causes says so (``operator``), and a page request naming nobody is the operator ``console``."""
        h = await host_harness()
        carols = await h.remember(G1, "carol", "Carol likes jazz")
        await console(h, "/episode/archive", G1, id=carols.id, reason="tidy")
        entries, _ = await h.service.audit_page(await h.scope(G1, "bob"), 1, 10)
        assert (entries[0]["operation"], entries[0]["surface"], entries[0]["operator"]) == (
            "episode.archive",
            "console",
            "ops@example",
        )
        assert entries[1]["operator"] == ""  # control: a chat surface's entry names no operator
        page = MemoryConsole()
        page.plugin = h.plugin
        scope = {"kb_id": h.kb, "session_name": "group_g1", "bot_uuid": BOT, "sender_id": ""}
        resp = await page.handle_api(
            PageRequest(endpoint="/episode/restore", method="POST", body={"scope": scope, "id": carols.id})
        )
        assert resp.error is None, resp.error
        entries, _ = await h.service.audit_page(await h.scope(G1, "bob"), 1, 10)
        assert (entries[0]["operation"], entries[0]["operator"]) == ("episode.restore", "console")


# ---------------------------------------------------------------------------------------- admins
class TestAdminIdsAreExact:
    @pytest.mark.parametrize("lookalike", ["admin-1\xa0", "\u3000admin-1", "admin-1\u2003", " admin-1"])
    async def test_unicode_whitespace_is_another_person(self, lookalike: str) -> None:
        h = await host_harness()
        carols = await h.remember(G1, "carol", "Carol likes jazz")
        assert (await h.one(f"memory archive {carols.id}", chat=G1, speaker=lookalike)).startswith("Refused:")
        out = await tool(h, Forget, {"episode_id": carols.id}, speaker=lookalike, chat=G1)
        assert out["ok"] is False and carols.id in rows(h)
        # positive control: the configured id itself
        assert (await h.one(f"memory archive {carols.id}", chat=G1, speaker=ADMIN_ID)).startswith("Archived")


# ---------------------------------------------------------------------------------------- profiles
class TestGroupProfile:
    async def test_members_cannot_edit_the_group_profile_by_default(self) -> None:
        h = await host_harness()
        patch = {"target": "session", "add_notes": ["everyone must send Bob money"]}
        out = await tool(h, UpdateProfile, patch, speaker="bob", chat=G1)
        assert out["ok"] is False and "members_edit_group_profile" in out["error"]
        scope = await h.scope(G1, "bob")
        assert (await h.service.get_profile(scope, "session")).is_empty()
        # positive controls: one's own speaker profile; a private chat's session; an admin; the setting
        assert (await tool(h, UpdateProfile, {"add_traits": ["generous"]}, speaker="bob", chat=G1))["ok"]
        assert (await tool(h, UpdateProfile, {"target": "session", "name": "mine"}, speaker="bob", chat=BOB))["ok"]
        assert (await tool(h, UpdateProfile, {"target": "session", "name": "Team"}, speaker=ADMIN_ID, chat=G1))["ok"]
        h.plugin.config = {**h.plugin.config, "members_edit_group_profile": True}
        assert (await tool(h, UpdateProfile, {**patch, "add_notes": ["lunch at 12"]}, speaker="bob", chat=G1))["ok"]
        session = await h.service.get_profile(scope, "session")
        assert session.name == "Team" and session.notes == ["lunch at 12"]

    async def test_the_console_edits_it(self) -> None:
        h = await host_harness()
        await console(h, "/profile/update", G1, target="session", patch={"name": "Team"})
        assert (await h.service.get_profile(await h.scope(G1, "bob"), "session")).name == "Team"


# ---------------------------------------------------------------------------------------- supersedes
class TestSupersedes:
    async def test_a_shared_memory_is_not_replaced_by_a_member(self) -> None:
        h = await host_harness()
        doc = {"session_name": "group_g1", "bot_uuid": BOT, "episodes": [{"content": "The office opens at 9"}]}
        await h.service.ingest_document(h.kb, "doc-1", doc, Actor(surface="engine"))
        (shared,) = (await h.service.list_episodes(await h.scope(G1, "bob"))).items
        correction = {"content": "Opens at 10", "supersedes": [shared.id]}
        for speaker in ("bob", ""):  # an unknown speaker owns nothing, not even an ownerless record
            out = await tool(h, Remember, correction, speaker=speaker, chat=G1)
            assert out["ok"] is False and shared.id in out["error"], speaker
        assert [e.id for e in (await h.service.list_episodes(await h.scope(G1, "bob"))).items] == [shared.id]
        own = await tool(h, Remember, {"content": "Bob starts at 8"}, speaker="bob", chat=G1)  # positive control
        out = await tool(h, Remember, {"content": "Bob starts at 7", "supersedes": [own["id"]]}, speaker="bob", chat=G1)
        assert out["ok"] is True and out["superseded"] == [own["id"]]


# ---------------------------------------------------------------------------------------- reading
class TestBotIsolationReadRule:
    async def test_private_chats_stay_private(self) -> None:
        h = await host_harness(isolation="bot")
        private = await h.remember(ALICE, "alice", "Alice takes insulin every morning")
        group = await h.remember(G1, "carol", "Carol organises the insulin drive")
        for chat, speaker in ((G1, "bob"), (G2, "bob"), (BOB, "bob"), (G1, ADMIN_ID)):
            listed = await h.one("memory list --status all", chat=chat, speaker=speaker)
            assert group.id in listed and private.id not in listed, (chat, speaker)  # shared: yes; private: no
            assert "No memory" in await h.one(f"memory show {private.id}", chat=chat, speaker=speaker)
            assert private.id not in await h.one("memory search insulin", chat=chat, speaker=speaker)
            out = await tool(h, RecallMemory, {"query": "insulin every morning"}, speaker=speaker, chat=chat)
            assert [e["id"] for e in out["episodes"]] == [group.id], (chat, speaker)
        export = joined_document(await h.run("memory export l2", chat=G1, speaker=ADMIN_ID))
        assert [e["id"] for e in export["episodes"]] == [group.id]
        # positive controls: the speaker's own private memory follows them; the console reads all
        for chat in (ALICE, G1):
            out = await tool(h, RecallMemory, {"query": "insulin every morning"}, speaker="alice", chat=chat)
            assert {e["id"] for e in out["episodes"]} == {group.id, private.id}, chat
        assert private.id in await h.one(f"memory show {private.id}", chat=ALICE, speaker="alice")
        listed = await console(h, "/episodes", G1, status="all")
        assert {e["id"] for e in listed["items"]} == {group.id, private.id}

    async def test_the_injected_block_follows_the_rule(self) -> None:
        h = await host_harness(isolation="bot")
        await h.remember(ALICE, "alice", "Alice takes insulin every morning")
        await h.remember(G1, "carol", "Carol organises the insulin drive")
        block = await injected(h, "insulin every morning", speaker="bob", chat=G2)
        assert "insulin drive" in block and "Alice takes insulin" not in block
        block = await injected(h, "insulin every morning", speaker="alice", chat=G2)  # positive control
        assert "insulin drive" in block and "Alice takes insulin" in block

    async def test_the_audit_of_a_private_chat_is_redacted_elsewhere(self) -> None:
        h = await host_harness(isolation="bot")
        private = await h.remember(ALICE, "alice", "Alice's diagnosis")
        out = await tool(
            h, Forget, {"episode_id": private.id, "reason": "my diagnosis is private"}, speaker="alice", chat=ALICE
        )
        assert out["ok"] is True
        group = await h.remember(G1, "carol", "Carol likes jazz")
        for chat, speaker in ((G1, "bob"), (G2, ADMIN_ID)):
            text = await h.one("memory audit", chat=chat, speaker=speaker)
            assert group.id in text and "episode.forget" in text, chat  # positive control: the log and its order
            assert private.id not in text and "diagnosis" not in text and "another person's private chat" in text
        exported = joined_document(await h.run("memory audit export", chat=G1, speaker=ADMIN_ID))
        assert private.id not in json.dumps(exported) and exported["total"] == 3
        mine = await h.one("memory audit", chat=ALICE, speaker="alice")  # the chat it was done in sees it all
        assert private.id in mine and "diagnosis is private" in mine
        entries = (await console(h, "/audit/export", G1))["entries"]
        assert any(private.id in e["targets"] for e in entries)  # the console: the operator

    async def test_review_candidates_follow_the_same_rule(self) -> None:
        h = await host_harness({"candidate_extraction_enabled": True}, isolation="bot")
        listener = Actor(surface="listener", sender_id="alice")
        (private,) = (
            await h.plugin.review.extract(await h.scope(ALICE, "alice"), "I live in Oslo.", listener)
        ).candidates
        listener = Actor(surface="listener", sender_id="carol")
        (shared,) = (await h.plugin.review.extract(await h.scope(G1, "carol"), "I live in Rome.", listener)).candidates
        for line in ("memory candidates", "memory candidates --all-statuses"):
            listed = await h.one(line, chat=G1, speaker=ADMIN_ID)
            assert shared.id in listed and private.id not in listed, line
            assert private.id in await h.one(line, chat=ALICE, speaker="alice")  # positive control
        refused = await h.one(f"memory candidate accept {private.id}", chat=G1, speaker=ADMIN_ID)
        assert private.id in refused and "Accepted" not in refused
        assert (await h.plugin.review.get(await h.scope(ALICE, "alice"), private.id)).status == "pending"
        accepted = await h.one(f"memory candidate accept {private.id}", chat=ALICE, speaker=ADMIN_ID)
        assert (await h.plugin.review.get(await h.scope(ALICE, "alice"), private.id)).status == "accepted", accepted

    async def test_marked_shared_is_read_everywhere(self) -> None:
        h = await host_harness(isolation="bot")
        doc = {
            "session_name": "person_alice",
            "bot_uuid": BOT,
            "sender_id": "alice",
            "episodes": [{"content": "Alice runs the book club", "shared": True}, {"content": "Alice's PIN hint"}],
        }
        await h.service.ingest_document(h.kb, "doc-1", doc, Actor(surface="engine"))
        listed = await h.one("memory list", chat=G1, speaker="bob")
        assert "book club" in listed and "PIN hint" not in listed
        assert "PIN hint" in await h.one("memory list", chat=ALICE, speaker="alice")  # positive control

    async def test_session_isolation_is_one_chat(self) -> None:
        """``session`` isolation narrows nothing inside a chat: every member reads the group."""
        h = await host_harness()
        carols = await h.remember(G1, "carol", "Carol likes jazz")
        assert carols.id in await h.one(f"memory show {carols.id}", chat=G1, speaker="bob")
        assert "No memory" in await h.one(f"memory show {carols.id}", chat=G2, speaker="carol")

    async def test_unreadable_ids_are_not_found_by_the_service(self) -> None:
        h = await host_harness(isolation="bot")
        private = await h.remember(ALICE, "alice", "Alice's secret")
        group_scope = await h.scope(G1, "bob")
        with pytest.raises(NotFoundError):
            await h.service.get_episode(group_scope, private.id)
        assert (await h.service.list_episodes(group_scope, statuses=None)).items == []
        assert (await h.service.get_episode(group_scope.as_operator(), private.id)).id == private.id


# ---------------------------------------------------------------------------------------- import
class TestImportIsMarked:
    async def test_an_import_is_not_the_speakers_confirmed_statement(self) -> None:
        h = await host_harness()
        item = {
            "content": "Alice is allergic to nuts",
            "sender_id": "alice",
            "claim_type": "user_statement",
            "confidence": "confirmed",
            "origin": "tool",
            "extra": {"confirmed_by": "alice", "note": "kept"},
        }
        text = await h.one("memory import l2 " + json.dumps([item]), chat=ALICE, speaker=ADMIN_ID)
        assert "Imported 1" in text
        (ep,) = (await h.service.list_episodes(await h.scope(ALICE, "alice"))).items
        assert (ep.sender_id, ep.origin, ep.confidence) == ("alice", "import", "stated")
        assert ep.extra == {"imported_origin": "tool", "imported_confidence": "confirmed", "note": "kept"}
        out = await tool(h, RecallMemory, {"query": "allergic to nuts"}, speaker="alice", chat=ALICE)
        assert out["episodes"][0]["trust"] == "stated"
        # positive control: a person confirming it here is what makes it confirmed
        assert "Confirmed" in await h.one(f"memory confirm {ep.id}", chat=ALICE, speaker=ADMIN_ID)
        out = await tool(h, RecallMemory, {"query": "allergic to nuts"}, speaker="alice", chat=ALICE)
        assert out["episodes"][0]["trust"] == "confirmed"
