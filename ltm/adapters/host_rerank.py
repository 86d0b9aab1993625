"""A :class:`~ltm.ports.Reranker` over the LangBot host's ``invoke_rerank`` (the KB's rerank model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ports import note_host_call


class HostReranker:
    """Calls the workspace rerank model ``model_uuid`` through the plugin's host connection."""

    def __init__(self, plugin: Any, model_uuid: str) -> None:
        if not model_uuid:
            raise ValueError("a rerank model uuid is required")
        self._plugin = plugin
        self.model_uuid = model_uuid
        self.name = f"host:{model_uuid}"

    async def rerank(self, query: str, documents: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        note_host_call()
        result = await self._plugin.invoke_rerank(self.model_uuid, query, list(documents), timeout=timeout)
        return list(result or [])
