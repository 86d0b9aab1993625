"""The retire pipeline: what goes with a memory that leaves the active set.

Episodes leave the active set when a correction supersedes them, a summary replaces them, or they are
archived, forgotten or deleted. Two kinds of rule follow, each given by one part of the plugin and
composed when the service is constructed (``MemoryService(review=, consolidator=)``, see
:mod:`ltm.service.compose`):

- writes that commit WITH the retirement, as steps of the same all-or-nothing mutation:
  the tombstone of ``forget --never`` (the review queue's :class:`TombstoneBook`), and the sources a
  removed summary gives back (consolidation's :class:`SummaryRules`);
- a cascade that runs AFTER it committed and its lock was released: the summaries derived from a
  removed source and the pending proposals over it. The cascade deletes through
  :meth:`ltm.service.episodes.Episodes.delete_derived`, which does not run the cascade again.

``forget(never=True)`` without a tombstone book is refused before anything is read or written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from ..domain.errors import ScopeError
from ..domain.models import Episode
from ..domain.scope import Scope
from .writes.actor import Actor
from .writes.plan import WriteStep

log = logging.getLogger(__name__)


@dataclass
class RetireEvent:
    """Episodes that just left the active set (or the store)."""

    scope: Scope
    operation: str  # "supersede" | "consolidate" | "archive" | "forget" | "bulk_delete"
    episodes: list[Episode]
    actor: Actor
    reason: str = ""
    never: bool = False  # forget --never: the value must not come back


class TombstoneBook(Protocol):
    async def tombstone_steps(self, event: RetireEvent) -> list[WriteStep]:
        """The tombstones of a ``forget --never``, as steps of its mutation."""
        ...


class SummaryRules(Protocol):
    async def give_back_steps(self, event: RetireEvent) -> list[WriteStep]:
        """The sources a retired summary gives back, as steps of the retirement's mutation."""
        ...

    async def on_retired(self, event: RetireEvent) -> None:
        """After the retirement: remove what was derived from the retired episodes."""
        ...


@dataclass(frozen=True)
class RetirePipeline:
    tombstones: TombstoneBook | None = None
    summaries: SummaryRules | None = None

    def require_tombstones(self) -> None:
        """Refuse ``forget --never`` when no tombstone could be recorded (it would not hold)."""
        if self.tombstones is None:
            raise ScopeError("forget --never needs the review queue's tombstones", key="cmd.review.unavailable")

    async def steps(self, event: RetireEvent) -> list[WriteStep]:
        """The writes that commit with ``event``'s retirement, all or nothing with it (called under
        the scope's write lock, before the mutation)."""
        out: list[WriteStep] = []
        if event.never and event.operation == "forget":
            self.require_tombstones()
            out += await self.tombstones.tombstone_steps(event)  # type: ignore[union-attr]
        if self.summaries is not None:
            out += await self.summaries.give_back_steps(event)
        return out

    async def after(self, event: RetireEvent) -> None:
        """The cascade, once the retirement committed. Its failure is logged: the retirement stands."""
        if self.summaries is None:
            return
        try:
            await self.summaries.on_retired(event)
        except Exception:
            log.exception("the cascade after %s in %s failed", event.operation, event.scope.user_key)
