"""One chat turn's memory, as the service prepares it: recall -> payload -> block -> snapshot.

The surface (the listener) gathers what the host gives - the scope of the turn, the user's text,
the speaker's name, the query id - and calls :func:`prepare_turn` (``MemoryService.prepare_turn``),
which returns the :class:`Injection`: the block, the ``_ltm_context`` payload and the snapshot. The
turn reaches nothing of the surface: the listener itself puts the block into the prompt and writes
the payload to the host, then hands the injection back (``MemoryService.record_turn``) so that its
snapshot is queued once those host writes are answered. What the block covered is marked in
:class:`~.served_turns.ServedTurns` so that the memory engine does not hand the runner the same
memories again, and the turn's :class:`~.snapshots.InjectionSnapshot` is saved for the console -
after the reply: the reply does not need it, so :class:`SnapshotWriter` writes it as background work
(latest per chat, bounded), and a failed save is logged as what it is (the turn had its memory).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..domain.budget import estimate_tokens
from ..domain.scope import Scope
from ..domain.storage_keys import inject_key
from ..domain.timefields import now_utc, to_iso
from ..ports import is_connection_lost
from .background import Background
from .block_renderer import BlockRenderer
from .injection import context_payload, has_content
from .prefetch import note_time
from .recall import RecallResult
from .served_turns import Identity, ServedTurns, identity
from .settings import Settings
from .snapshots import InjectionSnapshot

log = logging.getLogger(__name__)

Recaller = Callable[..., Awaitable[RecallResult]]
SaveSnapshot = Callable[[Scope, InjectionSnapshot], Awaitable[None]]

PENDING_SNAPSHOTS = 1024  # chats whose last-turn snapshot waits for its write; the oldest is dropped


class SnapshotWriter:
    """The last-turn snapshots, written after the turn as background work (``Background.submit``
    with ``after_call``: never by the hook's own call). Per chat only the latest is written (a
    burst of turns is one write); at most :data:`PENDING_SNAPSHOTS` chats wait (the oldest is
    dropped, counted). A snapshot still waiting is what :meth:`pending` answers, so ``!memory why``
    right after a turn reads it. A failed write is a WARNING naming the lost snapshot."""

    def __init__(self, save: SaveSnapshot, background: Background, bound: int = PENDING_SNAPSHOTS) -> None:
        self._save = save
        self._background = background
        self._bound = bound
        self._pending: OrderedDict[str, tuple[Scope, InjectionSnapshot]] = OrderedDict()
        self._jobs: dict[str, asyncio.Future[Any]] = {}
        self.counts = {"queued": 0, "written": 0, "coalesced": 0, "dropped": 0, "failed": 0}

    def later(self, scope: Scope, snapshot: InjectionSnapshot) -> None:
        key = inject_key(scope)
        if key in self._pending:
            self.counts["coalesced"] += 1
            self._pending.pop(key)
        self._pending[key] = (scope, snapshot)
        self.counts["queued"] += 1
        while len(self._pending) > self._bound:
            self._pending.popitem(last=False)
            self.counts["dropped"] += 1
        self._submit(key)

    def pending(self, scope: Scope) -> InjectionSnapshot | None:
        item = self._pending.get(inject_key(scope))
        return item[1] if item is not None else None

    def discard(self, scope: Scope) -> None:
        """Forget a snapshot not yet written (its chat's memory was erased)."""
        self._pending.pop(inject_key(scope), None)

    def rewrite_pending(self, rewrite: Callable[[InjectionSnapshot], InjectionSnapshot | None]) -> int:
        """Replace each snapshot not yet written by ``rewrite(snapshot)`` where it returns one (an
        erase takes its rows out). A write already under way is followed by one of the new value,
        so the stored record ends as rewritten. Returns how many changed."""
        n = 0
        for key, (scope, snap) in list(self._pending.items()):
            new = rewrite(snap)
            if new is not None:
                self._pending[key] = (scope, new)
                n += 1
                if key not in self._jobs:
                    self._submit(key)
        return n

    def discard_collection(self, kb_id: str) -> int:
        """Forget the snapshots not yet written that recalled from ``kb_id`` (it was deleted)."""
        gone = [k for k, (scope, _) in self._pending.items() if scope.collection == kb_id]
        for key in gone:
            del self._pending[key]
        return len(gone)

    async def drain(self) -> None:
        """Wait until every snapshot queued so far was written (or failed): tests, and a caller that
        reads the stored record."""
        while self._pending:
            jobs = [f for f in self._jobs.values() if not f.done()]
            if not jobs:
                return  # queued for a later call (an installed plugin's carrier)
            await asyncio.wait(jobs)  # waits without cancelling them, and leaves their errors to their owner

    def _submit(self, key: str) -> None:
        # interruptible: a write cut off by its carrier's grace runs again later (latest per chat)
        future = self._background.submit(
            ("last-turn-snapshot", key), lambda: self._write(key), after_call=True, interruptible=True
        )
        self._jobs[key] = future
        future.add_done_callback(lambda _f: self._again(key))

    def _again(self, key: str) -> None:
        self._jobs.pop(key, None)
        # a newer snapshot arrived while the job for this chat was running: one more write
        if key in self._pending and not self._background.stopped:
            self._submit(key)

    async def _write(self, key: str) -> None:
        item = self._pending.get(key)
        if item is None:
            return
        scope, snapshot = item
        try:
            await self._save(scope, snapshot)
        except asyncio.CancelledError:
            raise  # interrupted: still pending, a later call writes it
        except Exception as exc:
            self._settle(key, item)
            self.counts["failed"] += 1
            if is_connection_lost(exc):  # a restart of the plugin: the next turn writes the chat's own
                log.info("last-turn snapshot not saved for %s: the host connection is closed (%s)", scope.user_key, exc)
                return
            log.warning(
                "last-turn snapshot not saved for %s (the turn had its memory; `!memory why` shows an older turn): %s",
                scope.user_key,
                exc,
            )
        else:
            self._settle(key, item)
            self.counts["written"] += 1

    def _settle(self, key: str, item: tuple[Scope, InjectionSnapshot]) -> None:
        # a newer snapshot of the chat (queued during the write) stays for the next write
        if self._pending.get(key) is item:
            del self._pending[key]


@dataclass(frozen=True)
class Injection:
    """What a turn injects: the block for the system prompt ("" when there is nothing to show), the
    ``_ltm_context`` query variable (:func:`~.injection.context_payload`) and the turn's snapshot."""

    block: str
    payload: dict[str, Any]
    snapshot: InjectionSnapshot


def snapshot_of(result: RecallResult, block: str, speaker: dict[str, str], query_id: int | None) -> InjectionSnapshot:
    """The snapshot of a turn that recalled ``result`` and rendered ``block`` (the trace is kept,
    bounded, for the console's "why this memory" and near misses)."""
    profiles = (("session", result.session_profile), ("speaker", result.speaker_profile))
    return InjectionSnapshot(
        at=to_iso(now_utc()),
        injected=bool(block),
        blocks=1 if block else 0,
        chars=len(block),
        tokens=result.tokens,
        block_tokens=estimate_tokens(block),
        speaker_id=speaker["id"],
        speaker_name=speaker["name"],
        profiles_used=tuple(kind for kind, p in profiles if p is not None and not p.is_empty()),
        episodes=tuple(r.episode.id for r in result.episodes),
        shown_ids=tuple(result.refs.get(r.episode.id, r.episode.id) for r in result.episodes),
        query_id=query_id,
        trace=result.trace.to_public() if result.trace is not None else None,
    )


async def prepare_turn(
    recall: Recaller,
    settings: Settings,
    renderer: BlockRenderer,
    scope: Scope,
    text: str,
    *,
    speaker_name: str = "",
    query_id: int | None = None,
    served: ServedTurns | None = None,
    who: Identity | None = None,
) -> Injection | None:
    """Recall for ``text`` in ``scope`` and build the turn's block, payload and snapshot; None when
    auto-recall is off. ``served`` learns whether this turn's block covered the chat identity
    ``who`` (by default the scope's own). Nothing is written and nothing of the caller is called:
    the caller publishes the block and the payload, then records the turn (its snapshot)."""
    who = who if who is not None else identity(scope.collection, scope.session_name, scope.bot_uuid, scope.sender_id)
    if not settings.auto_recall:
        if served is not None:
            served.clear(who)
        return None
    started = time.perf_counter()
    result = await recall(scope, text, with_profiles=settings.inject_profiles, trace=True)
    note_time("recall", (time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    if served is not None and scope.collection:
        served.mark(who)
    speaker = {"id": scope.sender_id, "name": speaker_name}
    payload = context_payload(result, speaker)
    # off the event loop: an operator's template never stalls another chat's turn
    template = settings.memory_block_template
    block = await renderer.render_async(payload, settings.language, template) if has_content(payload) else ""
    injection = Injection(block, payload, snapshot_of(result, block, speaker, query_id))
    note_time("render", (time.perf_counter() - started) * 1000)
    return injection
