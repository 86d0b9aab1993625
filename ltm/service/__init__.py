"""The memory service: every verb exists once here and every surface calls it."""

from .memory_service import Actor, MemoryService, RecalledEpisode, RecallResult, RetireEvent, Settings

__all__ = ["Actor", "MemoryService", "RecalledEpisode", "RecallResult", "RetireEvent", "Settings"]
