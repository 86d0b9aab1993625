"""LongTermMemory plugin entry: composes, per installation, the one MemoryService every component
calls, the review queue (candidates, tombstones, conflict parking) that guards its writes, the
consolidator and the served-turn marks; :func:`compose` is where they are joined.

The manifest declares the shared plugin runtime (``shared-runtime-v1`` / ``stateless-v1``): one
object graph may serve several installations, each invocation carrying its own config and
installation binding. So nothing of an installation lives on the plugin or a component directly:
:meth:`LongTermMemory.state` returns the current installation's
:class:`~ltm.service.installation.Installation` (services, caches, locks, pending audit
bookkeeping), built and started on first use, and :meth:`on_installation_revoked` stops and drops
it. In the dedicated runtime (LangBot 4.11.2 OSS) there is one
installation and one state, built in :meth:`initialize`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
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
from ltm.service.compose import build
from ltm.service.consolidation import ConsolidationSettings, Consolidator
from ltm.service.installation import Installation
from ltm.service.review import ReviewQueue, ReviewSettings
from ltm.service.served_turns import ServedTurns
from ltm.service.settings import ConfigCache

log = logging.getLogger(__name__)

DEDICATED = ""  # the state key of the one installation of a dedicated runtime


def compose(
    plugin: LongTermMemory,
    *,
    served_turns: ServedTurns | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Installation:
    """The object graph of one installation, not yet started. Settings are read per call from the
    invocation's config (``plugin.get_config()`` is task-local), so a state never holds another's
    config. ``clock``: the time every part reads (a stand-in host or a test gives its own; the
    service's, now, by default)."""
    chat = HostChatModel(plugin)
    timed: dict[str, Any] = {"clock": clock} if clock is not None else {}
    # The review queue guards every write (tombstones, conflicts) and records the tombstone of
    # forget --never; consolidation gives a removed summary's sources back and removes what was
    # derived from a removed source. Both are made by the service, over it, at its construction.
    service = MemoryService(
        kv=HostKeyValueStore(plugin),
        vectors=HostVectorIndex(plugin),
        embedder_for=lambda collection, kb: HostEmbedder(plugin, kb.embedding_model),
        settings=ConfigCache(plugin.get_config, Settings.from_config),
        reranker_for=lambda collection, kb: HostReranker(plugin, kb.rerank_model),
        # in the installed package every host call needs a live invocation: background work is
        # carried by the installation's calls (components/background_calls.py), never by a detached task
        background=Background(live=invocation_probe(plugin)),
        review=lambda svc: ReviewQueue(
            svc, settings=ConfigCache(plugin.get_config, ReviewSettings.from_config), model=chat
        ),
        consolidator=lambda svc: Consolidator(
            svc, chat, settings=ConfigCache(plugin.get_config, ConsolidationSettings.from_config)
        ),
        **timed,
    )
    return build(service, served_turns=served_turns)


class LongTermMemory(BasePlugin):
    def __init__(self) -> None:
        super().__init__()
        self._states: dict[str, Installation] = {}

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

    def state(self) -> Installation:
        """The current installation, built and started on its first call (in a shared runtime an
        installation has no hook of its own before it is first used)."""
        key = self.installation_key()
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = compose(self)
            state.start()
        return state

    def adopt(self, installation: Installation) -> Installation:
        """Serve ``installation`` as the current installation from now on (a stand-in host, a test),
        replacing the one there whole - never part of one - and starting it."""
        old = self._states.get(self.installation_key())
        if old is not None and old.service is not installation.service:
            old.stop()  # a graph over the same service (other neighbours) keeps its background
        self._states[self.installation_key()] = installation
        installation.start()
        return installation

    async def on_installation_revoked(self, binding: Any) -> None:
        state = self._states.pop(str(getattr(binding, "installation_uuid", "") or ""), None)
        if state is not None:
            state.stop()
            log.info("installation %s revoked: its memory caches are released", binding.installation_uuid)

    # The components' one entry point: the current installation and its parts, read-only (a
    # different graph is adopted whole, :meth:`adopt`).
    @property
    def installation(self) -> Installation:
        return self.state()

    @property
    def service(self) -> MemoryService:
        return self.state().service

    @property
    def review(self) -> ReviewQueue | None:
        return self.state().review

    @property
    def consolidator(self) -> Consolidator | None:
        return self.state().consolidator

    @property
    def served_turns(self) -> ServedTurns:
        return self.state().served_turns
