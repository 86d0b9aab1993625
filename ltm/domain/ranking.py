"""Hybrid ranking of recall candidates: lexical + vector fusion, exact-match boosts, time and speaker.

The service gathers a bounded candidate set per scope (the vector leg's top hits under the scope
filter, united with the lexical leg's top BM25 hits) and calls :func:`rank` once on the complete
set; only then is ``top_k`` taken. Every step is a plain function of the candidates, the query and
``now``, so the same function runs in the plugin, in the tests and in the benchmarks.

Score of a candidate (see ``benchmarks/README.md`` for the measurements behind each choice):

1. Relevance = convex combination of the two legs after normalising each over the candidate set:
   ``vector_weight * v + (1 - vector_weight) * l`` where ``v`` is the cosine similarity divided by
   the best similarity of the set and ``l`` the BM25 score divided by the best BM25 score of the
   set. A candidate the vector leg did not return gets the leg's lowest returned similarity (an
   upper bound of its own); one the lexical leg did not return gets 0. Unlike reciprocal-rank
   fusion this keeps the score gaps each leg measured (Bruch et al., "An Analysis of Fusion
   Functions for Hybrid Retrieval", 2023). The default weight, 0.7 (and the information weight
   below, 0.1), is what leave-one-conversation-out picks on LoCoMo in every fold: the vector leg's
   normalised scores spread less than BM25's, so it needs the larger share to count as much.
2. Boosts, multiplicative on relevance (``rel * (1 + sum of boosts)``), so that nothing irrelevant
   is lifted out of nowhere and nothing relevant is hidden:
   - exact matches: the episode id named in the query, the sender named in the query, a tag named
     in the query, a quoted phrase found verbatim in the text;
   - the current speaker's own memories in a group chat (a preference, not a filter: shared and
     other people's memories stay in the ranking);
   - importance around the neutral 0.5;
   - an explicit time window in the query ("in May", "the week before 16 May", "昨天") favours
     memories that fit it (``time_window_mode="boost"``, see :mod:`.timematch`: the event time
     inside, a time the text names inside, or partly when told just after), or drops the others
     (``"filter"``, event time only);
   - a question asking *when* ("When did ...", "多久以前") favours memories whose text names a
     time ("last week", "in 2022"): those are the ones that can answer it.
3. Information: ``* (1 + info_weight * min(1, distinct terms / info_terms))`` — a memory that says
   something ("I signed up for a pottery class on Friday") over chit-chat ("Wow, great!").
4. Session neighbourhood, after sorting: ``* (1 + session_weight * density)`` where density is the
   share of the best ``session_top`` candidates' score within ``session_gap_s`` of the memory's
   event time, relative to the densest (:mod:`.neighbourhood`): the conversation about the topic.
5. Proximity, after the neighbourhood, for the best ``proximity_top`` (30) candidates the lexical
   leg matched: ``* (1 + proximity_weight * share)`` where share is the fraction of the query's
   adjacent index-term pairs (stopwords dropped, stemmed; CJK bigrams) that are adjacent in the
   text too: "a support group" over "the group was a support" for "support group" (the proximity
   signal of BM25TP-style rankers; no phrasing of any data set is named). Weight 0.4: picked by
   leave-one-conversation-out on LoCoMo (0.3-0.5 in every fold).
6. Session gist, last, when the caller read the scope's sessions (:mod:`.gist`): the memories of
   the best session, scored as one unit over all its memories (mean cosine to the query fused
   with BM25 of its texts as one document), get ``* (1 + gist_weight * score / best)``: the
   conversation about the topic, found even where the candidates of its turns are weak.
7. Recency can take at most ``recency_weight`` of the score away: ``* (1 - w * (1 - 2**(-age/half_life)))``.
   Durable memories (a tag in ``durable_tags``, or importance >= ``durable_importance``) do not decay
   at all, so a 60-day-old preference is still found. The weight, 0.05, is what
   leave-one-conversation-out picks on LoCoMo among 0.05-0.15 (0, recency off, is not offered: the
   benchmark only asks about the past and cannot see what recency is for): it orders memories that
   are otherwise equal and no longer sinks a clearly more relevant one said months ago.
8. Validity: a candidate that is not active, or not valid at ``as_of_ts`` (default ``now_ts``), is
   dropped. (The service filters both legs the same way; this keeps ``rank`` safe on its own.)

Recency is measured on ``ts`` (when the memory was stored, i.e. how fresh the knowledge is); time
windows are matched on ``event_ts`` (when it happened; ``ts`` when no event time was given).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from . import date_resolution, gist, timematch
from .lexical import count_cjk, tokenize
from .neighbourhood import session_density
from .timewindow import parse_time_window

__all__ = [
    "Candidate",
    "RankSettings",
    "adjacent_pairs",
    "content_terms",
    "explain",
    "proximity",
    "quoted_phrases",
    "rank",
]

_UNSET: Any = object()
_QUOTE_RE = re.compile(r'"([^"]{2,200})"|“([^”]{2,200})”|「([^」]{1,200})」|『([^』]{1,200})』|‘([^’]{2,200})’')


@dataclass
class Candidate:
    id: str
    text: str
    metadata: dict[str, Any]
    vector_sim: float | None = None  # cosine similarity from the vector leg; None if not in that leg
    lexical: float | None = None  # BM25 score; None if not in that leg
    terms: int | None = None  # distinct index terms of the text when known (the lexical index has them)


@dataclass
class RankSettings:
    """Ranking knobs; the defaults are the shipped configuration."""

    half_life_days: float = 30.0  # recency half-life (the plugin setting ``recency_half_life_days``)
    recency_weight: float = 0.05  # the most recency can take away from a non-durable memory
    vector_weight: float = 0.7  # share of the vector leg in the fused relevance (lexical: the rest)
    fusion: str = "convex"  # "convex" (score-normalised) | "rrf" (reciprocal rank, for comparison)
    normalization: str = "max"  # "max": score / best score of the set per leg | "minmax" (for comparison)
    rrf_k: int = 60
    speaker_boost: float = 0.2  # the current speaker's own memories (a preference, never a filter)
    sender_mention_boost: float = 0.5  # the query names the memory's sender
    id_boost: float = 2.0  # the query names the episode id
    tag_boost: float = 0.15  # per tag named in the query (at most two count)
    phrase_boost: float = 0.5  # share of the query's quoted phrases found verbatim
    importance_weight: float = 0.2  # rel * (1 + w * (importance - 0.5))
    time_window_mode: str = "boost"  # "boost" | "filter" | "off"
    time_window_boost: float = 0.5
    time_told_after: float = 0.5  # share of the window boost for a memory told just after the window
    time_from_text: bool = True  # a time named in the memory's text ("last week") counts as its event time
    when_boost: float = 0.2  # a "when" question favours memories whose text names a time
    info_weight: float = 0.1  # content-rich memories over chit-chat: w * min(1, distinct terms / info_terms)
    info_terms: int = 30
    session_weight: float = 0.2  # * (1 + w * density of the head's score mass around the memory's time)
    session_gap_s: float = 3600.0  # memories within this of each other count as one conversation
    session_top: int = 20
    proximity_weight: float = 0.4  # * (1 + w * share of the query's adjacent term pairs found adjacent in the text)
    proximity_top: int = 30  # only the best this many (after the neighbourhood) are read for it
    gist_weight: float = 0.1  # * (1 + w * session score / best) for the memories of the best sessions
    gist_top: int = 1  # how many of the best sessions lead to their memories
    gist_vector_weight: float = 0.5  # the session score's dense share (mean cosine) against its BM25
    durable_tags: tuple[str, ...] = (
        "preference", "profile", "fact", "identity", "durable", "偏好", "喜好", "事实", "身份",
    )  # fmt: skip
    durable_importance: float = 0.8
    require_active: bool = True


@lru_cache(maxsize=8192)
def content_terms(text: str) -> int:
    """Distinct index terms of ``text`` (stopwords dropped): how much a memory says."""
    return len(set(tokenize(text)))


@lru_cache(maxsize=8192)
def adjacent_pairs(text: str) -> frozenset[tuple[str, str]]:
    """The pairs of index terms next to each other in ``text`` once stopwords are dropped ("support
    group" in "a support group", and in "support for the group"); for CJK, overlapping bigrams next
    to each other (a three-character run)."""
    toks = tokenize(text)
    return frozenset((a, b) for a, b in zip(toks, toks[1:], strict=False) if a != b)


def proximity(query_pairs: frozenset[tuple[str, str]], text: str) -> float:
    """Share of the query's adjacent term pairs that are adjacent in ``text`` too (0.0 without pairs)."""
    if not query_pairs:
        return 0.0
    return len(query_pairs & adjacent_pairs(text)) / len(query_pairs)


def _norm(s: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())


def quoted_phrases(query: str) -> list[str]:
    """Phrases the query quotes ("...", “...”, 「...」), normalised."""
    out: list[str] = []
    for m in _QUOTE_RE.finditer(query or ""):
        p = _norm(next(g for g in m.groups() if g))
        if p and p not in out:
            out.append(p)
    return out


def _tags(md: dict[str, Any]) -> list[str]:
    raw = md.get("tags")
    if isinstance(raw, list):
        return [str(t) for t in raw]
    if isinstance(raw, str) and raw:
        try:
            val = json.loads(raw)
        except ValueError:
            return [t.strip() for t in raw.split(",") if t.strip()]
        return [str(t) for t in val] if isinstance(val, list) else []
    return []


def _f(md: dict[str, Any], key: str, default: float) -> float:
    v = md.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        return default
    return float(v)


def _mentions(query_norm: str, query_tokens: set[str], name: str) -> bool:
    """Whether the (normalised) query names ``name`` as a whole word (or contains it, for CJK)."""
    n = _norm(name)
    if not n:
        return False
    if count_cjk(n):
        return n in query_norm
    if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", query_norm):
        return True
    toks = tokenize(n)
    return bool(toks) and all(t in query_tokens for t in toks)


def _names_id(query_norm: str, episode_id: str) -> bool:
    """Whether the query contains the episode id as a whole word (``ep_1a2b``, not a substring)."""
    eid = _norm(episode_id)
    if len(eid) < 4 or eid not in query_norm:
        return False
    return re.search(rf"(?<![\w-]){re.escape(eid)}(?![\w-])", query_norm) is not None


@dataclass
class _Parts:
    relevance: float = 0.0
    boost: float = 0.0
    recency: float = 1.0
    info: float = 1.0
    window_hit: bool = False


def _relevance(cands: Sequence[Candidate], s: RankSettings) -> list[float]:
    if s.fusion == "rrf":
        rel = [0.0] * len(cands)
        for key in ("vector_sim", "lexical"):
            present = sorted(
                (i for i, c in enumerate(cands) if getattr(c, key) is not None),
                key=lambda i: -float(getattr(cands[i], key)),
            )
            w = s.vector_weight if key == "vector_sim" else 1.0 - s.vector_weight
            for r, i in enumerate(present):
                rel[i] += w * (s.rrf_k + 1) / (s.rrf_k + r + 1)
        return rel
    sims = [c.vector_sim for c in cands if c.vector_sim is not None]
    lexs = [c.lexical for c in cands if c.lexical is not None and c.lexical > 0]
    lmax = max(lexs) if lexs else 0.0
    # A candidate the vector leg did not return scored at most the leg's lowest returned similarity:
    # that bound stands in for it (0 would punish a strong lexical hit the vector pool cut off).
    floor = min(sims) if sims else 0.0
    vmax = max(sims) if sims else 0.0
    out: list[float] = []
    for c in cands:
        sim = c.vector_sim if c.vector_sim is not None else floor
        if s.normalization == "minmax":
            v = (sim - floor) / (vmax - floor) if vmax > floor else (1.0 if sims else 0.0)
        else:
            v = max(0.0, sim) / vmax if vmax > 0 else 0.0
        lx = c.lexical / lmax if (c.lexical is not None and lmax > 0) else 0.0
        out.append(s.vector_weight * v + (1.0 - s.vector_weight) * max(0.0, lx))
    return out


def _score_parts(
    cands: Sequence[Candidate],
    *,
    query: str,
    now_ts: float,
    speaker_id: str | None,
    settings: RankSettings,
    time_window: tuple[float, float] | None,
    as_of_ts: float,
    dropped: dict[str, str] | None = None,
) -> list[tuple[Candidate, _Parts]]:
    s = settings
    qnorm = _norm(query)
    qtokens = set(tokenize(query))
    phrases = quoted_phrases(query)
    when = s.when_boost > 0 and timematch.asks_when(query)
    mention_cache: dict[str, bool] = {}

    def mentioned(name: str) -> bool:
        hit = mention_cache.get(name)
        if hit is None:
            hit = mention_cache[name] = _mentions(qnorm, qtokens, name)
        return hit

    kept: list[Candidate] = []
    for c in cands:
        md = c.metadata or {}
        if s.require_active and (md.get("status") or "active") != "active":
            if dropped is not None:
                dropped[c.id] = "status"
            continue
        if not (_f(md, "valid_from_ts", -math.inf) <= as_of_ts < _f(md, "valid_until_ts", math.inf)):
            if dropped is not None:
                expired = as_of_ts >= _f(md, "valid_until_ts", math.inf) and s.require_active
                dropped[c.id] = "expired" if expired else "as_of"
            continue
        if time_window is not None and s.time_window_mode == "filter":
            ets = _f(md, "event_ts", _f(md, "ts", math.nan))
            if not (time_window[0] <= ets < time_window[1]):
                if dropped is not None:
                    dropped[c.id] = "time_window"
                continue
        kept.append(c)
    rels = _relevance(kept, s)
    hl_s = max(s.half_life_days, 0.0) * 86400.0
    out: list[tuple[Candidate, _Parts]] = []
    for c, rel in zip(kept, rels, strict=True):
        md = c.metadata or {}
        p = _Parts(relevance=rel)
        boost = 0.0
        if c.id and _names_id(qnorm, c.id):
            boost += s.id_boost
        sender = str(md.get("sender_id") or "")
        if sender and mentioned(sender):
            boost += s.sender_mention_boost
        if speaker_id and sender and sender == str(speaker_id):
            boost += s.speaker_boost
        tags = _tags(md)
        named = sum(1 for t in tags if mentioned(t))
        boost += s.tag_boost * min(named, 2)
        if phrases:
            text = _norm(c.text)
            boost += s.phrase_boost * sum(1 for ph in phrases if ph in text) / len(phrases)
        importance = _f(md, "importance", 0.5)
        boost += s.importance_weight * (importance - 0.5)
        if time_window is not None and s.time_window_mode == "boost":
            ets = _f(md, "event_ts", _f(md, "ts", math.nan))
            if s.time_from_text or s.time_told_after:
                fit = timematch.window_affinity(
                    time_window, ets, c.text if s.time_from_text else "", told_after=s.time_told_after
                )
            else:
                fit = 1.0 if time_window[0] <= ets < time_window[1] else 0.0
            if fit < 1.0 and s.time_from_text and _dated_in(md, time_window):
                fit = 1.0
            if fit > 0:
                p.window_hit = fit >= 1.0
                boost += s.time_window_boost * fit
        if when and (timematch.mentions_time(c.text) or date_resolution.stored(md)):
            boost += s.when_boost
        if s.info_weight and s.info_terms > 0:
            n = c.terms if c.terms is not None else content_terms(c.text)
            p.info = 1.0 + s.info_weight * min(1.0, n / s.info_terms)
        p.boost = boost
        durable = importance >= s.durable_importance or any(t.casefold() in s.durable_tags for t in tags)
        if not durable and hl_s > 0 and s.recency_weight > 0:
            age = max(0.0, now_ts - _f(md, "ts", _f(md, "event_ts", now_ts)))
            p.recency = 1.0 - s.recency_weight * (1.0 - 0.5 ** (age / hl_s))
        out.append((c, p))
    return out


def _dated_in(md: dict[str, Any], window: tuple[float, float]) -> bool:
    """Whether a date the memory's relative words were resolved to when written overlaps ``window``."""
    return any(a < window[1] and e > window[0] for a, e in date_resolution.spans(md))


def _total(p: _Parts) -> float:
    return p.relevance * max(0.0, 1.0 + p.boost) * p.info * p.recency


def _resolve_window(query: str, now_ts: float, time_window: Any, s: RankSettings) -> tuple[float, float] | None:
    if s.time_window_mode == "off":
        return None
    if time_window is _UNSET:
        return parse_time_window(query, datetime.fromtimestamp(now_ts, UTC))
    return time_window


def rank(
    candidates: list[Candidate],
    *,
    query: str,
    now_ts: float,
    speaker_id: str | None,
    settings: RankSettings | None = None,
    time_window: tuple[float, float] | None = _UNSET,
    as_of_ts: float | None = None,
    trace: dict[str, Any] | None = None,
    sessions: gist.SessionScores | None = None,
) -> list[tuple[Candidate, float]]:
    """Score and sort the complete candidate set, best first.

    ``time_window``: ``[start_ts, end_ts)`` to favour (or filter, per settings); by default it is
    parsed from ``query`` relative to ``now_ts`` (pass ``None`` for no window). ``as_of_ts``: the
    validity instant (default ``now_ts``). Candidates that are not active or not valid then are
    dropped; duplicates by id keep their first occurrence. Ties: newer first, then id.
    ``trace``: when a dict is given, it receives each scored candidate's signals (``parts``: id ->
    dict) and each dropped one's reason (``dropped``: id -> reason), for the recall trace; the
    order and the scores are the same with or without it. ``sessions``: the scope's sessions as
    the service read them for this query (:class:`.gist.SessionScores`); without them there is no
    gist stage.
    """
    s = settings or RankSettings()
    seen: set[str] = set()
    uniq: list[Candidate] = []
    for c in candidates:
        if c.id not in seen:
            seen.add(c.id)
            uniq.append(c)
    window = _resolve_window(query, now_ts, time_window, s)
    parts = _score_parts(
        uniq,
        query=query,
        now_ts=now_ts,
        speaker_id=speaker_id,
        settings=s,
        time_window=window,
        as_of_ts=now_ts if as_of_ts is None else as_of_ts,
        dropped=trace.setdefault("dropped", {}) if trace is not None else None,
    )
    factors = _session_factors(parts, s)
    scored = [(c, _total(p) * f) for (c, p), f in zip(parts, factors, strict=True)]
    near = _proximity_factors(scored, query, s)
    lead = _gist_factors(sessions, [c.id for c, _ in scored], s)
    if trace is not None:
        trace["parts"] = {
            c.id: {
                "window": p.window_hit,
                "recency": p.recency,
                "neighbourhood": f,
                "relevance": p.relevance,
                "proximity": near.get(c.id, 1.0),
                "gist": lead.get(c.id, 1.0),
            }
            for (c, p), f in zip(parts, factors, strict=True)
        }
    if near or lead:
        scored = [(c, v * near.get(c.id, 1.0) * lead.get(c.id, 1.0)) for c, v in scored]
    scored.sort(key=lambda cs: (-cs[1], -_f(cs[0].metadata or {}, "ts", 0.0), cs[0].id))
    return scored


def _proximity_factors(scored: Sequence[tuple[Candidate, float]], query: str, s: RankSettings) -> dict[str, float]:
    """``1 + proximity_weight * proximity`` for the best ``proximity_top`` candidates that the lexical
    leg matched (id -> factor, only factors above 1): a text that has the query's terms next to each
    other, as the query has them, over one that has them apart. Only the head is read (each text
    tokenized once, cached), so the stage costs the same at any candidate-set size."""
    if s.proximity_weight <= 0 or s.proximity_top <= 0:
        return {}
    pairs = adjacent_pairs(query)
    if not pairs:
        return {}
    head = sorted(scored, key=lambda cs: (-cs[1], -_f(cs[0].metadata or {}, "ts", 0.0), cs[0].id))[: s.proximity_top]
    out: dict[str, float] = {}
    for c, _ in head:
        if c.lexical is not None and c.lexical > 0 and (share := proximity(pairs, c.text)) > 0:
            out[c.id] = 1.0 + s.proximity_weight * share
    return out


def _gist_factors(sessions: gist.SessionScores | None, ids: list[str], s: RankSettings) -> dict[str, float]:
    """The gist stage's factors (id -> factor above 1), none without the sessions."""
    if sessions is None:
        return {}
    return gist.factors(sessions, ids, vector_weight=s.gist_vector_weight, top=s.gist_top, weight=s.gist_weight)


def _session_factors(parts: Sequence[tuple[Candidate, _Parts]], s: RankSettings) -> list[float]:
    """``1 + session_weight * density`` per candidate (aligned with ``parts``), density over the
    best ``session_top`` of the scores before it."""
    if s.session_weight <= 0 or len(parts) < 2:
        return [1.0] * len(parts)
    order = sorted(range(len(parts)), key=lambda i: -_total(parts[i][1]))
    times = [_f(parts[i][0].metadata or {}, "event_ts", _f(parts[i][0].metadata or {}, "ts", math.nan)) for i in order]
    dens = session_density(times, [_total(parts[i][1]) for i in order], top=s.session_top, gap_s=s.session_gap_s)
    out = [1.0] * len(parts)
    for i, d in zip(order, dens, strict=True):
        out[i] = 1.0 + s.session_weight * d
    return out


def explain(
    candidates: list[Candidate],
    *,
    query: str,
    now_ts: float,
    speaker_id: str | None,
    settings: RankSettings | None = None,
    time_window: tuple[float, float] | None = _UNSET,
    as_of_ts: float | None = None,
    sessions: gist.SessionScores | None = None,
) -> list[dict[str, Any]]:
    """The score parts of each candidate (for debugging and the console), best first."""
    s = settings or RankSettings()
    window = _resolve_window(query, now_ts, time_window, s)
    parts = _score_parts(
        candidates,
        query=query,
        now_ts=now_ts,
        speaker_id=speaker_id,
        settings=s,
        time_window=window,
        as_of_ts=now_ts if as_of_ts is None else as_of_ts,
    )
    factors = _session_factors(parts, s)
    near = _proximity_factors([(c, _total(p) * f) for (c, p), f in zip(parts, factors, strict=True)], query, s)
    lead = _gist_factors(sessions, [c.id for c, _ in parts], s)
    rows = [
        {
            "id": c.id,
            "score": _total(p) * f * near.get(c.id, 1.0) * lead.get(c.id, 1.0),
            "session": f,
            "proximity": near.get(c.id, 1.0),
            "gist": lead.get(c.id, 1.0),
            "info": p.info,
            "relevance": p.relevance,
            "boost": p.boost,
            "recency": p.recency,
            "window_hit": p.window_hit,
            "vector_sim": c.vector_sim,
            "lexical": c.lexical,
        }
        for (c, p), f in zip(parts, factors, strict=True)
    ]
    rows.sort(key=lambda r: -r["score"])
    return rows
