"""The row codec: how one host row's metadata and vector are held in memory and in a snapshot.

Both the recall index (:mod:`ltm.service.recall_index`) and its snapshots in plugin storage
(:mod:`ltm.service.index_snapshot`) hold a row as the same columns:

- its metadata, marshalled to bytes by :func:`pack_metadata` (decoded by :func:`unpack_metadata`
  only for the few candidates of a query);
- its vector as float16, which the plugin stores in the row's metadata under :data:`VECTOR_KEY`
  (base64, little-endian: :func:`encode_vector` / :func:`decode_vector`);
- its numeric columns (:data:`NUMERIC`, :func:`numeric_row`), which the vector leg pre-filters on.
"""

from __future__ import annotations

import base64
import marshal
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..domain.models import Episode
from ..ports import VectorRecord

VECTOR_KEY = "vec_f16"  # metadata key: base64 of the row's vector as little-endian float16
NUMERIC = ("ts", "event_ts", "valid_from_ts", "valid_until_ts")

NOT_HELD = frozenset({VECTOR_KEY, "file_id", "uuid"})  # the vector has its own array; the others repeat the id
# Metadata is held as a tuple of values in this key order (the keys of Episode.to_metadata) plus a
# dict of any other key: the key names are not repeated per row. Absent and None are the same to
# ``matches`` and ``Episode.from_metadata``, so None stands for absent.
KEYS = (
    "schema", "episode_id", "text", "user_key", "scope_key", "session_name", "bot_uuid", "sender_id",
    "importance", "tags", "status", "supersedes", "superseded_by", "timestamp", "ts", "event_ts",
    "valid_from_ts", "valid_until_ts", "claim_type", "confidence", "source_ref", "origin", "content_hash",
    "document_id", "import_original_id", "event_at", "valid_from", "valid_until", "extra",
)  # fmt: skip
_KNOWN = frozenset(KEYS) | NOT_HELD


def pack_metadata(md: dict[str, Any]) -> bytes:
    """A row's metadata as bytes: the values of :data:`KEYS` in order, then any other key that is
    set (the keys of :data:`NOT_HELD` are left out)."""
    unknown = md.keys() - _KNOWN
    other = {k: md[k] for k in unknown if md[k] is not None} if unknown else None
    return marshal.dumps((tuple(map(md.get, KEYS)), other or None))


def unpack_metadata(blob: bytes) -> dict[str, Any]:
    """The metadata :func:`pack_metadata` packed (a key it held as absent reads as None)."""
    values, other = marshal.loads(blob)
    md = dict(zip(KEYS, values, strict=True))  # None values stand for absent keys
    if other:
        md.update(other)
    return md


def encode_vector(vector: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f2").tobytes()).decode("ascii")


def decode_vector(raw: Any) -> np.ndarray | None:
    """The float16 vector of a row's metadata value, or None when absent or malformed."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        data = base64.b64decode(raw, validate=True)
    except ValueError:
        return None
    if not data or len(data) % 2:
        return None
    vec = np.frombuffer(data, dtype="<f2")
    return vec if np.all(np.isfinite(vec)) else None


def number(v: Any) -> float:
    """A metadata value as the numeric columns hold it (NaN for anything but a number)."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan


def numeric_row(md: dict[str, Any]) -> list[float]:
    """The numeric columns of one row's metadata, in :data:`NUMERIC` order."""
    return [number(md.get(k)) for k in NUMERIC]


def stored_record(episode: Episode, vector: Sequence[float]) -> VectorRecord:
    """The vector-store row the write engine writes for ``episode``: its metadata with the vector
    riding along as float16 (so the recall index is built from one paged list), its content as
    the document. The benchmarks that seed a store directly write this same row."""
    metadata = {**episode.to_metadata(), VECTOR_KEY: encode_vector(vector)}
    return VectorRecord(id=episode.id, vector=list(vector), metadata=metadata, document=episode.content)
