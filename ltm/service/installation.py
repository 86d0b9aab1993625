"""One installation's object graph: the service, its review queue and consolidator, the served-turn
marks, and what happens to them when the host deletes a memory knowledge base.

:func:`ltm.service.compose.build` makes one; building starts nothing (no recovery, no background
task), :meth:`Installation.start` does. The parts are joined once, at build: no part of an
installation is swapped afterwards, so none can be left on an old store (a test that wants another
store or no review queue builds another installation).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .consolidation import Consolidator
from .memory_service import MemoryService
from .review import ReviewQueue
from .served_turns import ServedTurns

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KbDeletion:
    """What deleting one knowledge base removed besides its vectors, settings, index and fences."""

    candidates: int = 0  # stored candidate records, their open lists and index chunks
    tombstones: int = 0
    proposals: int = 0
    injections: int = 0  # last-turn snapshots of chats whose last turn recalled from it
    scrubbed: int = 0  # older snapshots naming no knowledge base, kept without its rows
    leftovers: int = 0  # document indexes and stored write fences of it


@dataclass
class Installation:
    service: MemoryService
    served_turns: ServedTurns = field(default_factory=ServedTurns)
    started: bool = False

    @property
    def review(self) -> ReviewQueue | None:
        """The review queue the service was made with (none without)."""
        return self.service.review

    @property
    def consolidator(self) -> Consolidator | None:
        """The consolidator the service was made with (none without)."""
        return self.service.consolidator

    def start(self) -> None:
        """Begin the installation's background life: settle what a crash left in the write
        journal (every write waits for it; reads do not)."""
        if not self.started:
            self.started = True
            self.service.start_recovery()

    def stop(self) -> None:
        """The installation was revoked: its recovery and every queued or running background job stop."""
        self.service.stop_recovery()
        self.service.stop_background()
        self.service.block_renderer.close()

    async def delete_kb(self, kb_id: str) -> KbDeletion:
        """The host deleted the knowledge base ``kb_id``: its settings, recall index and snapshots,
        fences and vectors go (:meth:`.registry.KbRegistry.unregister_kb`), and so does everything
        kept beside it - review candidates, tombstones (their values can never come back: no row of
        the knowledge base is left), consolidation proposals and the last-turn snapshots that
        showed its memories. The audit log stays: it is the record of what was done."""
        rows = frozenset(await self.service.sealed.keyring.ids_of(kb_id))  # before its keyrings go
        await self.service.registry.unregister_kb(kb_id)
        leftovers = await self.service.erasure.drop_kb(kb_id)  # document indexes, fences of other processes
        proposals = await self.consolidator.on_kb_deleted(kb_id) if self.consolidator is not None else 0
        # the queue owns its records; an installation without one asks a queue made over the
        # service (records a past run with a review queue kept go all the same)
        review = self.review if self.review is not None else ReviewQueue(self.service)
        candidates, tombstones = await review.delete_kb(kb_id)
        self.service.snapshot_writer.discard_collection(kb_id)  # none written after the drop
        injections = await self.service.snapshots.drop_collection(kb_id)
        # an older snapshot names no knowledge base: it stays, without the rows of this one
        scrubbed = await self.service.erasure.scrub_snapshots(rows)
        done = KbDeletion(candidates, tombstones, proposals, injections, scrubbed, leftovers)
        log.info("memory knowledge base %s deleted with what was kept beside it: %s", kb_id, done)
        return done
