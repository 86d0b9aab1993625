"""The seal: what the plugin hands the vector store carries no readable memory text.

A vector store keeps what it was given beyond a delete - Chroma's write-ahead log
(``embeddings_queue`` in ``chroma.sqlite3``) holds every upsert's metadata until its vector index is
persisted (about every 1,000 writes to a collection), PostgreSQL keeps dead rows until a vacuum,
Milvus until compaction, and a backup keeps everything. The plugin cannot reach those copies, so it
makes them unreadable instead (ADR 0007, ``docs/privacy.md``):

- every memory row is written with its text-bearing fields (:data:`SEALED`: the text, tags, extra,
  source reference and the float16 copy of its vector) encrypted with AES-256-GCM under a **key of
  its own** (made at the row's first write, kept for its rewrites: the store may still hold the
  row under it if a rewrite fails), in one metadata value (:data:`SEAL_KEY`); the fields themselves
  are written empty. The scope keys, status, times and the content hash stay
  plain: the store filters on them;
- the keys live in plugin storage, in a **keyring** per scope (``seal/<kb>/<digest of user key>/<n>``,
  :data:`SHARDS` values, each a JSON object ``{row id: base64 key}``), written *before* the row
  they seal (a key without a row is inert; a row is never written without its key; a write the
  store refused takes its new keys back);
- deleting a row destroys its key (owed by :meth:`SealedVectors.delete` once the store accepted
  the delete, destroyed by the erase that follows every deleting mutation, or before the next
  write): every copy of the row the store still keeps, in any log or backup, is ciphertext whose
  key is gone. Dropping a collection drops its keyrings.

Reads (search, list) open the seal again, so everything above this module sees plain rows. A row
written before the seal (no :data:`SEAL_KEY`) reads as it is: no migration. A sealed row whose key
is missing (never expected: the key is written first and destroyed after the delete) reads with its
sealed fields empty, so it can still be listed and deleted.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..domain.filters import filter_conditions
from ..domain.keys import kb_part
from ..ports import KeyValueStore, ListPage, VectorHit, VectorIndex, VectorItem, VectorRecord, is_unknown_outcome
from .row_codec import VECTOR_KEY
from .sidecar import SidecarVectors

log = logging.getLogger(__name__)

SEAL_PREFIX = "seal/"
SEAL_KEY = "sealed"  # metadata key: "v1:" + base64(nonce ‖ AES-GCM(fields as JSON))
SEAL_VERSION = "v1:"
SEALED = ("text", "tags", "extra", "source_ref", VECTOR_KEY)
SHARDS = 8  # keyring values per scope: one write rewrites one eighth of the scope's keys
# row keys held in memory (about 190 bytes each: some 19 MB); past it the least recently used scopes'
# keyrings are dropped and read again (one round trip) when next needed. Unbounded, a process held
# the key of every row it had read: 180 MB at a million memories, outside ``recall_index_mb``.
MAX_CACHED_KEYS = 100_000
NONCE = 12
LIST_PAGE = 200


def ring_prefix(collection: str) -> str:
    return f"{SEAL_PREFIX}{kb_part(collection)}/"


def shard_key(collection: str, user_key: str, shard: int) -> str:
    """``seal/<kb>/<digest>/<n>``: a digest keeps long user keys within the host's key length."""
    digest = hashlib.sha256(user_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{ring_prefix(collection)}{digest}/{shard}"


def shard_of(row_id: str) -> int:
    return hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).digest()[0] % SHARDS


def _aad(row_id: str) -> bytes:
    return row_id.encode("utf-8", "surrogatepass")


def seal(metadata: dict[str, Any], row_id: str, key: bytes) -> dict[str, Any]:
    """``metadata`` with its :data:`SEALED` fields encrypted under ``key`` (bound to ``row_id``)."""
    fields = {k: metadata[k] for k in SEALED if metadata.get(k) not in (None, "")}
    nonce = os.urandom(NONCE)
    blob = nonce + AESGCM(key).encrypt(nonce, json.dumps(fields).encode("ascii"), _aad(row_id))  # escaped: any str
    out = {k: v for k, v in metadata.items() if k not in SEALED}
    # each sealed field written empty, not left out: a store that merges an upsert into the row it
    # replaces (the host's Chroma) keeps no plain value an older build wrote there
    out.update(dict.fromkeys(SEALED, ""))
    out[SEAL_KEY] = SEAL_VERSION + base64.b64encode(blob).decode("ascii")
    return out


def is_sealed(metadata: dict[str, Any]) -> bool:
    return isinstance(metadata.get(SEAL_KEY), str) and metadata[SEAL_KEY].startswith(SEAL_VERSION)


