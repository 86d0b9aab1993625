"""The sidecar: full memory on a vector store that keeps only ``text``, ``file_id`` and ``uuid``.

LangBot's Milvus and pgvector keep only those three fields of a record's metadata; Valkey Search
keeps all of it but filters on ``file_id`` alone; all three drop a filter on any other field with a
WARNING only (``pkg/vector/filter_utils.py``; docs/host-facts.md). The plugin's scopes, statuses,
times and audiences are metadata filters, so on these backends :class:`SidecarVectors` (ADR 0008)
keeps the memory's two halves apart:

- **isolation in the store.** A memory row's host ``file_id`` carries its scope
  (:func:`ltm.domain.backends.host_file_id`: ``ltm<scope tag>_<row id>``), and every search and
  listing the host gets is filtered by the file ids of the rows it may return (``$eq``/``$in`` on
  ``file_id``, which every backend honours; batches of :data:`IN_BATCH`). A row of another scope
  can only come back if the store itself ignored its own ``file_id`` filter;
- **the metadata in plugin storage.** What the store drops (status, speaker, times, provenance,
  audience, the content hash, the sealed text and float16 vector) is kept per scope in
  :data:`SHARDS` values ``side/<kb>/<scope tag>/<n>`` (zlib-compressed JSON ``{"u": user key,
  "rows": {row id: {"m": metadata, "d": document, "v": vector digest}}}``). A ``where`` over any
  other field is evaluated there with the domain's one filter semantics
  (:func:`ltm.domain.scope.matches_conditions`), before the host is asked.

The two halves are written in one order, so that what a crash or a refused write leaves is never
visible: a row's vector first, then its metadata (a vector without metadata is never named in a
host filter); a delete removes the metadata first, then the vector. What is visible is the rows of
both (a listing confirms its page with the host; a search only returns what the host found). A
write whose metadata could not be stored after its vector was takes the new vectors back; when it
cannot (a rewritten vector, a partly stored scope, an unknown outcome) it raises
:class:`~ltm.ports.WriteOutcomeUnknown`, so the write engine fences the scope. A rewrite that does
not change a row's vector (archive, restore, a status) writes only the metadata.
:meth:`SidecarVectors.reconcile` compares both halves by ``file_id`` (after a restart, and when a
knowledge base is dropped): vectors without metadata are deleted, metadata whose vector the host
no longer holds is removed.

The wrapper sits under the seal (:mod:`.sealing`): the metadata it keeps is the sealed one, so
plugin storage holds no readable memory text either. On a backend that keeps and filters metadata
every call passes through unchanged. The verdict comes from the backend probe
(:mod:`.backend_probe`), stored with the knowledge base; the registry hands it over
(:meth:`SidecarVectors.adopt_verdict`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain.backends import (
    DROPS_METADATA,
    FILE_ID_MARK,
    host_file_id,
    scope_tag,
    scope_tag_of,
    similarity,
)
from ..domain.scope import filter_conditions, kb_part, matches_conditions
from ..ports import (
    KeyValueStore,
    ListPage,
    VectorHit,
    VectorIndex,
    VectorItem,
    VectorRecord,
    WriteOutcomeUnknown,
    is_unknown_outcome,
)
from .registry import KB_PREFIX  # the knowledge base's record: its verdict, when not handed over yet

log = logging.getLogger(__name__)

SIDE_PREFIX = "side/"
SHARDS = 16  # values per scope: a write rewrites one sixteenth of a scope's metadata
IN_BATCH = 256  # file ids per host filter
LIST_PAGE = 200  # rows per host listing of a sweep
TTL_S = 60.0  # a scope's metadata read longer ago than this is read again (another process may write)
_CODEC = b"z1"


def side_prefix(collection: str) -> str:
    return f"{SIDE_PREFIX}{kb_part(collection)}/"


def shard_key(collection: str, tag: str, shard: int) -> str:
    """``side/<kb>/<scope tag>/<n>``: the scope tag is the one in the rows' file ids."""
    return f"{side_prefix(collection)}{tag}/{shard}"


def shard_of(row_id: str) -> int:
    return hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).digest()[0] % SHARDS


def vector_digest(vector: Sequence[float]) -> str:
    """A digest of a vector (as float16): equal for a rewrite that re-embeds the same text, so such a
    rewrite leaves the host row alone. It reveals nothing of the vector."""
    return hashlib.sha256(np.asarray(vector, dtype="<f2").tobytes()).hexdigest()[:16]


