"""The retry window of ``remember`` (issue 24, finding 5): a repeat is the same statement by the
same speaker with the same audience in the same scope, its short ids resolved before the
comparison. Every refusal to count something as a repeat has its positive control (the repeat
that is one), and every repeat its control (the same words that are a new memory)."""

from __future__ import annotations

import itertools
from datetime import timedelta
from pathlib import Path

import pytest

from ltm.domain import models
from ltm.domain.timefields import now_utc
from ltm.service import Actor, MemoryService
from ltm.service.episodes import REMEMBER_RETRY_WINDOW_S
from tests.support import Clock, build_service, scope_of

ALICE = Actor(surface="tool", sender_id="alice")
BOB = Actor(surface="tool", sender_id="bob")
CAROL = Actor(surface="tool", sender_id="carol")


async def _recalled(svc: MemoryService, scope, query: str) -> list[str]:
    res = await svc.recall(scope, query, limit=10, with_profiles=False)
    return [r.episode.content for r in res.episodes]


async def test_bot_isolation_private_then_group_is_a_new_memory_the_group_recalls(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path, isolation="bot")
    private = await scope_of(svc, "person_alice", "alice")
    group = await scope_of(svc, "group_g1", "alice")
    carol = await scope_of(svc, "group_g1", "carol")
    first = await svc.remember(private, {"content": "The team dinner is on Friday at eight"}, ALICE)
    assert not first.existing
    # the same words in the group within the window: the group's own memory, readable by the group
    in_group = await svc.remember(group, {"content": "The team dinner is on Friday at eight"}, ALICE)
    assert not in_group.existing and in_group.episode.id != first.episode.id
    assert in_group.episode.audience == "*"
    assert await _recalled(svc, carol, "team dinner Friday") == ["The team dinner is on Friday at eight"]
    # positive control: the same words again in the same chat are the retry of that write
    again = await svc.remember(group, {"content": "The team dinner is on Friday at eight"}, ALICE)
    assert again.existing and again.episode.id == in_group.episode.id
    again_private = await svc.remember(private, {"content": "The team dinner is on Friday at eight"}, ALICE)
    assert again_private.existing and again_private.episode.id == first.episode.id
    assert (await svc.count_by_status(group))["active"] == 2


async def test_same_words_by_another_speaker_or_after_the_window_are_new(tmp_path: Path) -> None:
    clock = Clock()
    svc = await build_service("numpy", tmp_path, isolation="bot", clock=clock)
    alice = await scope_of(svc, "group_g1", "alice")
    bob = await scope_of(svc, "group_g1", "bob")
    first = await svc.remember(alice, {"content": "The office closes at six"}, ALICE)
    assert (await svc.remember(alice, {"content": "The office closes at six"}, ALICE)).existing  # control
    other = await svc.remember(bob, {"content": "The office closes at six"}, BOB)
    assert not other.existing and other.episode.id != first.episode.id
    real = now_utc
    clock.set(lambda: real() + timedelta(seconds=REMEMBER_RETRY_WINDOW_S + 5))
    later = await svc.remember(alice, {"content": "The office closes at six"}, ALICE)
    # not a retry after the window; since issue 27 a restatement of the active memory: reinforced, no new row
    assert not later.existing and later.already_known and later.episode.id == first.episode.id


async def test_a_retried_correction_by_short_id_returns_the_correction(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = itertools.chain(["ep_4f2a1b" + "0" * 14], (f"ep_{n:020x}" for n in itertools.count(1)))
    monkeypatch.setattr(models, "new_episode_id", lambda: next(feed))
    a = await scope_of(service)
    old, _ = await service.remember(a, {"content": "Alice prefers black tea"}, ALICE)
    fix = {"content": "Alice prefers green tea", "supersedes": ["4f2a1"]}
    first = await service.remember(a, fix, ALICE)
    assert not first.existing and first.episode.supersedes == [old.id]
    retried = await service.remember(a, dict(fix), ALICE)  # the answer was lost: the model sends it again
    assert retried.existing and retried.episode.id == first.episode.id
    counts = await service.count_by_status(a)
    assert counts["active"] == 1 and counts["superseded"] == 1
    # control: the same correction by whole id is the same retry; a different statement is not
    assert (await service.remember(a, {**fix, "supersedes": [old.id]}, ALICE)).existing
    other = await service.remember(a, {"content": "Alice prefers white tea"}, ALICE)
    assert not other.existing
