"""``forget-me`` racing turns in other chats (issue 35): while Alice's erasure runs, Bob and Carol
keep talking in the group and in their private chats, and Alice herself says something new in a
group. Whatever the interleaving (seeded schedules of yields between the steps):

- every memory Alice had before the erasure started is gone, from the listing and the vector store;
- every memory anyone else said, before or during, is there (the control);
- what Alice said during the erasure is either erased or listed by ``me`` afterwards, never half
  (the listing and the store agree), and no write fence is left behind.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from ltm.domain.filters import Criteria, scope_filter
from ltm.service import Actor
from tests.support import KB, build_service, scope_of, with_review

SCHEDULES = range(8)


def actor(sender: str) -> Actor:
    return Actor(surface="tool", sender_id=sender)


@pytest.mark.parametrize("seed", SCHEDULES)
async def test_erasure_racing_other_chats(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    svc = await build_service("numpy", tmp_path / str(seed), isolation="bot", review=with_review())
    alice_dm = await scope_of(svc, "person_alice", "alice")
    alice_g = await scope_of(svc, "group_g1", "alice")
    bob_g = await scope_of(svc, "group_g1", "bob")
    carol_dm = await scope_of(svc, "person_carol", "carol")
    before = [f"Alice fact number {i}" for i in range(6)]
    for i, text in enumerate(before):
        await svc.remember(alice_dm if i % 2 else alice_g, {"content": text}, actor("alice"))
    await svc.update_profile(alice_g, {"target": "speaker", "name": "Alice"}, actor("alice"))

    others: list[str] = []

    async def talk(scope, sender: str, n: int) -> None:  # noqa: ANN001 - a Scope
        for i in range(n):
            for _ in range(rnd.randint(0, 3)):
                await asyncio.sleep(0)
            text = f"{sender} says thing {i}"
            await svc.remember(scope, {"content": text}, actor(sender))
            await svc.recall(scope, "thing", with_profiles=True)
            others.append(text)

    async def alice_meanwhile() -> None:
        for _ in range(rnd.randint(0, 6)):
            await asyncio.sleep(0)
        await svc.remember(alice_g, {"content": "Alice said this during the erasure"}, actor("alice"))

    async def erase() -> int:
        for _ in range(rnd.randint(0, 4)):
            await asyncio.sleep(0)
        code = svc.forget_me_code(alice_dm, actor("alice"))
        return (await svc.forget_me(alice_dm, actor("alice"), code)).episodes

    results = await asyncio.gather(talk(bob_g, "bob", 4), talk(carol_dm, "carol", 3), alice_meanwhile(), erase())
    erased = results[-1]
    assert erased >= len(before)

    page = await svc.sealed.list(KB, scope_filter(alice_dm.user_key, Criteria(statuses=None)), 10_000, 0)  # opened
    stored = {str(i.metadata.get("text") or i.document) for i in page.items}
    assert not set(before) & stored, "a memory Alice had before the erasure survived it"
    assert set(others) <= stored, "someone else's memory was erased"
    held = await svc.my_memory(alice_dm, actor("alice"))
    listed = {e.content for _kb, e in held.episodes}
    late = "Alice said this during the erasure"
    assert listed == ({late} & stored)  # erased, or listed: the listing and the store agree
    assert erased == len(before) + (late not in stored)
    assert await svc.fences() == {}
