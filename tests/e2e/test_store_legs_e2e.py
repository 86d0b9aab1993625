"""Isolation and forgetting checked in LangBot's vector store itself, on whichever storage the stack runs
(``LTM_E2E_DB`` / ``LTM_E2E_VDB``; the legs of ``scripts/test-e2e-legs``: PostgreSQL + pgvector, SQLite +
Milvus Lite, PostgreSQL + Chroma, PostgreSQL + SeekDB; and the default SQLite + Chroma).

Two people and a group each tell the bot a fact about the same thing: each chat's later prompt carries
its own fact and no other's, and the host's retrieve for each scope returns its own record only. A
forgotten memory leaves the vector store (its record read raw, by id, through ``tests/e2e/store_reader.py``)
and LangBot's plugin storage, while a kept one stays: what "forget" means on a store that drops metadata
as much as on Chroma.
"""

from __future__ import annotations

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack
from tests.e2e.store_reader import plugin_rows, stored_until, vector_rows
from tests.e2e.test_langbot_e2e import (
    all_texts,
    call_tool,
    injected_texts,
    needs_fake_model,
    remember,
    retrieved_texts,
)
from tests.e2e.test_storage_backends_e2e import retrieve_until

pytestmark = pytest.mark.e2e

# one colour word per chat: in its own prompt and retrieve, never in another's
COLOURS = {"alice": "saffron", "bob": "cobalt", "group": "viridian"}
SECRET = "Quillon keeps the boathouse padlock code on a card taped under the third oar rack"
CONTROL = "Quillon repaints the rowing boats every April"


@needs_fake_model
def test_two_people_and_a_group_keep_their_memories_apart(stack: Stack) -> None:
    with stack.connect() as alice, stack.connect() as bob, stack.connect("group") as group:
        chats = {"alice": alice, "bob": bob, "group": group}
        ids = [remember(alice, f"My canoe is painted {COLOURS['alice']}")["id"]]
        ids.append(remember(bob, f"My canoe is painted {COLOURS['bob']}")["id"])
        # group messages need the pipeline's trigger prefix ("ai"); the runner sees the text without it
        said = call_tool(
            group, "remember", {"content": f"Our club canoe is painted {COLOURS['group']}"}, preface="ai Please."
        )
        assert isinstance(said, dict) and said.get("ok") is True and said.get("id"), f"remember in the group: {said}"
        ids.append(said["id"])
        rows = vector_rows(stack)
        if rows is not None:  # the three records are rows of LangBot's own store, not only of a plugin cache
            stored = {r.id: r for r in rows}
            assert set(ids) <= set(stored), f"not in {stack.backends.vdb}: {set(ids) - set(stored)}"
            if stack.backends.vdb in ("pgvector", "milvus"):
                # the store filters on file_id alone: each chat's record carries its own
                assert len({stored[i].file_id for i in ids}) == 3, [stored[i] for i in ids]

        questions = {"alice": "What colour is my canoe?", "bob": "What colour is my canoe?"}
        questions["group"] = "ai What colour is our club canoe?"
        for name, chat in chats.items():
            turn = chat.send(questions[name])
            own, others = COLOURS[name], [c for n, c in COLOURS.items() if n != name]
            assert any(own in s.lower() for s in injected_texts(turn.prompt)), (
                f"positive control: {name}'s own fact is not in its memory block: {injected_texts(turn.prompt)}"
            )
            leaked = [t for t in all_texts(turn.prompt) if any(c in t.lower() for c in others)]
            assert turn.requests and not leaked, f"another chat's memory reached {name}'s model: {leaked}"

            scope = {"session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID}
            got = retrieve_until(stack, "what colour is the canoe painted", scope, own)
            assert own in got, f"positive control: {name}'s record is not retrieved in its scope: {got}"
            assert not any(c in got for c in others), f"{name}'s scope retrieves another chat's record: {got}"


@needs_fake_model
def test_forget_takes_the_record_out_of_the_vector_store_and_plugin_storage(stack: Stack) -> None:
    with stack.connect() as chat:
        secret = remember(chat, SECRET)
        control = remember(chat, CONTROL)
        scope = {"session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID}
        query = "where is the boathouse padlock code"
        before = retrieve_until(stack, query, scope, "padlock")
        assert "padlock" in before, f"positive control: the memory is not retrievable before the forget: {before}"
        chat.send("Where is the boathouse padlock code? And when are the boats repainted?")  # a last-turn snapshot
        # the recall snapshot is flushed in the background, 2 s after the last change
        assert stored_until(stack, SECRET), "positive control: the turn's snapshot in plugin storage shows it"
        rows = vector_rows(stack)
        if rows is not None:
            ids = {r.id for r in rows}
            assert {secret["id"], control["id"]} <= ids, f"positive control: not in {stack.backends.vdb}: {ids}"
            plain = [r.id for r in rows if "Quillon" in r.text]
            assert not plain, f"{stack.backends.vdb} holds the plain text of {plain} (memories are sealed there)"

        forgot = call_tool(chat, "forget", {"episode_id": secret["id"], "reason": "user asked"})
        assert isinstance(forgot, dict) and forgot.get("ok") is True, forgot

        after = retrieved_texts(stack.kb_retrieve(query, scope))
        assert "padlock" not in after, f"the forgotten memory is still retrieved: {after}"
        listing = chat.command("!memory list")
        assert "rowing boats" in listing, f"positive control: the kept memory is not listed:\n{listing}"
        assert "padlock" not in listing, f"the forgotten memory is still listed:\n{listing}"

    rows = vector_rows(stack)
    if rows is not None:
        ids = {r.id for r in rows}
        assert secret["id"] not in ids, f"the forgotten record is still in {stack.backends.vdb}"
        named = [r for r in rows if secret["id"] in (r.uuid, r.text) or secret["id"] in r.file_id]
        assert not named, f"a record still names the forgotten id: {named}"
        assert control["id"] in ids, f"positive control: the kept record left {stack.backends.vdb} too"
    assert SECRET not in plugin_rows(stack), "the forgotten text is still in plugin storage"
    # the kept memory's recall snapshot may be rewritten in the background after the forget
    assert stored_until(stack, CONTROL), "positive control: the kept memory is still in plugin storage"
    assert SECRET not in plugin_rows(stack), "a background rewrite brought the forgotten text back"
