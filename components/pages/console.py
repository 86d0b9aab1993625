"""The Memory Console page component: hands every API request to the console router in ``pages/``."""

from __future__ import annotations

from langbot_plugin.api.definition.components.page import Page, PageRequest, PageResponse

from pages.router import handle


class MemoryConsole(Page):
    async def handle_api(self, request: PageRequest) -> PageResponse:
        return await handle(self.plugin.service, request)
