"""Short references in ``bot`` isolation never reach, or reveal, a row the reader may not read.

All chats of a bot share one store there, and another person's private chat is hidden from every
other chat by the read rule. A short reference is resolved among the rows the reader can read: one
that names only hidden rows is "not found" (never "ambiguous", which would say they exist), a prefix
a readable row shares with a hidden one names the readable row, and the answer never carries a
hidden row's id or text. The block's references are unique among the rows its reader can read, so
their length says nothing about hidden rows either. Every refusal has its positive control: the
owner, in the owner's chat, resolves the same reference.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from e2e.block_reader import read_block
from ltm.domain import models
from ltm.domain.errors import LtmError, NotFoundError
from ltm.i18n import error_text
from ltm.service import Actor, MemoryService
from ltm.service.injection import context_payload, render_block
from tests.support import ADMIN, build_service, scope_of
from tests.support.backends import ENGINES

BOB = Actor(surface="tool", sender_id="bob")
ALICE = Actor(surface="tool", sender_id="alice")
HIDDEN = ["ep_4f2a1b" + "0" * 14, "ep_9c07e" + "2" * 15, "ep_9c07e" + "3" * 15]  # Bob's private chat
SHARED_ROW = "ep_4f2a1b" + "1" * 14  # said in the group: shares six digits with a hidden row
PLANNED = [HIDDEN[0], HIDDEN[1], HIDDEN[2], SHARED_ROW]


@pytest.fixture(params=list(ENGINES))
async def bot_service(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryService]:
    svc = await build_service(request.param, tmp_path, isolation="bot")
    yield svc
    close = getattr(svc.vectors, "close", None)
    if close:
        close()


@pytest.fixture
def planned_ids(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    feed = itertools.chain(PLANNED, (f"ep_{n:020x}" for n in itertools.count(1)))
    monkeypatch.setattr(models, "new_episode_id", lambda: next(feed))
    return PLANNED


async def _world(svc: MemoryService) -> tuple:
    bob_private = await scope_of(svc, "person_bob", "bob")
    for text in ("Bob's bank PIN hint is his cat", "Bob sees a therapist", "Bob's salary is 90k"):
        await svc.remember(bob_private, {"content": text}, BOB)
    group = await scope_of(svc, "group_g1", "alice")
    await svc.remember(group, {"content": "Alice keeps two cats at home"}, ALICE)
    return bob_private, group


def _reveals(exc: LtmError) -> str:
    """Everything the refusal shows or carries: its text in two languages, its arguments."""
    return " ".join([str(exc), error_text(exc, "en_US"), error_text(exc, "zh_Hans"), repr(exc.params)])


async def test_a_reference_to_only_hidden_rows_is_not_found(bot_service: MemoryService, planned_ids: list[str]) -> None:
    svc = bot_service
    bob_private, group = await _world(svc)
    readers = [group, await scope_of(svc, "group_g1", "carol"), await scope_of(svc, "person_alice", "alice")]
    for reader in readers:
        for ref in ("9c07e2", "ep_9c07e2", "4f2a1b0", "9c07e"):  # one hidden row; two hidden rows
            for call in (
                lambda r=reader, f=ref: svc.get_episode(r, f),
                lambda r=reader, f=ref: svc.forget(r, f, ADMIN),
                lambda r=reader, f=ref: svc.confirm_episode(r, f, ADMIN),
                lambda r=reader, f=ref: svc.set_status(r, f, "archived", ADMIN),
                lambda r=reader, f=ref: svc.remember(r, {"content": "Bob is fine", "supersedes": [f]}, ADMIN),
            ):
                with pytest.raises(NotFoundError) as refused:  # never "ambiguous": that says rows exist
                    await call()
                shown = _reveals(refused.value)
                for hidden in HIDDEN:
                    assert hidden not in shown and hidden[3:] not in shown
                assert "Bob" not in shown and "therap" not in shown
    for hidden in HIDDEN:  # nothing of Bob's changed
        assert (await svc.get_episode(bob_private, hidden)).status == "active"
    # positive control: in Bob's own chat the same references resolve
    assert (await svc.get_episode(bob_private, "9c07e2")).id == HIDDEN[1]
    assert (await svc.get_episode(bob_private, "4f2a1b0")).id == HIDDEN[0]
    with pytest.raises(LtmError) as two:
        await svc.get_episode(bob_private, "9c07e")
    assert two.value.key == "error.ref_ambiguous"  # the owner reads both rows: for him it is ambiguous


async def test_a_prefix_shared_with_a_hidden_row_names_the_readable_one(
    bot_service: MemoryService, planned_ids: list[str]
) -> None:
    svc = bot_service
    bob_private, group = await _world(svc)
    assert (await svc.get_episode(group, "4f2a1")).id == SHARED_ROW  # as if the hidden row were not there
    assert (await svc.get_episode(bob_private, "4f2a1b1")).id == SHARED_ROW  # control: Bob reads both
    with pytest.raises(LtmError) as both:
        await svc.get_episode(bob_private, "4f2a1")
    assert both.value.key == "error.ref_ambiguous"


async def test_the_block_shows_references_unique_among_readable_rows(
    bot_service: MemoryService, planned_ids: list[str]
) -> None:
    """The block in the group names the group's memory by the shortest prefix no readable row shares:
    a longer one would say that a hidden row starts with the same digits."""
    svc = bot_service
    bob_private, group = await _world(svc)
    res = await svc.recall(group, "Alice cats", with_profiles=False)
    data = read_block(render_block(context_payload(res, {"id": "alice", "name": ""}), "en_US"))
    assert data is not None
    shown = {r["content"]: r["id"] for r in data["episodes"]}
    assert shown == {"Alice keeps two cats at home": "4f2a1"}
    # control: in Bob's chat both rows are readable, so there the references are longer
    res = await svc.recall(bob_private, "Bob cat cats", with_profiles=False)
    data = read_block(render_block(context_payload(res, {"id": "bob", "name": ""}), "en_US"))
    assert data is not None
    refs = {r["content"]: r["id"] for r in data["episodes"]}
    assert refs["Bob's bank PIN hint is his cat"] == "4f2a1b0"
    assert refs["Alice keeps two cats at home"] == "4f2a1b1"
    # the group's reference acts on exactly the group's memory
    assert (await svc.forget(group, shown["Alice keeps two cats at home"], ALICE)).id == SHARED_ROW
    assert (await svc.get_episode(bob_private, HIDDEN[0])).status == "active"
