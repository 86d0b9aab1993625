"""Console API routes. Every request names its scope; the backend derives it and acts only inside it.

``handle`` never raises: a malformed body, an unknown endpoint, a refused service call or an
unexpected failure all come back as ``PageResponse.fail(<message in the page's language>)``, and a
refused request changes nothing (every field is checked before the one service call it makes).

Endpoints (method, body fields besides ``scope`` and ``lang``):

==========================  ======  ==========================================================
``/meta``                   GET     features of this version (which panels exist)
``/kbs``                    GET     memory knowledge bases and their settings
``/scopes``                 POST    memory spaces seen in profile, injection and audit keys
``/derive``                 POST    the keys of a scope (+ ``isolation`` what-if preview)
``/overview``               POST    scope keys, KB settings, counts by status, audit size
``/profiles``               POST    session profile and speaker profiles
``/profile/update``         POST    ``target`` session|speaker, ``speaker_id``, ``patch``
``/episodes``               POST    ``status``, ``speaker``, ``time_from``/``time_until``, ``as_of``, paging
``/episodes/search``        POST    ``query``, ``speaker``, ``time_from``/``time_until``, ``as_of``, paging
``/episode``                POST    ``id``
``/episode/archive``        POST    ``id``, ``reason``
``/episode/restore``        POST    ``id``, ``reason``
``/episode/forget``         POST    ``id``, ``reason``
``/injection``              POST    the last injection snapshot, with its episodes resolved and its trace
``/usage``                  POST    the usage ledger: the last turns, daily roll-ups, today's totals
``/injection/why``          POST    ``query``, ``as_of``: the recall trace of a typed question (admin)
``/audit``                  POST    paging
``/audit/export``           POST    the whole audit log of the scope (``ltm-audit/1``)
``/export``                 POST    ``layer`` l1|l2, ``status`` (l2)
``/diagnostics``            POST    ``probe`` (bool): the health report + write fences
``/fences/clear``           POST    ``reason`` (only when the service has write fences)
``/episode/confirm``        POST    ``id``, ``reason``: a person confirms a memory
``/candidates``             POST    ``all_statuses`` (bool), paging: the review queue
``/candidate/accept``       POST    ``id``, ``reason`` (the one resolver, as ``!memory candidate``)
``/candidate/reject``       POST    ``id``, ``reason`` (records a tombstone on the value)
``/tombstones``             POST    paging
``/tombstone/lift``         POST    ``id``, ``reason``
``/people``                 POST    ``bot_uuid``, ``sender_id``: what one person said (``ltm-person/1``)
``/people/erase``           POST    ``bot_uuid``, ``sender_id``: that person's erasure (as ``forget-me``)
``/backup``                 POST    ``backup_id``, ``part``: the installation's ``ltm-backup/1``, in parts
``/restore/check``          POST    ``header``, ``trailer``, ``shas``, ``kinds``: the document's digest
``/restore``                POST    ``lines`` (header first), ``kb_map``, ``verify``: one chunk
==========================  ======  ==========================================================

``/episode/forget`` also takes ``never`` (bool): forget for good (a tombstone on the value). The
review endpoints need the plugin's review queue (``/meta`` says whether it is there).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langbot_plugin.api.definition.components.page import PageRequest, PageResponse

from ltm.i18n import CONSOLE, LANGUAGES, error_text, normalize_lang
from ltm.service import (
    MAX_REASON,
    STATUSES,
    Actor,
    Consolidator,
    LtmError,
    MemoryService,
    ReviewQueue,
    derive_scope,
    forget_tombstone_id,
    speaker_profile_key,
)
from pages import consolidation as consolidation_routes
from pages import move as move_routes

from . import views
from .requests import MAX_PAGE, MAX_QUERY, BadRequest, Body, scope_fields, scope_of
from .scopes import known_scopes

log = logging.getLogger(__name__)
# The host's names of its knowledge bases, {uuid: name} (the plugin itself only knows the ids).
KbNames = Callable[[], Awaitable[dict[str, str]]]

STATUS_FILTERS = ("all", *STATUSES)
MAX_ID = 1024  # ltm.domain.keys.MAX_ID_CHARS: the service refuses a longer id with its own message
PROFILE_TARGETS = ("session", "speaker")


@dataclass
class Ctx:
    service: MemoryService
    body: Body
    lang: str
    actor: Actor
    review: ReviewQueue | None = None
    consolidator: Consolidator | None = None
    kb_names: KbNames | None = None

    def queue(self) -> ReviewQueue:
        if self.review is None:
            raise BadRequest("err.review_unavailable")
        return self.review


Handler = Callable[[Ctx], Awaitable[Any]]


def _consolidation_route(route: Callable[..., Awaitable[Any]]) -> Callable[[Ctx], Awaitable[Any]]:
    """Adapt a ``pages.consolidation`` route (same service functions as ``!memory consolidate``)."""

    async def handler(c: Ctx) -> Any:
        if c.consolidator is None:
            raise BadRequest("err.consolidation_unavailable")
        scope = await scope_of(c.service, c.body)
        return await route(c.service, c.consolidator, scope, c.body.raw, c.actor)

    return handler


# ---------------------------------------------------------------------------------------- reads
async def _meta(c: Ctx) -> dict[str, Any]:
    return {
        "features": {
            "candidates": c.review is not None,
            "consolidation": c.consolidator is not None,
            "fences": True,  # every service has write fences; the page still reads the flag
        },
        "statuses": list(STATUSES),
        "languages": list(LANGUAGES),
        "page_size_max": 100,
    }


async def _kbs(c: Ctx) -> dict[str, Any]:
    names: dict[str, str] = {}
    if c.kb_names is not None:
        try:  # the names are a courtesy: the host not answering must not hide the list
            names = await c.kb_names()
        except Exception as exc:
            log.info("knowledge base names unavailable: %s", exc)
    out = []
    for kb in await c.service.known_kbs():
        s = await c.service.kb_settings(kb)
        out.append({"kb_id": kb, "name": str(names.get(kb) or ""), **(s.to_dict() if s else {})})
    return {"knowledge_bases": out}


async def _scopes(c: Ctx) -> dict[str, Any]:
    return await known_scopes(c.service)


async def _derive(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    f = scope_fields(c.body)
    src = c.body if "isolation" in c.body.raw else f  # top level, or next to the identity fields
    iso = src.choice("isolation", ("session", "bot"), scope.isolation)
    kb = await c.service.kb_settings(scope.collection) if scope.collection else None
    out: dict[str, Any] = {**scope.describe(), "kb": kb.to_dict() if kb else None, "preview": None}
    if iso != scope.isolation:  # a what-if only: requests always use the knowledge base's isolation
        preview = derive_scope(
            session_name=scope.session_name,
            bot_uuid=scope.bot_uuid,
            isolation=iso,
            collection=scope.collection,
            sender_id=scope.sender_id,
        )
        out["preview"] = preview.describe()
    return out


async def _overview(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    o = await c.service.overview(scope)
    return {
        "scope": scope.describe(),
        "kb": o.kb.to_dict() if o.kb else None,
        "counts": o.counts,
        "audit_total": o.audit_total,
        "has_injection": o.injection is not None,
    }


async def _profiles(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    session = await c.service.get_profile(scope, "session")
    speakers = await c.service.speaker_profiles(scope)
    if scope.sender_id and not any(p.key == speaker_profile_key(scope, scope.sender_id) for p in speakers):
        speakers.append(await c.service.get_profile(scope, "speaker", scope.sender_id))
    return {"session": views.profile_view(session), "speakers": [views.profile_view(p) for p in speakers]}


def _status_filter(body: Body) -> tuple[str, ...] | None:
    status = body.choice("status", STATUS_FILTERS, "active")
    return None if status == "all" else (status,)


async def _episodes(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    b = c.body
    return await views.episode_page(
        c.service,
        scope,
        statuses=_status_filter(b),
        speaker=b.text("speaker") or None,
        time_from=b.instant("time_from"),
        time_until=b.instant("time_until"),
        page=b.integer("page", 1, 1, MAX_PAGE),
        page_size=b.integer("page_size", 20, 1, 100),
        as_of=b.instant("as_of"),
    )


async def _search(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    b = c.body
    return await views.search_page(
        c.service,
        scope,
        query=b.text("query", required=True, max_len=MAX_QUERY),
        speaker=b.text("speaker"),
        time_from=b.instant("time_from"),
        time_until=b.instant("time_until"),
        page=b.integer("page", 1, 1, MAX_PAGE),
        page_size=b.integer("page_size", 20, 1, 50),
        as_of=b.instant("as_of"),
    )


async def _episode(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    return views.episode_view(await c.service.get_episode(scope, c.body.episode_id()))


async def _injection(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    return await views.injection_view(c.service, scope)


async def _usage(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    return await c.service.ledger.view(scope)


async def _why(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    query = c.body.text("query", required=True, max_len=MAX_QUERY)
    return await views.why_view(c.service, scope, query, c.actor, c.body.instant("as_of"))


async def _audit(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    page = c.body.integer("page", 1, 1, MAX_PAGE)
    size = c.body.integer("page_size", 20, 1, 100)
    entries, total = await c.service.audit_page(scope, page, size)
    return {"entries": entries, "total": total, "page": page, "page_size": size, "pages": max(1, -(-total // size))}


async def _audit_export(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    return await c.service.audit_document(scope, c.actor)


async def _health(c: Ctx) -> dict[str, Any]:
    """Installation-level liveness (no scope): registered memory KBs and open write fences.
    The per-scope probe is ``/diagnostics``."""
    fences = await c.service.fences() if hasattr(c.service, "fences") else {}
    kbs = await c.service.known_kbs()
    return {"ok": True, "knowledge_bases": len(kbs), "fences": len(fences)}


async def _diagnostics(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    probe = c.body.boolean("probe", True)
    report = await c.service.health(scope, None, probe=probe, actor=c.actor)
    return {
        "health": views.health_view(report),
        "fences": {"supported": True, "items": await views.scope_fences(c.service, scope)},
        # background work of this process (ltm/service/background.py): what the calls carried
        "background": c.service.background_report(),
    }


# ------------------------------------------------------------------------------------- mutations
async def _profile_update(c: Ctx) -> dict[str, Any]:
    b = c.body
    target = b.choice("target", PROFILE_TARGETS, "session")
    speaker = b.text("speaker_id", required=target == "speaker")
    if any(ch.isspace() for ch in speaker):
        raise BadRequest("err.speaker_id")
    patch = b.obj("patch")
    if "target" in patch:
        raise BadRequest("err.patch_target")
    scope = await scope_of(c.service, b, speaker=speaker if target == "speaker" else "")
    profile = await c.service.update_profile(scope, {**patch, "target": target}, c.actor)
    return views.profile_view(profile)


async def _set_status(c: Ctx, status: str) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    eid = c.body.episode_id()
    reason = c.body.text("reason", max_len=MAX_REASON)
    return views.episode_view(await c.service.set_status(scope, eid, status, c.actor, reason))


async def _archive(c: Ctx) -> dict[str, Any]:
    return await _set_status(c, "archived")


async def _restore(c: Ctx) -> dict[str, Any]:
    return await _set_status(c, "active")


async def _forget(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    eid = c.body.episode_id()
    reason = c.body.text("reason", max_len=MAX_REASON)
    never = c.body.boolean("never", False)  # without a tombstone book the service refuses it
    episode = await c.service.forget(scope, eid, c.actor, reason, never=never)
    out: dict[str, Any] = {"forgotten": episode.id}
    if never:
        out["tombstone"] = forget_tombstone_id(scope, episode.content, episode.sender_id, episode.audience, True)
    return out


async def _confirm(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    eid = c.body.episode_id()
    reason = c.body.text("reason", max_len=MAX_REASON)
    return views.episode_view(await c.service.confirm_episode(scope, eid, c.actor, reason))


# ------------------------------------------------------------------------------- review queue
async def _candidates(c: Ctx) -> dict[str, Any]:
    queue = c.queue()
    scope = await scope_of(c.service, c.body)
    page = await queue.list(
        scope,
        page=c.body.integer("page", 1, 1, MAX_PAGE),
        page_size=c.body.integer("page_size", 20, 1, 100),
        all_statuses=c.body.boolean("all_statuses", False),
    )
    return {
        "items": [views.candidate_view(x) for x in page.items],
        "page": page.page,
        "page_size": page.page_size,
        "has_more": page.has_more,
        "total": page.total,
    }


async def _candidate_accept(c: Ctx) -> dict[str, Any]:
    queue = c.queue()
    scope = await scope_of(c.service, c.body)
    cid = c.body.episode_id()
    reason = c.body.text("reason", max_len=MAX_REASON)
    d = await queue.accept(scope, cid, c.actor, reason)
    return {
        "candidate": views.candidate_view(d.candidate),
        "parked": d.parked,
        "episode": views.episode_view(d.episode) if d.episode else None,
        "superseded": [e.id for e in d.superseded],
        "profile": views.profile_view(d.profile) if d.profile else None,
    }


async def _candidate_reject(c: Ctx) -> dict[str, Any]:
    queue = c.queue()
    scope = await scope_of(c.service, c.body)
    cid = c.body.episode_id()
    reason = c.body.text("reason", max_len=MAX_REASON)
    return {"candidate": views.candidate_view(await queue.reject(scope, cid, c.actor, reason))}


async def _tombstones(c: Ctx) -> dict[str, Any]:
    queue = c.queue()
    scope = await scope_of(c.service, c.body)
    page = c.body.integer("page", 1, 1, MAX_PAGE)
    size = c.body.integer("page_size", 20, 1, 100)
    items, total = await queue.list_tombstones(scope, page, size)
    return {
        "items": [t.to_dict() for t in items],
        "total": total,
        "page": page,
        "page_size": size,
        "pages": max(1, -(-total // size)),
    }


async def _tombstone_lift(c: Ctx) -> dict[str, Any]:
    queue = c.queue()
    scope = await scope_of(c.service, c.body)
    tid = c.body.episode_id()
    reason = c.body.text("reason", max_len=MAX_REASON)
    tb = await queue.lift_tombstone(scope, tid, c.actor, reason)
    return {"lifted": tb.id}


async def _export(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    layer = c.body.choice("layer", ("l1", "l2"), "l2")
    status = c.body.choice("status", STATUS_FILTERS, "all")
    statuses = None if status == "all" else (status,)
    doc = await c.service.export_scope(scope, c.actor, layer=layer, statuses=statuses)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in scope.scope_key)[:80]
    return {"filename": f"ltm-{layer}-{safe}.json", "document": doc}


async def _fences_clear(c: Ctx) -> dict[str, Any]:
    scope = await scope_of(c.service, c.body)
    reason = c.body.text("reason", max_len=MAX_REASON)
    cleared = await c.service.clear_scope_fences(scope, c.actor, reason)
    return {"cleared": int(cleared)}


# ------------------------------------------------------------------------------- people (issue 35)
def _person_of(c: Ctx) -> tuple[str, str]:
    """The person a People request names: a bot and a sender id, no memory space."""
    return c.body.text("bot_uuid", max_len=MAX_ID), c.body.text("sender_id", required=True, max_len=MAX_ID)


async def _people(c: Ctx) -> dict[str, Any]:
    bot, sender = _person_of(c)
    held = await c.service.person(bot, sender, c.actor)  # the same listing as !memory me
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in sender)[:60]
    return {"filename": f"ltm-person-{safe}.json", "document": held.to_dict()}


async def _people_erase(c: Ctx) -> dict[str, Any]:
    bot, sender = _person_of(c)
    return (await c.service.erase_person(bot, sender, c.actor)).to_dict()  # the same erase as forget-me


@dataclass(frozen=True)
class Route:
    methods: frozenset[str]
    handler: Handler


_GET = frozenset({"GET", "POST"})
_POST = frozenset({"POST"})

ROUTES: dict[str, Route] = {
    "/meta": Route(_GET, _meta),
    "/kbs": Route(_GET, _kbs),
    "/scopes": Route(_GET, _scopes),
    "/derive": Route(_POST, _derive),
    "/overview": Route(_POST, _overview),
    "/profiles": Route(_POST, _profiles),
    "/profile/update": Route(_POST, _profile_update),
    "/episodes": Route(_POST, _episodes),
    "/episodes/search": Route(_POST, _search),
    "/episode": Route(_POST, _episode),
    "/episode/archive": Route(_POST, _archive),
    "/episode/restore": Route(_POST, _restore),
    "/episode/forget": Route(_POST, _forget),
    "/injection": Route(_POST, _injection),
    "/usage": Route(_POST, _usage),
    "/injection/why": Route(_POST, _why),
    "/audit": Route(_POST, _audit),
    "/audit/export": Route(_POST, _audit_export),
    "/export": Route(_POST, _export),
    "/health": Route(_GET, _health),
    "/consolidation/preview": Route(_POST, _consolidation_route(consolidation_routes.preview_route)),
    "/consolidation/proposals": Route(_POST, _consolidation_route(consolidation_routes.proposals_route)),
    "/consolidation/run": Route(_POST, _consolidation_route(consolidation_routes.run_route)),
    "/consolidation/discard": Route(_POST, _consolidation_route(consolidation_routes.discard_route)),
    "/diagnostics": Route(_POST, _diagnostics),
    "/fences/clear": Route(_POST, _fences_clear),
    "/episode/confirm": Route(_POST, _confirm),
    "/candidates": Route(_POST, _candidates),
    "/candidate/accept": Route(_POST, _candidate_accept),
    "/candidate/reject": Route(_POST, _candidate_reject),
    "/tombstones": Route(_POST, _tombstones),
    "/tombstone/lift": Route(_POST, _tombstone_lift),
    "/people": Route(_POST, _people),
    "/people/erase": Route(_POST, _people_erase),
    "/backup": Route(_POST, lambda c: move_routes.backup_route(c.service, c.body, c.actor)),
    "/restore/check": Route(_POST, lambda c: move_routes.check_route(c.service, c.body, c.actor)),
    "/restore": Route(_POST, lambda c: move_routes.restore_route(c.service, c.body, c.actor)),
}


def _lang(service: MemoryService, body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("lang"), str) and len(body["lang"]) <= 16:
        return normalize_lang(body["lang"])
    try:
        return normalize_lang(service.settings.language)
    except Exception:  # settings come from the host config; a broken config must not break errors
        return "en_US"


def _actor(request: PageRequest) -> Actor:
    """The dashboard operator (the host shows the page to its logged-in operators), named in the
    audit entries; the service verbs decide what it may do like for every other actor."""
    caller = request.caller if isinstance(request.caller, dict) else {}
    who = caller.get("user") or caller.get("email") or caller.get("id") or ""
    return Actor.console(str(who))


async def handle(
    service: MemoryService,
    request: PageRequest,
    review: ReviewQueue | None = None,
    consolidator: Consolidator | None = None,
    kb_names: KbNames | None = None,
) -> PageResponse:
    lang = _lang(service, request.body)
    endpoint = str(request.endpoint or "")
    try:
        route = ROUTES.get(endpoint)
        if route is None:
            return PageResponse.fail(CONSOLE.t("err.endpoint", lang, endpoint=endpoint[:80]))
        method = str(request.method or "POST").upper()
        if method not in route.methods:
            return PageResponse.fail(CONSOLE.t("err.method", lang, method=method[:10], endpoint=endpoint))
        ctx = Ctx(
            service=service,
            body=Body(request.body),
            lang=lang,
            actor=_actor(request),
            review=review,
            consolidator=consolidator,
            kb_names=kb_names,
        )
        return PageResponse.ok(await route.handler(ctx))
    except BadRequest as exc:
        return PageResponse.fail(CONSOLE.t(exc.key, lang, **exc.params))
    except LtmError as exc:
        return PageResponse.fail(error_text(exc, lang))
    except Exception:
        log.exception("console request %s failed", endpoint[:80])
        return PageResponse.fail(CONSOLE.t("err.internal", lang))
