"""The Memory Console page component: hands every API request to the console router in ``pages/``."""

from __future__ import annotations

import asyncio
from typing import Any

from langbot_plugin.api.definition.components.page import Page, PageRequest, PageResponse

from pages.messages import msg
from pages.router import handle

KB_NAMES_TIMEOUT_S = 3.0


async def kb_names(plugin: Any) -> dict[str, str]:
    """``{uuid: name}`` of the workspace's knowledge bases, as the host lists them."""
    listed = await asyncio.wait_for(plugin.list_knowledge_bases(), KB_NAMES_TIMEOUT_S)
    return {str(kb.get("uuid")): str(kb.get("name") or "") for kb in listed or [] if isinstance(kb, dict)}


class MemoryConsole(Page):
    async def handle_api(self, request: PageRequest) -> PageResponse:
        service = getattr(getattr(self, "plugin", None), "service", None)
        if service is None:  # the plugin failed to initialise: say so instead of raising into the host
            lang = request.body.get("lang") if isinstance(request.body, dict) else None
            return PageResponse.fail(msg("err.not_ready", lang if isinstance(lang, str) else None))
        return await handle(
            service,
            request,
            review=getattr(self.plugin, "review", None),
            consolidator=getattr(self.plugin, "consolidator", None),
            kb_names=lambda: kb_names(self.plugin),
        )
