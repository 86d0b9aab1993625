"""The console's recall trace: ``/injection/why`` for a typed question, and the injection
snapshot's trace (kept by the turn's hook) in ``/injection``."""

from __future__ import annotations

from pathlib import Path

from ltm.service.snapshots import InjectionSnapshot
from tests.support import ADMIN, build_service, scope_of
from tests.surfaces.test_console_api import make_page, ok, refused, scope_body


async def test_why_route_reports_injected_rows_and_near_misses(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path)
    a = await scope_of(svc)
    best, _ = await svc.remember(a, {"content": "Alice drinks green tea every morning", "importance": 0.9}, ADMIN)
    rep, _ = await svc.remember(
        a,
        {
            "content": "Alice drinks green tea every single morning",
            "importance": 0.1,
            "event_at": "2024-01-01T08:00:00Z",
        },
        ADMIN,
    )
    page = make_page(svc)
    d = await ok(page, "/injection/why", scope_body(a, query="green tea morning"))
    rows = {r["id"]: r for r in d["trace"]["rows"]}
    assert rows[best.id]["injected"] and rows[best.id]["reason"] is None and rows[best.id]["rank"] == 1
    assert not rows[rep.id]["injected"] and rows[rep.id]["reason"] == "repeat"
    assert rows[best.id]["dense"] is not None and rows[best.id]["lexical"] > 0
    assert "query" in await refused(page, "/injection/why", scope_body(a))  # control: a query is required


async def test_snapshot_keeps_the_trace(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path)
    a = await scope_of(svc)
    ep, _ = await svc.remember(a, {"content": "Alice drinks green tea"}, ADMIN)
    page = make_page(svc)
    trace = (await svc.why(a, "green tea", ADMIN)).trace
    assert trace is not None
    snapshot = {"at": "2026-01-01T00:00:00Z", "episodes": [ep.id], "trace": trace.to_public()}
    await svc.save_injection(a, InjectionSnapshot.from_record(snapshot))
    d = await ok(page, "/injection", scope_body(a))
    assert [r["id"] for r in d["trace"]["rows"] if r["injected"]] == [ep.id]
    # control: a snapshot written before traces existed shows none
    await svc.save_injection(a, InjectionSnapshot.from_record({"at": "2026-01-01T00:00:00Z", "episodes": [ep.id]}))
    assert (await ok(page, "/injection", scope_body(a)))["trace"] is None
