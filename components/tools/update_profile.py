from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.entities.builtin.provider.session import Session

from components.background_calls import runs_background_work
from components.turn_scope import tool_error, tool_scope
from ltm.service import LtmError

log = logging.getLogger(__name__)


class UpdateProfile(Tool):
    @runs_background_work()
    async def call(self, params: dict[str, Any], session: Session, query_id: int) -> dict[str, Any]:
        log.info("tool update_profile called (query %s)", query_id)
        try:
            scope, actor = await tool_scope(self.plugin, session, query_id, "update_profile")
            profile = await self.plugin.service.update_profile(
                scope, (params if isinstance(params, dict) else {}), actor
            )
        except LtmError as exc:
            return tool_error(self.plugin, exc)
        return {"ok": True, "profile": profile.to_dict()}
