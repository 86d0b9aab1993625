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
from ltm.adapters.host_rerank import HostReranker
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
            reranker_for=self._reranker_for,
        )
        self.review = ReviewQueue(
            self.service,
            settings=lambda: ReviewSettings.from_config(self.get_config()),
            model=HostChatModel(self),
        )
        # Consolidation registers its cascade listener (derived summaries, pending proposals).
        self.consolidator = install_consolidation(self, HostChatModel(self))
        # Nothing slow before the plugin answers the host: after a restart (a config change restarts
        # the plugin) the journal of what a crash left half-finished is settled in the background,
        # and every write waits for it; reads and recalls are served at once.
        self.service.start_recovery()
        log.info("LongTermMemory initialized; settling the write journal in the background")

    def _embedder_for(self, collection: str, kb: KbSettings) -> HostEmbedder:
        return HostEmbedder(self, kb.embedding_model)

    def _reranker_for(self, collection: str, kb: KbSettings) -> HostReranker:
        return HostReranker(self, kb.rerank_model)
