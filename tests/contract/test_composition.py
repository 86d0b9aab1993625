"""What the service's constructor joins (``MemoryService(review=, consolidator=)``), pinned where
``forget`` is read: ``forget --never`` writes the review queue's tombstone or is refused before
anything changes; a removed source takes its derived summary with it exactly once (the cascade's own
delete does not cascade again), and the summary gives its other source back; the review queue
fences with the service's own locks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ltm.domain.errors import ScopeError
from ltm.domain.filters import Criteria
from ltm.domain.models import Episode
from ltm.domain.scope import Scope
from ltm.domain.tombstone import value_key
from ltm.service import MemoryService
from ltm.service.retire import RetireEvent
from tests.support import ADMIN, build_service, restarted, scope_of, with_consolidator, with_review


async def rows(svc: MemoryService, scope: Scope) -> dict[str, Episode]:
    return {e.id: e for e in await svc.fetch(scope, Criteria(statuses=None))}


async def test_forget_never_without_a_tombstone_book_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path)  # made without a review queue
    a = await scope_of(svc)
    ep, _ = await svc.remember(a, {"content": "I live in Paris"}, ADMIN)
    before, entries = await rows(svc, a), await svc.audit_count(a)
    with pytest.raises(ScopeError) as err:
        await svc.forget(a, ep.id, ADMIN, never=True)
    assert err.value.key == "cmd.review.unavailable"
    assert await rows(svc, a) == before and await svc.audit_count(a) == entries
    # positive control: made with the review queue (over the same stores), the same call forgets
    # and records a tombstone
    svc = restarted(svc, review=with_review())
    review = svc.review
    assert review is not None
    await svc.forget(a, ep.id, ADMIN, never=True)
    assert ep.id not in await rows(svc, a)
    tombs, _ = await review.list_tombstones(a)
    assert [t.id for t in tombs] == [value_key("I live in Paris", "alice")]


async def test_a_removed_source_takes_its_summary_once_and_the_other_source_comes_back(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path, consolidator=with_consolidator())
    cons = svc.consolidator
    assert cons is not None
    seen: list[RetireEvent] = []
    cascade = cons.on_retired

    async def counted(event: RetireEvent) -> Any:
        seen.append(event)
        return await cascade(event)

    cons.on_retired = counted  # type: ignore[method-assign]
    a = await scope_of(svc)
    e1, _ = await svc.remember(a, {"content": "Alice drinks jasmine tea"}, ADMIN)
    e2, _ = await svc.remember(a, {"content": "Alice lives in Berlin"}, ADMIN)
    links = {"sources": [e1.id, e2.id], "proposal_id": "cp_" + "0" * 20}
    raw = {"content": "Alice drinks jasmine tea and lives in Berlin", "claim_type": "inference"}
    plan = svc.episodes.plan_remember(a, raw, ADMIN, origin="consolidation")
    plan.link(links)
    plan.replacing([e1.id, e2.id])
    async with plan:
        await plan.commit()
    summary, _ = plan.remembered
    stored = await rows(svc, a)
    assert stored[e2.id].status == "superseded" and stored[summary.id].status == "active"  # the control
    seen.clear()

    await svc.forget(a, e1.id, ADMIN, reason="wrong")

    after = await rows(svc, a)
    assert summary.id not in after and e1.id not in after
    assert after[e2.id].status == "active" and not after[e2.id].superseded_by
    assert [(ev.operation, [e.id for e in ev.episodes]) for ev in seen] == [("forget", [e1.id])]


async def test_the_review_queue_fences_with_the_services_locks(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path, review=with_review())
    assert svc.review is not None and svc.review.locks is svc.locks


async def test_the_neighbours_rules_are_given_at_construction(tmp_path: Path) -> None:
    """The episodes hold the queue's guard and a retire pipeline over its tombstones and the
    consolidator from the moment the service exists; a service made without them has none."""
    svc = await build_service("numpy", tmp_path, review=with_review(), consolidator=with_consolidator())
    assert svc.review is not None and svc.consolidator is not None
    assert svc.episodes.guard == svc.review.guard
    assert svc.episodes.retire.tombstones is svc.review.tombstones
    assert svc.episodes.retire.summaries is svc.consolidator
    assert svc.people.review is svc.review
    bare = restarted(svc)  # control: none given, none joined
    assert bare.review is None and bare.consolidator is None and bare.episodes.guard is None
    assert bare.episodes.retire.tombstones is None and bare.episodes.retire.summaries is None
