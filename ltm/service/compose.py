"""Where an installation is put together: :func:`build` makes an :class:`~.installation.Installation`
of a service, built whole.

The rules of the review queue and consolidation join the service's writes when the service is
constructed (``MemoryService(..., review=, consolidator=)``, each a factory called with the
service), not afterwards:

- the review queue's statement guard: every ``remember``, document ingest and import is refused when
  its value was rejected or forgotten for good, and a contradicting statement is parked for review;
- the retire pipeline (:mod:`ltm.service.retire`): ``forget --never`` writes the review queue's
  tombstone in the same mutation as the delete; a removed summary gives its sources back in the
  same mutation; afterwards a removed source takes its derived summaries and pending proposals
  with it (consolidation).

The neighbours are made over the service they then guard, so the two refer to each other at run
time: the review queue reads and writes through the service, and the service's episodes call the
queue's guard and the retire pipeline. The service makes each neighbour (from its factory) before
its episodes, and hands the episodes the neighbour's rules as constructor arguments: no part is
joined or replaced after it exists. ``main.compose`` (the plugin), :mod:`ltm.standalone`, the
benchmarks and the tests' support build through here.
"""

from __future__ import annotations

from .installation import Installation
from .memory_service import MemoryService
from .served_turns import ServedTurns


def build(service: MemoryService, *, served_turns: ServedTurns | None = None) -> Installation:
    """The installation of ``service`` (with the review queue and consolidator it was made with,
    none without) and its served-turn marks. Nothing starts."""
    return Installation(service, served_turns if served_turns is not None else ServedTurns())
