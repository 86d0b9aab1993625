"""The one place where the rules of the review queue and consolidation join the service's writes.

:func:`wire` gives the episodes of a :class:`~ltm.service.MemoryService`:

- the review queue's statement guard: every ``remember``, document ingest and import is refused when
  its value was rejected or forgotten for good, and a contradicting statement is parked for review;
- the retire pipeline (:mod:`ltm.service.retire`): ``forget --never`` writes the review queue's
  tombstone in the same mutation as the delete; a removed summary gives its sources back in the
  same mutation; afterwards a removed source takes its derived summaries and pending proposals
  with it (consolidation).

:func:`build` makes an :class:`~.installation.Installation` of a service and the neighbours made
over it, wired once. ``main.compose`` (the plugin), :mod:`ltm.standalone`, the benchmarks and the
tests' support build through it, so what a verb does with its neighbours is decided here and
nowhere else.

The neighbours are made over the service they then guard, so the two refer to each other: the review
queue reads and writes through the service, and the service's episodes call the queue's guard and
the retire pipeline. That loop is closed here, once, at build.
"""

from __future__ import annotations

from collections.abc import Callable

from .consolidation import Consolidator
from .installation import Installation
from .memory_service import MemoryService
from .retire import RetirePipeline
from .review import ReviewQueue
from .served_turns import ServedTurns


def wire(
    service: MemoryService, *, review: ReviewQueue | None = None, consolidator: Consolidator | None = None
) -> MemoryService:
    """Give ``service`` the rules of ``review`` and ``consolidator`` (replacing any it had)."""
    service.episodes.guard = review.guard if review is not None else None
    service.episodes.retire = RetirePipeline(
        tombstones=review.tombstones if review is not None else None, summaries=consolidator
    )
    service.people.review = review  # a person's erasure reaches their candidates and tombstone reasons
    return service


def build(
    service: MemoryService,
    *,
    review: Callable[[MemoryService], ReviewQueue] | None = None,
    consolidator: Callable[[MemoryService], Consolidator] | None = None,
    served_turns: ServedTurns | None = None,
) -> Installation:
    """The installation of ``service`` with the review queue and consolidator that ``review`` and
    ``consolidator`` make over it (none without), their rules in its writes. Nothing starts."""
    queue = review(service) if review is not None else None
    cons = consolidator(service) if consolidator is not None else None
    wire(service, review=queue, consolidator=cons)
    return Installation(service, queue, cons, served_turns if served_turns is not None else ServedTurns())
