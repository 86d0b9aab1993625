"""Recall: the profiles and the ranked episodes of one scope for a query.

Both legs (vector and lexical) read the scope's recall index (:mod:`ltm.service.recall_index`),
fuse in :func:`ltm.domain.ranking.rank`, optionally rerank the head with the knowledge base's rerank
model, then keep what fits the token budget. Every read goes through the one scope filter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..domain import budget as budget_rules
from ..domain import ranking, timewindow
from ..domain import rerank as rerank_rules
from ..domain import trace as trace_rules
from ..domain.audience import reader_audience
from ..domain.credentials import redact_text
from ..domain.episode_views import recall_view
from ..domain.filters import ACTIVE, AS_OF_STATUSES, Criteria, scope_filter, scope_where
from ..domain.models import Episode, Profile
from ..domain.scope import Scope
from ..domain.text import check_text
from ..domain.timefields import parse_instant, to_iso
from ..domain.trust import trust_label
from ..ports import Embedder, Reranker, VectorIndex
from .recall_index import RecallIndex
from .scope_index import ScopeIndex
from .session_gist import read_sessions
from .settings import KbSettings, Settings

log = logging.getLogger(__name__)


@dataclass
class RecalledEpisode:
    episode: Episode
    score: float

    def to_public(self) -> dict[str, Any]:
        return recall_view(self.episode, self.score)


@dataclass
class RecallResult:
    session_profile: Profile | None
    speaker_profile: Profile | None
    episodes: list[RecalledEpisode] = field(default_factory=list)
    tokens: int = 0
    window: tuple[float, float] | None = None
    candidates: int = 0
    as_of: str | None = None  # the instant of an as-of recall (UTC ISO-8601), None for "now"
    refs: dict[str, str] = field(default_factory=dict)  # episode id -> the short reference shown for it
    at: str = ""  # when the recall ran (UTC ISO-8601)
    trace: trace_rules.RecallTrace | None = None  # only when asked for (``recall(trace=True)``)


@dataclass
class _Traced:
    """What the ranking step saw, kept for the trace (only when one is asked for)."""

    ranked: list[tuple[ranking.Candidate, float]]
    fused: dict[str, int]  # id -> 1-based place before the rerank model (empty: no rerank)
    rank_info: dict[str, Any]
    filtered: dict[str, tuple[dict[str, Any], str]]  # id -> (metadata, reason) kept out by the filter
    all_statuses: bool = False  # also ask the host's store for rows of other statuses


class Recall:
    """Recall over the stores of one service: what it reads is given to it (the KB registry, the
    paged scope read, the profiles), so the ranking code reads as one piece."""

    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        clock: Callable[[], datetime],
        kb_settings: Callable[[str], Awaitable[KbSettings | None]],
        embedder: Callable[[Scope], Awaitable[Embedder]],
        reranker_for: Callable[[str, KbSettings], Reranker] | None,
        fetch: Callable[..., Awaitable[list[Episode]]],
        get_profile: Callable[..., Awaitable[Profile]],
        backend: Callable[..., Awaitable[Any]],
        vectors: Callable[[], VectorIndex],
        index: RecallIndex,
    ) -> None:
        self._settings = settings
        self.clock = clock
        self.kb_settings = kb_settings
        self._embedder = embedder
        self._reranker_for = reranker_for
        self._fetch = fetch
        self.get_profile = get_profile
        self._backend = backend
        self._vectors = vectors
        self.index = index

    @property
    def settings(self) -> Settings:
        return self._settings()

    @property
    def vectors(self) -> VectorIndex:
        return self._vectors()

    async def scope_index(self, scope: Scope, settings: Settings | None = None) -> ScopeIndex:
        """The scope's recall index (built on first use from one paged list of its active rows)."""
        embedder = await self._embedder(scope)
        return await self._backend(self.index.get(scope.collection, scope.user_key, embedder.embed), "recall index")

    async def recall(
        self,
        scope: Scope,
        query: str,
        *,
        limit: int | None = None,
        speaker_id: str | None = None,
        only_speaker: bool = False,
        time_from: str | None = None,
        time_until: str | None = None,
        as_of: str | None = None,
        with_profiles: bool = True,
        budget_tokens: int | None = None,
        parse_window: bool = True,
        trace: bool = False,
        trace_all_statuses: bool = False,
    ) -> RecallResult:
        """Profiles + ranked episodes of this scope for ``query``: the active ones valid now, or
        with ``as_of`` the ones valid at that instant, superseded ones included (what was true
        then, even if a correction or a summary replaced it since). A default recall never sees a
        superseded row. ``as_of`` is validated before anything is read.
        ``trace``: also explain the ranking (:class:`ltm.domain.trace.RecallTrace`); off by
        default. The rows the audience and validity conditions keep out are found in the scope's
        in-process index (no host call); ``trace_all_statuses`` also asks the host's store for
        rows of other statuses (one more search, alongside the legs: an explicit "why" only)."""
        check_text(query, "query")
        s = self.settings
        now = self.clock()
        as_of_dt = parse_instant(as_of, "as_of") if as_of else None
        speaker = speaker_id if speaker_id is not None else scope.sender_id
        # the index's list (cold scope) goes out with the profile reads and the embedding
        index_task = asyncio.ensure_future(self.scope_index(scope, s)) if scope.collection and query.strip() else None
        try:
            return await self._recall(
                scope, query, s, now, speaker, index_task, limit=limit, only_speaker=only_speaker,
                time_from=time_from, time_until=time_until, as_of_dt=as_of_dt, with_profiles=with_profiles,
                budget_tokens=budget_tokens, parse_window=parse_window, want_trace=trace,
                trace_all_statuses=trace_all_statuses,
            )  # fmt: skip
        finally:
            if index_task is not None and not index_task.done():
                index_task.cancel()  # the build itself goes on (shared) and is kept
            elif index_task is not None and not index_task.cancelled():
                index_task.exception()  # not needed by this recall (k = 0, bad input): not an error

    async def _recall(
        self,
        scope: Scope,
        query: str,
        s: Settings,
        now: datetime,
        speaker: str,
        index_task: asyncio.Future[ScopeIndex] | None,
        *,
        limit: int | None,
        only_speaker: bool,
        time_from: str | None,
        time_until: str | None,
        as_of_dt: datetime | None,
        with_profiles: bool,
        budget_tokens: int | None,
        parse_window: bool,
        want_trace: bool = False,
        trace_all_statuses: bool = False,
    ) -> RecallResult:
        prof_task = (
            asyncio.gather(
                self.get_profile(scope, "session"),
                self.get_profile(scope, "speaker", speaker) if speaker else _none(),
            )
            if with_profiles
            else None
        )
        episodes: list[RecalledEpisode] = []
        refs: dict[str, str] = {}
        tokens = 0
        window: tuple[float, float] | None = None
        n_candidates = 0
        traced: trace_rules.RecallTrace | None = None
        if scope.collection and query.strip():
            kb = await self.kb_settings(scope.collection)
            k = (
                limit
                if limit is not None
                else (kb.auto_recall_top_k if kb and kb.auto_recall_top_k else s.auto_recall_top_k)
            )
            k = max(0, min(50, int(k)))
            if t0 := (parse_instant(time_from, "time_from").timestamp() if time_from else None):
                window = (t0, float("inf"))
            if time_until:
                t1 = parse_instant(time_until, "time_until").timestamp()
                window = (window[0] if window else 0.0, t1)
            as_of_ts = as_of_dt.timestamp() if as_of_dt else now.timestamp()
            # An explicit time range is a hard filter inside the store; a window parsed from the query's
            # words ("last week", "昨天") only favours matching memories (a hard filter cost recall@5).
            crit = Criteria(
                statuses=AS_OF_STATUSES if as_of_dt else ACTIVE,
                as_of_ts=as_of_ts,
                sender_id=speaker if only_speaker and speaker else None,
                event_from_ts=window[0] if window and window[0] > 0 else None,
                event_until_ts=window[1] if window and window[1] != float("inf") else None,
            )
            if window is None and parse_window:
                window = timewindow.parse_time_window(query, now)
            if k > 0 and index_task is not None:
                info: _Traced | None = _Traced([], {}, {}, {}, trace_all_statuses) if want_trace else None
                episodes, n_candidates = await self._ranked(
                    scope, kb, query, crit, k, speaker, now, index_task, window=window, as_of_ts=as_of_ts, settings=s,
                    info=info,
                )  # fmt: skip
                budget = budget_tokens if budget_tokens is not None else s.recall_token_budget
                items = [(r.episode.id, r.episode.content, r.score) for r in episodes]
                speakers = {r.episode.id: r.episode.sender_id for r in episodes}  # who said what stays
                keep = budget_rules.fit_budget(items, budget, speakers=speakers)
                kept = set(keep)
                episodes = [r for r in episodes if r.episode.id in kept]
                if info is not None:
                    traced = _build_trace(query, k, budget, info, items, kept, speakers)
                tokens = sum(budget_rules.estimate_tokens(r.episode.content) for r in episodes)
                if episodes and index_task.done() and not index_task.cancelled() and not index_task.exception():
                    shown = [r.episode.id for r in episodes]
                    refs = index_task.result().short_refs(shown, reader_audience(scope))
        session_profile = speaker_profile = None
        if prof_task is not None:
            session_profile, speaker_profile = await prof_task
        log.info(
            "recall in %s: %d episodes (%d candidates)", scope.user_key or scope.scope_key, len(episodes), n_candidates
        )
        return RecallResult(
            session_profile,
            speaker_profile,
            episodes,
            tokens,
            window,
            n_candidates,
            as_of=to_iso(as_of_dt) if as_of_dt else None,
            refs=refs,
            at=to_iso(now),
            trace=traced,
        )

    async def _ranked(
        self,
        scope: Scope,
        kb: KbSettings | None,
        query: str,
        crit: Criteria,
        k: int,
        speaker: str,
        now: datetime,
        index_task: asyncio.Future[ScopeIndex],
        *,
        window: tuple[float, float] | None = None,
        as_of_ts: float | None = None,
        settings: Settings | None = None,
        info: _Traced | None = None,
    ) -> tuple[list[RecalledEpisode], int]:
        s = settings or self.settings
        where = scope_where(scope, crit)
        history = crit.statuses != ACTIVE  # an as-of recall: superseded rows too
        pool = max(4 * k, 40)
        strategy = kb.retrieval_strategy if kb else "hybrid"
        cands: dict[str, ranking.Candidate] = {}
        qvec: list[list[float]] = []  # the query's vector, once the vector leg has it
        scan: list[tuple[Any, Any]] = []  # the vector leg's scan of the scope's index (the gist reads it)
        scan_version: list[int] = []

        async def vector_leg() -> None:
            embedder = await self._embedder(scope)
            qv = (await self._backend(embedder.embed([query]), "embedding"))[0]
            qvec.append(qv)
            # the trace's filtered-out search runs alongside this leg's own
            side = (
                asyncio.ensure_future(self._filtered_out(scope, crit, qv, pool, history, info, index_task))
                if info
                else None
            )
            idx = await index_task
            rows = idx.vector_search(qv, pool, where, scan=scan)
            scan_version.append(idx.version)  # a write after it (slots compacted) voids the scan
            if rows is None:  # rows stored without a vector, or more than the index holds: the host answers
                hits = await self._backend(self.vectors.search(scope.collection, qv, pool, where), "vector search")
                rows = [(h.id, h.similarity, h.metadata) for h in hits]
            for rid, sim, md in rows:
                cands[rid] = ranking.Candidate(
                    id=rid, text=str(md.get("text") or ""), metadata=md, vector_sim=sim, lexical=None
                )
            if side is not None:
                await side

        lexical: list[ScopeIndex] = []

        async def lexical_leg() -> list[tuple[str, float, dict[str, Any]]]:
            idx = await index_task
            if not idx.holds(where):  # e.g. other statuses than active: index the rows the filter selects
                rows = await self._fetch(scope, crit, limit=s.lexical_max_docs)
                rows.sort(key=lambda e: (e.timestamp, e.id))
                idx = ScopeIndex.of_rows([(e.id, e.content, e.to_metadata()) for e in rows], s.lexical_max_docs)
            lexical.append(idx)
            return idx.lexical_search(query, pool, where)

        legs: list[Awaitable[Any]] = []
        if strategy in ("hybrid", "vector"):
            legs.append(vector_leg())
        if strategy in ("hybrid", "lexical"):
            legs.append(lexical_leg())
        results = await asyncio.gather(*legs)
        lex_hits = results[-1] if strategy in ("hybrid", "lexical") else []
        for rid, score, md in lex_hits:
            if rid in cands:
                cands[rid].lexical = score
            else:
                cands[rid] = ranking.Candidate(
                    id=rid, text=str(md.get("text") or ""), metadata=md, vector_sim=None, lexical=score
                )
        if strategy == "hybrid":  # BM25 for vector-only candidates too: no extra round trip
            missing = [c.id for c in cands.values() if c.lexical is None]
            for rid, score in lexical[0].lexical_scores(query, missing).items():
                if rid in cands and score > 0:
                    cands[rid].lexical = score
            for c in cands.values():  # the index knows each text's terms: the ranking need not re-tokenize
                c.terms = lexical[0].bm25.distinct_terms(c.id)
        hl = kb.recency_half_life_days if kb and kb.recency_half_life_days is not None else s.recency_half_life_days
        # the session gist: the scope's conversations as units (the in-process index only; no host call)
        sessions = None
        if qvec and index_task.done() and not index_task.cancelled() and not index_task.exception():
            idx = index_task.result()
            same = bool(scan) and scan_version == [idx.version]
            try:
                sessions = read_sessions(
                    idx,
                    query,
                    qvec[0],
                    where,
                    list(cands),
                    gap_s=ranking.RankSettings().session_gap_s,
                    scan=scan[0] if same else None,
                )
            except Exception as exc:  # an optional stage: the recall goes on without it
                log.warning("session gist skipped (%s)", type(exc).__name__)
        ranked = ranking.rank(
            list(cands.values()),
            query=query,
            now_ts=now.timestamp(),
            speaker_id=speaker or None,
            settings=ranking.RankSettings(half_life_days=hl, require_active=not history),
            time_window=window,
            as_of_ts=as_of_ts,
            trace=info.rank_info if info is not None else None,
            sessions=sessions,
        )
        fused = ranked
        ranked = await self._reranked(scope, kb, query, ranked, k)
        if info is not None:
            info.ranked = ranked
            info.rank_info["candidates"] = cands
            if ranked is not fused:
                info.fused = {c.id: i for i, (c, _) in enumerate(fused, 1)}
        out = [RecalledEpisode(Episode.from_metadata(c.metadata, c.id), score) for c, score in ranked[:k]]
        return out, len(cands)

    async def _filtered_out(
        self,
        scope: Scope,
        crit: Criteria,
        qv: list[float],
        pool: int,
        history: bool,
        info: _Traced,
        index_task: asyncio.Future[ScopeIndex],
    ) -> None:
        """The trace's view of what the scope's filter kept out: the same vector search with the
        audience and validity conditions lifted (in the scope's index: no host call), and with
        ``all_statuses`` the status too (the host's store), each hit given the condition that
        failed. A failure here only leaves the trace without them."""
        relaxed = Criteria(
            statuses=None if info.all_statuses else ACTIVE,
            sender_id=crit.sender_id,
            event_from_ts=crit.event_from_ts,
            event_until_ts=crit.event_until_ts,
        )
        where = scope_filter(scope.user_key, relaxed)
        rows: list[tuple[str, dict[str, Any]]] = []
        try:
            local = (await index_task).vector_search(qv, pool, where)
            if local is None:  # other statuses, or an index that cannot answer: the host's store
                hits = await self.vectors.search(scope.collection, qv, pool, where)
                rows = [(h.id, dict(h.metadata or {})) for h in hits]
            else:
                rows = [(rid, dict(md)) for rid, _sim, md in local]
        except Exception as exc:
            log.warning("trace: the filtered-out search failed (%s)", type(exc).__name__)
            return
        audience = reader_audience(scope)
        for rid, md in rows:
            why = trace_rules.filter_reason(
                md, statuses=crit.statuses, audience=audience, as_of_ts=float(crit.as_of_ts or 0.0), history=history
            )
            if why:
                info.filtered[rid] = (md, why)

    async def _reranked(
        self, scope: Scope, kb: KbSettings | None, query: str, ranked: list[tuple[ranking.Candidate, float]], k: int
    ) -> list[tuple[ranking.Candidate, float]]:
        """The fused order with its head reordered by the KB's rerank model, when one is set: one
        bounded call; an error or a timeout keeps the fused order (recall never fails for it)."""
        if not (kb and kb.rerank_model and self._reranker_for and k > 0 and len(ranked) > 1):
            return ranked
        head = ranked[: max(k, rerank_rules.DEFAULT_POOL)]
        try:
            reranker = self._reranker_for(scope.collection, kb)
            # the rerank model is a model outside the plugin: a secret in an older row does not go to it
            texts = [redact_text(c.text)[0] for c, _ in head]
            answer = await asyncio.wait_for(
                reranker.rerank(redact_text(query)[0], texts, kb.rerank_timeout_s), kb.rerank_timeout_s
            )
        except TimeoutError:
            log.warning("rerank model %s timed out after %.1fs; fused order kept", kb.rerank_model, kb.rerank_timeout_s)
            return ranked
        except Exception as exc:  # a failing model must not fail the recall
            log.warning("rerank model %s failed (%s); fused order kept", kb.rerank_model, type(exc).__name__)
            return ranked
        order = rerank_rules.apply(head, rerank_rules.parse_scores(answer, len(head)))
        # The head's fused scores, best first, follow the new order: the budget keeps by value.
        return [(c, s) for (c, _), (_, s) in zip(order, head, strict=True)] + ranked[len(head) :]


