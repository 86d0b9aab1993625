"""Reordering the fused head of a recall by a rerank model's scores (the host's rerank model).

The service sends the first ``pool`` fused candidates (bounded) to the model in one call; the
model answers with ``(index, relevance_score)`` items for some or all of them. :func:`apply`
puts the scored candidates first, best first, and keeps every candidate the model did not score
in its fused order after them, so that a partial or empty answer never loses a memory. Anything
malformed in the answer (an index out of range, a repeated index, a score that is not a finite
number) is ignored, never trusted.

Pure: the model call itself, its timeout and the fallback to the fused order live in the service.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

__all__ = ["DEFAULT_POOL", "MAX_POOL", "apply", "parse_scores"]

T = TypeVar("T")

DEFAULT_POOL = 20  # candidates sent to the model: enough for top 5/10, one bounded request
MAX_POOL = 50


def parse_scores(items: Iterable[Any], n: int) -> dict[int, float]:
    """``{index: score}`` from a host answer (``{"index", "relevance_score"|"score"}`` dicts or
    ``(index, score)`` pairs); indexes outside ``[0, n)`` and non-finite scores are dropped, the
    first score of a repeated index is kept."""
    out: dict[int, float] = {}
    for item in items or ():
        if isinstance(item, dict):
            idx = item.get("index")
            score = item.get("relevance_score", item.get("score"))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            idx, score = item
        else:
            continue
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < n or idx in out:
            continue
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            continue
        out[idx] = float(score)
    return out


def apply(head: Sequence[T], scores: dict[int, float]) -> list[T]:
    """``head`` reordered: scored items by score (ties keep the fused order), then the unscored
    ones in their fused order."""
    scored = sorted((i for i in scores if 0 <= i < len(head)), key=lambda i: (-scores[i], i))
    seen = set(scored)
    return [head[i] for i in scored] + [h for i, h in enumerate(head) if i not in seen]
