"""Tombstones with an audience (issue 35, findings 2 and 3), in ``bot`` isolation where a person's
private chat and every group of the bot share one scope.

- A private chat's ``forget --never`` and an admin's rejection of a private candidate are listed,
  shown, lifted and enforced only where that private chat's audience reads: a group member, a group
  admin and another person's private chat see none of it (no id, no "by", no reason), and the same
  words said there are stored. Positive controls: the person's own private chat still lists it with
  its reason and still refuses the value; the console's operator lists it.
- A member's ``--never`` binds only that member's own statements (whatever the words); an admin's
  ``--never`` on a shared memory still binds everyone who reads it (the control).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.errors import NotFoundError, TombstonedError
from ltm.domain.scope import Scope
from ltm.i18n import error_text
from ltm.service import Actor, MemoryService, Settings
from ltm.service.review import ReviewQueue, ReviewSettings
from tests.support import build_service, scope_of, with_review
from tests.support.review import ticking_clock

ROOT = Actor(surface="test", sender_id="root")  # listed in admin_sender_ids
SECRET = "Mallory was fired for stealing from the till"
REASON = "my private business"


@dataclass
class Bot:
    svc: MemoryService
    review: ReviewQueue
    alice_dm: Scope
    mallory_dm: Scope

    async def at(self, session: str, sender: str) -> Scope:
        return await scope_of(self.svc, session, sender)


async def bot_world(tmp: Path) -> Bot:
    svc = await build_service(
        "numpy",
        tmp,
        settings=lambda: Settings.from_config({"admin_sender_ids": ["root"]}),
        isolation="bot",
        clock=ticking_clock(),
        review=with_review(settings=lambda: ReviewSettings.from_config({})),
    )
    review = svc.review
    assert review is not None
    return Bot(
        svc, review, await scope_of(svc, "person_alice", "alice"), await scope_of(svc, "person_mallory", "mallory")
    )


def actor(sender: str) -> Actor:
    return Actor(surface="tool", sender_id=sender)


async def _private_never(w: Bot) -> str:
    """Mallory's own memory in her private chat, forgotten for good by herself; the tombstone id."""
    ep = (await w.svc.remember(w.mallory_dm, {"content": SECRET}, actor("mallory"))).episode
    await w.svc.forget(w.mallory_dm, ep.id, actor("mallory"), reason=REASON, never=True)
    (tb,), _ = await w.review.list_tombstones(w.mallory_dm)  # positive control: her own chat lists it
    assert tb.reason == REASON and tb.by.get("sender_id") == "mallory"
    return tb.id


class TestPrivateDecisionsStayPrivate:
    async def test_a_private_never_is_not_listed_in_a_group_nor_in_another_private_chat(self, tmp_path: Path) -> None:
        w = await bot_world(tmp_path)
        tid = await _private_never(w)
        for session, sender in (("group_g1", "bob"), ("group_g1", "root"), ("person_alice", "alice")):
            items, total = await w.review.list_tombstones(await w.at(session, sender))
            assert (items, total) == ([], 0), (session, sender)
        operator = (await w.at("group_g1", "bob")).as_operator()  # the console reads every audience
        assert [tb.id for tb in (await w.review.list_tombstones(operator))[0]] == [tid]

    async def test_a_private_never_binds_nobody_outside_that_chat(self, tmp_path: Path) -> None:
        w = await bot_world(tmp_path)
        await _private_never(w)
        for session, sender in (("group_g1", "root"), ("group_g1", "bob"), ("person_alice", "alice")):
            scope = await w.at(session, sender)
            stored = (await w.svc.remember(scope, {"content": SECRET}, actor(sender))).episode
            assert stored.content == SECRET, (session, sender)  # no refusal: nothing about who or why
        with pytest.raises(TombstonedError) as exc:  # positive control: her own chat still refuses it
            await w.svc.remember(w.mallory_dm, {"content": SECRET}, actor("mallory"))
        assert REASON in error_text(exc.value, "en_US")

    async def test_a_group_admin_cannot_lift_what_it_cannot_see(self, tmp_path: Path) -> None:
        w = await bot_world(tmp_path)
        tid = await _private_never(w)
        group_admin = await w.at("group_g1", "root")
        with pytest.raises(NotFoundError) as missing:
            await w.review.lift_tombstone(group_admin, tid, ROOT)
        with pytest.raises(NotFoundError) as unknown:
            await w.review.lift_tombstone(group_admin, "tb_0123456789abcdef", ROOT)
        # the refusal is the one a tombstone that does not exist gets, up to the id asked for
        assert error_text(missing.value, "en_US").replace(tid, "X") == error_text(unknown.value, "en_US").replace(
            "tb_0123456789abcdef", "X"
        )
        root_dm = (await w.at("person_mallory", "root")).as_operator()  # control: the operator can
        assert (await w.review.lift_tombstone(root_dm, tid, Actor.console("ops"))).id == tid

    async def test_a_rejected_private_candidate_keeps_its_reason_private(self, tmp_path: Path) -> None:
        w = await bot_world(tmp_path)
        text = "I owe the bank money"
        cand = await w.review.propose(w.alice_dm, Proposal(text, text, "fact"), actor("alice"), origin="rules")
        await w.review.reject(w.alice_dm, cand.id, ROOT, "admin: not for memory")
        group = await w.at("group_g1", "bob")
        assert await w.review.list_tombstones(group) == ([], 0)
        (tb,), _ = await w.review.list_tombstones(w.alice_dm)  # control: her chat lists it with the reason
        assert tb.reason == "admin: not for memory" and tb.kind == "rejected"


class TestAMembersNeverBindsOnlyThemselves:
    async def test_a_members_never_on_a_group_memory_binds_only_her_own_statements(self, tmp_path: Path) -> None:
        w = await bot_world(tmp_path)
        group_mallory = await w.at("group_g1", "mallory")
        ep = (await w.svc.remember(group_mallory, {"content": SECRET}, actor("mallory"))).episode
        await w.svc.forget(group_mallory, ep.id, actor("mallory"), reason=REASON, never=True)
        for sender in ("bob", "root"):  # nobody else is bound, admins included
            scope = await w.at("group_g1", sender)
            assert (await w.svc.remember(scope, {"content": SECRET}, actor(sender))).episode.sender_id == sender
        with pytest.raises(TombstonedError):  # control: her own statement is refused
            await w.svc.remember(group_mallory, {"content": SECRET}, actor("mallory"))

    async def test_an_admins_never_on_a_shared_memory_binds_everyone_who_reads_it(self, tmp_path: Path) -> None:
        w = await bot_world(tmp_path)
        group_bob = await w.at("group_g1", "bob")
        ep = (await w.svc.remember(group_bob, {"content": "The office moves to Lyon"}, actor("bob"))).episode
        await w.svc.forget(await w.at("group_g1", "root"), ep.id, ROOT, reason="rumour", never=True)
        for session, sender in (("group_g1", "carol"), ("group_g2", "dave"), ("person_alice", "alice")):
            with pytest.raises(TombstonedError):
                await w.svc.remember(
                    await w.at(session, sender), {"content": "The office moves to Lyon"}, actor(sender)
                )
        items, _ = await w.review.list_tombstones(await w.at("group_g2", "dave"))  # shared: listed everywhere
        assert [tb.reason for tb in items] == ["rumour"]
