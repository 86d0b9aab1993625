"""The background carriers' grace and interruption rules (``ltm/service/background.py``), on a loop
whose clock skips idle waits (a virtual clock: a test of a 5 s grace takes no 5 s, and the
figures below are exact, not timings of this machine).

- every component call carries its grace: an operator's call (a command, the console, knowledge
  base management and ingestion) 5 s, a chat turn's call 1 s - one table, every ``@runs_background_work``
  method in it;
- a read is cut off at its carrier's grace the first time (no extra grace), then gets ``grace``,
  ``3 * grace``, ... more; a write stops at its first checkpoint after the grace; the grace counts
  from the end of the call's own work;
- the fault matrix of carriers: a carrier cancelled at each point (during the call's own work,
  during the grace, during a read's extra grace, while a write runs to its checkpoint) cancels its
  jobs at once, leaves no task running and the job queued, and the next call completes it - every
  "host call" of a job made inside a live call.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import selectors
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

import components
from components.background_calls import CHAT_GRACE_S, OPERATOR_GRACE_S
from ltm.service.background import HOLD_S, Background, checkpoint


class _SkippingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Never sleeps when nothing is ready: the time it would have slept is added to a virtual clock."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        events = super().select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            return super().select(None)
        self.skipped += timeout
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.selector = _SkippingSelector()
        super().__init__(self.selector)

    def time(self) -> float:
        return self.selector.skipped  # only waits move the clock: every figure is exact


def run(coro: Awaitable[Any]) -> Any:
    with asyncio.Runner(loop_factory=VirtualLoop) as runner:
        return runner.run(coro)  # type: ignore[arg-type]


def now() -> float:
    return asyncio.get_running_loop().time()


class Host:
    """Whether a host invocation is live: only inside :meth:`call` (as the SDK binds an action)."""

    def __init__(self) -> None:
        self.live = False
        self.outside: list[str] = []

    def probe(self) -> bool:
        return self.live

    def host_call(self, what: str) -> None:
        if not self.live:
            self.outside.append(what)

    @asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        self.live = True
        try:
            yield
        finally:
            self.live = False


# ------------------------------------------------------------------------------- every call's grace
GRACES = {
    "commands.memory.MemoryCommand.respond": OPERATOR_GRACE_S,
    "pages.console.MemoryConsole.handle_api": OPERATOR_GRACE_S,
    "knowledge_engine.memory_engine.MemoryEngine.on_knowledge_base_create": OPERATOR_GRACE_S,
    "knowledge_engine.memory_engine.MemoryEngine.on_knowledge_base_delete": OPERATOR_GRACE_S,
    "knowledge_engine.memory_engine.MemoryEngine.ingest": OPERATOR_GRACE_S,
    "knowledge_engine.memory_engine.MemoryEngine.delete_document": OPERATOR_GRACE_S,
    "knowledge_engine.memory_engine.MemoryEngine._retrieve": CHAT_GRACE_S,  # retrieve carries only when not served
    "tools.remember.Remember.call": CHAT_GRACE_S,
    "tools.recall_memory.RecallMemory.call": CHAT_GRACE_S,
    "tools.forget.Forget.call": CHAT_GRACE_S,
    "tools.update_profile.UpdateProfile.call": CHAT_GRACE_S,
}


def carried_methods() -> dict[str, Callable[..., Any]]:
    """Every ``@runs_background_work`` method of the components, by ``module.Class.method`` under components/."""
    out: dict[str, Callable[..., Any]] = {}
    for info in pkgutil.walk_packages(components.__path__, "components."):
        module = importlib.import_module(info.name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for name, fn in vars(cls).items():
                if hasattr(fn, "background_grace"):
                    out[f"{info.name.removeprefix('components.')}.{cls_name}.{name}"] = fn
    return out


class _Entered(Exception):
    pass


class GraceRecorder:
    """A plugin whose background records the grace a call's carrier asks for, then stops the call."""

    def __init__(self) -> None:
        self.graces: list[float] = []
        self.service = self
        self.background = self

    @asynccontextmanager
    async def carrying(self, grace: float) -> AsyncIterator[None]:
        self.graces.append(grace)
        raise _Entered
        yield  # pragma: no cover


def test_every_component_call_carries_its_grace() -> None:
    """A command (and every other operator call) waits 5 s for the background work it carries, a
    chat turn's call 1 s: asked of each method through its real decorator. A new ``@runs_background_work``
    method without its row fails here."""
    methods = carried_methods()
    assert set(methods) == set(GRACES), f"not in the table: {set(methods) ^ set(GRACES)}"
    assert OPERATOR_GRACE_S == 5.0 and CHAT_GRACE_S == 1.0
    for name, fn in methods.items():
        owner = type("Component", (), {"plugin": GraceRecorder()})()

        async def enter(fn: Callable[..., Any] = fn, owner: Any = owner) -> None:
            params = list(inspect.signature(fn).parameters)[1:]
            result = fn(owner, *[None] * len(params))
            if inspect.isasyncgen(result):
                async for _ in result:
                    pass
            else:
                await result

        with pytest.raises(_Entered):
            run(enter())
        assert owner.plugin.graces == [GRACES[name]], name


# ------------------------------------------------------------------------------- grace and extra grace
async def carried_call(bg: Background, host: Host, grace: float, work: float = 0.0) -> float:
    """One live call carrying ``bg``'s work for ``work`` seconds of its own; the seconds it took."""
    t0 = now()
    async with host.call():
        async with bg.carrying(grace):
            if work:
                await asyncio.sleep(work)
    return now() - t0