def unseal(metadata: dict[str, Any], row_id: str, key: bytes | None) -> dict[str, Any]:
    """The plain metadata of a sealed row (its sealed fields empty when ``key`` is None or does not
    open it); a row that is not sealed, as it is."""
    if not is_sealed(metadata):
        return metadata
    # the sealed fields were written empty: an absent one (no extra, ...) reads absent again
    out = {k: v for k, v in metadata.items() if k != SEAL_KEY and not (k in SEALED and v == "")}
    out["text"] = ""
    if key is None:
        return out
    try:
        blob = base64.b64decode(metadata[SEAL_KEY][len(SEAL_VERSION) :], validate=True)
        fields = json.loads(AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], _aad(row_id)))
    except (ValueError, InvalidTag, binascii.Error) as exc:
        log.warning("the seal of row %s does not open: %s", row_id, type(exc).__name__)
        return out
    if isinstance(fields, dict):
        out.update({k: v for k, v in fields.items() if k in SEALED})
    return out


def _row_id(record: VectorRecord) -> str:
    return str(record.metadata.get("episode_id") or record.id)


def _sealable(md: dict[str, Any]) -> bool:
    """A memory row (it names its scope and its episode); probe rows of the backend check are not."""
    return bool(md.get("episode_id")) and bool(md.get("user_key")) and SEAL_KEY not in md


