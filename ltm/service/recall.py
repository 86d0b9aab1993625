"""Recall: the profiles and the ranked episodes of one scope for a query.

Both legs (vector and lexical) read the scope's recall index (:mod:`ltm.service.recall_index`),
fuse in :func:`ltm.domain.ranking.rank`, optionally rerank the head with the knowledge base's rerank
model, then keep what fits the token budget. Every read goes through the one scope filter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..domain import budget as budget_rules
from ..domain import ranking, timewindow
from ..domain import rerank as rerank_rules
from ..domain.credentials import redact_text
from ..domain.episode_views import recall_view
from ..domain.models import Episode, Profile
from ..domain.scope import ACTIVE, AS_OF_STATUSES, Criteria, Scope, reader_audience, scope_where
from ..domain.text import check_text
from ..domain.timefields import parse_instant, to_iso
from ..ports import Embedder, Reranker, VectorIndex
from .recall_index import RecallIndex, ScopeIndex
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
        s = settings or self.settings
        self.index.configure(
            budget_bytes=s.recall_index_mb << 20, ttl=float(s.recall_index_ttl_seconds), max_docs=s.lexical_max_docs
        )
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
    ) -> RecallResult:
        """Profiles + ranked episodes of this scope for ``query``: the active ones valid now, or
        with ``as_of`` the ones valid at that instant, superseded ones included (what was true
        then, even if a correction or a summary replaced it since). A default recall never sees a
        superseded row. ``as_of`` is validated before anything is read."""
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
                budget_tokens=budget_tokens, parse_window=parse_window,
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
                episodes, n_candidates = await self._ranked(
                    scope, kb, query, crit, k, speaker, now, index_task, window=window, as_of_ts=as_of_ts, settings=s
                )
                budget = budget_tokens if budget_tokens is not None else s.recall_token_budget
                keep = budget_rules.fit_budget(
                    [(r.episode.id, r.episode.content, r.score) for r in episodes],
                    budget,
                    speakers={r.episode.id: r.episode.sender_id for r in episodes},  # who said what stays
                )
                kept = set(keep)
                episodes = [r for r in episodes if r.episode.id in kept]
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
    ) -> tuple[list[RecalledEpisode], int]:
        s = settings or self.settings
        where = scope_where(scope, crit)
        history = crit.statuses != ACTIVE  # an as-of recall: superseded rows too
        pool = max(4 * k, 40)
        strategy = kb.retrieval_strategy if kb else "hybrid"
        cands: dict[str, ranking.Candidate] = {}

        async def vector_leg() -> None:
            embedder = await self._embedder(scope)
            qv = (await self._backend(embedder.embed([query]), "embedding"))[0]
            idx = await index_task
            rows = idx.vector_search(qv, pool, where)
            if rows is None:  # rows stored without a vector, or more than the index holds: the host answers
                hits = await self._backend(self.vectors.search(scope.collection, qv, pool, where), "vector search")
                rows = [(h.id, h.similarity, h.metadata) for h in hits]
            for rid, sim, md in rows:
                cands[rid] = ranking.Candidate(
                    id=rid, text=str(md.get("text") or ""), metadata=md, vector_sim=sim, lexical=None
                )

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
        ranked = ranking.rank(
            list(cands.values()),
            query=query,
            now_ts=now.timestamp(),
            speaker_id=speaker or None,
            settings=ranking.RankSettings(half_life_days=hl, require_active=not history),
            time_window=window,
            as_of_ts=as_of_ts,
        )
        ranked = await self._reranked(scope, kb, query, ranked, k)
        out = [RecalledEpisode(Episode.from_metadata(c.metadata, c.id), score) for c, score in ranked[:k]]
        return out, len(cands)

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
