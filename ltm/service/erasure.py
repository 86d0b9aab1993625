"""One erase: every copy of a deleted memory's text, or of a derivative of it, goes with the row.

A memory row's text can live in more places than its vector-store row. :data:`COPIES` names every
one and what erases it; :class:`Erasure` is the part of that list that runs after a deleting
mutation committed. Every verb that deletes rows - forget, bulk delete (an archive followed by a
delete included), a document's delete, the consolidation cascade, and :meth:`Erasure.erase_episodes`
(a person's erasure builds on it) - deletes through :meth:`~.writes.engine.WriteEngine.delete_steps`,
whose steps name the ids they erase; the write engine hands those to :meth:`Erasure.after_delete`
once the mutation committed, so a deleting path cannot skip it. Deleting a knowledge base runs
:meth:`Erasure.drop_kb`.

What stays is named too: a tombstone keeps a hash of the value (never its text), the audit log
keeps the event with ids and counts, and the vector store may keep the row's vector and its sealed
metadata until it compacts - sealed under a key that is gone (:mod:`.sealing`). ``docs/privacy.md``
says the same for people.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..domain import privilege as policy
from ..domain.errors import PermissionDenied
from ..domain.filters import Criteria
from ..domain.keys import kb_part
from ..domain.scope import Scope
from ..domain.storage_keys import CAND_PREFIX, FENCE_PREFIX, review_base
from .documents import DOC_PREFIX
from .snapshots import InjectionSnapshot
from .writes.actor import Actor, caller_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Copy:
    """One place a memory's text (or a derivative of it) can live, and what erases it."""

    name: str
    where: str
    erased_by: str


# Every place; tests/reliability/test_erasure_scan.py decodes each the way the plugin encodes it
# and looks for an erased text after every deleting verb.
COPIES: tuple[Copy, ...] = (
    Copy("vector row", "the vector store", "the deleting mutation (WriteEngine.delete_steps), read back"),
    Copy(
        "vector store history",
        "the store's own log, dead rows and backups (Chroma's embeddings_queue, ...)",
        "sealed under the row's own key (sealing.py), destroyed with the row: what is kept no longer opens",
    ),
    Copy("seal key", "plugin storage seal/<kb>/<digest>/<n>", "SealedVectors.delete, after the store's delete"),
    Copy("recall index", "memory", "the same write (RecallIndex.on_delete)"),
    Copy("recall snapshot", "plugin storage recall/<kb>/<digest>/snap", "rewritten or discarded now (after_delete)"),
    Copy(
        "last-turn snapshots and trace previews",
        "plugin storage inject/<scope key>, every chat",
        "the row's id, short id and preview removed from each (after_delete); a deleted KB's snapshots go",
    ),
    Copy(
        "last-turn snapshots not yet written",
        "memory: the snapshot writer's queue (chat_turn.SnapshotWriter), written after the turn",
        "rewritten without the rows before the stored ones are scrubbed (after_delete); a deleted KB's dropped",
    ),
    Copy(
        "review candidates",
        "plugin storage cand/<kb>/<user key>/r/<id>",
        "the candidate that became the row keeps its decision, its text emptied (after_delete)",
    ),
    Copy(
        "derived summaries and consolidation proposals",
        "the vector store; plugin storage consolidation/<user key>/<id>",
        "the retire cascade (SummaryRules.on_retired): summaries deleted through this erase, proposals dropped",
    ),
    Copy("tombstones", "plugin storage tomb/<kb>/<user key>/<hash>", "keep a hash of the value, never its text"),
    Copy("audit log", "plugin storage audit/<kb>/<user key>/...", "holds ids, counts and reasons, never memory text"),
    Copy("exports", "the reply or download of one request", "never stored by the plugin"),
    Copy(
        "backups awaiting download",
        "memory: MemoryService.held_backups (the console's Move tab, 15 minutes)",
        "every held backup dropped (after_delete, drop_kb): the operator builds it again",
    ),
    Copy(
        "metadata of a metadata-dropping store",
        "plugin storage side/<kb>/<scope tag>/ (sidecar.py), sealed",
        "the deleting mutation: metadata before the vector; a dropped KB's all at once",
    ),
    Copy("logs", "the plugin's log", "ids and counts only, never memory text"),
)


@dataclass(frozen=True)
class Erased:
    """What one erase removed besides the rows."""

    snapshots: int = 0  # last-turn snapshots rewritten without the rows
    candidates: int = 0  # candidate records whose text was emptied


def scrub_snapshot(record: Mapping[str, Any], ids: frozenset[str]) -> dict[str, Any] | None:
    """The snapshot ``record`` without the rows ``ids`` (their ids, short ids and trace rows with
    their previews), or None when it names none of them."""
    snap = InjectionSnapshot.from_record(record)
    rows = list((snap.trace or {}).get("rows") or [])
    kept_rows = [r for r in rows if not (isinstance(r, Mapping) and str(r.get("id") or "") in ids)]
    shown = snap.shown_as()
    kept_shown = [(whole, short) for whole, short in shown if whole not in ids]
    if len(kept_rows) == len(rows) and len(kept_shown) == len(shown):
        return None
    out = dict(snap.to_record())
    out["episodes"] = [whole for whole, _ in kept_shown]
    out["shown_ids"] = [short for _, short in kept_shown]
    if snap.trace is not None:
        out["trace"] = {**snap.trace, "rows": kept_rows}
    return out


