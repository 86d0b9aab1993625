"""The early query embeddings (issue 38): each is taken once, by the same KB, model and text; they
expire and are bounded; a failed or dropped one sends the recall to its own embedder; a recall
cancelled while waiting does not cancel the started embedding. And the load benchmark's reading of
the listener's per-turn timing lines."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from benchmarks.load import turn_breakdown
from ltm.service.prefetch import TURN_TIMES, QueryEmbeddings


class Counting:
    def __init__(self, name: str = "host:emb-1", fail: bool = False) -> None:
        self.name = name
        self.calls: list[list[str]] = []
        self.fail = fail
        self.gate: asyncio.Event | None = None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("model busy")
        return [[float(len(t)), 1.0] for t in texts]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_started_embedding_is_taken_once_by_the_same_kb_model_and_text() -> None:
    memo, emb = QueryEmbeddings(), Counting()
    assert memo.start("kb1", emb, "where?")
    assert not memo.start("kb1", emb, "where?")  # already waiting: not twice
    wrapped = memo.wrap("kb1", emb)
    assert await wrapped.embed(["where?"]) == [[6.0, 1.0]]
    assert len(emb.calls) == 1 and memo.counts["used"] == 1
    assert await wrapped.embed(["where?"]) == [[6.0, 1.0]]  # taken once: the second asks the model
    assert len(emb.calls) == 2


async def test_another_kb_model_or_text_does_not_take_it() -> None:
    memo, emb = QueryEmbeddings(), Counting()
    memo.start("kb1", emb, "where?")
    await memo.wrap("kb2", emb).embed(["where?"])
    await memo.wrap("kb1", Counting(name="host:emb-2")).embed(["where?"])
    await memo.wrap("kb1", emb).embed(["where is it?"])
    await memo.wrap("kb1", emb).embed(["where?", "two texts"])  # a batch (the index) never takes one
    assert memo.counts["used"] == 0 and memo.waiting() == 1
    await memo.wrap("kb1", emb).embed(["where?"])  # positive control
    assert memo.counts["used"] == 1 and memo.waiting() == 0


async def test_a_failed_start_is_redone_by_the_recall() -> None:
    memo, bad, good = QueryEmbeddings(), Counting(fail=True), Counting()
    memo.start("kb1", bad, "where?")
    await asyncio.sleep(0)
    wrapped = memo.wrap("kb1", bad)
    bad.fail = False
    assert await wrapped.embed(["where?"]) == [[6.0, 1.0]]
    assert memo.counts["failed"] == 1 and len(bad.calls) == 2
    assert good.calls == []


async def test_expired_and_dropped_embeddings_are_cancelled_and_not_used() -> None:
    clock = Clock()
    memo, emb = QueryEmbeddings(bound=2, ttl_s=10.0, clock=clock), Counting()
    emb.gate = asyncio.Event()
    memo.start("kb1", emb, "a")
    memo.start("kb1", emb, "b")
    memo.start("kb1", emb, "c")  # over the bound: "a" goes
    assert memo.counts["dropped"] == 1 and memo.waiting() == 2
    clock.now = 11.0
    assert memo.waiting() == 0 and memo.counts["expired"] == 2
    emb.gate.set()
    assert await memo.wrap("kb1", emb).embed(["b"]) == [[1.0, 1.0]]
    assert memo.counts["used"] == 0


async def test_forget_drops_a_kbs_started_embeddings_only() -> None:
    memo, emb = QueryEmbeddings(), Counting()
    memo.start("kb1", emb, "a")
    memo.start("kb2", emb, "a")
    assert memo.forget("kb1") == 1
    assert memo.waiting() == 1


async def test_a_recall_cancelled_while_waiting_leaves_the_started_embedding_running() -> None:
    memo, emb = QueryEmbeddings(), Counting()
    emb.gate = asyncio.Event()
    memo.start("kb1", emb, "where?")
    task = asyncio.ensure_future(memo.wrap("kb1", emb).embed(["where?"]))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    emb.gate.set()
    await asyncio.sleep(0)
    assert len(emb.calls) == 1  # the started one went on; nobody asked again


async def test_nothing_starts_without_a_kb_or_text_and_the_turn_times_the_wait() -> None:
    memo, emb = QueryEmbeddings(), Counting()
    assert not memo.start("", emb, "where?")
    assert not memo.start("kb1", emb, "   ")
    times: dict[str, float] = {}
    token = TURN_TIMES.set(times)
    try:
        memo.start("kb1", emb, "where?")
        await memo.wrap("kb1", emb).embed(["where?"])
    finally:
        TURN_TIMES.reset(token)
    assert "embed" in times and "embed_early" in times


def test_the_load_benchmark_reads_the_hooks_timing_lines() -> None:
    log = "\n".join(
        [
            "[12-05 00:42:49.561] default.py (62) - [INFO] : memory scope resolved: bot:person_x (kb=k, isolation=s)",
            "[12-05 00:42:49.662] default.py (93) - [INFO] : injection ready: 1 block(s), 416 chars, 2 episodes; "
            "turn ms: total=100.0 vars=20.0 scope=1.0 recall=50.0 embed=30.0 render=3.0 writes=20.0 calls=4 early=1",
            "[12-05 00:42:49.891] memory_engine.py (63) - [INFO] : engine retrieve for person_x: served by the block",
        ]
    )
    out = turn_breakdown(log)
    assert out["turns"] == 1 and out["total_p50"] == 100.0 and out["writes_p95"] == 20.0
    assert out["early_share"] == 1.0 and out["calls_p50"] == 4.0
    assert out["hook_to_kb_call_p50"] == pytest.approx(229.0, abs=0.5)
    assert turn_breakdown("")["turns"] == 0
