"""PromptPreProcessing: recall once and inject the memory block into ``default_prompt``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.entities import context, events
from langbot_plugin.api.entities.builtin.provider.message import Message

from components.hostglue import CONTEXT_VAR, SCOPE_VAR
from ltm.domain.timefields import now_utc, to_iso
from ltm.service import MemoryService
from ltm.service.injection import context_payload, has_content, render_block

log = logging.getLogger(__name__)
COMMAND_PREFIXES = ("!", "！")


async def inject_memory(service: MemoryService, ctx: Any) -> dict[str, Any] | None:
    """The whole turn, as data: identity -> scope -> recall -> block -> query vars -> snapshot."""
    variables, bot_uuid = await asyncio.gather(ctx.get_query_vars(), ctx.get_bot_uuid())
    variables = dict(variables or {})
    text = str(variables.get("user_message_text") or "")
    if text.lstrip().startswith(COMMAND_PREFIXES):
        return None  # PromptPreProcessing also fires for commands; nothing to recall
    sender = str(variables.get("sender_id") or "")
    kb_list = [str(k) for k in (variables.get("_knowledge_base_uuids") or [])]
    kb = await service.resolve_kb(kb_list)
    scope = await service.scope_for(
        kb_id=kb, session_name=ctx.event.session_name, bot_uuid=str(bot_uuid or ""), sender_id=sender
    )
    log.info("memory scope resolved: %s (kb=%s, isolation=%s)", scope.user_key, kb or "-", scope.isolation)
    settings = service.settings
    writes: list[Any] = [
        ctx.set_query_var(
            SCOPE_VAR,
            {"kb_id": kb, "session_name": scope.session_name, "bot_uuid": scope.bot_uuid, "sender_id": sender},
        )
    ]
    if kb in kb_list:  # the runner must not recall the memory KB a second time
        writes.append(ctx.set_query_var("_knowledge_base_uuids", [k for k in kb_list if k != kb]))
    if not settings.auto_recall:
        await asyncio.gather(*writes)
        return None
    result = await service.recall(scope, text, with_profiles=settings.inject_profiles)
    speaker = {"id": sender, "name": str(variables.get("sender_name") or "")}
    payload = context_payload(result, speaker)
    block = render_block(payload, settings.language) if has_content(payload) else ""
    if block:
        ctx.event.default_prompt.append(Message(role="system", content=block))
    writes.append(ctx.set_query_var(CONTEXT_VAR, payload))
    snapshot = {
        "at": to_iso(now_utc()),
        "injected": bool(block),
        "blocks": 1 if block else 0,
        "chars": len(block),
        "tokens": result.tokens,
        "speaker": speaker,
        "profiles_used": [
            kind
            for kind, p in (("session", result.session_profile), ("speaker", result.speaker_profile))
            if p is not None and not p.is_empty()
        ],
        "episodes": [r.episode.id for r in result.episodes],
        "query_id": getattr(ctx, "query_id", None),
    }
    writes.append(service.save_injection(scope, snapshot))
    await asyncio.gather(*writes)
    log.info(
        "injection ready: %d block(s), %d chars, %d episodes", snapshot["blocks"], len(block), len(result.episodes)
    )
    return snapshot


class MemoryListener(EventListener):
    async def initialize(self) -> None:
        await super().initialize()

        @self.handler(events.PromptPreProcessing)
        async def on_prompt(ctx: context.EventContext) -> None:
            try:
                await inject_memory(self.plugin.service, ctx)
            except Exception:  # memory must never break the chat
                log.exception("memory injection failed; the turn continues without memory")
