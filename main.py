"""LongTermMemory plugin entry: composes, per installation, the one MemoryService every component
calls, the review queue (candidates, tombstones, conflict parking) that guards its writes, the
consolidator and the served-turn marks; :func:`compose` is where they are joined.

The manifest declares the shared plugin runtime (``shared-runtime-v1`` / ``stateless-v1``): one
object graph may serve several installations, each invocation carrying its own config and
installation binding. So nothing of an installation lives on the plugin or a component directly:
:meth:`LongTermMemory.state` returns the current installation's :class:`InstallationState`
(services, caches, locks, pending audit bookkeeping), built on first use, and
:meth:`on_installation_revoked` drops it. In the dedicated runtime (LangBot 4.11.2 OSS) there is one
installation and one state, built in :meth:`initialize`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from langbot_plugin.api.definition.plugin import BasePlugin

from ltm.adapters.embedders import HostEmbedder
from ltm.adapters.host_chat import HostChatModel
from ltm.adapters.host_index import HostVectorIndex
from ltm.adapters.host_invocation import invocation_probe
from ltm.adapters.host_kv import HostKeyValueStore
from ltm.adapters.host_rerank import HostReranker
from ltm.service import MemoryService, Settings
from ltm.service.background import CHAT_GRACE_S, Background
from ltm.service.compose import wire
from ltm.service.consolidation import ConsolidationSettings, Consolidator
from ltm.service.review import ReviewQueue, ReviewSettings
from ltm.service.settings import ConfigCache
from ltm.service.turns import ServedTurns

log = logging.getLogger(__name__)

DEDICATED = ""  # the state key of the one installation of a dedicated runtime


@dataclass
class InstallationState:
    """Everything process-local that belongs to one installation."""

    service: MemoryService
    review: ReviewQueue | None
    consolidator: Consolidator | None
    served_turns: ServedTurns


def compose(plugin: LongTermMemory) -> InstallationState:
    """The object graph of one installation. Settings are read per call from the invocation's
    config (``plugin.get_config()`` is task-local), so a state never holds another's config."""
    service = MemoryService(
        kv=HostKeyValueStore(plugin),
        vectors=HostVectorIndex(plugin),
        embedder_for=lambda collection, kb: HostEmbedder(plugin, kb.embedding_model),
        settings=ConfigCache(plugin.get_config, Settings.from_config),
        reranker_for=lambda collection, kb: HostReranker(plugin, kb.rerank_model),
        # in the installed package every host call needs a live invocation: background work is
        # carried by the installation's calls (components/carry.py), never by a detached task
        background=Background(live=invocation_probe(plugin)),
    )
    chat = HostChatModel(plugin)
    review = ReviewQueue(service, settings=ConfigCache(plugin.get_config, ReviewSettings.from_config), model=chat)
    consolidator = Consolidator(
        service, chat, settings=ConfigCache(plugin.get_config, ConsolidationSettings.from_config)
    )
    # The review queue guards every write (tombstones, conflicts) and records the tombstone of
    # forget --never; consolidation gives a removed summary's sources back and removes what was
    # derived from a removed source.
    wire(service, review=review, consolidator=consolidator)
    return InstallationState(service=service, review=review, consolidator=consolidator, served_turns=ServedTurns())


class LongTermMemory(BasePlugin):
    def __init__(self) -> None:
        super().__init__()
        self._states: dict[str, InstallationState] = {}

    async def initialize(self) -> None:
        # Nothing slow before the plugin answers the host: after a restart (a config change restarts
        # the plugin) the journal of what a crash left half-finished is settled in the background,
        # and every write waits for it; reads and recalls are served at once. In the installed
        # package INITIALIZE_PLUGIN is the first call that can carry it (bounded), the next calls
        # carry what is left.
        log.info("LongTermMemory initialized; settling the write journal in the background")
        async with self.state().service.background.carrying(CHAT_GRACE_S):
            pass

    def installation_key(self) -> str:
        """The current installation: its uuid in a shared runtime, :data:`DEDICATED` otherwise."""
        binding = self.get_installation_binding()
        dedicated = getattr(getattr(self, "plugin_runtime_handler", None), "bound_action_context", None)
        if binding is None or binding == dedicated:
            return DEDICATED
        return str(binding.installation_uuid)

    def state(self) -> InstallationState:
        key = self.installation_key()
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = compose(self)
            state.service.start_recovery()
        return state

    async def on_installation_revoked(self, binding: Any) -> None:
        state = self._states.pop(str(getattr(binding, "installation_uuid", "") or ""), None)
        if state is not None:
            state.service.stop_recovery()
            state.service.stop_background()
            log.info("installation %s revoked: its memory caches are released", binding.installation_uuid)

    # The components' one entry point: the current installation's parts (settable for tests and
    # for a surface that runs without one, e.g. no review queue: the service's writes follow).
    @property
    def service(self) -> MemoryService:
        return self.state().service

    @service.setter
    def service(self, value: MemoryService) -> None:
        self.state().service = value

    @property
    def review(self) -> ReviewQueue | None:
        return self.state().review

    @review.setter
    def review(self, value: ReviewQueue | None) -> None:
        state = self.state()
        state.review = value
        wire(state.service, review=value, consolidator=state.consolidator)

    @property
    def consolidator(self) -> Consolidator | None:
        return self.state().consolidator

    @consolidator.setter
    def consolidator(self, value: Consolidator | None) -> None:
        state = self.state()
        state.consolidator = value
        wire(state.service, review=state.review, consolidator=value)

    @property
    def served_turns(self) -> ServedTurns:
        return self.state().served_turns

    @served_turns.setter
    def served_turns(self, value: ServedTurns) -> None:
        self.state().served_turns = value
