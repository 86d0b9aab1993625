"""Translate LangBot shapes (query variables, Session, ExecuteContext) into a memory Scope and Actor.

Speaker identity: in group chats the host caches one Session per group, so ``Session.sender_id``
is the group's first speaker. The current speaker is read from the query variable ``sender_id``.
"""

from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.proxies.query_based_api import QueryBasedAPIProxy

from ltm.i18n import error_text, t
from ltm.service import Actor, FencedError, LtmError, MemoryService, Scope

log = logging.getLogger(__name__)

CONTEXT_VAR = "_ltm_context"
# Written by versions that took the memory KB off ``_knowledge_base_uuids``; still read, so that a
# query begun before an upgrade resolves the same KB.
MEMORY_KB_VAR = "_ltm_memory_kb"


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


def turn_knowledge_bases(variables: dict[str, Any]) -> list[str]:
    """The turn's candidate memory KBs, in order: one set aside by an earlier version, then the pipeline's."""
    listed = variables.get("_knowledge_base_uuids")
    kbs = [str(k) for k in listed] if isinstance(listed, list) else []
    aside = variables.get(MEMORY_KB_VAR)
    return [str(aside), *kbs] if isinstance(aside, str) and aside else kbs


def pipeline_knowledge_bases(variables: dict[str, Any]) -> list[str] | None:
    """The knowledge bases the turn's pipeline listed, or None when the query variables do not say."""
    if not isinstance(variables.get("_knowledge_base_uuids"), list) and not variables.get(MEMORY_KB_VAR):
        return None
    return turn_knowledge_bases(variables)


def turn_identity(
    variables: dict[str, Any], *, session: Any = None, session_name: str = "", bot_uuid: str | None = None
) -> dict[str, str]:
    """Who and where, from the host's facts: the query variables first, then the event's session name,
    then the Session. The Session's ``sender_id`` counts only outside groups: the host caches one
    Session per group, whose sender is the group's first speaker."""
    lt = str(variables.get("launcher_type") or "")
    lid = str(variables.get("launcher_id") or "")
    if not (lt and lid) and session_name:
        where = {"session_name": str(session_name)}
    else:
        where = {
            "launcher_type": lt or _launcher_type(session),
            "launcher_id": lid or str(getattr(session, "launcher_id", "") or ""),
        }
    group = (where.get("launcher_type") or where.get("session_name", "")).startswith("group")
    sender = str(variables.get("sender_id") or "")
    if not sender and not group:
        sender = str(getattr(session, "sender_id", "") or "")
    bot = bot_uuid if bot_uuid is not None else str(getattr(session, "bot_uuid", "") or "")
    return {**where, "bot_uuid": str(bot or ""), "sender_id": sender}


async def scope_of_turn(
    service: MemoryService,
    variables: dict[str, Any],
    *,
    session: Any = None,
    session_name: str = "",
    bot_uuid: str | None = None,
) -> Scope:
    """The scope of one turn, the same for the listener, the tools and the command: the memory KB of
    the turn's knowledge bases, and the identity of :func:`turn_identity`."""
    kb = await service.resolve_kb(turn_knowledge_bases(variables))
    ident = turn_identity(variables, session=session, session_name=session_name, bot_uuid=bot_uuid)
    return await service.scope_for(kb_id=kb, **ident)


async def tool_scope(plugin: Any, session: Any, query_id: int | None, tool: str = "") -> tuple[Scope, Actor]:
    """The scope of a tool call; ``tool`` (the tool's name) is reported to the usage ledger, which
    ties it to the listener's turn of the same query id."""
    variables = await query_vars(plugin, query_id)
    scope = await scope_of_turn(plugin.service, variables, session=session)
    if tool:
        try:
            plugin.service.ledger.tool_called(scope, query_id, tool)
        except Exception:  # the ledger must never fail a tool call
            log.warning("usage ledger: tool call not recorded", exc_info=True)
    return scope, Actor(surface="tool", sender_id=scope.sender_id, query_id=query_id)


def lang_of(plugin: Any) -> str:
    return plugin.service.settings.language


def tool_error(plugin: Any, exc: LtmError, **extra: Any) -> dict[str, Any]:
    """A write tool's failure as the model reads it. When the outcome of a write is unknown (the
    scope is fenced: this write or an earlier one was not confirmed), the model is told so plainly,
    with ``outcome: "unknown"``, and that repeating the same memory later is safe (a repeat of a
    stored one is recognised), instead of a bare error it would answer with an immediate retry."""
    lang = lang_of(plugin)
    if isinstance(exc, FencedError):
        args = dict(getattr(exc, "params", {}) or {})
        key = "tool.outcome_unknown" if exc.key == "error.fenced_now" else "tool.writes_paused"
        return {"ok": False, **extra, "outcome": "unknown", "error": t(key, lang, **args)}
    return {"ok": False, **extra, "error": error_text(exc, lang)}
