"""A PromptPreProcessing handler that returns at once: the host's cost of calling a listener."""

from __future__ import annotations

from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.entities import context, events


class NoopListener(EventListener):
    async def initialize(self) -> None:
        await super().initialize()

        @self.handler(events.PromptPreProcessing)
        async def on_prompt(ctx: context.EventContext) -> None:
            return None
