"""The recall trace: every candidate that reached ranking, its signals, its final rank, and why
each one that was not injected lost.

A trace is produced by the one recall path (:mod:`ltm.service.recall`) when asked for, so it
explains exactly what ran. It is bounded (:data:`MAX_ROWS`, :data:`PREVIEW_CHARS`) because it is
kept with the injection snapshot, and its texts are redacted previews, never whole memories.

Reasons, in the order a candidate meets them:

- ``status`` / ``audience`` / ``as_of`` / ``expired``: the scope's filter keeps the row out (it
  is not active, the reader may not see it, it was not yet valid then, its ``valid_until`` passed);
- ``time_window``: outside an explicit time range (a hard filter);
- ``rank_cut``: scored, but beyond ``top_k``;
- ``repeat``: folded as a near-duplicate of a more valuable injected memory;
- ``budget``: did not fit in the token budget.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .budget import DUPLICATE_JACCARD, near_duplicate
from .credentials import redact_text
from .lexical import tokenize

REASONS: tuple[str, ...] = ("status", "audience", "as_of", "expired", "time_window", "rank_cut", "repeat", "budget")
MAX_ROWS = 24  # injected rows first, then the best near misses
PREVIEW_CHARS = 80


@dataclass(frozen=True)
class TraceRow:
    """One candidate. ``rank`` is its 1-based place in the final order (None: filtered before
    scoring); ``reason`` is None exactly when ``injected``."""

    id: str
    preview: str
    sender: str = ""
    rank: int | None = None
    score: float | None = None
    dense: float | None = None  # vector similarity (None: the vector leg did not return it)
    lexical: float | None = None  # BM25 (None / 0: no keyword hit)
    window: bool = False  # inside the time window the query names
    recency: float | None = None  # the recency factor (1.0 = no decay)
    trust: str = ""
    neighbourhood: float | None = None  # the session factor (1.0 = alone)
    rerank: int | None = None  # the fused place before the rerank model reordered the head
    injected: bool = False
    reason: str | None = None

    def to_public(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("score", "dense", "lexical", "recency", "neighbourhood"):
            if isinstance(out[k], float):
                out[k] = round(out[k], 4) if math.isfinite(out[k]) else None
        return out


@dataclass
class RecallTrace:
    query: str
    top_k: int
    budget_tokens: int
    rows: list[TraceRow] = field(default_factory=list)
    omitted: int = 0  # candidates left out of the trace by its bound

    @property
    def injected(self) -> list[TraceRow]:
        return [r for r in self.rows if r.injected]

    def to_public(self) -> dict[str, Any]:
        return {
            "query": preview(self.query),
            "top_k": self.top_k,
            "budget_tokens": self.budget_tokens,
            "rows": [r.to_public() for r in self.rows],
            "omitted": self.omitted,
        }


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """A short, redacted, one-line preview (a trace is shown, and kept, outside the memory store)."""
    one = " ".join(redact_text(str(text or ""))[0].split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def filter_reason(
    md: Mapping[str, Any],
    *,
    statuses: Sequence[str] | None,
    audience: Sequence[str] | None,
    as_of_ts: float,
    history: bool,
) -> str | None:
    """Why the scope's filter keeps this row out of recall (None: it passes). Checked in the
    filter's own order: status, audience, validity."""
    if statuses is not None and str(md.get("status") or "active") not in statuses:
        return "status"
    if audience is not None and str(md.get("audience") or "") not in audience:
        return "audience"
    v_from = _num(md.get("valid_from_ts"), -math.inf)
    v_until = _num(md.get("valid_until_ts"), math.inf)
    if as_of_ts < v_from:
        return "as_of"
    if as_of_ts >= v_until:
        return "as_of" if history else "expired"
    return None


def _num(v: Any, default: float) -> float:
    try:
        return default if v is None or v == "" else float(v)
    except (TypeError, ValueError):
        return default


def _signature(text: str) -> tuple[str, frozenset[str]]:
    norm = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return norm, frozenset(tokenize(norm, stopwords=False, stemming=False))


def budget_reasons(
    items: Sequence[tuple[str, str, float]],
    kept: Iterable[str],
    *,
    threshold: float = DUPLICATE_JACCARD,
    speakers: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """For each item of the budget step (``(id, text, value)``) that was not kept: ``repeat`` when a
    more valuable kept item of the same speaker (``speakers``: id -> speaker, as ``fit_budget``
    folds) is its near-duplicate, else ``budget``. Kept items get no reason."""
    keep = set(kept)
    who = speakers or {}
    order = sorted(range(len(items)), key=lambda i: (-float(items[i][2]), i))
    kept_sigs: list[tuple[str, tuple[str, frozenset[str]]]] = []
    out: dict[str, str] = {}
    for i in order:
        rid, text, _ = items[i]
        sig = _signature(text)
        if rid in keep:
            kept_sigs.append((who.get(rid, ""), sig))
            continue
        same = any(sp == who.get(rid, "") and near_duplicate(sig, s, threshold) for sp, s in kept_sigs)
        out[rid] = "repeat" if same else "budget"
    return out


def bound_rows(rows: list[TraceRow], limit: int = MAX_ROWS) -> tuple[list[TraceRow], int]:
    """Injected rows, then the others by rank (scored before filtered), within ``limit``."""
    order = sorted(rows, key=lambda r: (not r.injected, r.rank is None, r.rank or 0, r.id))
    return order[:limit], max(0, len(order) - limit)
