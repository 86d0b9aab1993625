"""One chat turn's memory, as the service prepares it: recall -> payload -> block -> snapshot.

The surface (the listener) gathers what the host gives - the scope of the turn, the user's text,
the speaker's name, the query id - calls :func:`prepare_turn` (``MemoryService.prepare_turn``) and
puts the block into the prompt. What the block covered is marked in :class:`~.turns.ServedTurns`
so that the memory engine does not hand the runner the same memories again, and the turn's
:class:`~.snapshots.InjectionSnapshot` is saved for the console.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..domain.budget import estimate_tokens
from ..domain.scope import Scope
from ..domain.timefields import now_utc, to_iso
from .injection import context_payload, has_content, render_block_async
from .recall import RecallResult
from .settings import Settings
from .snapshots import InjectionSnapshot
from .turns import Identity, ServedTurns, identity

Recaller = Callable[..., Awaitable[RecallResult]]
SaveSnapshot = Callable[[Scope, InjectionSnapshot], Awaitable[None]]


@dataclass(frozen=True)
class Injection:
    """What a turn injects: the block for the system prompt ("" when there is nothing to show), the
    ``_ltm_context`` query variable (:func:`~.injection.context_payload`) and the turn's snapshot."""

    block: str
    payload: dict[str, Any]
    snapshot: InjectionSnapshot


# The host's side of a prepared turn: puts the block into the prompt and returns the host writes
# (the query variables), which are awaited together with the snapshot's save, in one round.
Publish = Callable[[Injection], Iterable[Awaitable[object]]]


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
    save: SaveSnapshot,
    settings: Settings,
    scope: Scope,
    text: str,
    *,
    speaker_name: str = "",
    query_id: int | None = None,
    served: ServedTurns | None = None,
    who: Identity | None = None,
    publish: Publish | None = None,
) -> Injection | None:
    """Recall for ``text`` in ``scope`` and build the turn's block, payload and snapshot; None when
    auto-recall is off. ``served`` learns whether this turn's block covered the chat identity
    ``who`` (by default the scope's own). ``publish`` (the host's side of the turn) puts the block
    in place; its writes are awaited alongside the snapshot's save."""
    who = who if who is not None else identity(scope.collection, scope.session_name, scope.bot_uuid, scope.sender_id)
    if not settings.auto_recall:
        if served is not None:
            served.clear(who)
        return None
    result = await recall(scope, text, with_profiles=settings.inject_profiles, trace=True)
    if served is not None and scope.collection:
        served.mark(who)
    speaker = {"id": scope.sender_id, "name": speaker_name}
    payload = context_payload(result, speaker)
    # off the event loop: an operator's template never stalls another chat's turn
    template = settings.memory_block_template
    block = await render_block_async(payload, settings.language, template) if has_content(payload) else ""
    snapshot = snapshot_of(result, block, speaker, query_id)
    injection = Injection(block, payload, snapshot)
    await asyncio.gather(*(publish(injection) if publish is not None else ()), save(scope, snapshot))
    return injection