def endless_read(host: Host, runs: list[float]) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        runs.append(now())
        await asyncio.sleep(3600)
        host.host_call("read")
        return "read"

    return read


def test_a_read_is_cut_off_at_the_grace_the_first_time_then_gets_more_each_time() -> None:
    async def main() -> list[float]:
        host = Host()
        bg = Background(live=host.probe)
        runs: list[float] = []
        async with host.call():
            bg.submit("refresh", endless_read(host, runs), interruptible=True)
        return [round(await carried_call(bg, host, CHAT_GRACE_S), 2) for _ in range(5)]

    took = run(main())
    # grace, then grace + grace * (2**n - 1): 1, 2, 4, 8, then capped at HOLD_S more
    assert took == [1.0, 2.0, 4.0, 8.0, round(1.0 + HOLD_S, 2)], took


def test_a_command_carrier_gives_a_job_five_seconds_a_chat_carrier_one() -> None:
    async def main(grace: float) -> tuple[bool, float]:
        host = Host()
        bg = Background(live=host.probe)
        done: list[str] = []

        async def job() -> None:
            await asyncio.sleep(3.0)  # a snapshot write of a large chat
            host.host_call("write")
            done.append("written")

        async with host.call():
            async with bg.carrying(grace):
                bg.submit("snapshot", job, interruptible=True)
                t0 = now()
        return bool(done), round(now() - t0, 2)

    assert run(main(OPERATOR_GRACE_S)) == (True, 3.0)
    assert run(main(CHAT_GRACE_S)) == (False, 1.0)


def test_a_write_stops_at_its_first_checkpoint_after_the_grace() -> None:
    async def main() -> tuple[float, list[int], Any]:
        host = Host()
        bg = Background(live=host.probe)
        settled: list[int] = []

        async def recovery() -> list[int]:
            for n in range(len(settled), 30):
                await checkpoint()
                await asyncio.sleep(0.3)
                host.host_call(f"entry {n}")
                settled.append(n)
            return settled

        async with host.call():
            fut = bg.submit("recovery", recovery)
        took = await carried_call(bg, host, CHAT_GRACE_S)
        first = list(settled)
        while not fut.done():
            await carried_call(bg, host, OPERATOR_GRACE_S)
        assert host.outside == []
        return round(took, 2), first, fut.result()

    took, first, result = run(main())
    # entries at 0.3, 0.6, 0.9, 1.2: asked to stop at 1.0, it stops at its next checkpoint (1.2)
    assert took == 1.2 and first == [0, 1, 2, 3]
    assert result == list(range(30))


def test_the_grace_counts_from_the_end_of_the_calls_own_work() -> None:
    async def main() -> tuple[bool, float]:
        host = Host()
        bg = Background(live=host.probe)
        done: list[bool] = []

        async def job() -> None:
            await asyncio.sleep(3.5)
            done.append(True)

        async with host.call():
            bg.submit("fill", job, interruptible=True)
        took = await carried_call(bg, host, CHAT_GRACE_S, work=3.0)
        return bool(done), round(took, 2)

    assert run(main()) == (True, 3.5)


# ------------------------------------------------------------------------------- carriers interrupted
POINTS = {
    # when the host cancels the action, in virtual seconds after the call began (own work: 2 s,
    # grace 1 s, a write's checkpoints every 0.4 s, a read cut off once before gets 1 s more)
    "during_own_work": 1.0,
    "during_grace": 2.5,
    "during_extra_grace": 3.5,  # only a read interrupted before gets extra grace
    "before_the_checkpoint": 3.1,  # a write asked to stop at 3.0 reaches its checkpoint at 3.2
}


@pytest.mark.parametrize("kind", ["read", "write"])
@pytest.mark.parametrize("point", sorted(POINTS))
def test_a_carrier_cancelled_at_each_point(point: str, kind: str) -> None:
    """The host cancels the action at ``point``: the cancellation reaches the caller at once, the
    job's task is gone (cancelled, nothing left running), the job is queued again with its future
    pending, and the next live call completes it; no host call of the job outside a live call.
    (A write gets no extra grace: that point is a read's.)"""

    if point == "during_extra_grace" and kind == "write":
        pytest.skip("a write gets no extra grace")

    async def main() -> None:
        host = Host()
        bg = Background(live=host.probe)
        steps: list[int] = []

        async def job() -> str:
            for n in range(len(steps) if kind == "write" else 0, 12):
                if kind == "write":
                    await checkpoint()
                await asyncio.sleep(0.4)
                host.host_call(f"{kind} {n}")
                if kind == "write":
                    steps.append(n)
            return kind

        async with host.call():
            fut = bg.submit("job", job, interruptible=kind == "read")
        if kind == "read":  # interrupted once before: it has extra grace now
            await carried_call(bg, host, 0.1)
        before = asyncio.all_tasks()

        async def action() -> None:
            await carried_call(bg, host, CHAT_GRACE_S, work=2.0)

        t0 = now()
        task = asyncio.create_task(action())
        asyncio.get_running_loop().call_at(t0 + POINTS[point], task.cancel)
        with pytest.raises(asyncio.CancelledError):
            await task
        assert round(now() - t0, 2) == POINTS[point]  # the cancellation was not held up
        assert asyncio.all_tasks() <= before | {asyncio.current_task()}, "a job task outlived its carrier"
        assert not fut.done() and bg.pending() == ["job"]
        while not fut.done():
            await carried_call(bg, host, OPERATOR_GRACE_S)
        assert fut.result() == kind
        assert host.outside == []
        if kind == "write":
            assert steps == list(range(12))  # every step once, none twice

    run(main())
