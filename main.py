"""LongTermMemory plugin entry: builds the one MemoryService every component calls."""

from __future__ import annotations

import logging

from langbot_plugin.api.definition.plugin import BasePlugin

from ltm.adapters.embedders import HostEmbedder
from ltm.adapters.host_index import HostVectorIndex
from ltm.adapters.host_kv import HostKeyValueStore
from ltm.service import MemoryService, Settings
from ltm.service.settings import KbSettings

log = logging.getLogger(__name__)


class LongTermMemory(BasePlugin):
    service: MemoryService

    async def initialize(self) -> None:
        self.service = MemoryService(
            kv=HostKeyValueStore(self),
            vectors=HostVectorIndex(self),
            embedder_for=self._embedder_for,
            settings=lambda: Settings.from_config(self.get_config()),
        )
        kbs = await self.service.known_kbs()
        log.info("LongTermMemory initialized: %d memory knowledge base(s) registered", len(kbs))

    def _embedder_for(self, collection: str, kb: KbSettings) -> HostEmbedder:
        return HostEmbedder(self, kb.embedding_model)

    def __del__(self) -> None:
        pass
