"""Storage keys: one encoding of every id inside a composite key, exact owner checks for every key
listing, and keys that stay within the host's 255 characters whatever the id length.

Each finding is pinned by a test with its positive control: a scope whose launcher id extends
another's at ``/`` does not show its tombstones to the other; a ``:`` in a bot id does not make two
scopes share a key (document ingest, recall, the engine's retrieve, the console); a 300-character
sender or launcher id keeps a chat's memory working on the host; ordinary ids keep their keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.command.context import ExecuteContext
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy

from ltm.domain.candidates import Proposal
from ltm.domain.keys import DIGEST_MARK, KEY_PART_MAX, MAX_ID_CHARS, bot_part, key_part, key_part_value, parse_owner_key
from ltm.domain.scope import derive_scope
from ltm.domain.storage_keys import (
    audit_log_key,
    candidate_key,
    inject_key,
    l1_lock_key,
    l2_lock_key,
    parse_lock_key,
    parse_storage_key,
    profile_storage_key,
    proposal_key,
    scope_owns,
    session_profile_key,
    speaker_profile_key,
    tombstone_key,
)
from ltm.service.audit import CHUNK
from tests.support import ADMIN, KB
from tests.support.host_runtime import MAX_STORAGE_KEY_CHARS, FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.support.review import review_world

TID = "tb_0123456789abcdef"
CID = "cand_0123456789abcdef0123"
PID = "cp_0123456789abcdef0123"
# Ids the plugin accepts: no lone surrogate, no NUL (those are refused before any key is made).
ids = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=200).filter(
    lambda s: s == s.strip() and not any(c.isspace() for c in s)
)


def _all_keys(scope: Any, sender: str) -> list[str]:
    """Every storage key (and stored lock key) the service writes for one scope and speaker."""
    sp, ss = speaker_profile_key(scope, sender), session_profile_key(scope)
    return [
        profile_storage_key(sp),
        profile_storage_key(ss),
        inject_key(scope),
        f"audit/{audit_log_key(scope)}/head",
        f"audit/{audit_log_key(scope)}/c/{10**6 // CHUNK}",
        tombstone_key(scope, TID),
        candidate_key(scope, "open"),
        candidate_key(scope, "head"),
        candidate_key(scope, "i/99999"),
        candidate_key(scope, f"r/{CID}"),
        proposal_key(scope.user_key, PID),
        "fence/" + l2_lock_key(scope),
        "fence/" + l1_lock_key(sp),
        "fence/" + l1_lock_key(ss),
    ]


class TestOneEncoding:
    @given(ids, ids)
    def test_key_part_is_injective_bounded_and_separator_free(self, a: str, b: str) -> None:
        pa, pb = key_part(a), key_part(b)
        assert (pa == pb) == (a == b)
        for v, p in ((a, pa), (b, pb)):
            assert len(p) <= KEY_PART_MAX and ":" not in p and "#" not in p
            assert key_part_value(p) == (v if DIGEST_MARK not in p else None)

    @given(st.sampled_from(["person", "group"]), ids, ids, st.sampled_from(["person", "group"]), ids, ids)
    @settings(max_examples=300)
    def test_two_identities_never_share_a_key(self, lt1: str, l1: str, b1: str, lt2: str, l2: str, b2: str) -> None:
        for iso in ("session", "bot"):
            s1 = derive_scope(session_name=f"{lt1}_{l1}", bot_uuid=b1, isolation=iso)
            s2 = derive_scope(session_name=f"{lt2}_{l2}", bot_uuid=b2, isolation=iso)
            assert (s1.scope_key == s2.scope_key) == ((lt1, l1, b1) == (lt2, l2, b2))
            same_l2 = b1 == b2 if iso == "bot" else (lt1, l1, b1) == (lt2, l2, b2)
            assert (s1.user_key == s2.user_key) == same_l2

    @pytest.mark.parametrize(
        ("one", "other"),
        [
            (("person_y", "X:person_x"), ("person_x:person_y", "X")),  # the reported collision
            (("person_x", "bot"), ("person_x", "")),  # the bot-wide key's own prefix as a bot id
            (("person_a:person_b", ""), ("person_b", "person_a")),  # no bot vs a bot
            (("group_g1#session", "b1"), ("group_g1", "b1")),
            (("group_g1%3Ax", "b1"), ("group_g1:x", "b1")),  # an escape typed as an id
            (("group_g1：x", "b1"), ("group_g1:x", "b1")),  # fullwidth colon
        ],
    )
    def test_reported_and_look_alike_collisions_are_apart(self, one: tuple[str, str], other: tuple[str, str]) -> None:
        for iso in ("session", "bot"):
            a = derive_scope(session_name=one[0], bot_uuid=one[1], isolation=iso, collection=KB)
            b = derive_scope(session_name=other[0], bot_uuid=other[1], isolation=iso, collection=KB)
            assert a.scope_key != b.scope_key
            if iso == "session" or not (a.bot_uuid and a.bot_uuid == b.bot_uuid):
                assert a.user_key != b.user_key
                assert not set(_all_keys(a, "s")) & set(_all_keys(b, "s"))
        bot_wide = derive_scope(session_name="person_z", bot_uuid="person_x", isolation="bot")
        assert bot_wide.user_key != derive_scope(session_name="person_x", bot_uuid="bot").user_key

    def test_ordinary_ids_keep_the_keys_they_always_had(self) -> None:
        """No migration: the layout of ordinary ids is exactly the one stored before."""
        s = derive_scope(session_name="group_123", bot_uuid="b1-uuid", collection="kb-1", sender_id="u_9")
        assert (s.session_key, s.user_key) == ("b1-uuid:group_123", "b1-uuid:group_123")
        assert _all_keys(s, "u_9") == [
            "profile/b1-uuid:group_123#speaker:u_9",
            "profile/b1-uuid:group_123#session",
            "inject/b1-uuid:group_123",
            "audit/kb-1/b1-uuid:group_123/head",
            "audit/kb-1/b1-uuid:group_123/c/20000",
            f"tomb/kb-1/b1-uuid:group_123/{TID}",
            "cand/kb-1/b1-uuid:group_123/open",
            "cand/kb-1/b1-uuid:group_123/head",
            "cand/kb-1/b1-uuid:group_123/i/99999",
            f"cand/kb-1/b1-uuid:group_123/r/{CID}",
            f"consolidation/b1-uuid:group_123/{PID}",
            "fence/l2:kb-1:b1-uuid:group_123",
            "fence/l1:b1-uuid:group_123#speaker:u_9",
            "fence/l1:b1-uuid:group_123#session",
        ]
        b = derive_scope(session_name="person_9", bot_uuid="b1-uuid", isolation="bot", collection="kb-1")
        assert b.user_key == "bot:b1-uuid" and speaker_profile_key(b, "u_9") == "bot:b1-uuid#speaker:u_9"
        # ids that were escaped in profile keys before (% and #) keep those profile keys too
        h = derive_scope(session_name="person_a#b%c", bot_uuid="b1")
        assert session_profile_key(h) == "b1:person_a%23b%25c#session"

    @given(ids, ids, ids)
    @settings(max_examples=200)
    def test_every_key_parses_back_to_its_owner_and_no_other(self, lid: str, bot: str, sender: str) -> None:
        s = derive_scope(session_name=f"group_{lid}", bot_uuid=bot, collection=KB, sender_id=sender)
        ext = derive_scope(session_name=f"group_{lid}/x", bot_uuid=bot, collection=KB, sender_id=sender)
        for key in _all_keys(s, sender):
            assert parse_storage_key(key) is not None, key
            assert scope_owns(s, key), key  # positive control
            assert not scope_owns(ext, key), key  # an id extending this one at "/" is another scope
        owner = parse_owner_key(s.session_key)
        assert owner is not None and owner.bot_uuid in (bot, None)
        assert owner.session_name in (f"group_{lid}", None)
        if DIGEST_MARK not in key_part(lid) + bot_part(bot):  # neither id was shortened to a digest
            assert (owner.bot_uuid, owner.session_name) == (bot, f"group_{lid}")
        assert parse_lock_key(l2_lock_key(s)) is not None

    def test_longest_ids_fit_the_host_key_limit(self) -> None:
        """Ids of the longest accepted length, and the longest shape of every layout, stay within
        the host's 255 characters (the fake host refuses longer keys like the host does)."""
        huge = "%#:" * (MAX_ID_CHARS // 3)
        for iso in ("session", "bot"):
            s = derive_scope(
                session_name="group_" + huge, bot_uuid=huge, isolation=iso, collection="k" * 300, sender_id=huge
            )
            for key in _all_keys(s, huge):
                assert len(key) <= MAX_STORAGE_KEY_CHARS, (len(key), key)
                assert scope_owns(s, key)
        with pytest.raises(Exception, match="longer than"):
            derive_scope(session_name="person_" + "x" * (MAX_ID_CHARS + 1))


async def test_tombstones_of_a_scope_whose_id_extends_another_are_not_listed_there(tmp_path: Path) -> None:
    """``group_g1/x`` records a tombstone: ``group_g1`` lists none of it (service, console), the
    owner lists it (positive control), and ``group_g1``'s own tombstone is listed only there."""
    from pages.router import handle

    w = await review_world(tmp_path)
    g1 = await w.service.scope_for(kb_id=KB, session_name="group_g1", bot_uuid="bot1", sender_id="alice")
    ext = await w.service.scope_for(kb_id=KB, session_name="group_g1/x", bot_uuid="bot1", sender_id="alice")

    async def tombstone(scope: Any, text: str) -> str:
        cand = await w.review.propose(scope, Proposal(text, text, "preference"), ADMIN, origin="rules")
        return (await w.review.reject(scope, cand.id, ADMIN, "not true")).result_id

    theirs = await tombstone(ext, "I prefer the night shift.")
    assert [t.id for t in (await w.review.list_tombstones(ext))[0]] == [theirs]  # positive control
    assert await w.review.list_tombstones(g1) == ([], 0)
    mine = await tombstone(g1, "I prefer the day shift.")
    assert [t.id for t in (await w.review.list_tombstones(g1))[0]] == [mine]
    assert [t.id for t in (await w.review.list_tombstones(ext))[0]] == [theirs]

    async def console(session: str) -> list[str]:
        body = {"kb_id": KB, "session_name": session, "bot_uuid": "bot1", "sender_id": "alice"}
        r = await handle(w.service, PageRequest(endpoint="/tombstones", method="POST", body=body), review=w.review)
        assert r.error is None, r.error
        return [t["id"] for t in r.data["items"]]

    assert await console("group_g1") == [mine]
    assert await console("group_g1/x") == [theirs]


async def test_a_colon_in_a_bot_id_does_not_share_a_scope_on_any_surface(tmp_path: Path) -> None:
    """A row planted through a document for bot ``X:person_x`` + ``person_y`` is recalled there
    (positive control) and never in bot ``X`` + ``person_x:person_y`` - not by recall, the
    engine's retrieve, listing or the console, which derives the same keys."""
    from pages.router import handle

    fake = FakeHostHandler(bots=["X:person_x", "X"])
    ctl = await load_plugin(fake)
    fake.add_knowledge_base(KB)
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    await engine.on_knowledge_base_create(KB, {"embedding_model": "emb-1", "isolation": "session"})
    svc = engine.plugin.service
    planted = {"bot_uuid": "X:person_x", "session_name": "person_y", "sender_id": "y"}
    probe = {"bot_uuid": "X", "session_name": "person_x:person_y", "sender_id": "y"}
    await svc.ingest_document(KB, "doc-1", {**planted, "episodes": [{"content": "the vault code is 4711"}]}, ADMIN)

    async def seen(ident: dict[str, str]) -> dict[str, list[str]]:
        scope = await svc.scope_for(kb_id=KB, **ident)
        rec = await svc.recall(scope, "vault code", with_profiles=False)
        got = await engine.retrieve(
            RetrievalContext(
                query="vault code", knowledge_base_id=KB, collection_id=KB, retrieval_settings={"top_k": 5, **ident}
            )
        )
        page = await handle(svc, PageRequest(endpoint="/episodes", method="POST", body={"kb_id": KB, **ident}))
        assert page.error is None, page.error
        return {
            "recall": [r.episode.id for r in rec.episodes],
            "retrieve": [r.id for r in got.results],
            "list": [e.id for e in (await svc.list_episodes(scope)).items],
            "console": [e["id"] for e in page.data["items"]],
        }

    mine = await seen(planted)
    assert all(v for v in mine.values()), mine  # positive control on every surface
    assert await seen(probe) == {"recall": [], "retrieve": [], "list": [], "console": []}


def _command(fake: FakeHostHandler, session: Session, qid: int, *params: str) -> ExecuteContextProxy:
    return ExecuteContextProxy.model_validate(
        {
            **ExecuteContext(
                query_id=qid,
                session=session,
                command_text=" ".join(("memory", *params)),
                full_command_text="!" + " ".join(("memory", *params)),
                command="memory",
                crt_command="memory",
                params=["memory", *params],
                crt_params=list(params),
                privilege=2,
            ).model_dump(),
            "plugin_runtime_handler": fake,
        }
    )


@pytest.mark.parametrize("shape", ["long sender", "long launcher", "long both"])
async def test_a_very_long_id_keeps_the_chat_s_memory_working_on_the_host(shape: str) -> None:
    """300-character ids through the fake host (which refuses keys over 255 characters like the
    host): remember, update_profile, recall, the listener's injection and ``!memory`` all work, and
    the readable id stays in the record. A second long id sharing the first 299 characters is
    another speaker/chat (its own memory, none of the first's)."""
    from tests.surfaces.test_plugin_smoke import BOT, query_vars, run_listener

    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base("kb-smoke")
    ctl = await load_plugin(fake)
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    await engine.on_knowledge_base_create("kb-smoke", {"embedding_model": "emb-1", "isolation": "session"})
    long_id = "7" * 300
    sender = long_id if shape != "long launcher" else "u1"
    launcher = long_id if shape != "long sender" else "u1"
    session = Session(launcher_type="person", launcher_id=launcher, sender_id=sender, bot_uuid=BOT)
    fake.add_query(1, {**query_vars("hi", launcher, sender)}, bot_uuid=BOT, pipeline_kbs=["kb-smoke"])
    out = await component(ctl, "Tool", "remember").call({"content": "Ursula drinks jasmine tea"}, session, 1)
    assert out["ok"] is True, out
    upd = await component(ctl, "Tool", "update_profile").call({"name": "Ursula"}, session, 1)
    assert upd["ok"] is True, upd
    assert upd["profile"]["sender_id"] == sender  # the readable id, whatever the key holds
    assert max(len(k) for k in fake.storage) <= MAX_STORAGE_KEY_CHARS
    rec = await component(ctl, "Tool", "recall_memory").call({"query": "tea"}, session, 1)
    assert [e["id"] for e in rec["episodes"]] == [out["id"]]
    ctx = await run_listener(ctl, fake, 2, "what tea do I like?", session=launcher)
    if shape == "long launcher" or shape == "long both":
        # run_listener's sender is the launcher id: the listener sees this chat's memory
        assert "jasmine tea" in ctx.event.default_prompt[-1].content
    cmd = component(ctl, "Command", "memory")
    for params in ((), ("list",), ("tombstones",), ("profile",)):
        replies = [r async for r in cmd._execute(_command(fake, session, 1, *params))]
        text = "\n".join(r.text for r in replies)
        assert text and "Something went wrong" not in text, (params, text)
    listed = "\n".join([r.text async for r in cmd._execute(_command(fake, session, 1, "list"))])
    assert "jasmine tea" in listed
    # a near-identical long id is someone else
    near = Session(
        launcher_type="person",
        launcher_id=launcher if shape == "long sender" else long_id[:-1] + "8",
        sender_id=sender if shape == "long launcher" else long_id[:-1] + "8",
        bot_uuid=BOT,
    )
    fake.add_query(3, query_vars("hi", near.launcher_id, near.sender_id), bot_uuid=BOT, pipeline_kbs=["kb-smoke"])
    prof = await component(ctl, "Tool", "recall_memory").call({"query": "tea", "speaker": "current"}, near, 3)
    assert not (prof.get("speaker_profile") or {}).get("name"), prof
    if shape != "long sender":
        assert prof["episodes"] == []
    # the console finds the chat by its readable id
    page = component(ctl, "Page", "console")
    scopes = await page.handle_api(PageRequest(endpoint="/scopes", method="GET", body={}))
    assert f"person_{launcher}" in {s["session_name"] for s in scopes.data["scopes"]}
    assert json.dumps(scopes.data).count(DIGEST_MARK) == 0
