"""Vector backends as the plugin sees them through the host: what a read-back may expect, and
whether a backend keeps the metadata memories are scoped by.

Two facts of LangBot 4.11.2 (docs/host-facts.md, "Vector backends"):

- SeekDB's vector search sees a newly written vector only 0.1-2 s after the write; its listing
  sees it at once. A read-back of a write therefore waits, within a bound, before it concludes.
- Milvus, pgvector and Valkey Search keep only ``text``, ``file_id`` and the chunk ``uuid`` of a
  record's metadata and silently drop a filter on any other field, so they cannot keep chats
  apart. ``file_id`` is the one field every backend keeps and filters: what must reach exactly one
  record on every backend (a probe's clean-up) is addressed by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The verdict stored with a memory knowledge base; "" = not known yet.
KEEPS_METADATA = "keeps_metadata"
DROPS_METADATA = "drops_metadata"
VERDICTS = (KEEPS_METADATA, DROPS_METADATA)
# The backends whose metadata filters the plugin's scopes rely on (named in the refusal).
SUPPORTED_BACKENDS = ("Chroma", "Qdrant", "SeekDB")

# Waits between the attempts of one read-back: about 3 s in all, past SeekDB's 2 s.
READBACK_DELAYS_S: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0)

PROBE_USER_KEY = "__ltm_backend_probe__"  # no chat's scope: a stray probe row is never recalled
PROBE_TEXT = "ltm backend probe"


def readback_delays(
    budget_s: float, first_s: float = 0.05, factor: float = 2.0, cap_s: float = 1.0
) -> tuple[float, ...]:
    """Growing waits (``first_s``, doubling, at most ``cap_s`` each) that add up to no more than
    ``budget_s``; a budget under ``first_s`` is no wait at all."""
    out: list[float] = []
    total, step = 0.0, max(first_s, 1e-3)
    while total + step <= budget_s + 1e-9:
        out.append(step)
        total += step
        step = min(cap_s, step * factor)
    return tuple(out)


def file_id_where(file_id: str) -> dict[str, Any]:
    """The filter that reaches one record on every backend: a single ``file_id`` condition (a
    backend that strips unknown fields also drops an ``$and`` as a whole)."""
    if not file_id or not isinstance(file_id, str):
        raise ValueError("file_id required")
    return {"file_id": {"$eq": file_id}}


# What every backend stores; Milvus refuses an insert that lacks one ("Insert missed an field
# `chunk_uuid`", the chunk uuid being metadata ``uuid``).
KEPT_EVERYWHERE = ("text", "file_id", "uuid")


def probe_metadata(probe_id: str, run: str) -> dict[str, Any]:
    """The metadata of a backend probe record: the fields every backend keeps (and Milvus requires)
    plus fields a metadata-keeping backend returns unchanged."""
    return {"file_id": probe_id, "text": PROBE_TEXT, "uuid": probe_id, "user_key": PROBE_USER_KEY, "ltm_probe": run}


def metadata_verdict(sent: Mapping[str, Any], returned: Mapping[str, Any]) -> str:
    """Whether the backend kept the probe's metadata: every field sent beyond
    :data:`KEPT_EVERYWHERE` must come back equal."""
    own = {k: v for k, v in sent.items() if k not in KEPT_EVERYWHERE}
    if not own:
        raise ValueError("a probe needs a field beyond text, file_id and uuid")
    return KEEPS_METADATA if all(returned.get(k) == v for k, v in own.items()) else DROPS_METADATA


def usable(verdict: str) -> bool:
    """A KB whose backend is known to drop metadata is kept but never used; an unknown verdict is
    not a refusal (the check runs again)."""
    return verdict != DROPS_METADATA