def encode_shard(user_key: str, rows: dict[str, dict[str, Any]]) -> bytes:
    body = json.dumps({"u": user_key, "rows": rows}, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return _CODEC + zlib.compress(body, 6)


class SidecarCorrupt(Exception):
    """A stored metadata value that does not decode: nothing overwrites it."""


def decode_shard(raw: bytes | None) -> tuple[str, dict[str, dict[str, Any]]]:
    if not raw:
        return "", {}
    try:
        body = zlib.decompress(raw[len(_CODEC) :]) if raw.startswith(_CODEC) else raw
        value = json.loads(body)
        rows = value["rows"]
        if not isinstance(rows, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("m"), dict) for e in rows.values()
        ):
            raise ValueError("rows")
        return str(value.get("u") or ""), rows
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        raise SidecarCorrupt(f"a stored metadata value does not decode: {type(exc).__name__}") from exc


def file_id_filter(fids: Sequence[str]) -> dict[str, Any]:
    """The host filter naming exactly ``fids`` (one condition on ``file_id``: every backend keeps it)."""
    return {"file_id": {"$eq": fids[0]}} if len(fids) == 1 else {"file_id": {"$in": list(fids)}}


def _user_key_of(where: dict[str, Any] | None) -> str | None:
    if not where:
        return None
    for fname, op, val in filter_conditions(where):
        if fname == "user_key" and op == "$eq" and isinstance(val, str) and val:
            return val
    return None


def _ts(md: dict[str, Any]) -> float:
    v = md.get("ts")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