async def _none() -> None:
    return None


def _build_trace(
    query: str,
    k: int,
    budget: int,
    info: _Traced,
    items: list[tuple[str, str, float]],
    kept: set[str],
    speakers: dict[str, str] | None = None,
) -> trace_rules.RecallTrace:
    """The trace of one recall from what its steps returned (nothing is ranked again)."""
    parts: dict[str, dict[str, Any]] = info.rank_info.get("parts", {})
    dropped: dict[str, str] = info.rank_info.get("dropped", {})
    cands: dict[str, ranking.Candidate] = info.rank_info.get("candidates", {})
    cut = trace_rules.budget_reasons(items, kept, speakers=speakers)
    rows: list[trace_rules.TraceRow] = []
    texts: dict[str, str] = {}

    def row(c_id: str, md: dict[str, Any], **kw: Any) -> trace_rules.TraceRow:
        texts[c_id] = str(md.get("text") or "")
        return trace_rules.TraceRow(
            id=c_id,
            preview="",
            sender=str(md.get("sender_id") or ""),
            trust=trust_label(str(md.get("claim_type") or ""), str(md.get("confidence") or "")),
            **kw,
        )

    for place, (c, score) in enumerate(info.ranked, 1):
        p = parts.get(c.id, {})
        reason = None if c.id in kept else ("rank_cut" if place > k else cut.get(c.id, "budget"))
        rows.append(
            row(
                c.id,
                c.metadata or {},
                rank=place,
                score=score,
                dense=c.vector_sim,
                lexical=c.lexical,
                window=bool(p.get("window")),
                recency=p.get("recency"),
                neighbourhood=p.get("neighbourhood"),
                rerank=info.fused.get(c.id),
                injected=c.id in kept,
                reason=reason,
            )  # fmt: skip
        )
    for c_id, why in dropped.items():
        c = cands.get(c_id)
        md = (c.metadata if c else None) or {}
        rows.append(row(c_id, md, dense=c.vector_sim if c else None, lexical=c.lexical if c else None, reason=why))
    for c_id, (md, why) in info.filtered.items():
        if c_id not in cands:
            rows.append(row(c_id, md, reason=why))
    bounded, omitted = trace_rules.bound_rows(rows)
    # previews (redacted) only for the rows the trace keeps
    bounded = [replace(r, preview=trace_rules.preview(texts.get(r.id, ""))) for r in bounded]
    return trace_rules.RecallTrace(query=query, top_k=k, budget_tokens=budget, rows=bounded, omitted=omitted)
