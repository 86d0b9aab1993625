"""A plugin restart during a chat turn, through the ``remember`` tool of the real plugin.

- The natural retry of a write whose answer was lost is idempotent: an identical active memory of
  the same scope and speaker stored within ``REMEMBER_RETRY_WINDOW_S`` is returned (same id, no
  second copy, one audit entry) - also while the scope is fenced, which is how a write of unknown
  outcome is found. Outside the window, another speaker, other times: a new memory (controls).
- A write whose outcome is unknown tells the model so (``outcome: "unknown"``, a localized message),
  never a raw host exception.
- After a restart the plugin answers at once: the journal is settled in the background, writes wait
  for it, reads do not; the interrupted write is audited once.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.domain.timefields import now_utc
from ltm.service import memory_service
from ltm.service.sealing import unseal
from main import compose
from tests.support import Clock, seal_keys
from tests.support.reliability import (
    CONNECTION_AFTER,
    CONNECTION_BEFORE,
    TIMEOUT_AFTER,
    FaultyHost,
    assert_clear_message,
    component,
    load_plugin,
)

KB = "kb-turn"
BOT = "bot-turn"


def _vars(sender: str) -> dict[str, Any]:
    return {
        "launcher_type": "group",
        "launcher_id": "g1",
        "sender_id": sender,
        "session_id": "group_g1",
        "sender_name": sender,
        "user_message_text": "remember this",
        "_knowledge_base_uuids": [KB],
    }


class Turn:
    def __init__(self, fake: FaultyHost, ctl: Any) -> None:
        self.fake, self.ctl, self.qid = fake, ctl, 0
        self.session = Session(launcher_type="group", launcher_id="g1", sender_id="alice", bot_uuid=BOT)

    @property
    def service(self) -> Any:
        return self.ctl.plugin_container.plugin_instance.service

    async def remember(self, params: dict[str, Any], sender: str = "alice") -> dict[str, Any]:
        self.qid += 1
        self.fake.add_query(self.qid, _vars(sender), bot_uuid=BOT, pipeline_kbs=[KB])
        out = await component(self.ctl, "Tool", "remember").call(params, self.session, self.qid)
        json.dumps(out)  # the host serialises tool results
        return out

    async def recall(self, query: str) -> dict[str, Any]:
        self.qid += 1
        self.fake.add_query(self.qid, _vars("alice"), bot_uuid=BOT, pipeline_kbs=[KB])
        return await component(self.ctl, "Tool", "recall_memory").call({"query": query}, self.session, self.qid)


async def _turn(fake: FaultyHost | None = None, *, register: bool = True) -> Turn:
    if fake is None:
        fake = FaultyHost(bots=[BOT])
        fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake)
    turn = Turn(fake, ctl)
    if register:
        await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
    return turn


def _rows(fake: FaultyHost) -> list[str]:
    """The texts of the stored rows, each opened with the seal key storage holds (ltm/service/sealing.py)."""
    keys = seal_keys(fake.storage)
    mds = [
        unseal(m, str(m.get("episode_id")), keys.get(str(m.get("episode_id"))))
        for m in fake.vector_rows(KB)["metadatas"]
    ]
    return sorted(str(m.get("text")) for m in mds)


def _audits(fake: FaultyHost, operation: str, target: str) -> int:
    n = 0
    for k, v in fake.storage.items():
        if k.startswith("audit/") and "/c/" in k:
            n += sum(1 for e in json.loads(v) if e.get("operation") == operation and target in e.get("targets", []))
    return n


async def test_remember_retry_returns_the_existing_memory_audited_once() -> None:
    t = await _turn()
    first = await t.remember({"content": "Alice's flight lands at 9", "tags": ["plan"]})
    assert first["ok"] and "already_stored" not in first
    again = await t.remember({"content": "alice's flight lands at 9.", "importance": 0.9})  # same, normalised
    assert again == {**first, "already_stored": True}
    assert _rows(t.fake) == ["Alice's flight lands at 9"]
    assert _audits(t.fake, "episode.remember", first["id"]) == 1

    # controls: each of these is a new memory
    other_speaker = await t.remember({"content": "Alice's flight lands at 9"}, sender="bob")
    other_time = await t.remember({"content": "Alice's flight lands at 9", "event_at": "2025-05-01T09:00:00Z"})
    other_text = await t.remember({"content": "Alice's flight lands at 10"})
    ids = {first["id"], other_speaker["id"], other_time["id"], other_text["id"]}
    assert len(ids) == 4 and not any(o.get("already_stored") for o in (other_speaker, other_time, other_text))
    assert len(_rows(t.fake)) == 4


async def test_retry_outside_the_window_or_of_a_retired_memory_stores_again() -> None:
    t = await _turn()
    plugin = t.ctl.plugin_container.plugin_instance
    clock = Clock()  # the installation is made with a clock the test moves
    plugin.adopt(compose(plugin, clock=clock))
    first = await t.remember({"content": "Alice moved to Lyon"})
    real = now_utc
    clock.set(lambda: real() + timedelta(seconds=memory_service.REMEMBER_RETRY_WINDOW_S + 5))
    late = await t.remember({"content": "Alice moved to Lyon"})
    # issue 27: outside the window it is no retry, but a restatement of an active memory: it
    # reinforces that memory (already_known) instead of storing a second row
    assert late["ok"] and "already_stored" not in late
    assert late["id"] == first["id"] and late["already_known"] and first["id"] in late["note"]
    clock.set(real)
    # a corrected (superseded) memory is not "identical active": restating it stores it again
    fixed = await t.remember({"content": "Alice moved to Lille", "supersedes": [first["id"]]})
    assert fixed["superseded"] == [first["id"]]
    back = await t.remember({"content": "Alice moved to Lyon", "supersedes": [fixed["id"]]})
    assert back["ok"] and back["id"] not in (first["id"], late["id"]) and "already_stored" not in back
    assert "already_known" not in back


@pytest.mark.parametrize("fault", [CONNECTION_AFTER, TIMEOUT_AFTER], ids=lambda f: f.name)
async def test_unknown_outcome_is_told_plainly_and_the_retry_finds_the_stored_memory(fault: Any) -> None:
    t = await _turn()
    t.fake.arm_action(A.VECTOR_UPSERT, fault)
    lost = await t.remember({"content": "Alice is allergic to peanuts"})
    assert lost["ok"] is False and lost["outcome"] == "unknown", lost
    assert "may or may not" in lost["error"] and "Connection closed" not in lost["error"]
    assert_clear_message(lost["error"])
    assert _rows(t.fake) == ["Alice is allergic to peanuts"]  # it landed
    assert await t.service.fences()  # and the scope is fenced

    retry = await t.remember({"content": "Alice is allergic to peanuts"})
    assert retry["ok"] and retry["already_stored"] and _rows(t.fake) == ["Alice is allergic to peanuts"]
    # any other write to the fenced scope: paused, told plainly (and nothing written)
    other = await t.remember({"content": "Alice likes hiking"})
    assert other["ok"] is False and other["outcome"] == "unknown" and "paused" in other["error"]
    assert_clear_message(other["error"])
    assert _rows(t.fake) == ["Alice is allergic to peanuts"]
    assert (await t.recall("peanuts"))["episodes"][0]["content"] == "Alice is allergic to peanuts"  # reads work


async def test_unknown_outcome_that_did_not_land_is_not_invented_by_the_retry() -> None:
    t = await _turn()
    t.fake.arm_action(A.VECTOR_UPSERT, CONNECTION_BEFORE)
    lost = await t.remember({"content": "Alice is allergic to peanuts"})
    assert lost["outcome"] == "unknown" and _rows(t.fake) == []
    retry = await t.remember({"content": "Alice is allergic to peanuts"})
    assert retry["ok"] is False and retry["outcome"] == "unknown" and _rows(t.fake) == []


async def test_unknown_outcome_message_is_localized() -> None:
    t = await _turn()
    t.ctl.plugin_container.plugin_instance.config = {"language": "zh_Hans"}
    t.fake.arm_action(A.VECTOR_UPSERT, CONNECTION_AFTER)
    lost = await t.remember({"content": "Alice is allergic to peanuts"})
    assert lost["outcome"] == "unknown" and "未确认" in lost["error"]
    assert_clear_message(lost["error"], lang="zh_Hans")


async def test_restart_during_the_turn_answers_at_once_and_the_retry_is_not_a_second_copy() -> None:
    t1 = await _turn()
    fake = t1.fake
    await t1.remember({"content": "Alice keeps bees"})
    frozen = asyncio.Event()

    async def die_before_the_audit(action: A, data: dict[str, Any]) -> None:
        if action is A.SET_PLUGIN_STORAGE and str(data.get("key", "")).startswith("audit/"):
            frozen.set()
            await asyncio.Event().wait()  # the old process is gone: this call never returns

    fake.pause = die_before_the_audit
    old_turn = asyncio.create_task(t1.remember({"content": "Alice's hive is on the roof"}))
    await asyncio.wait_for(frozen.wait(), 10)
    assert "Alice's hive is on the roof" in _rows(fake)  # applied, the answer lost with the process

    release = asyncio.Event()

    async def slow_recovery(action: A, data: dict[str, Any]) -> None:
        if action is A.GET_PLUGIN_STORAGE and str(data.get("key", "")).startswith("journal/"):
            await release.wait()  # recovery reading the interrupted operation's journal entry

    fake.pause = slow_recovery
    try:
        t2 = await asyncio.wait_for(_turn(fake, register=False), 10)  # initialize did not wait for recovery
        assert t2.service.recovering
        keys = seal_keys(fake.storage)
        opened = [
            unseal(m, str(m["episode_id"]), keys.get(str(m["episode_id"]))) for m in fake.vector_rows(KB)["metadatas"]
        ]
        hive = next(m for m in opened if m["text"] == "Alice's hive is on the roof")
        # the model's retry: recognised, nothing stored twice (the lookup needs no recovery)
        retry = await t2.remember({"content": "Alice's hive is on the roof"})
        assert retry["ok"] and retry["already_stored"] and retry["id"] == hive["episode_id"]
        # a new write waits for recovery
        new = asyncio.create_task(t2.remember({"content": "Alice sells honey"}))
        await asyncio.sleep(0.3)
        assert not new.done() and "Alice sells honey" not in _rows(fake)
        release.set()
        assert (await asyncio.wait_for(new, 10))["ok"]
        assert not t2.service.recovering
        assert _audits(fake, "episode.remember", hive["episode_id"]) == 1  # written by recovery, once
        assert sorted(_rows(fake)) == ["Alice keeps bees", "Alice sells honey", "Alice's hive is on the roof"]
        assert not [k for k in fake.storage if k.startswith("journal/")] and not await t2.service.fences()
    finally:
        release.set()
        fake.pause = None
        old_turn.cancel()
