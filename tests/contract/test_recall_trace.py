"""The recall trace on real engines: each reason is reported when it applies, and only then.

Every reason has its control in the same test: the injected row carries no reason, a rank cut
appears only beyond ``top_k``, a row kept out by the filter is named only when the filter applies.
"""

from __future__ import annotations

from pathlib import Path

from ltm.domain.trace import REASONS, RecallTrace, TraceRow
from ltm.service import MemoryService
from tests.support import ADMIN, build_service, scope_of


def _by_text(trace: RecallTrace | None) -> dict[str, TraceRow]:
    assert trace is not None
    return {r.preview: r for r in trace.rows}


async def test_injected_rows_have_no_reason_and_rank_cut_only_beyond_top_k(service: MemoryService) -> None:
    a = await scope_of(service)
    for fruit in ("apples", "pears", "plums", "figs"):
        await service.remember(a, {"content": f"Alice likes tea with {fruit}"}, ADMIN)
    res = await service.recall(a, "tea", limit=2, with_profiles=False, trace=True)
    assert res.trace is not None and res.trace.top_k == 2
    injected = [r for r in res.trace.rows if r.injected]
    assert [r.id for r in injected] == [e.episode.id for e in res.episodes] and len(injected) == 2
    assert all(r.reason is None and r.rank in (1, 2) for r in injected)
    cut = [r for r in res.trace.rows if r.reason == "rank_cut"]
    assert len(cut) == 2 and all(r.rank is not None and r.rank > 2 for r in cut)
    assert all(r.dense is not None and r.lexical and r.score for r in res.trace.rows)
    # control: with room for all four, none is cut
    wide = await service.recall(a, "tea", limit=10, with_profiles=False, trace=True)
    assert wide.trace is not None and [r.reason for r in wide.trace.rows] == [None] * 4
    # off by default: a tool call pays nothing for it
    assert (await service.recall(a, "tea", limit=2, with_profiles=False)).trace is None


EARLIER = "2024-01-01T08:00:00Z"


async def test_budget_and_repeat(service: MemoryService) -> None:
    a = await scope_of(service)
    best, _ = await service.remember(a, {"content": "Alice drinks green tea every morning", "importance": 0.9}, ADMIN)
    # another event (its own time), so not a restatement of ``best``: a second row the block folds
    rep, _ = await service.remember(
        a,
        {"content": "Alice drinks green tea every single morning", "importance": 0.1, "event_at": EARLIER},
        ADMIN,
    )
    diary, _ = await service.remember(a, {"content": "Alice keeps a diary about green tea " + "and more " * 30}, ADMIN)
    res = await service.recall(a, "green tea morning", limit=10, with_profiles=False, budget_tokens=40, trace=True)
    assert res.trace is not None
    why = {r.id: r.reason for r in res.trace.rows}
    assert why == {best.id: None, rep.id: "repeat", diary.id: "budget"}
    # control: a budget that holds everything leaves the diary in; the repeat is still folded
    big = await service.recall(a, "green tea morning", limit=10, with_profiles=False, budget_tokens=2000, trace=True)
    assert big.trace is not None
    assert {r.id: r.reason for r in big.trace.rows} == {best.id: None, rep.id: "repeat", diary.id: None}


async def test_status_expired_and_as_of(service: MemoryService) -> None:
    a = await scope_of(service)
    kept, _ = await service.remember(
        a, {"content": "Alice works at Globex now", "valid_from": "2021-01-01T00:00:00Z"}, ADMIN
    )
    old, _ = await service.remember(
        a,
        {"content": "Alice works at Acme", "valid_from": "2020-01-01T00:00:00Z", "valid_until": "2021-01-01T00:00:00Z"},
        ADMIN,
    )
    gone, _ = await service.remember(a, {"content": "Alice works at Initech"}, ADMIN)
    await service.set_status(a, gone.id, "archived", ADMIN)
    # the hook's trace: the validity reasons come from the scope's own index (no host call), rows
    # of other statuses only from an explicit "why", which also asks the host's store
    hook = await service.recall(a, "where does Alice work", limit=10, with_profiles=False, trace=True)
    assert hook.trace is not None
    assert {r.id: r.reason for r in hook.trace.rows} == {kept.id: None, old.id: "expired"}
    res = await service.recall(
        a, "where does Alice work", limit=10, with_profiles=False, trace=True, trace_all_statuses=True
    )
    assert res.trace is not None
    why = {r.id: r.reason for r in res.trace.rows}
    assert why[kept.id] is None
    assert why[old.id] == "expired"
    assert why[gone.id] == "status"
    # control: as of 2020-06 Acme was valid (injected), Globex not yet (as_of)
    then = await service.recall(
        a, "where does Alice work", limit=10, with_profiles=False, as_of="2020-06-01T00:00:00Z", trace=True
    )
    assert then.trace is not None
    why_then = {r.id: r.reason for r in then.trace.rows}
    assert why_then[old.id] is None
    assert why_then[kept.id] == "as_of"
    assert set(why.values()) | set(why_then.values()) <= {None, *REASONS}


async def test_audience(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path, isolation="bot")
    alice = await scope_of(svc, "person_alice", "alice")
    bob = await scope_of(svc, "person_bob", "bob")
    private, _ = await svc.remember(alice, {"content": "Alice drinks green tea"}, ADMIN)
    res = await svc.recall(bob, "green tea", limit=10, with_profiles=False, trace=True)
    assert res.episodes == [] and res.trace is not None
    assert {r.id: r.reason for r in res.trace.rows} == {private.id: "audience"}
    # control: the owner's own chat sees it, injected, no reason
    shown = await svc.recall(alice, "green tea", limit=10, with_profiles=False, trace=True)
    assert shown.trace is not None and {r.id: r.reason for r in shown.trace.rows} == {private.id: None}


async def test_trace_is_bounded(fast_service: MemoryService) -> None:
    a = await scope_of(fast_service)
    for i in range(40):
        await fast_service.remember(a, {"content": f"Alice note {i} about tea " + "x" * 200}, ADMIN)
    res = await fast_service.recall(a, "tea", limit=5, with_profiles=False, trace=True)
    assert res.trace is not None
    assert len(res.trace.rows) == 24 and res.trace.omitted == 16
    assert all(len(r.preview) <= 80 for r in res.trace.rows)
    assert [r.injected for r in res.trace.rows[:5]] == [True] * 5
