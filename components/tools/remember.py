from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.entities.builtin.provider.session import Session

from components.hostglue import lang_of, tool_scope
from ltm.domain.errors import MemoryError_
from ltm.i18n import error_text

log = logging.getLogger(__name__)
ALLOWED = ("content", "importance", "tags", "event_at", "valid_from", "valid_until", "claim_type", "supersedes")


class Remember(Tool):
    async def call(self, params: dict[str, Any], session: Session, query_id: int) -> dict[str, Any]:
        log.info("tool remember called (query %s)", query_id)
        try:
            scope, actor = await tool_scope(self.plugin, session, query_id)
            raw = {k: v for k, v in (params if isinstance(params, dict) else {}).items() if k in ALLOWED}
            raw.setdefault("source_ref", f"query:{query_id}")
            episode, retired = await self.plugin.service.remember(scope, raw, actor, origin="tool")
        except MemoryError_ as exc:
            return {"ok": False, "error": error_text(exc, lang_of(self.plugin))}
        return {
            "ok": True,
            "id": episode.id,
            "content": episode.content,
            "superseded": [r.id for r in retired],
        }