@dataclass
class _Scope:
    user_key: str
    shards: list[dict[str, dict[str, Any]]]
    at: float
    ghosts: set[str] = field(default_factory=set)  # rows whose vector the host did not hold

    def rows(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for s in self.shards:
            out.update(s)
        return out


@dataclass
class _Row:
    tag: str
    user_key: str
    id: str
    entry: dict[str, Any]
    fid: str


class SidecarVectors:
    """A :class:`~ltm.ports.VectorIndex` that keeps, on a knowledge base whose backend drops
    metadata, the scope in each row's ``file_id`` and the metadata in plugin storage; on any other
    it passes every call to ``inner``. ``isolate=False`` hands the host the scope filter as it is
    (the positive control of the isolation tests: the host then returns other scopes' rows)."""

    def __init__(self, inner: VectorIndex, kv: KeyValueStore, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.kv = kv
        self.name = getattr(inner, "name", "index")
        self.clock = clock
        self.ttl = TTL_S
        self.isolate = True
        self._verdicts: dict[str, tuple[str, str]] = {}  # collection -> (verdict, metric)
        self._scopes: dict[tuple[str, str], _Scope] = {}  # (collection, scope tag) -> its metadata
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.reconciled: set[str] = set()  # collections reconciled by this process

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (unpickling, a failed __init__)
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def direct(self) -> VectorIndex:
        """The store itself (the backend probe writes and reads its own record there)."""
        return self.inner

    # ------------------------------------------------------------------ the verdict
    def adopt_verdict(self, collection: str, verdict: str, metric: str = "") -> None:
        """The backend probe's verdict for ``collection`` (the registry hands it over)."""
        self._verdicts[collection] = (verdict, metric)

    async def _verdict(self, collection: str) -> tuple[str, str]:
        if getattr(self.inner, "keeps_metadata", False):
            return "", ""
        got = self._verdicts.get(collection)
        if got is None:
            raw = await self.kv.get(KB_PREFIX + collection)
            try:
                rec = json.loads(raw) if raw else {}
            except ValueError:
                rec = {}
            rec = rec if isinstance(rec, dict) else {}
            got = (str(rec.get("backend") or ""), str(rec.get("metric") or ""))
            self._verdicts[collection] = got
        return got

    async def dropping(self, collection: str) -> bool:
        """Whether ``collection``'s rows are kept by this wrapper (its backend drops metadata)."""
        return (await self._verdict(collection))[0] == DROPS_METADATA

    # ------------------------------------------------------------------ the metadata of a scope
    def _lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _load(self, collection: str, tag: str, user_key: str = "", *, fresh: Sequence[int] = ()) -> _Scope:
        """The scope's metadata: cached for :data:`TTL_S`; ``fresh`` shards are read again (a write
        reads the shards it rewrites)."""
        key = (collection, tag)
        held = self._scopes.get(key)
        if held is None or self.clock() - held.at > self.ttl:
            raws = await asyncio.gather(*(self.kv.get(shard_key(collection, tag, n)) for n in range(SHARDS)))
            decoded = [decode_shard(r) for r in raws]
            owner = next((u for u, _ in decoded if u), user_key)
            held = _Scope(owner, [rows for _, rows in decoded], self.clock(), held.ghosts if held else set())
            self._scopes[key] = held
        elif fresh:
            raws = await asyncio.gather(*(self.kv.get(shard_key(collection, tag, n)) for n in fresh))
            for n, raw in zip(fresh, raws, strict=True):
                u, rows = decode_shard(raw)
                held.shards[n] = rows
                held.user_key = held.user_key or u
        held.user_key = held.user_key or user_key
        return held

    async def _store(self, collection: str, tag: str, held: _Scope, changes: dict[str, dict[str, Any] | None]) -> int:
        """Write the shards ``changes`` touch (an entry, or None to remove the row), in shard order;
        the cache follows each value stored. Returns how many values were written before a failure
        (re-raised as :class:`_PartlyStored`)."""
        written = 0
        for n in sorted({shard_of(rid) for rid in changes}):
            rows = dict(held.shards[n])
            for rid, entry in changes.items():
                if shard_of(rid) != n:
                    continue
                if entry is None:
                    rows.pop(rid, None)
                else:
                    rows[rid] = entry
            key = shard_key(collection, tag, n)
            try:
                if rows:
                    await self.kv.set(key, encode_shard(held.user_key, rows))
                else:
                    await self.kv.delete(key)
            except BaseException as exc:
                raise _PartlyStored(written, exc) from exc
            held.shards[n] = rows
            written += 1
        return written

    async def _tags(self, collection: str) -> dict[str, str]:
        """Every scope tag of ``collection`` with metadata stored, and its user key."""
        prefix = side_prefix(collection)
        out: dict[str, str] = {}
        for key in await self.kv.keys(prefix):
            tag = key[len(prefix) :].split("/", 1)[0]
            if tag and tag not in out:
                cached = self._scopes.get((collection, tag))
                out[tag] = cached.user_key if cached else ""
        for tag, user_key in list(out.items()):
            if not user_key:
                out[tag] = (await self._load(collection, tag)).user_key
        return out

    async def _matching(self, collection: str, where: dict[str, Any] | None) -> list[_Row]:
        """The rows whose metadata matches ``where`` (ghosts left out), oldest first: in the scope the
        filter names, else in every scope of the collection (the loaded ones first, when the filter
        names ids they hold)."""
        conds = filter_conditions(where) if where else []
        user_key = _user_key_of(where)
        if user_key is not None:
            tags = {scope_tag(collection, user_key): user_key}
        else:
            tags = await self._cached_tags_for_ids(collection, conds) or await self._tags(collection)
        out: list[_Row] = []
        for tag, uk in tags.items():
            held = await self._load(collection, tag, uk)
            for rid, entry in held.rows().items():
                if rid not in held.ghosts and matches_conditions(entry["m"], conds):
                    out.append(_Row(tag, held.user_key, rid, entry, host_file_id(collection, held.user_key, rid)))
        out.sort(key=lambda r: (_ts(r.entry["m"]), r.id))
        return out

    async def _cached_tags_for_ids(self, collection: str, conds: list[tuple[str, str, Any]]) -> dict[str, str]:
        """A filter that names row ids only (a probe's clean-up): the loaded scopes holding them all,
        so that not every scope of the knowledge base is read. Empty: look everywhere."""
        ids: set[str] | None = None
        for fname, op, val in conds:
            if fname in ("file_id", "episode_id", "uuid") and op in ("$eq", "$in"):
                named = {str(val)} if op == "$eq" else {str(v) for v in val}
                ids = named if ids is None else ids & named
            else:
                return {}
        if not ids:
            return {}
        found: dict[str, str] = {}
        seen: set[str] = set()
        for (coll, tag), held in self._scopes.items():
            if coll == collection:
                hit = ids & held.rows().keys()
                if hit:
                    found[tag] = held.user_key
                    seen |= hit
        return found if seen == ids else {}

    # ------------------------------------------------------------------ VectorIndex
    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if not await self.dropping(collection):
            await self.inner.upsert(collection, records)
            return
        unscoped: list[VectorRecord] = []
        by_scope: dict[str, list[VectorRecord]] = {}
        for r in records:
            user_key, rid = r.metadata.get("user_key"), r.metadata.get("episode_id")
            if isinstance(user_key, str) and user_key and rid:
                by_scope.setdefault(user_key, []).append(r)
            else:
                unscoped.append(r)  # no memory row: as it is (never named by a scope's filter)
        if unscoped:
            await self.inner.upsert(collection, unscoped)
        for user_key, recs in by_scope.items():
            await self._upsert_scope(collection, user_key, recs)

    async def _upsert_scope(self, collection: str, user_key: str, records: Sequence[VectorRecord]) -> None:
        tag = scope_tag(collection, user_key)
        async with self._lock((collection, tag)):
            held = await self._load(collection, tag, user_key)
            held = await self._load(collection, tag, user_key, fresh=sorted({shard_of(r.id) for r in records}))
            current = held.rows()
            changes: dict[str, dict[str, Any] | None] = {}
            host: list[VectorRecord] = []
            new: list[str] = []
            changed: list[str] = []
            for r in records:
                digest = vector_digest(r.vector)
                changes[r.id] = {"m": dict(r.metadata), "d": r.document or "", "v": digest}
                before = current.get(r.id)
                if before is None or before.get("v") != digest or r.id in held.ghosts:
                    (new if before is None else changed).append(r.id)
                    fid = host_file_id(collection, user_key, r.id)
                    text = str(r.metadata.get("text") or "")
                    kept = {"text": text, "file_id": fid, "uuid": r.id}  # all Milvus and pgvector keep
                    host.append(VectorRecord(r.id, list(r.vector), kept, r.document))
            if host:
                await self.inner.upsert(collection, host)  # refused: nothing of the write is visible
            try:
                await self._store(collection, tag, held, changes)
            except _PartlyStored as part:
                await self._after_failed_store(collection, user_key, part, new, changed)
            held.ghosts.difference_update(changes)

    async def _after_failed_store(
        self, collection: str, user_key: str, part: _PartlyStored, new: list[str], changed: list[str]
    ) -> None:
        """The vectors are stored, their metadata is not (or partly): take the new vectors back when
        that leaves the store as it was, else the outcome is unknown (the engine fences the scope)."""
        cause = part.cause
        if isinstance(cause, asyncio.CancelledError):
            raise cause
        if part.written == 0 and not changed and not is_unknown_outcome(cause):
            try:
                for i in range(0, len(new), IN_BATCH):
                    fids = [host_file_id(collection, user_key, rid) for rid in new[i : i + IN_BATCH]]
                    await self.inner.delete(collection, file_id_filter(fids))
            except Exception as exc:
                log.warning("the vectors of a refused metadata write stay on the host: %s", exc)
                raise WriteOutcomeUnknown(f"metadata refused, its vectors not taken back: {exc}") from cause
            raise cause
        raise WriteOutcomeUnknown(f"the vectors are written, their metadata not all: {cause}") from cause

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        verdict, metric = await self._verdict(collection)
        if verdict != DROPS_METADATA:
            return await self.inner.search(collection, vector, top_k, where)
        if top_k <= 0:
            return []
        if not self.isolate:
            return await self._unisolated_search(collection, vector, top_k, where, metric)
        rows = await self._matching(collection, where)
        by_id = {r.id: r for r in rows}
        batches = [rows[i : i + IN_BATCH] for i in range(0, len(rows), IN_BATCH)]
        answers = await asyncio.gather(
            *(
                self.inner.search(collection, vector, min(top_k, len(b)), file_id_filter([r.fid for r in b]))
                for b in batches
            )
        )
        hits: list[VectorHit] = []
        for answer in answers:
            for h in answer:
                row = by_id.get(h.id)
                if row is None or str(h.metadata.get("file_id") or row.fid) != row.fid:
                    log.warning("the store returned a row its file_id filter did not name; left out")
                    continue
                sim = similarity(h.distance, metric) if metric else h.similarity
                hits.append(VectorHit(h.id, dict(row.entry["m"]), sim, h.distance))
        hits.sort(key=lambda h: (-h.similarity, h.id))
        return hits[:top_k]

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        if not await self.dropping(collection):
            return await self.inner.list(collection, where, limit, offset)
        if limit <= 0:
            return ListPage(items=[], total=-1)
        if not self.isolate:
            return await self._unisolated_list(collection, where, limit, offset)
        rows = await self._matching(collection, where)
        start = max(0, int(offset))
        while True:
            page = rows[start : start + limit]
            if not page:
                return ListPage(items=[], total=len(rows))
            present = await self._present(collection, page)
            missing = [r for r in page if r.id not in present]
            if not missing:
                break
            for r in missing:  # the host lost the vector: the row is not there (reconcile removes it)
                self._scopes[(collection, r.tag)].ghosts.add(r.id)
            log.warning("%d rows of %s have metadata but no vector on the host; left out", len(missing), collection)
            gone = {r.id for r in missing}
            rows = [r for r in rows if r.id not in gone]
        items = [VectorItem(r.id, dict(r.entry["m"]), str(r.entry.get("d") or "")) for r in page]
        return ListPage(items=items, total=len(rows))

    async def _present(self, collection: str, rows: Sequence[_Row]) -> set[str]:
        """The ids among ``rows`` whose vector the host holds, asked by their file ids."""
        out: set[str] = set()
        for i in range(0, len(rows), IN_BATCH):
            batch = rows[i : i + IN_BATCH]
            want = {r.fid: r.id for r in batch}
            got = await self.inner.list(collection, file_id_filter(list(want)), len(batch), 0)
            for item in got.items:
                fid = str(item.metadata.get("file_id") or "")
                if want.get(fid) == item.id or (not fid and item.id in want.values()):
                    out.add(item.id)
        return out

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        if not await self.dropping(collection):
            await self.inner.delete(collection, where)
            return
        if not where:
            raise ValueError("delete needs a non-empty filter; refusing to act on every record")
        rows = await self._matching(collection, where)
        matched_ids = {r.id for r in rows}
        by_tag: dict[str, list[_Row]] = {}
        for r in rows:
            by_tag.setdefault(r.tag, []).append(r)
        for tag, victims in by_tag.items():
            async with self._lock((collection, tag)):
                held = await self._load(collection, tag, fresh=sorted({shard_of(r.id) for r in victims}))
                try:
                    await self._store(collection, tag, held, dict.fromkeys((r.id for r in victims), None))
                except _PartlyStored as part:
                    if part.written == 0 and not is_unknown_outcome(part.cause):
                        raise part.cause from None
                    raise WriteOutcomeUnknown(f"metadata partly removed: {part.cause}") from part.cause
                held.ghosts.difference_update(r.id for r in victims)
                # the metadata is gone, so the rows are: their vectors follow (a failure leaves
                # vectors no filter names, which reconcile deletes)
                for i in range(0, len(victims), IN_BATCH):
                    fids = [r.fid for r in victims[i : i + IN_BATCH]]
                    try:
                        await self.inner.delete(collection, file_id_filter(fids))
                    except Exception as exc:
                        self.reconciled.discard(collection)
                        log.warning("vectors of deleted rows of %s stay until reconciled: %s", collection, exc)
        unscoped = self._unscoped_ids(where)
        if unscoped is not None and not unscoped <= matched_ids:
            await self.inner.delete(collection, where)  # a row of no scope (a probe's), by its own file_id

    @staticmethod
    def _unscoped_ids(where: dict[str, Any]) -> set[str] | None:
        """The ids a filter of only id conditions names (rows of no scope are deleted by it too)."""
        ids: set[str] | None = None
        for fname, op, val in filter_conditions(where):
            if fname in ("file_id", "uuid") and op in ("$eq", "$in"):
                named = {str(val)} if op == "$eq" else {str(v) for v in val}
                ids = named if ids is None else ids & named
            else:
                return None
        return ids

    async def drop_collection(self, collection: str) -> None:
        """The knowledge base is deleted: its vectors (every one the plugin gave a file id) and all
        its metadata go. The metadata goes even when the host refuses (it may have removed the
        knowledge base already): nothing is left that names a row."""
        try:
            await self.inner.drop_collection(collection)
            if await self.dropping(collection) or await self.kv.keys(side_prefix(collection)):
                await self._sweep(collection, keep=lambda tag: False)
        finally:
            for key in await self.kv.keys(side_prefix(collection)):
                await self.kv.delete(key)
            for key in [k for k in self._scopes if k[0] == collection]:
                del self._scopes[key]
            self._verdicts.pop(collection, None)
            self.reconciled.discard(collection)

    # ------------------------------------------------------------------ reconcile
    async def _host_file_ids(self, collection: str) -> dict[str, dict[str, str]]:
        """Every host row the plugin gave a file id, by scope tag: {tag: {file id: row id}}."""
        out: dict[str, dict[str, str]] = {}
        offset = 0
        while True:
            page = await self.inner.list(collection, {}, LIST_PAGE, offset)
            for item in page.items:
                fid = str(item.metadata.get("file_id") or "")
                tag = scope_tag_of(fid) if fid.startswith(FILE_ID_MARK) else None
                if tag is not None:
                    out.setdefault(tag, {})[fid] = item.id
            if len(page.items) < LIST_PAGE:
                return out
            offset += LIST_PAGE

    async def _sweep(self, collection: str, keep: Callable[[str], bool]) -> int:
        """Delete the host rows with a plugin file id of every scope ``keep`` does not keep."""
        listed = await self._host_file_ids(collection)
        n = 0
        for tag, fids in listed.items():
            if keep(tag):
                continue
            names = sorted(fids)
            for i in range(0, len(names), IN_BATCH):
                await self.inner.delete(collection, file_id_filter(names[i : i + IN_BATCH]))
                n += len(names[i : i + IN_BATCH])
        return n

    async def reconcile(self, collection: str) -> dict[str, int]:
        """Compare the host's rows and the stored metadata of ``collection`` by file id: a vector no
        metadata names (a write cut between its two halves, a delete whose vector delete failed) is
        deleted; metadata whose vector the host no longer holds is removed. Each scope is settled
        under its lock, against a fresh read of both halves, so a write running meanwhile is never
        mistaken for either. Returns the counts."""
        counts = {"vectors_deleted": 0, "metadata_removed": 0}
        if not await self.dropping(collection):
            return counts
        listed = await self._host_file_ids(collection)
        tags = await self._tags(collection)
        for tag in sorted(set(listed) | set(tags)):
            async with self._lock((collection, tag)):
                self._scopes.pop((collection, tag), None)  # read both halves again, under the lock
                held = await self._load(collection, tag, tags.get(tag, ""))
                rows = held.rows()
                named = {host_file_id(collection, held.user_key, rid): rid for rid in rows} if held.user_key else {}
                orphans = sorted(set(listed.get(tag, {})) - set(named))
                for i in range(0, len(orphans), IN_BATCH):
                    await self.inner.delete(collection, file_id_filter(orphans[i : i + IN_BATCH]))
                counts["vectors_deleted"] += len(orphans)
                unseen = [
                    _Row(tag, held.user_key, rid, e, fid)
                    for fid, rid in named.items()
                    if fid not in listed.get(tag, {})
                    for e in [rows[rid]]
                ]
                if unseen:  # listed before this lock: ask the host again for exactly these
                    present = await self._present(collection, unseen)
                    gone = [r.id for r in unseen if r.id not in present]
                    if gone:
                        await self._store(collection, tag, held, dict.fromkeys(gone, None))
                        counts["metadata_removed"] += len(gone)
                held.ghosts.clear()
        self.reconciled.add(collection)
        if any(counts.values()):
            log.warning("reconciled %s: %s", collection, counts)
        return counts

    # ------------------------------------------------------------------ the positive control
    async def _unisolated_search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any], metric: str
    ) -> list[VectorHit]:
        hits = await self.inner.search(collection, vector, top_k, where)
        out = []
        for h in hits:
            md = await self._metadata_anywhere(collection, h.id)
            sim = similarity(h.distance, metric) if metric else h.similarity
            out.append(VectorHit(h.id, md or h.metadata, sim, h.distance))
        return out

    async def _unisolated_list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        page = await self.inner.list(collection, where, limit, offset)
        items = []
        for i in page.items:
            md = await self._metadata_anywhere(collection, i.id)
            items.append(VectorItem(i.id, md or i.metadata, i.document))
        return ListPage(items=items, total=page.total)

    async def _metadata_anywhere(self, collection: str, row_id: str) -> dict[str, Any] | None:
        for tag in await self._tags(collection):
            entry = (await self._load(collection, tag)).rows().get(row_id)
            if entry is not None:
                return dict(entry["m"])
        return None


class _PartlyStored(Exception):
    def __init__(self, written: int, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.written = written
        self.cause = cause
