"""Vector backends as the plugin sees them through the host: what a read-back may expect, and
whether a backend keeps the metadata memories are scoped by.

Two facts of LangBot 4.11.2 (docs/host-facts.md, "Vector backends"):

- SeekDB's vector search sees a newly written vector only 0.1-2 s after the write; its listing
  sees it at once. A read-back of a write therefore waits, within a bound, before it concludes.
- Milvus and pgvector keep only ``text``, ``file_id`` and the chunk ``uuid`` of a record's metadata;
  Valkey Search keeps all of it (as JSON) but filters on ``file_id`` alone. All three silently drop
  a filter on any other field, so their own filters cannot keep chats apart. ``file_id`` is the one
  field every backend keeps and filters (``$eq``, ``$ne``, ``$in``, ``$nin`` everywhere; ranges not
  on Valkey Search's tag field): on these backends a memory row's ``file_id`` carries its scope
  (:func:`host_file_id`) and every read of the host names the file ids it may return
  (``ltm/service/sidecar.py``, ADR 0008).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

# The verdict stored with a memory knowledge base; "" = not known yet.
KEEPS_METADATA = "keeps_metadata"
DROPS_METADATA = "drops_metadata"
VERDICTS = (KEEPS_METADATA, DROPS_METADATA)
# The backends whose own metadata filters keep the plugin's scopes apart; on the others (Milvus,
# pgvector, Valkey Search) the scope rides in ``file_id`` and the metadata in plugin storage.
FILTERING_BACKENDS = ("Chroma", "Qdrant", "SeekDB")
DROPPING_BACKENDS = ("Milvus", "pgvector", "Valkey Search")
# The probe that reached a verdict: 2 also checks that a filter on a field beyond ``file_id`` is
# honoured (Valkey Search returns every field, yet filters on ``file_id`` alone); a verdict of an
# older probe is probed again on the KB's next use.
PROBE_VERSION = 2
# How the host reports a search hit's closeness (the probe measures it): the squared L2 distance
# (Chroma's default space), the cosine distance (pgvector, Valkey Search) or the cosine similarity
# itself (Milvus' COSINE metric). "" = not measured.
METRICS = ("l2sq", "cosine", "similarity")

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


def filter_verdict(returned_ids: Sequence[str]) -> str:
    """Whether the backend honoured a filter on a field beyond ``file_id``: the probe lists with a
    condition its own record does not meet (while that record is stored), so a backend that drops
    the condition lists every record, the probe's among them."""
    return DROPS_METADATA if returned_ids else KEEPS_METADATA


def usable(verdict: str) -> bool:
    """Every verdict is usable: a backend that drops metadata keeps its scopes in ``file_id`` and
    its metadata in plugin storage (ADR 0008). Kept for the callers that ask."""
    return verdict in ("", *VERDICTS)


# ---------------------------------------------------------------------- the metric of a search


def probe_query(vector: Sequence[float], cosine: float = 0.6) -> list[float]:
    """A unit query vector at exactly ``cosine`` to the (normalised) ``vector``: the probe searches
    with it, and the distance the host reports for its own record names the metric."""
    n = math.sqrt(sum(x * x for x in vector)) or 1.0
    v = [x / n for x in vector]
    # a direction orthogonal to v: a basis vector minus its projection on v
    i = min(range(len(v)), key=lambda j: abs(v[j]))
    u = [(1.0 if j == i else 0.0) - v[i] * v[j] for j in range(len(v))]
    un = math.sqrt(sum(x * x for x in u)) or 1.0
    s = math.sqrt(max(0.0, 1.0 - cosine * cosine))
    return [cosine * a + s * b / un for a, b in zip(v, u, strict=True)]


def metric_of(distance: float, cosine: float = 0.6) -> str:
    """The metric whose value for two unit vectors at ``cosine`` is closest to ``distance``."""
    expected = {"l2sq": 2.0 - 2.0 * cosine, "cosine": 1.0 - cosine, "similarity": cosine}
    return min(expected, key=lambda m: abs(expected[m] - distance))


def similarity(distance: float, metric: str) -> float:
    """The cosine similarity of a hit whose host-reported value is ``distance`` under ``metric``."""
    if metric == "similarity":
        return distance
    if metric == "cosine":
        return 1.0 - distance
    return 1.0 - distance / 2.0


# ---------------------------------------------------------------------- the scope in file_id

FILE_ID_MARK = "ltm"  # every file id the plugin gives a memory row on a dropping backend starts so
FILE_ID_END = "ltn"  # the first string past every such file id (a range delete on Milvus, pgvector)
SCOPE_TAG_HEX = 20  # 80 bits of sha256: the scope part of a file id
_PLAIN_ID = re.compile(r"[a-z0-9_]{1,100}")


def scope_tag(collection: str, user_key: str) -> str:
    """The scope part of a file id: a digest of the knowledge base and the scope's user key
    (lowercase hex: Valkey Search's tag fields fold case and split on commas)."""
    raw = f"{collection}\0{user_key}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:SCOPE_TAG_HEX]


def host_file_id(collection: str, user_key: str, row_id: str) -> str:
    """The ``file_id`` of a memory row on a dropping backend: ``ltm<scope tag>_<row id>`` (the row
    id as it is when it is lowercase letters, digits and underscores, as the plugin's ids are,
    else a digest of it). At most 3 + 20 + 1 + 100 characters: within every backend's 255, and
    only characters no backend escapes, folds or splits."""
    if not row_id:
        raise ValueError("row id required")
    if _PLAIN_ID.fullmatch(row_id):
        rid = row_id
    else:
        rid = "h" + hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return f"{FILE_ID_MARK}{scope_tag(collection, user_key)}_{rid}"


def scope_tag_of(file_id: str) -> str | None:
    """The scope tag a file id made by :func:`host_file_id` carries (None: not one of those)."""
    if not file_id.startswith(FILE_ID_MARK) or len(file_id) < len(FILE_ID_MARK) + SCOPE_TAG_HEX + 2:
        return None
    tag = file_id[len(FILE_ID_MARK) : len(FILE_ID_MARK) + SCOPE_TAG_HEX]
    sep = file_id[len(FILE_ID_MARK) + SCOPE_TAG_HEX]
    return tag if sep == "_" and all(c in "0123456789abcdef" for c in tag) else None
