"""The shapes an episode is shown in, one function and one field list per purpose. Pure.

- :func:`recall_view`: a recalled memory as tools, the knowledge-base engine and the standalone
  CLI return it (no scope keys: a model never sees whose key a memory is under);
- :func:`console_view`: every stored field, for the operator's Memory Console;
- :func:`export_record`: the stable key set of an export file (:data:`EXPORT_FIELDS`).

The prompt payload of the injected block is :func:`ltm.service.injection.context_payload`.
"""

from __future__ import annotations

from typing import Any

from .models import Episode, content_hash, validity_window
from .trust import trust_label

# what a recalled memory says about itself, in this order, besides its derived fields
RECALL_FIELDS: tuple[str, ...] = ("id", "content", "sender_id", "timestamp", "event_at", "valid_from", "valid_until")
RECALL_TAIL_FIELDS: tuple[str, ...] = ("claim_type", "confidence")
RECALL_LAST_FIELDS: tuple[str, ...] = ("importance", "tags", "source_ref")

EXPORT_FIELDS: tuple[str, ...] = (
    "id",
    "content",
    "status",
    "sender_id",
    "importance",
    "tags",
    "supersedes",
    "superseded_by",
    "timestamp",
    "event_at",
    "valid_from",
    "valid_until",
    "claim_type",
    "confidence",
    "source_ref",
    "origin",
    "content_hash",
    "import_original_id",
    "session_name",
    "scope_key",
    "user_key",
)


def recall_view(e: Episode, score: float) -> dict[str, Any]:
    out: dict[str, Any] = {k: getattr(e, k) for k in RECALL_FIELDS}
    out["valid_window"] = validity_window(e)
    out["status"] = e.status
    if e.superseded_by:
        out["superseded_by"] = e.superseded_by
    out.update({k: getattr(e, k) for k in RECALL_TAIL_FIELDS})
    out["trust"] = trust_label(e.claim_type, e.confidence)
    out.update({k: getattr(e, k) for k in RECALL_LAST_FIELDS})
    out["score"] = round(score, 4)
    return out


def console_view(e: Episode, score: float | None = None) -> dict[str, Any]:
    out = e.to_public()
    out["trust"] = trust_label(e.claim_type, e.confidence)
    out["valid_window"] = validity_window(e)
    if score is not None:
        out["score"] = round(float(score), 4)
    return out


def export_record(e: Episode) -> dict[str, Any]:
    """The export shape of one episode (JSON-safe, stable key set)."""
    rec: dict[str, Any] = {k: getattr(e, k) for k in EXPORT_FIELDS}
    rec["tags"], rec["supersedes"] = list(e.tags), list(e.supersedes)
    rec["content_hash"] = e.content_hash or content_hash(e.content)
    if e.extra:
        rec["extra"] = e.extra
    return rec
