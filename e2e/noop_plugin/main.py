"""Test-only plugin: the floor of benchmarks.load (bound like LongTermMemory, does nothing)."""

from __future__ import annotations

from langbot_plugin.api.definition.plugin import BasePlugin


class NoopMemoryPlugin(BasePlugin):
    """Holds no state."""

    async def initialize(self) -> None:
        pass
