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
    FILE_ID_END,
    FILE_ID_MARK,
    host_file_id,
    scope_tag,
    scope_tag_of,
    similarity,
)
from ..domain.errors import BackendError, LtmError
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
COMPACT_AT = 16  # deltas of a scope folded into its shards before the next write
LIST_PAGE = 200  # rows per host listing of a sweep
TTL_S = 60.0  # a scope's metadata read longer ago than this is read again (another process may write)
_CODEC = b"z1"


def side_prefix(collection: str) -> str:
    return f"{SIDE_PREFIX}{kb_part(collection)}/"


def scope_prefix(collection: str, tag: str) -> str:
    return f"{side_prefix(collection)}{tag}/"


def shard_key(collection: str, tag: str, shard: int) -> str:
    """``side/<kb>/<scope tag>/<n>``: the scope tag is the one in the rows' file ids."""
    return f"{scope_prefix(collection, tag)}{shard}"


def delta_key(collection: str, tag: str, seq: int) -> str:
    """``side/<kb>/<scope tag>/d<seq>``: one write's changes, until compacted into the shards."""
    return f"{scope_prefix(collection, tag)}d{seq:08d}"


def shard_of(row_id: str) -> int:
    return hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).digest()[0] % SHARDS


def vector_digest(vector: Sequence[float]) -> str:
    """A digest of a vector (as float16): equal for a rewrite that re-embeds the same text, so such a
    rewrite leaves the host row alone. It reveals nothing of the vector."""
    return hashlib.sha256(np.asarray(vector, dtype="<f2").tobytes()).hexdigest()[:16]


