"""The one place where the rules of the review queue and consolidation join the service's writes.

:func:`wire` gives the episodes of a :class:`~ltm.service.MemoryService`:

- the review queue's statement guard: every ``remember``, document ingest and import is refused when
  its value was rejected or forgotten for good, and a contradicting statement is parked for review;
- the retire pipeline (:mod:`ltm.service.retire`): ``forget --never`` writes the review queue's
  tombstone in the same mutation as the delete; a removed summary gives its sources back in the
  same mutation; afterwards a removed source takes its derived summaries and pending proposals
  with it (consolidation).

``main.compose`` (the plugin), :mod:`ltm.standalone` and the tests' support build through it, so
what a verb does with its neighbours is decided here and nowhere else.
"""

from __future__ import annotations

from .consolidation import Consolidator
from .memory_service import MemoryService
from .retire import RetirePipeline
from .review import ReviewQueue


def wire(
    service: MemoryService, *, review: ReviewQueue | None = None, consolidator: Consolidator | None = None
) -> MemoryService:
    """Give ``service`` the rules of ``review`` and ``consolidator`` (replacing any it had)."""
    service.episodes.guard = review.guard if review is not None else None
    service.episodes.retire = RetirePipeline(
        tombstones=review.tombstones if review is not None else None, summaries=consolidator
    )
    return service
