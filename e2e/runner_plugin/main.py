"""Test-only plugin: a LocalAgent-like Runner for the LongTermMemory end-to-end harness."""

from __future__ import annotations

from langbot_plugin.api.definition.plugin import BasePlugin


class LocalRunnerPlugin(BasePlugin):
    """Holds no state; the Runner and the debug listener do the work."""

    async def initialize(self) -> None:
        pass