def _scrubbed(snap: InjectionSnapshot, ids: frozenset[str]) -> InjectionSnapshot | None:
    record = scrub_snapshot(snap.to_record(), ids)
    return InjectionSnapshot.from_record(record) if record is not None else None


class Erasure:
    """The erase that follows every deleting mutation, and the erase of a deleted knowledge base."""

    def __init__(self, service: Any) -> None:
        # the façade (its write engine, kv, recall index, episodes, settings): the erase reaches
        # every part that holds a copy, which only the composed service does
        self.service = service

    @property
    def kv(self) -> Any:
        return self.service.writes.kv

    async def erase_episodes(self, scope: Scope, ids: Sequence[str], actor: Actor, reason: str = "") -> int:
        """Erase the rows ``ids`` of ``scope`` and every copy of them (:data:`COPIES`): one delete
        of the rows, verified, then :meth:`after_delete`, then the retire cascade (summaries derived
        from them, proposals over them). The caller may erase them when it may change each one
        (its own statements, or any for a memory admin: the rule of forget). Returns the count."""
        rows = await self.service.episodes.fetch(scope, Criteria(statuses=None, ids=tuple(ids)))
        caller = caller_of(actor, self.service.settings)
        refused = [e.id for e in rows if not policy.may_change_record(caller, e.sender_id)]
        if refused:
            raise PermissionDenied(f"{refused[0]} is not the caller's", key="policy.error.forget", id=refused[0])
        return await self.service.episodes.erase_matching(scope, Criteria(statuses=None, ids=tuple(ids)), actor, reason)

    async def after_delete(self, erased: Sequence[tuple[Scope, Sequence[str]]]) -> Erased:
        """Once rows were deleted (their mutation committed): the recall snapshot is written again
        without them, and their ids and previews leave every last-turn snapshot and the candidates
        that became them. Failures are logged: the rows are gone, a later erase retries nothing."""
        ids = frozenset(i for _, chunk in erased for i in chunk)
        if not ids:
            return Erased()
        snapshots = candidates = 0
        self.service.held_backups.drop_all()  # a held backup must not hand out an erased row
        try:
            await self.service.sealed.settle_keys()  # the rows' seal keys: what the store keeps no longer opens
            await self.service.writes.index.flush_snapshots()
            # a snapshot still waiting to be written first, so none lands after the stored ones are clean
            self.service.snapshot_writer.rewrite_pending(lambda snap: _scrubbed(snap, ids))
            snapshots = await self._scrub_snapshots(ids)
            for scope in {s.scope_key + "\x00" + s.collection: s for s, _ in erased}.values():
                candidates += await self._scrub_candidates(scope, ids)
        except Exception:
            log.exception("erasing the copies of %d deleted memories failed", len(ids))
        return Erased(snapshots, candidates)

    async def scrub_snapshots(self, ids: frozenset[str]) -> int:
        """Remove the rows ``ids`` from every last-turn snapshot (any chat). Returns how many changed."""
        return await self._scrub_snapshots(ids) if ids else 0

    async def _scrub_snapshots(self, ids: frozenset[str]) -> int:
        return await self.service.snapshots.rewrite_stored(lambda record: scrub_snapshot(record, ids))

    async def _scrub_candidates(self, scope: Scope, ids: frozenset[str]) -> int:
        n = 0
        for key in await self.kv.keys(f"{CAND_PREFIX}{review_base(scope)}/r/"):
            raw = await self.kv.get(key)
            try:
                record = json.loads(raw) if raw else None
            except ValueError:
                continue
            if not isinstance(record, dict) or str(record.get("result_id") or "") not in ids:
                continue
            record.update(content="", evidence_quote="", episode_fields={}, profile_patch={}, erased=True)
            await self.kv.set(key, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            n += 1
        return n

    async def drop_kb(self, kb_id: str) -> int:
        """What a deleted knowledge base leaves besides what the registry and the review queue
        drop: its recall snapshots (at once), its document indexes (``doc/<kb>/<doc>``) and every
        write fence of it still stored (one another process wrote is not in this one's cache).
        Returns the keys deleted."""

        kv, n = self.kv, 0
        self.service.held_backups.drop_all()
        snapshots = self.service.writes.index.snapshots
        if snapshots is not None:  # its recall snapshots now, not when background work next runs
            await snapshots.drop_collection(kb_id)
        for key in await kv.keys(f"{DOC_PREFIX}{kb_id}/"):
            await kv.delete(key)
            n += 1
        for key in await kv.keys(f"{FENCE_PREFIX}l2:{kb_part(kb_id)}:"):
            await kv.delete(key)
            n += 1
        return n
