"""A scope's recall index, kept in plugin storage so the first turn after a restart need not list
the scope from the host's vector store.

The host's filtered list grows with the whole collection (embedded Chroma: ~1.4 s for a scope of
1,000 rows among 100k), a storage read does not. A **snapshot** holds exactly what
:class:`~ltm.service.scope_index.ScopeIndex` holds - the active rows' ids, packed metadata,
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

from ..domain.filters import Criteria, filter_conditions, matches_conditions, scope_filter
from ..domain.keys import kb_part
from ..domain.lexical import BM25Index
from ..ports import KeyValueStore
from .row_codec import NUMERIC, numeric_row, unpack_metadata

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


class Rejected(ValueError):
    """A stored value that is not a usable snapshot of the scope. ``stale``: a well-formed snapshot
    of another stamp (every write moves the stamp: the normal case after a write, not a fault)."""

    def __init__(self, reason: str, *, stale: bool = False) -> None:
        super().__init__(reason)
        self.stale = stale


def _body(raw: bytes | None) -> tuple[Any, ...]:
    """The decoded record, only when its digest matches (a truncated or altered value is never
    handed to ``marshal``, which is not meant for malformed input)."""
    head = len(MAGIC) + 32
    if not raw or len(raw) <= head or not raw.startswith(MAGIC):
        raise Rejected("not a snapshot")
    data = memoryview(raw)[head:]
    if hashlib.sha256(data).digest() != raw[len(MAGIC) : head]:
        raise Rejected("digest mismatch")
    try:
        body = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        raise Rejected("undecodable record") from exc
    if not isinstance(body, tuple) or len(body) != 15 or body[0] != 1 or not isinstance(body[3], str):
        raise Rejected("unknown record layout")
    return body


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _column(raw: Any, dtype: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """One numeric column of exactly ``shape`` (a column of another width is refused here, not
    left to fail every later query)."""
    if not isinstance(raw, bytes):
        raise Rejected(f"{what}: not bytes")
    item = np.dtype(dtype).itemsize
    if len(raw) != item * int(np.prod(shape, dtype=np.int64)):
        raise Rejected(f"{what}: {len(raw)} bytes for shape {shape}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _check_bm25(state: Any, ids: list[str], max_docs: int) -> BM25Index:
    """The BM25 state, refused unless it is consistent: exactly the snapshot's ids, every posting
    naming a held document and a term it lists, the total length the sum of the lengths."""
    if not isinstance(state, tuple) or len(state) != 3:
        raise Rejected("bm25: not a state")
    docs, postings, total = state
    if not isinstance(docs, dict) or not isinstance(postings, dict) or not _is_int(total):
        raise Rejected("bm25: not a state")
    if docs.keys() != set(ids):
        raise Rejected("bm25: other documents than the rows")
    length, pairs = 0, 0
    for doc in docs.values():
        if not (isinstance(doc, tuple) and len(doc) == 2 and isinstance(doc[0], tuple) and _is_int(doc[1])):
            raise Rejected("bm25: malformed document")
        if doc[1] < 0 or not all(isinstance(t, str) for t in doc[0]):
            raise Rejected("bm25: malformed document")
        length, pairs = length + doc[1], pairs + len(doc[0])
    if length != total:
        raise Rejected("bm25: total length")
    for term, post in postings.items():
        if not isinstance(term, str) or not isinstance(post, dict) or not post:
            raise Rejected("bm25: malformed postings")
        for doc_id, tf in post.items():
            held = docs.get(doc_id)
            if held is None or not _is_int(tf) or tf < 1 or term not in held[0]:
                raise Rejected("bm25: a posting names no held term")
        pairs -= len(post)
    if pairs:  # every listed term of every document has its posting
        raise Rejected("bm25: postings missing")
    try:
        return BM25Index.from_state((docs, postings, total), max_docs=max_docs)
    except ValueError as exc:
        raise Rejected(f"bm25: {exc}") from exc


def load(raw: bytes | None, collection: str, user_key: str, stamp: str, max_docs: int) -> Loaded:
    """:func:`_load`, any error of a malformed value raised as :class:`Rejected` (``marshal`` may
    yield any container: what a check did not foresee is a malformed snapshot too)."""
    try:
        return _load(raw, collection, user_key, stamp, max_docs)
    except Rejected:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the value holds, it is not a usable snapshot
        raise Rejected(f"malformed: {type(exc).__name__}") from exc


def _load(raw: bytes | None, collection: str, user_key: str, stamp: str, max_docs: int) -> Loaded:
    """The snapshot's columns when it decodes completely and consistently as a snapshot of exactly
    this scope taken at ``stamp`` holding at most ``max_docs`` rows: the digest, the stamp, the
    scope, every column's type, width and count, every row's packed metadata (its scope fields, its
    sender and numeric columns as the row says) and the BM25 state. Anything else raises
    :class:`Rejected` (the caller lists the host instead): a snapshot is a cache, and one that
    is used must not fail a query later."""
    body = _body(raw)
    _, coll, ukey, snap_stamp, base, dim, complete, ids, blobs, senders, vec, has, num, nt, bm25 = body
    if coll != collection or ukey != user_key:
        raise Rejected("another scope's snapshot")
    if snap_stamp != stamp:
        raise Rejected("taken at another stamp", stale=True)
    if not isinstance(base, float) or not np.isfinite(base) or not _is_int(dim) or not isinstance(complete, bool):
        raise Rejected("malformed header")
    if not (isinstance(ids, list) and isinstance(blobs, list) and isinstance(senders, list)):
        raise Rejected("malformed rows")
    n = len(ids)
    if not (len(blobs) == len(senders) == n) or n > max_docs or dim < 0:
        raise Rejected("row counts")
    if not all(isinstance(r, str) and r for r in ids) or len(set(ids)) != n:
        raise Rejected("row ids")
    vectors = _column(vec, "<f2", (n, dim), "vectors") if dim else np.zeros((n, 0), np.float16)
    if not dim and vec != b"":
        raise Rejected("vectors without a dimension")
    if not isinstance(has, bytes) or len(has) != n or has.strip(b"\x00\x01"):
        raise Rejected("has_vec")
    has_vec = np.frombuffer(has, dtype=np.uint8).astype(bool)
    numeric = _column(num, "<f8", (n, len(NUMERIC)), "numeric")
    nterms = _column(nt, "<i4", (n,), "nterms")
    if (dim == 0 and has_vec.any()) or (nterms < 0).any() or not np.isfinite(vectors[has_vec]).all():
        raise Rejected("columns")
    index = _check_bm25(bm25, ids, max_docs)
    metadata: list[dict[str, Any]] = []
    for i, blob in enumerate(blobs):
        md = unpack_metadata(blob) if isinstance(blob, bytes) else None
        if not isinstance(md, dict):
            raise Rejected("packed metadata")
        if md.get("sender_id") != senders[i]:
            raise Rejected("sender column")
        want = numeric_row(md)
        if not np.array_equal(numeric[i], want, equal_nan=True):
            raise Rejected("numeric columns")
        if int(nterms[i]) != index.term_count(ids[i]):
            raise Rejected("term counts")
        metadata.append(md)
    # Only active rows of this scope, judged by the one filter builder's semantics: a snapshot is
    # never written otherwise, and a row that is not is never served from one.
    active = filter_conditions(scope_filter(user_key, Criteria()))
    keep = [i for i, md in enumerate(metadata) if matches_conditions(md, active)]
    dropped = n - len(keep)
    if dropped:
        log.warning("recall snapshot of %s/%s held %d rows that are not active: dropped", collection, user_key, dropped)
        for i in set(range(n)) - set(keep):
            index.remove(ids[i])
        ids, blobs, senders = [ids[i] for i in keep], [blobs[i] for i in keep], [senders[i] for i in keep]
        vectors, has_vec, numeric, nterms = vectors[keep], has_vec[keep], numeric[keep], nterms[keep]
    return Loaded(ids, blobs, senders, vectors, has_vec, numeric, nterms, index, dim, complete, base, dropped)


def decode(raw: bytes | None, collection: str, user_key: str, stamp: str, max_docs: int) -> Loaded | None:
    """:func:`load`, or None when the value is not a usable snapshot of the scope."""
    try:
        return load(raw, collection, user_key, stamp, max_docs)
    except Rejected:
        return None


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
