"""Session neighbourhood: a memory told in the same conversation as other strong candidates.

The evidence for a question is usually part of an exchange about its topic, and the strongest
candidates of a query cluster in the conversations about it. :func:`session_density` gives each
candidate the score mass of the *other* head candidates (the best ``top``) within ``gap_s`` of its
own event time, normalised by the densest one: 1.0 in the most relevant conversation, less
elsewhere, 0.0 alone or far from every strong candidate (a lone memory is never pushed down
relative to another lone one).

Pure and O(top * n) with ``top`` small (20): no extra lookups, only the candidates' times.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

__all__ = ["session_density"]


def session_density(
    times: Sequence[float], scores: Sequence[float], *, top: int = 20, gap_s: float = 3600.0
) -> list[float]:
    """Per candidate (``times``/``scores`` aligned, best first): the other head candidates' score
    mass within ``gap_s`` of its time, divided by the largest such mass; 0.0 without a finite time."""
    n = len(times)
    if n == 0:
        return []
    head = sorted((t, max(0.0, s)) for t, s in zip(times[:top], scores[:top], strict=True) if math.isfinite(t))
    if not head:
        return [0.0] * n
    ts = [t for t, _ in head]
    prefix = [0.0]
    for _, s in head:
        prefix.append(prefix[-1] + s)
    mass = []
    for i, t in enumerate(times):
        if not math.isfinite(t):
            mass.append(0.0)
            continue
        lo = bisect.bisect_left(ts, t - gap_s)
        hi = bisect.bisect_right(ts, t + gap_s)
        own = max(0.0, scores[i]) if i < top else 0.0  # the others' mass: a lone memory gets nothing
        m = prefix[hi] - prefix[lo] - own
        mass.append(m if m > 1e-9 else 0.0)  # float residue of the prefix sums is not mass
    best = max(mass)
    return [m / best if best > 0 else 0.0 for m in mass]
