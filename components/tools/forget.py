from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.entities.builtin.provider.session import Session

from components.background_calls import runs_background_work
from components.turn_scope import tool_error, tool_scope
from ltm.service import LtmError, ValidationError

log = logging.getLogger(__name__)


class Forget(Tool):
    @runs_background_work()
    async def call(self, params: dict[str, Any], session: Session, query_id: int) -> dict[str, Any]:
        log.info("tool forget called (query %s)", query_id)
        p = params if isinstance(params, dict) else {}
        try:
            eid = p.get("episode_id")
            if not isinstance(eid, str) or not eid.strip():
                raise ValidationError("episode_id: required text", key="error.field_type", field="episode_id")
            reason = p.get("reason") if isinstance(p.get("reason"), str) else ""
            scope, actor = await tool_scope(self.plugin, session, query_id, "forget")
            episode = await self.plugin.service.forget(scope, eid.strip(), actor, reason=reason)
        except LtmError as exc:
            return tool_error(self.plugin, exc, deleted=0)
        return {"ok": True, "deleted": 1, "id": episode.id, "content": episode.content}
