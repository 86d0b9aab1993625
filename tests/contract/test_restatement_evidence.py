"""Small wrongs through the service (issue 36, finding 4): after many restatements a memory keeps
the newest evidence references, not the oldest; the recall trace does not call another speaker's
identical words a repeat. Each with its positive control."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ltm.domain.timefields import now_utc
from ltm.service import MemoryService
from ltm.service.episodes import REMEMBER_RETRY_WINDOW_S, SEEN_REFS
from tests.support import ADMIN, Clock, build_service, scope_of

FACT = "Alice lives in Lisbon"


async def test_many_restatements_keep_the_newest_evidence(tmp_path: Path) -> None:
    clock = Clock()
    svc = await build_service("numpy", tmp_path, clock=clock)
    a = await scope_of(svc, "person_alice", "alice")
    real = now_utc
    first, _ = await svc.remember(a, {"content": FACT, "source_ref": "query:0"}, ADMIN)
    times = SEEN_REFS + 5
    for i in range(1, times + 1):
        # each restatement comes after the retry window: a restatement, not a retry of a write
        clock.set(lambda i=i: real() + timedelta(seconds=i * (REMEMBER_RETRY_WINDOW_S + 5)))
        again = await svc.remember(a, {"content": FACT, "source_ref": f"query:{i}"}, ADMIN)
        assert again.already_known and again.episode.id == first.id, i
    stored = await svc.get_episode(a, first.id)
    assert stored.extra["seen"] == times + 1
    assert stored.extra["seen_refs"] == [f"query:{i}" for i in range(times - SEEN_REFS + 1, times + 1)]
    # control: below the bound every reference is kept, oldest first
    b = await scope_of(svc, "person_bob", "bob")
    mine, _ = await svc.remember(b, {"content": "Bob lives in Porto", "source_ref": "q:0"}, ADMIN)
    for i in (1, 2):
        clock.set(lambda i=i: real() + timedelta(seconds=(times + i) * (REMEMBER_RETRY_WINDOW_S + 5)))
        await svc.remember(b, {"content": "Bob lives in Porto", "source_ref": f"q:{i}"}, ADMIN)
    assert (await svc.get_episode(b, mine.id)).extra["seen_refs"] == ["q:1", "q:2"]


async def test_the_trace_does_not_call_another_speakers_identical_words_a_repeat(service: MemoryService) -> None:
    alice = await scope_of(service, "group_g1", "alice")
    bob = await scope_of(service, "group_g1", "bob")
    words = "I drink green tea every morning"
    mine, _ = await service.remember(alice, {"content": words, "importance": 0.9}, ADMIN)
    his, _ = await service.remember(bob, {"content": words, "importance": 0.1}, ADMIN)
    # a budget for one of the two (23 tokens each with its overhead): Bob's identical words lose
    # on the budget, not as a repeat
    res = await service.recall(alice, "green tea morning", limit=10, with_profiles=False, budget_tokens=30, trace=True)
    assert res.trace is not None
    why = {r.id: r.reason for r in res.trace.rows}
    assert why[mine.id] is None and why[his.id] == "budget", why
    # control: with room for both, both are injected (two speakers' words are not folded)
    wide = await service.recall(
        alice, "green tea morning", limit=10, with_profiles=False, budget_tokens=2000, trace=True
    )
    assert wide.trace is not None and {r.id: r.reason for r in wide.trace.rows} == {mine.id: None, his.id: None}
