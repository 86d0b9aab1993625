"""Session gist: a conversation as a second retrieval unit that leads to its memories.

A question is often answered by a conversation rather than by one memory in it: the words of the
question are spread over several turns ("What activities has Melanie done with her family?" is
answered across an exchange about a pottery class, the kids' clay cups and a painting). The gist
scores each **session** of the scope as one unit, then favours the memories of the best one:

- a session is a run of memories whose event times are at most ``gap_s`` apart (the same
  conversation as :mod:`.neighbourhood` reads, but over every readable memory of the scope, not
  only the candidates): :func:`sessions`;
- its dense score is the mean cosine of its memories to the query (the query against the
  session's mean vector, unnormalised); its lexical score is BM25 of the query against the
  session's texts taken as one document (:func:`session_bm25`: term frequencies and lengths
  summed over the session, document frequencies counted in sessions);
- each score is divided by the best session's, fused ``vector_weight * dense + (1 - vector_weight)
  * lexical`` (:func:`session_scores`), and the memories of the best ``top`` sessions get
  ``* (1 + weight * score / best score)`` in the ranking (:func:`factors`).

Nothing here names a phrasing or a data set: it is the ranking's own fusion applied one level up.
Pure: the service hands in the per-session sums (:class:`SessionScores`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SessionScores", "factors", "session_bm25", "session_scores", "sessions"]


def sessions(times: Sequence[float], gap_s: float) -> list[int]:
    """A session label per memory (aligned with ``times``): memories sorted by time, a new session
    wherever two neighbours are more than ``gap_s`` apart. Labels count from 0 in time order; a
    memory without a finite time is a session of its own (labels after the timed ones)."""
    order = sorted((i for i, t in enumerate(times) if math.isfinite(t)), key=lambda i: times[i])
    labels = [-1] * len(times)
    label = -1
    prev = -math.inf
    for i in order:
        if times[i] - prev > gap_s or label < 0:
            label += 1
        labels[i] = label
        prev = times[i]
    for i in range(len(times)):
        if labels[i] < 0:
            label += 1
            labels[i] = label
    return labels


def session_bm25(
    query_tf: Mapping[str, int],
    term_tf: Mapping[str, np.ndarray],
    lengths: np.ndarray,
    *,
    k1: float = 1.2,
    b: float = 0.75,
) -> np.ndarray:
    """Okapi BM25 of a query against sessions taken as documents, one score per session (0.0 for
    a session sharing no term): ``term_tf`` gives, per query term, each session's summed frequency
    (an array over the sessions); ``lengths`` each session's summed length."""
    n = int(lengths.size)
    out = np.zeros(n, dtype=np.float64)
    if not n or not query_tf:
        return out
    avg = float(lengths.sum()) / n or 1.0
    norm = k1 * (1.0 - b + b * lengths.astype(np.float64) / avg)
    for term, qtf in query_tf.items():
        tf = term_tf.get(term)
        if tf is None:
            continue
        tf = np.asarray(tf, dtype=np.float64)
        df = int(np.count_nonzero(tf > 0))
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        out += qtf * idf * tf * (k1 + 1.0) / (tf + norm)
    return out


def session_scores(dense: np.ndarray, lexical: np.ndarray, vector_weight: float) -> np.ndarray:
    """Each session's fused score: its dense and lexical scores each divided by the best session's
    (a negative mean cosine counts as 0), combined ``vector_weight * d + (1 - vector_weight) * l``."""
    d = np.maximum(np.asarray(dense, dtype=np.float64), 0.0)
    lx = np.maximum(np.asarray(lexical, dtype=np.float64), 0.0)
    dmax = float(d.max()) if d.size else 0.0
    lmax = float(lx.max()) if lx.size else 0.0
    d = d / dmax if dmax > 0 else np.zeros_like(d)
    lx = lx / lmax if lmax > 0 else np.zeros_like(lx)
    return vector_weight * d + (1.0 - vector_weight) * lx


@dataclass(frozen=True)
class SessionScores:
    """What the service read for one query: each session's dense and lexical score (arrays over
    all sessions of the readable memories, labelled 0..n-1) and the session of each candidate
    (``of``: id -> label)."""

    dense: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lexical: np.ndarray = field(default_factory=lambda: np.zeros(0))
    of: Mapping[str, int] = field(default_factory=dict)


def factors(
    scores: SessionScores, ids: Iterable[str], *, vector_weight: float, top: int, weight: float
) -> dict[str, float]:
    """``1 + weight * score / best`` for the candidates (``ids``) in one of the best ``top``
    sessions (id -> factor; only factors above 1). Ties between sessions: the lower label."""
    top = int(top)
    n = int(min(scores.dense.size, scores.lexical.size))
    if weight <= 0 or top <= 0 or n < 2:
        return {}  # one session (or none) leads nowhere: every memory would get the same factor
    fused = session_scores(scores.dense[:n], scores.lexical[:n], vector_weight)
    order = np.lexsort((np.arange(n), -fused))[:top]
    best = float(fused[order[0]])
    if best <= 0:
        return {}
    head = {int(s): float(fused[s]) / best for s in order if fused[s] > 0}
    out: dict[str, float] = {}
    for cid in ids:
        s = scores.of.get(cid)
        if s is not None and s in head:
            out[cid] = 1.0 + weight * head[s]
    return out
