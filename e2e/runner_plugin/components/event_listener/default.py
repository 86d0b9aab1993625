"""Bridge the host-private query variable ``_ltm_context`` to something a Runner can see.

LangBot 4.11.2 drops every query variable whose name starts with ``_`` from a Runner's
``ctx.variables`` and ``ctx.adapter.extra.params`` (``QueryEntryAdapter.build_params``), so a Runner
cannot observe ``_ltm_context``. This listener runs on ``*NormalMessageReceived`` (after the
``PromptPreProcessing`` stage where LongTermMemory sets it) and copies it, JSON-encoded, into the
public string variable ``localrunner_ltm_context`` (``"null"`` when unset).
"""

from __future__ import annotations

import json
import logging

from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.entities import context, events

logger = logging.getLogger(__name__)

SOURCE_VAR = "_ltm_context"
TARGET_VAR = "localrunner_ltm_context"


class DebugVarBridge(EventListener):
    async def initialize(self) -> None:
        await super().initialize()

        async def bridge(ctx: context.EventContext) -> None:
            try:
                variables = await ctx.get_query_vars()
                value = variables.get(SOURCE_VAR) if isinstance(variables, dict) else None
                await ctx.set_query_var(TARGET_VAR, json.dumps(value, ensure_ascii=False, default=str))
            except Exception:  # a debug aid must never break the turn
                logger.warning("could not bridge %s", SOURCE_VAR, exc_info=True)

        self.handler(events.PersonNormalMessageReceived)(bridge)
        self.handler(events.GroupNormalMessageReceived)(bridge)
