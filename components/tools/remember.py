from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.entities.builtin.provider.session import Session

from components.background_calls import runs_background_work
from components.turn_scope import lang_of, tool_error, tool_scope
from ltm.i18n import t
from ltm.service import SETTABLE_FIELDS, LtmError

log = logging.getLogger(__name__)
# what the model may set: every settable field but the source, which is the turn (set below)
ALLOWED = tuple(n for n in SETTABLE_FIELDS if n != "source_ref")


class Remember(Tool):
    @runs_background_work()
    async def call(self, params: dict[str, Any], session: Session, query_id: int) -> dict[str, Any]:
        log.info("tool remember called (query %s)", query_id)
        try:
            scope, actor = await tool_scope(self.plugin, session, query_id, "remember")
            raw = {k: v for k, v in (params if isinstance(params, dict) else {}).items() if k in ALLOWED}
            raw.setdefault("source_ref", f"query:{query_id}")
            done = await self.plugin.service.remember(scope, raw, actor, origin="tool")
        except LtmError as exc:
            return tool_error(self.plugin, exc)
        episode, retired = done
        # the statement's own words ended its validity ("until Friday"): the model is told, to tell the user
        expires = (
            {
                "valid_until": episode.valid_until,
                "expires": t("tool.remember.expires", lang_of(self.plugin), until=episode.valid_until, words=words),
            }
            if (words := done.expires_by)
            else {}
        )
        return {
            "ok": True,
            "id": episode.id,
            "content": episode.content,
            "superseded": [r.id for r in retired],
            **expires,
            # a retry of a write whose answer was lost: nothing was stored twice
            **({"already_stored": True} if done.existing else {}),
            # a restatement of a stored memory: reinforced, no second row
            **(
                {"already_known": True, "note": t("tool.already_known", lang_of(self.plugin), id=episode.id)}
                if done.already_known
                else {}
            ),
        }
