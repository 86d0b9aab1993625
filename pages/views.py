"""View models: what each console panel receives. Plain JSON; every stored string is passed through
as data (the page renders it with ``textContent``)."""

from __future__ import annotations

from typing import Any

from ltm.i18n import LANGUAGES
from ltm.service import (
    Actor,
    Candidate,
    HealthReport,
    MemoryService,
    NotFoundError,
    Profile,
    Scope,
    console_view,
    explain,
    parse_instant,
    scope_fence_keys,
)

MAX_INJECTION_EPISODES = 50


episode_view = console_view


def candidate_view(c: Candidate) -> dict[str, Any]:
    """A review candidate as the console shows it (both sides of a conflict included)."""
    out = c.to_dict()
    out.pop("scope", None)
    return out


def profile_view(p: Profile) -> dict[str, Any]:
    out = p.to_dict()
    out["speaker_id"] = p.sender_id if p.kind == "speaker" else ""
    out["empty"] = p.is_empty()
    return out


async def episode_page(
    service: MemoryService,
    scope: Scope,
    *,
    statuses: tuple[str, ...] | None,
    speaker: str | None,
    time_from: str | None,
    time_until: str | None,
    page: int,
    page_size: int,
    as_of: str | None = None,
) -> dict[str, Any]:
    """One page of the scope's episodes, newest first, paged on the server. ``as_of``: only the
    ones valid at that instant (the default ``active`` filter then also shows superseded ones)."""
    res = await service.list_episodes(
        scope,
        statuses=statuses,
        page=page,
        page_size=page_size,
        sender_id=speaker,
        event_from_ts=parse_instant(time_from, "time_from").timestamp() if time_from else None,
        event_until_ts=parse_instant(time_until, "time_until").timestamp() if time_until else None,
        as_of_ts=parse_instant(as_of, "as_of").timestamp() if as_of else None,
    )
    items, has_more = res.items, res.has_more
    return {
        "items": [episode_view(e) for e in items],
        "page": page,
        "page_size": page_size,
        "has_more": has_more,
        "as_of": as_of,
    }


async def search_page(
    service: MemoryService,
    scope: Scope,
    *,
    query: str,
    speaker: str,
    time_from: str | None,
    time_until: str | None,
    page: int,
    page_size: int,
    as_of: str | None = None,
) -> dict[str, Any]:
    """Relevance search (active memories, ranked by the same recall the chat uses), paged.
    ``as_of``: what was true at that instant, superseded memories included."""
    start = (page - 1) * page_size
    want = start + page_size + 1  # one more tells whether a next page exists
    limit = min(50, want)
    result = await service.recall(
        scope,
        query,
        limit=limit,
        speaker_id=speaker,
        only_speaker=bool(speaker),
        time_from=time_from,
        time_until=time_until,
        as_of=as_of,
        with_profiles=False,
        budget_tokens=10**9,
        parse_window=False,
    )
    rows = result.episodes
    items = rows[start : start + page_size]
    return {
        "items": [episode_view(r.episode, r.score) for r in items],
        "page": page,
        "page_size": page_size,
        "has_more": len(rows) > start + page_size,
        "capped": want > 50,
        "as_of": result.as_of,
    }


async def injection_view(service: MemoryService, scope: Scope) -> dict[str, Any]:
    """The last injection snapshot, its episodes resolved (content and status now, or missing)."""
    snap = await service.last_injection(scope)
    if snap is None:
        return {"snapshot": None, "episodes": []}
    episodes: list[dict[str, Any]] = []
    for eid, ref in snap.shown_as()[:MAX_INJECTION_EPISODES]:
        seen = {"shown_as": ref} if ref != eid else {}  # the short id the model was given for it
        if not scope.collection:
            episodes.append({"id": eid, "missing": True, **seen})
            continue
        try:
            e = await service.get_episode(scope, eid)
            episodes.append({"id": eid, "content": e.content, "status": e.status, "missing": False, **seen})
        except NotFoundError:
            episodes.append({"id": eid, "missing": True, **seen})
    return {"snapshot": snap.to_record(), "episodes": episodes, "trace": snap.trace}


async def why_view(service: MemoryService, scope: Scope, query: str, actor: Actor, as_of: str | None) -> dict[str, Any]:
    """The recall trace of a question an operator typed: the turn's own recall, traced."""
    result = await service.why(scope, query, actor, as_of=as_of)
    return {"trace": result.trace.to_public() if result.trace is not None else None, "as_of": result.as_of}


def health_view(report: HealthReport) -> dict[str, Any]:
    """The report with each check's explanation in every console language (the page switches
    language without re-running the probe)."""
    data = report.to_dict()
    checks = []
    for c in data["checks"]:
        args = c.get("args") or {}
        checks.append({**c, "texts": {lang: explain(c["key"], lang, args) for lang in LANGUAGES}})
    return {"verdict": data["verdict"], "checks": checks}


async def scope_fences(service: MemoryService, scope: Scope) -> list[dict[str, Any]]:
    """The write fences that ``clear_scope_fences`` lifts for this scope (``scope_fence_keys``)."""
    fences = await service.fences()
    out = []
    for key in scope_fence_keys(scope, fences):
        rec = fences[key] if isinstance(fences[key], dict) else {}
        out.append(
            {
                "lock_key": key,
                "operation": str(rec.get("operation") or ""),
                "dispatched_at": str(rec.get("dispatched_at") or ""),
                "detail": str(rec.get("detail") or ""),
            }
        )
    return out
