"""Translate LangBot shapes (query variables, Session, ExecuteContext) into a memory Scope and Actor.

Speaker identity: in group chats the host caches one Session per group, so ``Session.sender_id``
is the group's first speaker. The current speaker is read from the query variable ``sender_id``.
"""

from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.proxies.query_based_api import QueryBasedAPIProxy

from ltm.domain.errors import FencedError, MemoryError_
from ltm.domain.scope import Scope
from ltm.i18n import error_text, t
from ltm.service import Actor, MemoryService

log = logging.getLogger(__name__)

SCOPE_VAR = "_ltm_scope"
CONTEXT_VAR = "_ltm_context"


def _launcher_type(session: Any) -> str:
    lt = getattr(session, "launcher_type", "")
    return str(getattr(lt, "value", lt) or "")


async def query_vars(plugin: Any, query_id: int | None) -> dict[str, Any]:
    if query_id is None:
        return {}
    proxy = QueryBasedAPIProxy(query_id=int(query_id), plugin_runtime_handler=plugin.plugin_runtime_handler)
    try:
        return dict(await proxy.get_query_vars() or {})
    except Exception as exc:  # a query that has ended, or a host without query vars
        log.debug("query vars unavailable for %s: %s", query_id, exc)
        return {}


async def scope_from_vars(
    service: MemoryService, variables: dict[str, Any], *, session: Any = None, bot_uuid: str | None = None
) -> Scope:
    """One resolution path for tools and commands: the listener's stamped scope first, then the
    query variables, then the Session."""
    stamped = variables.get(SCOPE_VAR) if isinstance(variables.get(SCOPE_VAR), dict) else None
    sender = str(variables.get("sender_id") or getattr(session, "sender_id", "") or "")
    if stamped and stamped.get("session_name"):
        return await service.scope_for(
            kb_id=str(stamped.get("kb_id") or ""),
            session_name=str(stamped["session_name"]),
            bot_uuid=str(stamped.get("bot_uuid") or ""),
            sender_id=sender or str(stamped.get("sender_id") or ""),
        )
    kb_list = variables.get("_knowledge_base_uuids") or []
    kb = await service.resolve_kb([str(k) for k in kb_list] if isinstance(kb_list, list) else [])
    lt = str(variables.get("launcher_type") or _launcher_type(session))
    lid = str(variables.get("launcher_id") or getattr(session, "launcher_id", "") or "")
    bot = bot_uuid if bot_uuid is not None else str(getattr(session, "bot_uuid", "") or "")
    return await service.scope_for(kb_id=kb, launcher_type=lt, launcher_id=lid, bot_uuid=bot, sender_id=sender)


async def tool_scope(plugin: Any, session: Any, query_id: int | None) -> tuple[Scope, Actor]:
    variables = await query_vars(plugin, query_id)
    scope = await scope_from_vars(plugin.service, variables, session=session)
    return scope, Actor(surface="tool", sender_id=scope.sender_id, query_id=query_id)


def lang_of(plugin: Any) -> str:
    return plugin.service.settings.language


def tool_error(plugin: Any, exc: MemoryError_, **extra: Any) -> dict[str, Any]:
    """A write tool's failure as the model reads it. When the outcome of a write is unknown (the
    scope is fenced: this write or an earlier one was not confirmed), the model is told so plainly,
    with ``outcome: "unknown"``, and that repeating the same memory later is safe (a repeat of a
    stored one is recognised), instead of a bare error it would answer with an immediate retry."""
    lang = lang_of(plugin)
    if isinstance(exc, FencedError):
        args = dict(getattr(exc, "args_", {}) or {})
        key = "tool.outcome_unknown" if exc.key == "error.fenced_now" else "tool.writes_paused"
        return {"ok": False, **extra, "outcome": "unknown", "error": t(key, lang, **args)}
    return {"ok": False, **extra, "error": error_text(exc, lang)}
