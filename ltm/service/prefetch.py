"""A turn's query embedding, started before its recall asks for it; and where a turn's time goes.

LangBot emits ``PersonMessageReceived`` one pipeline stage before ``PromptPreProcessing`` (and the
hook's first host round trip reads the query variables, which the embedding does not need). The
listener starts the embedding of the chat's text with the knowledge base that chat used last
(:class:`QueryEmbeddings`); the recall's embedder (:meth:`QueryEmbeddings.wrap`) takes the started
embedding when it asks for the same text with the same model, instead of asking the host again.
Each started embedding is used at most once, waits at most ``ttl_s``, and at most ``bound`` wait
(the oldest is dropped). A started embedding that failed is not an error of the turn: the recall
asks the host itself, as without the early start. A guess that was wrong (another KB, another
text) costs one embedding and nothing else: the key is (KB, embedding model, text).

:data:`TURN_TIMES` carries one listener turn's phase timings (milliseconds), filled by the parts
that know them (the recall's embedding wait here, the hook's phases in the listener) and logged
once per turn; other work sees None.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

from ..ports import Embedder

log = logging.getLogger(__name__)

TURN_TIMES: ContextVar[dict[str, float] | None] = ContextVar("ltm_turn_times", default=None)

EARLY_BOUND = 256  # started embeddings waiting for their turn; the oldest is dropped
EARLY_TTL_S = 60.0  # a started embedding not taken within this long is dropped

Key = tuple[str, str, str]


def note_time(phase: str, ms: float) -> None:
    """Add ``ms`` to ``phase`` of the current turn's timings (nothing outside a timed turn)."""
    times = TURN_TIMES.get()
    if times is not None:
        times[phase] = times.get(phase, 0.0) + ms


def _model(embedder: Embedder) -> str:
    return str(getattr(embedder, "name", "") or type(embedder).__name__)


class QueryEmbeddings:
    """Query embeddings started early, each taken once by the recall of the same KB, model and text."""

    def __init__(
        self, bound: int = EARLY_BOUND, ttl_s: float = EARLY_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.bound = bound
        self.ttl_s = ttl_s
        self._clock = clock
        self._early: OrderedDict[Key, tuple[float, asyncio.Future[list[list[float]]]]] = OrderedDict()
        self.counts = {"started": 0, "used": 0, "failed": 0, "dropped": 0, "expired": 0}

    def start(self, kb_id: str, embedder: Embedder, text: str) -> bool:
        """Start embedding ``text`` with ``embedder`` (the KB's model). False when there is nothing
        to start (empty text, no KB) or the same embedding is already waiting."""
        if not kb_id or not text.strip():
            return False
        key = (kb_id, _model(embedder), text)
        self._expire()
        if key in self._early:
            return False
        future = asyncio.ensure_future(embedder.embed([text]))
        future.add_done_callback(_retrieve)
        self._early[key] = (self._clock(), future)
        self.counts["started"] += 1
        while len(self._early) > self.bound:
            _, (_, old) = self._early.popitem(last=False)
            old.cancel()
            self.counts["dropped"] += 1
        return True

    def waiting(self) -> int:
        self._expire()
        return len(self._early)

    def take(self, kb_id: str, embedder: Embedder, text: str) -> asyncio.Future[list[list[float]]] | None:
        """The started embedding of ``text`` for this KB and model, removed (each is used once)."""
        self._expire()
        item = self._early.pop((kb_id, _model(embedder), text), None)
        return item[1] if item is not None else None

    def forget(self, kb_id: str) -> int:
        """Drop the started embeddings of ``kb_id`` (the KB was deleted or its model changed)."""
        gone = [k for k in self._early if k[0] == kb_id]
        for key in gone:
            self._early.pop(key)[1].cancel()
        return len(gone)

    def wrap(self, kb_id: str, embedder: Embedder) -> Embedder:
        """``embedder`` for the recall of ``kb_id``: a one-text call takes a started embedding."""
        return _Early(self, kb_id, embedder)

    def _expire(self) -> None:
        now = self._clock()
        while self._early:
            key, (at, future) = next(iter(self._early.items()))
            if now - at <= self.ttl_s:
                break
            del self._early[key]
            future.cancel()
            self.counts["expired"] += 1


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # a failed early start is the recall's to redo, never "never retrieved"


class _Early:
    def __init__(self, memo: QueryEmbeddings, kb_id: str, embedder: Embedder) -> None:
        self._memo = memo
        self._kb_id = kb_id
        self._embedder = embedder
        self.name = _model(embedder)

    def __getattr__(self, name: str) -> Any:  # dim and the like: the wrapped embedder's
        return getattr(self._embedder, name)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            items = list(texts)
            future = self._memo.take(self._kb_id, self._embedder, items[0]) if len(items) == 1 else None
            if future is not None:
                try:
                    vectors = await asyncio.shield(future)
                except asyncio.CancelledError:
                    if not future.cancelled():
                        raise  # this recall was cancelled, not the early embedding
                    vectors = None
                except Exception as exc:  # the early start failed: ask again, as without it
                    log.info("early query embedding failed (%s); the recall asks the host itself", exc)
                    self._memo.counts["failed"] += 1
                    vectors = None
                if vectors is not None and len(vectors) == 1:
                    self._memo.counts["used"] += 1
                    note_time("embed_early", 0.0)
                    return vectors
            return await self._embedder.embed(items)
        finally:
            note_time("embed", (time.perf_counter() - started) * 1000)
