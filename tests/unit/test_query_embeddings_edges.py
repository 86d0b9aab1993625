"""The early query embeddings' edges (ltm/service/prefetch.py), each found by a mutation pass
(``scripts/mutate``): what a start answers and counts, an expired embedding neither blocks a new
start of the same text nor is taken, a dropped or expired one is cancelled, a failed or cancelled
one never reaches the event loop's error handler, the wrapped embedder reads as the one it wraps,
and a turn's timings add up."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from typing import Any

from ltm.service.prefetch import TURN_TIMES, QueryEmbeddings, note_time


class Embedder:
    """An embedder that waits for ``gate`` (when set) and records how its calls ended."""

    def __init__(self, fail: bool = False) -> None:
        self.name = "host:emb-1"
        self.dim = 2
        self.fail = fail
        self.gate: asyncio.Event | None = None
        self.cancelled: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            if self.gate is not None:
                await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled.extend(texts)
            raise
        if self.fail:
            raise RuntimeError("model busy")
        return [[float(len(t)), 1.0] for t in texts]


class Nameless:
    """An embedder without a ``name``: its model is its type's name."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] for _ in texts]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_start_says_it_started_and_counts_it_once() -> None:
    memo = QueryEmbeddings()
    assert memo.counts == {"started": 0, "used": 0, "failed": 0, "dropped": 0, "expired": 0}
    assert memo.start("kb1", Embedder(), "where?") is True
    assert memo.counts["started"] == 1
    assert memo.start("kb1", Embedder(), "where?") is False  # control: already waiting
    assert memo.counts["started"] == 1


async def test_an_expired_embedding_does_not_block_a_new_start_nor_is_taken() -> None:
    clock = Clock()
    memo, emb = QueryEmbeddings(ttl_s=10.0, clock=clock), Embedder()
    assert memo.start("kb1", emb, "where?")
    clock.now = 11.0
    assert memo.start("kb1", emb, "where?")  # the old one expired: this is a new start
    assert memo.counts["expired"] == 1
    clock.now = 22.0
    assert memo.take("kb1", emb, "where?") is None  # expired on the way: not taken
    clock.now = 22.0
    memo.start("kb1", emb, "where?")
    assert memo.take("kb1", emb, "where?") is not None  # control: a fresh one is


async def test_a_dropped_and_an_expired_embedding_are_cancelled() -> None:
    clock = Clock()
    memo, emb = QueryEmbeddings(bound=1, ttl_s=10.0, clock=clock), Embedder()
    emb.gate = asyncio.Event()
    memo.start("kb1", emb, "a")
    await _settle()
    memo.start("kb1", emb, "b")  # over the bound: "a" is dropped
    await _settle()
    assert emb.cancelled == ["a"]
    clock.now = 11.0
    assert memo.waiting() == 0  # "b" expired
    await _settle()
    assert emb.cancelled == ["a", "b"]


async def test_a_failed_or_cancelled_start_never_reaches_the_loops_error_handler() -> None:
    """A started embedding nobody takes: its failure is retrieved (no "exception was never
    retrieved" when it is collected), and a cancelled one is left alone (no error in its callback).
    Control: the same failing embedding started without the memo is reported."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    old = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        memo = QueryEmbeddings()
        memo.start("kb1", Embedder(fail=True), "where?")
        await _settle()
        del memo  # never taken, never cancelled (the service went away with it)
        gc.collect()
        await _settle()
        assert seen == []
        memo = QueryEmbeddings()
        cancelled = Embedder()
        cancelled.gate = asyncio.Event()
        memo.start("kb1", cancelled, "there?")
        await _settle()
        memo.forget("kb1")  # cancelled while running
        await _settle()
        gc.collect()
        await _settle()
        assert seen == []
        bare = asyncio.ensure_future(Embedder(fail=True).embed(["where?"]))
        await _settle()
        del bare
        gc.collect()
        await _settle()
        assert seen, "control: an unretrieved failure is reported"
    finally:
        loop.set_exception_handler(old)


async def test_the_wrapped_embedder_reads_as_the_one_it_wraps() -> None:
    memo, emb = QueryEmbeddings(), Embedder()
    wrapped = memo.wrap("kb1", emb)
    assert wrapped.name == "host:emb-1" and wrapped.dim == 2
    bare = memo.wrap("kb1", Nameless())
    assert bare.name == "Nameless"
    memo.start("kb1", Nameless(), "x")
    assert await bare.embed(["x"]) == [[1.0]] and memo.counts["used"] == 1


def test_a_turns_timings_add_up() -> None:
    times: dict[str, float] = {}
    token = TURN_TIMES.set(times)
    try:
        note_time("embed", 2.5)
        note_time("embed", 1.5)
        note_time("render", 3.0)
    finally:
        TURN_TIMES.reset(token)
    assert times == {"embed": 4.0, "render": 3.0}
    note_time("embed", 1.0)  # outside a timed turn: nothing
    assert times == {"embed": 4.0, "render": 3.0}


class CancelledOnce(Embedder):
    """An embedder whose first call is cancelled on the host's side (its task ends cancelled)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 1:
            raise asyncio.CancelledError
        return await super().embed(texts)


async def test_an_early_embedding_that_ended_cancelled_is_asked_again() -> None:
    memo, emb = QueryEmbeddings(), CancelledOnce()
    memo.start("kb1", emb, "where?")
    await _settle()
    assert await memo.wrap("kb1", emb).embed(["where?"]) == [[6.0, 1.0]]
    assert emb.calls == 2 and memo.counts["used"] == 0


async def test_the_recalls_embedding_time_is_noted_in_milliseconds(monkeypatch: Any) -> None:
    """The wait is read from ``time.perf_counter`` (a stand-in clock here: 0.25 s pass per call)."""
    ticks = iter([10.0, 10.25, 20.0, 20.5])
    monkeypatch.setattr("ltm.service.prefetch.time.perf_counter", lambda: next(ticks))
    memo, emb = QueryEmbeddings(), Embedder()
    times: dict[str, float] = {}
    token = TURN_TIMES.set(times)
    try:
        await memo.wrap("kb1", emb).embed(["where?"])
        assert times == {"embed": 250.0}
        memo.start("kb1", emb, "where?")
        await memo.wrap("kb1", emb).embed(["where?"])  # taken: the early mark, and the wait added
    finally:
        TURN_TIMES.reset(token)
    assert times == {"embed": 750.0, "embed_early": 0.0}