class Keyring:
    """The per-row keys of every scope, in plugin storage, cached after the first read (at most
    ``max_cached_keys`` keys: the least recently used scopes' keyrings leave first, never one
    being written)."""

    def __init__(self, kv: KeyValueStore, *, max_cached_keys: int = MAX_CACHED_KEYS) -> None:
        self.kv = kv
        self._rings: OrderedDict[tuple[str, str], list[dict[str, str]]] = OrderedDict()
        self._counts: dict[tuple[str, str], int] = {}  # keys cached per ring
        self.cached_keys = 0
        self.max_cached_keys = max_cached_keys
        self.evictions = 0
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        # keys of deleted rows whose destruction failed: destroyed before the next write of the KB
        self._owed: dict[str, set[tuple[str | None, str]]] = {}

    def owe(self, collection: str, user_key: str | None, row_ids: Sequence[str]) -> None:
        self._owed.setdefault(collection, set()).update((user_key, rid) for rid in row_ids)

    async def settle_all(self) -> None:
        for collection in list(self._owed):
            await self.settle(collection)

    async def settle(self, collection: str) -> None:
        """Destroy the keys still owed for deleted rows of ``collection``."""
        owed = self._owed.pop(collection, set())
        by_ring: dict[str | None, list[str]] = {}
        for user_key, rid in owed:
            by_ring.setdefault(user_key, []).append(rid)
        try:
            for user_key, ids in by_ring.items():
                await self.destroy(collection, user_key, ids)
        except BaseException:
            self._owed.setdefault(collection, set()).update(owed)
            raise

    def _lock(self, ring: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(ring, asyncio.Lock())

    async def _load(self, ring: tuple[str, str]) -> list[dict[str, str]]:
        held = self._rings.get(ring)
        if held is not None:
            self._rings.move_to_end(ring)
            return held
        raws = await asyncio.gather(*(self.kv.get(shard_key(*ring, n)) for n in range(SHARDS)))
        shards: list[dict[str, str]] = []
        for raw in raws:
            try:
                val = json.loads(raw) if raw else {}
            except ValueError:
                val = {}
            shards.append({str(k): str(v) for k, v in val.items()} if isinstance(val, dict) else {})
        held = self._rings.get(ring)
        if held is not None:  # loaded meanwhile by another caller: that copy stays
            return held
        self._rings[ring] = shards
        self._counted(ring)
        self._trim(keep=ring)
        return shards

    def _counted(self, ring: tuple[str, str]) -> None:
        """Count the ring's cached keys again (after a load or a change)."""
        shards = self._rings.get(ring)
        n = sum(map(len, shards)) if shards is not None else 0
        self.cached_keys += n - self._counts.pop(ring, 0)
        if shards is not None:
            self._counts[ring] = n

    def _trim(self, keep: tuple[str, str] | None = None) -> None:
        """Drop the least recently used rings past ``max_cached_keys`` (never ``keep``, never one
        whose lock is held: a write is changing it, and a copy read from storage meanwhile would
        miss its new keys)."""
        passed = 0  # rings kept (``keep``, or being written), moved to the recent end: stop once all were
        while self.cached_keys > self.max_cached_keys and passed < len(self._rings):
            ring = next(iter(self._rings))
            lock = self._locks.get(ring)
            if ring == keep or (lock is not None and lock.locked()):
                self._rings.move_to_end(ring)
                passed += 1
                continue
            del self._rings[ring]
            self._counted(ring)
            self.evictions += 1

    async def _store(self, ring: tuple[str, str], shard: int) -> None:
        entries = self._rings[ring][shard]
        key = shard_key(*ring, shard)
        if entries:
            await self.kv.set(key, json.dumps(entries, sort_keys=True).encode("ascii"))
        else:
            await self.kv.delete(key)

    async def key_of(self, collection: str, user_key: str, row_id: str) -> bytes | None:
        shards = await self._load((collection, user_key))
        raw = shards[shard_of(row_id)].get(row_id)
        try:
            return base64.b64decode(raw, validate=True) if raw else None
        except binascii.Error:
            return None

    async def issue(self, collection: str, user_key: str, row_ids: Sequence[str]) -> tuple[dict[str, bytes], list[str]]:
        """The keys of ``row_ids``: a row that has one keeps it (the store may still hold the row
        sealed under it, if this write fails), a new row gets a fresh one, stored before it is used.
        Returns (the keys, the ids whose key is new)."""
        ring = (collection, user_key)
        async with self._lock(ring):
            shards = await self._load(ring)
            keys: dict[str, bytes] = {}
            new: list[str] = []
            for rid in row_ids:
                held = await self.key_of(collection, user_key, rid)
                if held is None:
                    held = AESGCM.generate_key(bit_length=256)
                    shards[shard_of(rid)][rid] = base64.b64encode(held).decode("ascii")
                    new.append(rid)
                keys[rid] = held
            for n in sorted({shard_of(rid) for rid in new}):
                await self._store(ring, n)
            self._counted(ring)
        self._trim()
        return keys, new

    async def destroy(self, collection: str, user_key: str | None, row_ids: Sequence[str]) -> int:
        """Destroy the keys of ``row_ids`` (in every known scope of ``collection`` when no user key
        is named). Returns how many were held."""
        rings = [(collection, user_key)] if user_key else [r for r in self._rings if r[0] == collection]
        n = 0
        for ring in rings:
            async with self._lock(ring):
                shards = await self._load(ring)
                touched = {shard_of(rid) for rid in row_ids if rid in shards[shard_of(rid)]}
                for rid in row_ids:
                    n += shards[shard_of(rid)].pop(rid, None) is not None
                for s in sorted(touched):
                    await self._store(ring, s)
                self._counted(ring)
        return n

    async def ids_of(self, collection: str) -> set[str]:
        """The ids of every sealed row of ``collection`` (its keyrings name them all)."""
        out: set[str] = set()
        for key in await self.kv.keys(ring_prefix(collection)):
            raw = await self.kv.get(key)
            try:
                val = json.loads(raw) if raw else {}
            except ValueError:
                continue
            if isinstance(val, dict):
                out.update(str(k) for k in val)
        return out

    async def drop_collection(self, collection: str) -> int:
        """Every keyring of a deleted knowledge base goes. Returns the storage values deleted."""
        self._owed.pop(collection, None)
        for ring in [r for r in self._rings if r[0] == collection]:
            del self._rings[ring]
            self._counted(ring)
        keys = await self.kv.keys(ring_prefix(collection))
        for key in keys:
            await self.kv.delete(key)
        return len(keys)


def _where_ids(where: dict[str, Any]) -> tuple[str | None, list[str] | None]:
    """The user key and the row ids a filter names (None: not named)."""
    user_key: str | None = None
    ids: list[str] | None = None
    for field, op, val in filter_conditions(where):
        if field == "user_key" and op == "$eq":
            user_key = str(val)
        elif field in ("episode_id", "file_id", "uuid"):
            named = [str(val)] if op == "$eq" else [str(v) for v in val] if op == "$in" else None
            ids = named if ids is None or named is None else [i for i in ids if i in named]
    return user_key, ids


class SealedVectors:
    """A :class:`~ltm.ports.VectorIndex` that seals every memory row it writes and opens every row it
    reads; anything else of the wrapped index (its name, ``keeps_metadata``) is the wrapped one's.
    The store it writes to is the sidecar over the given one (:mod:`.sidecar`)."""

    def __init__(self, inner: VectorIndex, kv: KeyValueStore) -> None:
        # under the seal, the sidecar (ADR 0008): on a backend that drops metadata it keeps the
        # scope in file_id and the (sealed) metadata in plugin storage; elsewhere it passes through.
        # A new one per service: a restart keeps nothing in memory
        base = inner.inner if isinstance(inner, SidecarVectors) else inner
        self.inner: VectorIndex = SidecarVectors(base, kv)
        self.keyring = Keyring(kv)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def store(self) -> VectorIndex:
        """The store the rows are written to, as the service reads it raw: the one it was given,
        or the sidecar over it when that is not known to keep metadata (the host's: on a backend
        that drops metadata the sidecar holds the rows' metadata)."""
        side = self.inner
        if isinstance(side, SidecarVectors) and getattr(side.inner, "keeps_metadata", False):
            return side.inner
        return side

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Seal (:meth:`seal_records`) and write. A write the store refused takes its new keys back."""
        sealed, fresh = await self.seal_records(collection, records)
        try:
            await self.inner.upsert(collection, sealed)
        except BaseException as exc:
            if not is_unknown_outcome(exc) and not isinstance(exc, asyncio.CancelledError):
                for user_key, ids in fresh.items():  # refused: no row was written under them
                    if ids:
                        await self.keyring.destroy(collection, user_key, ids)
            raise

    async def seal_records(
        self, collection: str, records: Sequence[VectorRecord]
    ) -> tuple[list[VectorRecord], dict[str, list[str]]]:
        """The records as the store receives them, their keys stored first (a row already sealed
        passes as it is). Returns them and the ids whose key is new, per user key. The write engine
        calls it before its host write, so a key that cannot be stored sends nothing."""
        await self.keyring.settle(collection)
        if isinstance(self.inner, SidecarVectors):  # the sidecar's reads too, before the host write
            await self.inner.prepare(collection, records)
        by_scope: dict[str, list[VectorRecord]] = {}
        for r in records:
            if _sealable(r.metadata):
                by_scope.setdefault(str(r.metadata["user_key"]), []).append(r)
        keys: dict[str, bytes] = {}
        fresh: dict[str, list[str]] = {}
        for user_key, recs in by_scope.items():
            held, fresh[user_key] = await self.keyring.issue(collection, user_key, [_row_id(r) for r in recs])
            keys.update(held)
        out = [
            VectorRecord(r.id, r.vector, seal(r.metadata, _row_id(r), keys[_row_id(r)]), "")
            if _row_id(r) in keys and _sealable(r.metadata)
            else r
            for r in records
        ]
        return out, fresh

    async def _preload(self, collection: str, where: dict[str, Any]) -> None:
        """The keyring of the scope a filter names, read alongside the store's answer (no extra round trip)."""
        try:
            user_key, _ = _where_ids(where) if where else (None, None)
        except ValueError:  # a filter of another shape: its rows' keyrings are read as they come
            return
        if user_key:
            await self.keyring.key_of(collection, user_key, "")

    async def _open(self, collection: str, row_id: str, md: dict[str, Any]) -> dict[str, Any]:
        if not is_sealed(md):
            return md
        rid = str(md.get("episode_id") or row_id)
        key = await self.keyring.key_of(collection, str(md.get("user_key") or ""), rid)
        return unseal(md, rid, key)

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        hits, _ = await asyncio.gather(
            self.inner.search(collection, vector, top_k, where), self._preload(collection, where)
        )
        for h in hits:
            h.metadata = await self._open(collection, h.id, h.metadata)
        return hits

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        page, _ = await asyncio.gather(
            self.inner.list(collection, where, limit, offset), self._preload(collection, where)
        )
        items = []
        for i in page.items:
            md = await self._open(collection, i.id, i.metadata)
            items.append(VectorItem(i.id, md, str(md.get("text") or "") if is_sealed(i.metadata) else i.document))
        return ListPage(items=items, total=page.total)

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        """Delete; the keys of the rows deleted (the ids the filter names, or, a filter naming none,
        the rows it matched just before) are owed: destroyed by :meth:`settle_keys`, which the erase
        after every deleting mutation runs, or before the next write of the collection."""
        user_key, ids = _where_ids(where)
        if ids is None:
            ids = []
            offset = 0
            while True:
                page = await self.inner.list(collection, where, LIST_PAGE, offset)
                ids += [str(i.metadata.get("episode_id") or i.id) for i in page.items]
                if len(page.items) < LIST_PAGE:
                    break
                offset += LIST_PAGE
        await self.inner.delete(collection, where)
        # owed, not destroyed here: this call is the delete's own host write, whose outcome must not
        # depend on another write; the erase after the mutation (or the next write) destroys them
        self.keyring.owe(collection, user_key, ids)

    async def settle_keys(self) -> None:
        """Destroy every key owed for deleted rows now (the erase after a deleting mutation); the
        sidecar folds away the metadata of the rows a delete removed (ADR 0008)."""
        await self.keyring.settle_all()
        if isinstance(self.inner, SidecarVectors):
            await self.inner.tidy()

    async def drop_collection(self, collection: str) -> None:
        """Drop the collection; its keyrings go even when the store refuses (the host may have
        removed the knowledge base already): whatever it still keeps no longer opens."""
        try:
            await self.inner.drop_collection(collection)
        finally:
            await self.keyring.drop_collection(collection)
