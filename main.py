"""LongTermMemory plugin entry: builds the one MemoryService every component calls, and the review
queue (candidates, tombstones, conflict parking) that guards its writes."""

from __future__ import annotations

import logging

from langbot_plugin.api.definition.plugin import BasePlugin

from components.consolidation_model import install_consolidation
from ltm.adapters.embedders import HostEmbedder
from ltm.adapters.host_chat import HostChatModel
from ltm.adapters.host_index import HostVectorIndex
from ltm.adapters.host_kv import HostKeyValueStore
from ltm.service import MemoryService, Settings
from ltm.service.consolidation import Consolidator
from ltm.service.review import ReviewQueue, ReviewSettings
from ltm.service.settings import KbSettings
from ltm.service.turns import ServedTurns

log = logging.getLogger(__name__)


class LongTermMemory(BasePlugin):
    service: MemoryService
    review: ReviewQueue
    consolidator: Consolidator
    served_turns: ServedTurns

    async def initialize(self) -> None:
        self.served_turns = ServedTurns()
        self.service = MemoryService(
            kv=HostKeyValueStore(self),
            vectors=HostVectorIndex(self),
            embedder_for=self._embedder_for,
            settings=lambda: Settings.from_config(self.get_config()),
        )
        self.review = ReviewQueue(
            self.service,
            settings=lambda: ReviewSettings.from_config(self.get_config()),
            model=HostChatModel(self),
        )
        # Consolidation registers its cascade listener (derived summaries, pending proposals).
        self.consolidator = install_consolidation(self, HostChatModel(self))
        kbs = await self.service.known_kbs()
        log.info("LongTermMemory initialized: %d memory knowledge base(s) registered", len(kbs))
        try:  # settle what a crash or a cancellation left half-finished (journal)
            for outcome in await self.service.recover():
                log.warning("recovered %s (%s): %s", outcome["op_id"], outcome["operation"], outcome["state"])
        except Exception:
            log.exception("recovery of half-finished operations failed; they stay in the journal")

    def _embedder_for(self, collection: str, kb: KbSettings) -> HostEmbedder:
        return HostEmbedder(self, kb.embedding_model)
