"""Console API routes. Every request names its scope; the backend acts only inside it."""

from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.definition.components.page import PageRequest, PageResponse

from ltm.domain.errors import MemoryError_
from ltm.domain.scope import derive_scope
from ltm.i18n import error_text
from ltm.service import MemoryService

log = logging.getLogger(__name__)


async def _derive(service: MemoryService, body: dict[str, Any]) -> dict[str, Any]:
    scope = derive_scope(
        session_name=str(body.get("session_name") or ""),
        bot_uuid=str(body.get("bot_uuid") or ""),
        isolation=str(body.get("isolation") or "session"),
    )
    return scope.describe()


async def _kbs(service: MemoryService, body: dict[str, Any]) -> dict[str, Any]:
    out = []
    for kb in await service.known_kbs():
        s = await service.kb_settings(kb)
        out.append({"kb_id": kb, **(s.to_dict() if s else {})})
    return {"knowledge_bases": out}


ROUTES = {
    ("/derive", "POST"): _derive,
    ("/kbs", "GET"): _kbs,
}


async def handle(service: MemoryService, request: PageRequest) -> PageResponse:
    route = ROUTES.get((request.endpoint, (request.method or "POST").upper()))
    if route is None:
        return PageResponse.fail(f"Unknown endpoint: {request.method} {request.endpoint}")
    body = request.body if isinstance(request.body, dict) else {}
    try:
        return PageResponse.ok(await route(service, body))
    except MemoryError_ as exc:
        return PageResponse.fail(error_text(exc, service.settings.language))
