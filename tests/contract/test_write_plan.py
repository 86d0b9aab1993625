"""The write plan: a verb's writes are read, extended and committed under one hold of their lock,
once; a retry plan commits nothing; a neighbour's steps land with the verb's or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltm.domain.filters import Criteria
from ltm.service import Actor
from ltm.service.writes import KvHolds, PlanError, WriteStep
from tests.support import build_service, scope_of

ALICE = Actor(surface="tool", sender_id="alice")


class TestPlan:
    async def test_a_plan_is_read_and_committed_only_inside_its_block(self, tmp_path: Path) -> None:
        """Settling or committing outside ``async with plan:`` is refused; inside, it commits once."""
        svc = await build_service("numpy", tmp_path)
        a = await scope_of(svc)
        plan = svc.episodes.plan_remember(a, {"content": "Alice keeps bees"}, ALICE)
        with pytest.raises(PlanError):
            await plan.settle()
        with pytest.raises(PlanError):
            await plan.commit()
        async with plan:
            assert plan.held
            await plan.commit()
            with pytest.raises(PlanError):
                await plan.commit()
        assert not plan.held
        stored = await svc.fetch(a, Criteria())
        assert [e.id for e in stored] == [plan.remembered.episode.id]

    async def test_a_retry_plan_commits_nothing_and_takes_no_steps(self, tmp_path: Path) -> None:
        """The retry outcome is sealed: a neighbour cannot add a write it would silently drop."""
        svc = await build_service("numpy", tmp_path)
        a = await scope_of(svc)
        first = await svc.remember(a, {"content": "Alice keeps bees"}, ALICE)
        before = await svc.audit_count(a)
        plan = svc.episodes.plan_remember(a, {"content": "Alice keeps bees"}, ALICE)
        async with plan:
            remembered = await plan.settle()
            assert remembered.existing and remembered.episode.id == first.episode.id
            with pytest.raises(PlanError):
                plan.add(WriteStep(a, "l2:x", [], apply=lambda: None))  # type: ignore[arg-type, return-value]
            await plan.commit()
        assert await svc.audit_count(a) == before

    async def test_a_neighbours_step_commits_with_the_plan_and_is_shaped_before_it_settles(
        self, tmp_path: Path
    ) -> None:
        """An added step lands in the same mutation; shaping a settled plan is refused."""
        svc = await build_service("numpy", tmp_path)
        a = await scope_of(svc)
        key, value = "test/record", b"linked"
        plan = svc.episodes.plan_remember(a, {"content": "Alice keeps bees"}, ALICE)
        plan.link({"candidate_id": "c_test"})
        async with plan:
            episode, _ = await plan.settle()
            with pytest.raises(PlanError):
                plan.link({"candidate_id": "other"})
            plan.add(svc.writes.kv_step(a, "test.record", key, value, None, expect=[KvHolds.of(key, value)]))
            await plan.commit()
        assert await svc.kv.get(key) == value
        stored = await svc.fetch(a, Criteria())
        assert [(e.id, e.extra.get("candidate_id")) for e in stored] == [(episode.id, "c_test")]
