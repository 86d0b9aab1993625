"""Console review panel for consolidation: the same preview / approve (run with a proposal) / run /
discard as ``!memory consolidate``, calling the same :class:`~ltm.service.consolidation.Consolidator`.

Each route takes the scope the router derived (``scope_of(service, body)``), the request body (a
``pages.requests.Body`` or the raw dict) and the console actor, and returns a JSON-safe dict. Refusals
are service errors (``LtmError`` with ``consol.*`` keys) that the router renders with
``error_text``; a malformed ``proposal_id`` is refused before any service call.

=================================  ======  =====================================================
``/consolidation/preview``         POST    candidates, selected sources and the stored proposal
``/consolidation/proposals``       POST    pending proposals of the scope
``/consolidation/run``             POST    ``proposal_id`` (optional): archive + apply (approve)
``/consolidation/discard``         POST    ``proposal_id``: drop a pending proposal
=================================  ======  =====================================================
"""

from __future__ import annotations

from typing import Any

from ltm.i18n import normalize_lang
from ltm.service import PROPOSAL_ID_RE, Actor, Consolidator, MemoryService, Scope, ValidationError


def _raw(body: Any) -> dict[str, Any]:
    raw = getattr(body, "raw", body)
    return raw if isinstance(raw, dict) else {}


def _proposal_id(body: Any, *, required: bool) -> str | None:
    value = _raw(body).get("proposal_id")
    if value is None or value == "":
        if required:
            raise ValidationError("proposal_id required", key="consol.error.proposal_id")
        return None
    if not isinstance(value, str) or not PROPOSAL_ID_RE.match(value.strip()):
        raise ValidationError("malformed proposal id", key="consol.error.proposal_id")
    return value.strip()


def _check(service: MemoryService, consolidator: Consolidator) -> None:
    if consolidator.service is not service:
        raise RuntimeError("the consolidator belongs to another service")


async def preview_route(
    service: MemoryService, consolidator: Consolidator, scope: Scope, body: Any, actor: Actor
) -> dict[str, Any]:
    _check(service, consolidator)
    lang = _raw(body).get("lang")
    preview = await consolidator.preview(scope, actor, lang=normalize_lang(lang) if isinstance(lang, str) else None)
    return {"scope": scope.describe(), **preview.to_public()}


async def proposals_route(
    service: MemoryService, consolidator: Consolidator, scope: Scope, body: Any, actor: Actor | None = None
) -> dict[str, Any]:
    _check(service, consolidator)
    settings = consolidator.settings
    return {
        "enabled": settings.enabled,
        "model_configured": bool(settings.model_uuid),
        "proposals": [p.to_public() for p in await consolidator.list_proposals(scope)],
    }


async def run_route(
    service: MemoryService, consolidator: Consolidator, scope: Scope, body: Any, actor: Actor
) -> dict[str, Any]:
    _check(service, consolidator)
    pid = _proposal_id(body, required=False)
    result = await consolidator.run(scope, actor, pid)
    return result.to_public()


async def discard_route(
    service: MemoryService, consolidator: Consolidator, scope: Scope, body: Any, actor: Actor
) -> dict[str, Any]:
    _check(service, consolidator)
    pid = str(_proposal_id(body, required=True))
    return {"discarded": await consolidator.discard(scope, actor, pid), "proposal_id": pid}
