"""Injection snapshots: what the last turn of a scope injected, kept for the console's Last Injection.

One record per scope (plugin storage :func:`ltm.domain.storage_keys.inject_key`), overwritten each turn.
It is a record of what was shown, not memory: it is not journaled or audited.

:class:`InjectionSnapshot` is the record and its one codec (:meth:`~InjectionSnapshot.to_record`,
:meth:`~InjectionSnapshot.from_record`); the stored JSON is its ``to_record()``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..domain.scope import Scope
from ..domain.storage_keys import INJECT_PREFIX, inject_key
from .writes.engine import WriteEngine

# The fields of the stored record, in the order it is written; any other key is kept in ``extra``.
FIELDS = (
    "at",
    "injected",
    "blocks",
    "chars",
    "tokens",
    "block_tokens",
    "speaker",
    "profiles_used",
    "episodes",
    "shown_ids",
    "query_id",
    "trace",
    "owner",
    "pipeline_kbs",
)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _query_id(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class SnapshotOwner:
    """The readable identity of the snapshot's scope (its storage key may hold a shortened id)."""

    session_name: str
    bot_uuid: str
    collection: str = ""  # the memory knowledge base the turn recalled from ("" in older records)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SnapshotOwner:
        return cls(
            str(record.get("session_name") or ""),
            str(record.get("bot_uuid") or ""),
            str(record.get("collection") or ""),
        )


@dataclass(frozen=True)
class InjectionSnapshot:
    """What one turn's memory block held: when, how big, for which speaker, which episodes (by
    whole id, and the short id the block showed for each), which profiles, and the recall trace
    (its public form, :meth:`ltm.domain.trace.RecallTrace.to_public`)."""

    at: str = ""
    injected: bool = False
    blocks: int = 0
    chars: int = 0
    tokens: int = 0  # the recall's tokens (its budget's count)
    block_tokens: int = 0  # the rendered block's estimate
    speaker_id: str = ""
    speaker_name: str = ""
    profiles_used: tuple[str, ...] = ()  # "session", "speaker": the non-empty profiles shown
    episodes: tuple[str, ...] = ()  # whole ids, in the block's order
    shown_ids: tuple[str, ...] = ()  # the id the block gave each of ``episodes`` (same order)
    query_id: int | None = None
    trace: dict[str, Any] | None = None
    # the knowledge bases the turn's pipeline listed (None: not recorded, a record of an older build)
    pipeline_kbs: tuple[str, ...] | None = None
    # set by the store when it saves the snapshot
    owner: SnapshotOwner | None = None
    # keys of a stored record that are none of the fields above (a newer build's): kept as they were
    extra: Mapping[str, Any] = field(default_factory=dict)

    def shown_as(self) -> list[tuple[str, str]]:
        """``(whole id, id shown in the block)`` per episode; the whole id again when the record
        does not say (no short ids, or not one per episode)."""
        shown = self.shown_ids if len(self.shown_ids) == len(self.episodes) else self.episodes
        return list(zip(self.episodes, shown, strict=True))

    def owned_by(self, scope: Scope) -> InjectionSnapshot:
        """This snapshot naming ``scope`` as its owner."""
        return replace(self, owner=SnapshotOwner(scope.session_name, scope.bot_uuid, scope.collection))

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "at": self.at,
            "injected": self.injected,
            "blocks": self.blocks,
            "chars": self.chars,
            "tokens": self.tokens,
            "block_tokens": self.block_tokens,
            "speaker": {"id": self.speaker_id, "name": self.speaker_name},
            "profiles_used": list(self.profiles_used),
            "episodes": list(self.episodes),
            "shown_ids": list(self.shown_ids),
            "query_id": self.query_id,
            "trace": self.trace,
        }
        if self.owner is not None:
            record["owner"] = {
                "session_name": self.owner.session_name,
                "bot_uuid": self.owner.bot_uuid,
                "collection": self.owner.collection,
            }
        record["pipeline_kbs"] = list(self.pipeline_kbs) if self.pipeline_kbs is not None else None
        return {**record, **{k: v for k, v in self.extra.items() if k not in FIELDS}}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> InjectionSnapshot:
        """The snapshot of a stored record; a field that is missing or of the wrong kind (a record
        of an older build) reads as its default."""
        speaker = record.get("speaker")
        if isinstance(speaker, Mapping):
            speaker_id, speaker_name = str(speaker.get("id") or ""), str(speaker.get("name") or "")
        else:  # a bare id
            speaker_id, speaker_name = str(speaker or ""), ""
        owner = record.get("owner")
        trace = record.get("trace")
        return cls(
            at=str(record.get("at") or ""),
            injected=bool(record.get("injected")),
            blocks=_int(record.get("blocks")),
            chars=_int(record.get("chars")),
            tokens=_int(record.get("tokens")),
            block_tokens=_int(record.get("block_tokens")),
            speaker_id=speaker_id,
            speaker_name=speaker_name,
            profiles_used=_strings(record.get("profiles_used")),
            episodes=_strings(record.get("episodes")),
            shown_ids=_strings(record.get("shown_ids")),
            query_id=_query_id(record.get("query_id")),
            trace=dict(trace) if isinstance(trace, Mapping) else None,
            pipeline_kbs=_strings(kbs) if isinstance(kbs := record.get("pipeline_kbs"), list) else None,
            owner=SnapshotOwner.from_record(owner) if isinstance(owner, Mapping) else None,
            extra={k: v for k, v in record.items() if k not in FIELDS},
        )


class InjectionSnapshots:
    def __init__(self, writes: WriteEngine) -> None:
        self.writes = writes

    async def save_injection(self, scope: Scope, snapshot: InjectionSnapshot) -> None:
        record = snapshot.owned_by(scope).to_record()
        await self.writes.kv.set(inject_key(scope), json.dumps(record, ensure_ascii=False).encode("utf-8"))

    async def stored(self) -> AsyncIterator[tuple[str, Mapping[str, Any]]]:
        """Every stored last-turn snapshot record, with its key (one that does not decode is passed over)."""
        for key in await self.writes.kv.keys(INJECT_PREFIX):
            raw = await self.writes.kv.get(key)
            try:
                record = json.loads(raw) if raw else None
            except ValueError:
                continue
            if isinstance(record, Mapping):
                yield key, record

    async def rewrite_stored(self, rewrite: Callable[[Mapping[str, Any]], dict[str, Any] | None]) -> int:
        """Write each stored snapshot again as ``rewrite(record)`` where it returns one (an erase takes
        rows out of every chat's snapshot). Returns how many were rewritten."""
        n = 0
        async for key, record in self.stored():
            new = rewrite(record)
            if new is not None:
                await self.writes.kv.set(key, json.dumps(new, ensure_ascii=False).encode("utf-8"))
                n += 1
        return n

    async def drop_collection(self, kb_id: str) -> int:
        """Delete the last-turn snapshots that recalled from the knowledge base ``kb_id`` (it is
        gone); a snapshot that does not name its knowledge base (an older build's) stays. Returns
        the number deleted."""
        n = 0
        async for key, record in self.stored():
            owner = InjectionSnapshot.from_record(record).owner
            if owner is not None and owner.collection == kb_id:
                await self.writes.kv.delete(key)
                n += 1
        return n

    async def last_injection(self, scope: Scope) -> InjectionSnapshot | None:
        raw = await self.writes.kv.get(inject_key(scope))
        if not raw:
            return None
        record = json.loads(raw)
        return InjectionSnapshot.from_record(record) if isinstance(record, Mapping) else None
