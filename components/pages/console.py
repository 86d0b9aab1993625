"""The Memory Console page component: hands every API request to the console router in ``pages/``."""

from __future__ import annotations

import asyncio
from typing import Any

from langbot_plugin.api.definition.components.page import Page, PageRequest, PageResponse

from components.background_calls import OPERATOR_GRACE_S, runs_background_work
from ltm.i18n import CONSOLE
from pages.router import handle

KB_NAMES_TIMEOUT_S = 3.0


async def kb_names(plugin: Any) -> dict[str, str]:
    """``{uuid: name}`` of the workspace's knowledge bases, as the host lists them."""
    listed = await asyncio.wait_for(plugin.list_knowledge_bases(), KB_NAMES_TIMEOUT_S)
    return {str(kb.get("uuid")): str(kb.get("name") or "") for kb in listed or [] if isinstance(kb, dict)}


def for_dashboard(resp: PageResponse) -> PageResponse:
    """A refusal as the data ``{"data": null, "error": <message>}``, which the page turns back into a
    rejection. LangBot 4.11.2 answers a failed PageResponse with HTTP 400 and its dashboard posts
    that rejection to the page as ``"[object Object]"``: only data reaches the page intact."""
    if resp.error:
        return PageResponse.ok({"data": None, "error": resp.error})
    return resp


class MemoryConsole(Page):
    @runs_background_work(OPERATOR_GRACE_S)
    async def handle_api(self, request: PageRequest) -> PageResponse:
        return for_dashboard(await self.answer(request))

    async def answer(self, request: PageRequest) -> PageResponse:
        """The router's answer: ``error`` set on a refusal (what every surface but the host sees)."""
        service = getattr(getattr(self, "plugin", None), "service", None)
        if service is None:  # the plugin failed to initialise: say so instead of raising into the host
            lang = request.body.get("lang") if isinstance(request.body, dict) else None
            return PageResponse.fail(CONSOLE.t("err.not_ready", lang if isinstance(lang, str) else None))
        return await handle(
            service,
            request,
            review=getattr(self.plugin, "review", None),
            consolidator=getattr(self.plugin, "consolidator", None),
            kb_names=lambda: kb_names(self.plugin),
        )
