"""``!memory``: a parser and a renderer over the memory service (placeholder until the command tree lands)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from langbot_plugin.api.definition.components.command.command import Command
from langbot_plugin.api.entities.builtin.command.context import CommandReturn, ExecuteContext


class MemoryCommand(Command):
    def __init__(self) -> None:
        super().__init__()

        @self.subcommand("", help="summary")
        async def bare(self: MemoryCommand, ctx: ExecuteContext) -> AsyncGenerator[CommandReturn, None]:
            yield CommandReturn(text="LongTermMemory")

        @self.subcommand("*", help="unknown")
        async def unknown(self: MemoryCommand, ctx: ExecuteContext) -> AsyncGenerator[CommandReturn, None]:
            yield CommandReturn(text="LongTermMemory")
