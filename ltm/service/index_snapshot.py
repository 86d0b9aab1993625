"""A scope's recall index, kept in plugin storage so the first turn after a restart need not list
the scope from the host's vector store.

The host's filtered list grows with the whole collection (embedded Chroma: ~1.4 s for a scope of
1,000 rows among 100k), a storage read does not. A **snapshot** holds exactly what
:class:`~ltm.service.recall_index.ScopeIndex` holds - the active rows' ids, packed metadata,
float16 vectors, numeric columns and BM25 state - in one storage value under
``recall/<kb>/<digest of the user key>/snap``, and is read in the same round trip as the scope's
**stamp** (``.../stamp``).

Validity (the snapshot is a cache; the host stays the source of truth):

- every write of this process moves the stamp to a fresh random token *before* its host write is
  sent (:meth:`SnapshotStore.bump`); a snapshot records the token its content matches and is used
  only while the stored stamp still equals it. A write whose outcome is unknown has moved the
  stamp already, so no snapshot taken before it is ever used again; one that cannot move the
  stamp is not sent (the caller gets a storage error, nothing is written);
- a snapshot is decoded only for the exact (collection, user key) it names, and only its active
  rows are kept (:func:`decode`);
- it records when its content was last read from the host (``base``); past the recall index's TTL
  the loaded index is rebuilt from the host in the background while it answers, as an in-memory
  index is: the rule that picks up writes made outside this plugin.

Size: one value of at most :data:`MAX_BYTES` (below the host's 10 MiB default per value); a scope
whose snapshot would be larger has none (its first turn lists the host, as before).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import marshal
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain.lexical import BM25Index
from ..domain.scope import Criteria, filter_conditions, kb_part, matches_conditions, scope_filter
from ..ports import KeyValueStore

log = logging.getLogger(__name__)

PREFIX = "recall/"
MAGIC = b"LTMSNAP1"  # then the sha256 of the marshalled record, then the record
MARSHAL_VERSION = 4  # fixed, so a snapshot reads the same under later Pythons
MAX_BYTES = 8 << 20


def base_key(collection: str, user_key: str) -> str:
    """``recall/<kb>/<digest>/``: a digest keeps long user keys within the host's 255-character keys
    (the record names its owner exactly and is checked on read)."""
    digest = hashlib.sha256(user_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{PREFIX}{kb_part(collection)}/{digest}/"


def collection_prefix(collection: str) -> str:
    return f"{PREFIX}{kb_part(collection)}/"


@dataclass
class Loaded:
    """What a snapshot restores: the columns of a ScopeIndex, checked."""

    ids: list[str]
    blobs: list[bytes]
    senders: list[Any]
    vectors: np.ndarray
    has_vec: np.ndarray
    numeric: np.ndarray
    nterms: np.ndarray
    bm25: BM25Index
    dim: int
    complete: bool
    base: float  # wall-clock time its content was last read from the host
    dropped: int  # rows the snapshot held that are not active (never expected; never served)


def encode(
    *,
    collection: str,
    user_key: str,
    stamp: str,
    base: float,
    dim: int,
    complete: bool,
    ids: list[str],
    blobs: list[bytes],
    senders: list[Any],
    vectors: np.ndarray,
    has_vec: np.ndarray,
    numeric: np.ndarray,
    nterms: np.ndarray,
    bm25: BM25Index,
) -> bytes:
    """One value (synchronous: the caller passes the live columns and serializes them at once)."""
    n = len(ids)
    body = (
        1,
        collection,
        user_key,
        stamp,
        float(base),
        int(dim),
        bool(complete),
        list(ids),
        list(blobs),
        [s if isinstance(s, (str, int, float)) or s is None else str(s) for s in senders],
        np.ascontiguousarray(vectors[:n], dtype="<f2").tobytes() if dim else b"",
        np.ascontiguousarray(has_vec[:n], dtype=bool).tobytes(),
        np.ascontiguousarray(numeric[:n], dtype="<f8").tobytes(),
        np.ascontiguousarray(nterms[:n], dtype="<i4").tobytes(),
        bm25.state(),
    )
    data = marshal.dumps(body, MARSHAL_VERSION)
    return MAGIC + hashlib.sha256(data).digest() + data


def _body(raw: bytes | None) -> tuple[Any, ...] | None:
    """The decoded record, only when its digest matches (a truncated or altered value is never
    handed to ``marshal``, which is not meant for malformed input)."""
    head = len(MAGIC) + 32
    if not raw or len(raw) <= head or not raw.startswith(MAGIC):
        return None
    data = memoryview(raw)[head:]
    if hashlib.sha256(data).digest() != raw[len(MAGIC) : head]:
        return None
    try:
        body = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(body, tuple) or len(body) != 15 or body[0] != 1 or not isinstance(body[3], str):
        return None
    return body


def decode(raw: bytes | None, collection: str, user_key: str, stamp: str, max_docs: int) -> Loaded | None:
    """The snapshot's columns when it is a well-formed snapshot of exactly this scope taken at
    ``stamp`` and holding at most ``max_docs`` rows; None otherwise (the caller lists the host)."""
    body = _body(raw)
    if body is None:
        return None
    _, coll, ukey, snap_stamp, base, dim, complete, ids, blobs, senders, vec, has, num, nt, bm25 = body
    if coll != collection or ukey != user_key or snap_stamp != stamp:
        return None
    try:
        n = len(ids)
        if not (len(blobs) == len(senders) == n) or n > max_docs or len(set(ids)) != n:
            return None
        vectors = np.frombuffer(vec, dtype="<f2").reshape(n, dim).copy() if dim else np.zeros((n, 0), np.float16)
        has_vec = np.frombuffer(has, dtype=bool).copy()
        numeric = np.frombuffer(num, dtype="<f8").reshape(n, -1).copy()
        nterms = np.frombuffer(nt, dtype="<i4").copy()
        if has_vec.shape != (n,) or nterms.shape != (n,) or (dim == 0 and has_vec.any()):
            return None
        index = BM25Index.from_state(bm25, max_docs=max_docs)
        if set(index.ids()) != set(ids):
            return None
    except (ValueError, TypeError, AttributeError):
        return None
    # Only active rows of this scope, judged by the one filter builder's semantics: a snapshot is
    # never written otherwise, and a row that is not is never served from one.
    from .recall_index import scope_fields  # the metadata packing belongs to the index

    active = filter_conditions(scope_filter(user_key, Criteria()))
    keep = [i for i, b in enumerate(blobs) if isinstance(b, bytes) and matches_conditions(scope_fields(b), active)]
    dropped = n - len(keep)
    if dropped:
        log.warning("recall snapshot of %s/%s held %d rows that are not active: dropped", collection, user_key, dropped)
        for i in set(range(n)) - set(keep):
            index.remove(ids[i])
        ids, blobs, senders = [ids[i] for i in keep], [blobs[i] for i in keep], [senders[i] for i in keep]
        vectors, has_vec, numeric, nterms = vectors[keep], has_vec[keep], numeric[keep], nterms[keep]
    return Loaded(
        ids, blobs, senders, vectors, has_vec, numeric, nterms, index, int(dim), bool(complete), float(base), dropped
    )


class SnapshotStore:
    """Stamps and snapshots of scopes in plugin storage."""

    def __init__(self, kv: KeyValueStore) -> None:
        self.kv = kv

    def known_absent(self, collection: str, user_key: str) -> bool:
        """Whether storage is known, without a call, to hold no snapshot of the scope (the host's
        store keeps its key set: see :meth:`HostKeyValueStore.known_absent`)."""
        probe = getattr(self.kv, "known_absent", None)
        return bool(probe(base_key(collection, user_key) + "snap")) if callable(probe) else False

    async def read(self, collection: str, user_key: str) -> tuple[str, bytes | None]:
        """(stamp, snapshot value) of the scope, read together (one round trip). A scope never
        written by this plugin has the empty stamp; stamps are never deleted, so a snapshot taken
        before the first write can never become valid again."""
        base = base_key(collection, user_key)
        stamp, raw = await asyncio.gather(self.kv.get(base + "stamp"), self.kv.get(base + "snap"))
        return (stamp.decode("ascii", "replace") if stamp else ""), raw

    async def read_stamp(self, collection: str, user_key: str) -> str:
        stamp = await self.kv.get(base_key(collection, user_key) + "stamp")
        return stamp.decode("ascii", "replace") if stamp else ""

    async def bump(self, collection: str, user_key: str) -> str:
        """Move the scope's stamp to a fresh token (every snapshot taken before is void)."""
        token = uuid.uuid4().hex
        await self.kv.set(base_key(collection, user_key) + "stamp", token.encode("ascii"))
        return token

    async def write(self, collection: str, user_key: str, value: bytes) -> None:
        await self.kv.set(base_key(collection, user_key) + "snap", value)

    async def discard(self, collection: str, user_key: str) -> None:
        """Delete the scope's snapshot value when storage lists one (its stamp stays: it is what
        voids a copy whose delete did not land)."""
        key = base_key(collection, user_key) + "snap"
        if key in await self.kv.keys(key):
            await self.kv.delete(key)

    async def drop_collection(self, collection: str) -> None:
        """Delete every snapshot value of a collection (its knowledge base is gone). The stamps
        stay (a few bytes per scope): deleting one could make an older snapshot valid again."""
        for key in await self.kv.keys(collection_prefix(collection)):
            if key.endswith("/snap"):
                await self.kv.delete(key)