def encode_shard(user_key: str, rows: dict[str, dict[str, Any] | None]) -> bytes:
    """A shard (``rows``: id -> entry) or a delta (an entry None: the row removed), compressed."""
    body = json.dumps({"u": user_key, "rows": rows}, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return _CODEC + zlib.compress(body, 6)


class SidecarCorrupt(Exception):
    """A stored metadata value that does not decode: nothing overwrites it."""


def decode_shard(raw: bytes | None) -> tuple[str, dict[str, dict[str, Any] | None]]:
    if not raw:
        return "", {}
    try:
        body = zlib.decompress(raw[len(_CODEC) :]) if raw.startswith(_CODEC) else raw
        value = json.loads(body)
        rows = value["rows"]
        if not isinstance(rows, dict) or not all(
            e is None or (isinstance(e, dict) and isinstance(e.get("m"), dict)) for e in rows.values()
        ):
            raise ValueError("rows")
        return str(value.get("u") or ""), rows
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        raise SidecarCorrupt(f"a stored metadata value does not decode: {type(exc).__name__}") from exc


def merge_scope(
    values: dict[str, bytes | None],
) -> tuple[str, list[dict[str, dict[str, Any]]], list[int], set[int]]:
    """A scope's metadata from its stored values (last part of each key: a shard number, or ``d``
    and a delta's sequence): the shards, every delta applied in order over them (a delta names the
    final state of each row it touches, so applying it again over shards that already hold it, as
    after a compaction cut short, changes nothing). Returns the user key, the shards, the deltas and
    the shards they touch."""
    user_key = ""
    shards: list[dict[str, dict[str, Any]]] = [{} for _ in range(SHARDS)]
    deltas: list[tuple[int, dict[str, dict[str, Any] | None]]] = []
    for key, raw in values.items():
        part = key.rsplit("/", 1)[-1]
        u, rows = decode_shard(raw)
        user_key = user_key or u
        if part.startswith("d") and part[1:].isdigit():
            deltas.append((int(part[1:]), rows))
        elif part.isdigit() and int(part) < SHARDS:
            shards[int(part)].update({rid: e for rid, e in rows.items() if e is not None})
    deltas.sort(key=lambda d: d[0])
    touched: set[int] = set()
    for _, rows in deltas:
        for rid, entry in rows.items():
            touched.add(shard_of(rid))
            if entry is None:
                shards[shard_of(rid)].pop(rid, None)
            else:
                shards[shard_of(rid)][rid] = entry
    return user_key, shards, [seq for seq, _ in deltas], touched


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
    deltas: list[int] = field(default_factory=list)  # the sequence numbers of the stored deltas
    stored: set[int] = field(default_factory=set)  # the shards stored (a compaction deletes the emptied)
    dirty: set[int] = field(default_factory=set)  # the shards the deltas touch (a compaction rewrites them)

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
        self._gen: dict[tuple[str, str], int] = {}  # writes of a scope: a read they overtook is stale
        self._untidy: set[tuple[str, str]] = set()  # scopes with a delta that removed rows
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

    async def _load(self, collection: str, tag: str, user_key: str = "") -> _Scope:
        """The scope's metadata, cached for :data:`TTL_S` (another process may write; within this
        one every write goes through this cache, under the scope's lock). A read that a write of
        the scope overtook is not installed over it: the newer cache wins."""
        key = (collection, tag)
        while True:
            held = self._scopes.get(key)
            if held is not None and self.clock() - held.at <= self.ttl:
                held.user_key = held.user_key or user_key
                return held
            gen = self._gen.get(key, 0)
            names = sorted(await self.kv.keys(scope_prefix(collection, tag)))
            raws = await asyncio.gather(*(self.kv.get(k) for k in names))
            if self._gen.get(key, 0) != gen or self._scopes.get(key) is not held:
                continue  # a write (or another read) got there first: take what it left
            owner, shards, deltas, dirty = merge_scope(dict(zip(names, raws, strict=True)))
            stored = {int(n.rsplit("/", 1)[-1]) for n in names if n.rsplit("/", 1)[-1].isdigit()}
            ghosts = held.ghosts if held else set()
            fresh = _Scope(owner or user_key, shards, self.clock(), ghosts, deltas, stored, dirty)
            self._scopes[key] = fresh
            return fresh

    def _forget_scope(self, collection: str, tag: str) -> None:
        """What this process holds of a scope may be wrong (a write with an unknown outcome): read
        it again next time."""
        self._scopes.pop((collection, tag), None)
        self._gen[(collection, tag)] = self._gen.get((collection, tag), 0) + 1

    async def _store(self, collection: str, tag: str, held: _Scope, changes: dict[str, dict[str, Any] | None]) -> None:
        """Store ``changes`` (an entry, or None to remove the row) as ONE value, a delta: the write
        is all or nothing. The cache follows once it is stored; a failed write makes the scope be
        read again (its outcome may be unknown). Past :data:`COMPACT_AT` deltas they are folded
        into the shards first."""
        if len(held.deltas) >= COMPACT_AT:
            await self._compact(collection, tag, held)
        seq = (max(held.deltas) + 1) if held.deltas else 1
        try:
            await self.kv.set(delta_key(collection, tag, seq), encode_shard(held.user_key, changes))
        except BaseException:
            self._forget_scope(collection, tag)
            raise
        for rid, entry in changes.items():
            held.dirty.add(shard_of(rid))
            if entry is None:
                held.shards[shard_of(rid)].pop(rid, None)
            else:
                held.shards[shard_of(rid)][rid] = entry
        held.deltas.append(seq)
        self._gen[(collection, tag)] = self._gen.get((collection, tag), 0) + 1
        if any(entry is None for entry in changes.values()):
            self._untidy.add((collection, tag))  # the removed rows' sealed metadata: folded away soon

    async def _compact(self, collection: str, tag: str, held: _Scope) -> None:
        """Fold the deltas into the shards: each shard they touch written from the cache, then the
        deltas deleted. Cut short anywhere, the stored state reads the same (the deltas still there apply
        again over shards that hold them already), so a failure is logged, never raised (a
        cancellation is)."""
        try:
            for n in sorted(held.dirty):
                rows = held.shards[n]
                key = shard_key(collection, tag, n)
                if rows:
                    await self.kv.set(key, encode_shard(held.user_key, dict(rows)))
                    held.stored.add(n)
                elif n in held.stored:
                    await self.kv.delete(key)
                    held.stored.discard(n)
            held.dirty.clear()
            for seq in sorted(held.deltas):  # oldest first: what is left reads the same at each step
                await self.kv.delete(delta_key(collection, tag, seq))
                held.deltas.remove(seq)
        except Exception as exc:
            self._forget_scope(collection, tag)
            log.warning("compacting a scope's metadata of %s was cut short (it reads the same): %s", collection, exc)

    async def tidy(self) -> int:
        """Fold the deltas of every scope a delete touched into its shards (the erase after a
        deleting mutation runs it): the removed rows' sealed metadata then lives in no stored value.
        Returns the scopes folded."""
        n = 0
        for collection, tag in sorted(self._untidy):
            self._untidy.discard((collection, tag))
            async with self._lock((collection, tag)):
                held = await self._load(collection, tag)
                if held.deltas:
                    await self._compact(collection, tag, held)
                    n += 1
        return n

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
            held = await _read(self._load(collection, tag, user_key))
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
            except Exception as exc:
                await self._after_failed_store(collection, user_key, exc, new, changed)
                raise
            held.ghosts.difference_update(changes)

    async def _after_failed_store(
        self, collection: str, user_key: str, cause: Exception, new: list[str], changed: list[str]
    ) -> None:
        """The vectors are stored, their metadata is not: take the new vectors back when that leaves
        the store as it was (the metadata write was refused); else the outcome is unknown (the engine
        fences the scope). Returns to re-raise ``cause``."""
        if is_unknown_outcome(cause):
            raise WriteOutcomeUnknown(f"the vectors are written, their metadata maybe: {cause}") from cause
        if changed:  # a rewritten vector cannot be taken back here: the old one is not kept
            raise WriteOutcomeUnknown(f"vectors rewritten, their metadata refused: {cause}") from cause
        try:
            for i in range(0, len(new), IN_BATCH):
                fids = [host_file_id(collection, user_key, rid) for rid in new[i : i + IN_BATCH]]
                await self.inner.delete(collection, file_id_filter(fids))
        except Exception as exc:
            log.warning("the vectors of a refused metadata write stay on the host: %s", exc)
            raise WriteOutcomeUnknown(f"metadata refused, its vectors not taken back: {exc}") from cause

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
        rows = await _read(self._matching(collection, where))
        matched_ids = {r.id for r in rows}
        by_tag: dict[str, list[_Row]] = {}
        for r in rows:
            by_tag.setdefault(r.tag, []).append(r)
        for tag, victims in by_tag.items():
            async with self._lock((collection, tag)):
                held = await _read(self._load(collection, tag))
                await self._store(collection, tag, held, dict.fromkeys((r.id for r in victims), None))
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
                        if is_unknown_outcome(exc):  # a late delete may still land: the engine fences
                            raise WriteOutcomeUnknown(f"vector delete: {exc}") from exc
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
                try:  # Milvus and pgvector compare file ids as strings: every plugin row in one call
                    await self.inner.delete(collection, {"file_id": {"$gte": FILE_ID_MARK, "$lt": FILE_ID_END}})
                except Exception as exc:  # Valkey Search: no range on its TAG field
                    log.info("no range delete of %s's rows (%s); they are listed and deleted", collection, exc)
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

    async def reconcile_all(self) -> dict[str, dict[str, int]]:
        """:meth:`reconcile` every knowledge base whose backend drops metadata (the journal's
        recovery runs it after a restart, before any write)."""
        out: dict[str, dict[str, int]] = {}
        if getattr(self.inner, "keeps_metadata", False):
            return out
        for key in await self.kv.keys(KB_PREFIX):
            collection = key[len(KB_PREFIX) :]
            if collection and collection not in self.reconciled and await self.dropping(collection):
                out[collection] = await self.reconcile(collection)
        return out

    async def prepare(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Read the metadata of the scopes ``records`` belong to (the write engine calls it before
        its host write, with the seal: a read that fails there refuses the write, never fences it)."""
        if not await self.dropping(collection):
            return
        for user_key in sorted({str(r.metadata.get("user_key") or "") for r in records} - {""}):
            await self._load(collection, scope_tag(collection, user_key), user_key)

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
                self._gen[(collection, tag)] = self._gen.get((collection, tag), 0) + 1
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


async def _read(aw: Any) -> Any:
    """A read before a write's first host call: its failure is the write's refusal (nothing was
    sent), never an unknown outcome that would fence the scope."""
    try:
        return await aw
    except LtmError:
        raise
    except Exception as exc:
        raise BackendError(f"storage read: {exc}", key="error.backend", what="storage read") from exc
