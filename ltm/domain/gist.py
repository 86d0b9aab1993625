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
    term_tf: Mapping[str, Mapping[int, int]],
    lengths: Mapping[int, int],
    *,
    k1: float = 1.2,
    b: float = 0.75,
) -> dict[int, float]:
    """Okapi BM25 of a query against sessions taken as documents: ``term_tf`` gives, per query
    term, each session's summed frequency; ``lengths`` each session's summed length (every session
    counted, also those sharing no term). Sessions sharing no term are left out."""
    n = len(lengths)
    if not n or not query_tf:
        return {}
    avg = (sum(lengths.values()) / n) or 1.0
    out: dict[int, float] = {}
    for term, qtf in query_tf.items():
        post = term_tf.get(term) or {}
        df = sum(1 for v in post.values() if v > 0)
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for s, tf in post.items():
            if tf <= 0:
                continue
            norm = k1 * (1.0 - b + b * lengths.get(s, 0) / avg)
            out[s] = out.get(s, 0.0) + qtf * idf * tf * (k1 + 1.0) / (tf + norm)
    return out


def session_scores(dense: Mapping[int, float], lexical: Mapping[int, float], vector_weight: float) -> dict[int, float]:
    """Each session's fused score: its dense and lexical scores each divided by the best session's
    (a negative mean cosine counts as 0), combined ``vector_weight * d + (1 - vector_weight) * l``."""
    dmax = max((v for v in dense.values()), default=0.0)
    lmax = max((v for v in lexical.values()), default=0.0)
    out: dict[int, float] = {}
    for s in set(dense) | set(lexical):
        d = max(0.0, dense.get(s, 0.0)) / dmax if dmax > 0 else 0.0
        lx = max(0.0, lexical.get(s, 0.0)) / lmax if lmax > 0 else 0.0
        out[s] = vector_weight * d + (1.0 - vector_weight) * lx
    return out


@dataclass(frozen=True)
class SessionScores:
    """What the service read for one query: each session's dense and lexical score (all sessions
    of the readable memories) and the session of each candidate (``of``: id -> label)."""

    dense: Mapping[int, float] = field(default_factory=dict)
    lexical: Mapping[int, float] = field(default_factory=dict)
    of: Mapping[str, int] = field(default_factory=dict)


def factors(
    scores: SessionScores, ids: Iterable[str], *, vector_weight: float, top: int, weight: float
) -> dict[str, float]:
    """``1 + weight * score / best`` for the candidates (``ids``) in one of the best ``top``
    sessions (id -> factor; only factors above 1)."""
    if weight <= 0 or top <= 0 or len(set(scores.dense) | set(scores.lexical)) < 2:
        return {}  # one session (or none) leads nowhere: every memory would get the same factor
    fused = session_scores(scores.dense, scores.lexical, vector_weight)
    best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[: int(top)]
    if not best or best[0][1] <= 0:
        return {}
    head = {s: v / best[0][1] for s, v in best if v > 0}
    out: dict[str, float] = {}
    for cid in ids:
        s = scores.of.get(cid)
        if s is not None and s in head:
            out[cid] = 1.0 + weight * head[s]
    return out
