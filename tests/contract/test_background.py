"""``ltm.service.background`` under the SDK's real ``bind_invocation``: a job queued during a call runs
only inside a live call (its carrier), with that call's invocation; it is bounded by the carrier's
grace, runs again later when interrupted, and stops when its installation is revoked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langbot_plugin.api.proxies.invocation import bind_invocation, current_invocation
from langbot_plugin.entities.io.context import InstallationBinding

from ltm.adapters.host_invocation import invocation_probe
from ltm.service.background import Background, checkpoint


class Handler:
    """Stands for the SDK's runtime handler: ``bind_invocation`` and ``current_invocation`` key on it."""


class Plugin:
    def __init__(self) -> None:
        self.plugin_runtime_handler = Handler()


def binding(n: int) -> InstallationBinding:
    return InstallationBinding(
        instance_uuid="00000000-0000-4000-8000-000000000000",
        workspace_uuid=f"00000000-0000-4000-8000-00000000000{n}",
        installation_uuid=f"30000000-0000-4000-8000-00000000000{n}",
        runtime_revision=1,
        artifact_digest="2" * 64,
    )


def setup() -> tuple[Plugin, Background]:
    plugin = Plugin()
    return plugin, Background(live=invocation_probe(plugin))


def call(plugin: Plugin, n: int = 1) -> Any:
    """One action of installation ``n``, as the SDK's handler scopes it."""
    return bind_invocation(plugin.plugin_runtime_handler, config={}, binding=binding(n))


def host_call(plugin: Plugin, seen: list[Any]) -> Any:
    """A job whose 'host call' needs a live invocation, like every SDK proxy does."""

    async def job() -> str:
        inv = current_invocation(plugin.plugin_runtime_handler)  # raises once the invocation has ended
        seen.append(inv.binding if inv is not None else None)
        return "done"

    return job


async def test_probe_tells_none_live_and_ended() -> None:
    plugin, _ = setup()
    live = invocation_probe(plugin)
    assert live() is None
    with call(plugin):
        assert live() is True
        ctx = asyncio.get_running_loop().create_future()

        async def later() -> None:
            await ctx
            ctx2.set_result(live())

        ctx2 = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(later())
    ctx.set_result(None)
    await task
    assert ctx2.result() is False  # the task copied the invocation, which has ended


async def test_without_an_invocation_jobs_run_at_once_as_before() -> None:
    plugin, bg = setup()
    seen: list[Any] = []
    fut = bg.submit("j", host_call(plugin, seen))
    assert await fut == "done" and seen == [None]
    delayed = bg.submit("k", host_call(plugin, seen), delay=0.05)
    await asyncio.sleep(0.01)
    assert not delayed.done()
    assert await delayed == "done"


async def test_a_job_queued_in_a_call_runs_in_the_next_live_call_with_its_invocation() -> None:
    plugin, bg = setup()
    seen: list[Any] = []
    with call(plugin, 1):
        fut = bg.submit("j", host_call(plugin, seen))  # no carrier: queued
    await asyncio.sleep(0.05)
    assert seen == [] and not fut.done()  # nothing ran it after its call ended (no escape)
    with call(plugin, 1):
        async with bg.carrying(1.0):
            pass
    assert fut.done() and fut.result() == "done" and seen == [binding(1)]


async def test_the_old_way_a_task_created_in_a_call_fails_after_it() -> None:
    """Control: what the plugin did before, a plain task, meets the ended invocation."""
    plugin, _ = setup()
    seen: list[Any] = []
    gate = asyncio.Event()

    async def detached() -> None:
        await gate.wait()
        await host_call(plugin, seen)()

    with call(plugin):
        task = asyncio.create_task(detached())
    gate.set()
    with pytest.raises(RuntimeError, match="invocation has ended"):
        await task
    assert seen == []


async def test_a_carrier_runs_what_it_queued_before_it_ends() -> None:
    plugin, bg = setup()
    seen: list[Any] = []
    with call(plugin, 2):
        async with bg.carrying(1.0):
            fut = bg.submit("flush", host_call(plugin, seen), delay=3600)  # the delay is for free mode only
    assert fut.done() and seen == [binding(2)]


async def test_grace_interrupts_a_read_and_the_next_call_finishes_it() -> None:
    plugin, bg = setup()
    runs: list[str] = []

    async def slow_read() -> str:
        runs.append("start")
        await asyncio.sleep(0.3)
        current_invocation(plugin.plugin_runtime_handler)
        runs.append("end")
        return "built"

    with call(plugin):
        async with bg.carrying(0.05):
            fut = bg.submit("refresh", slow_read, interruptible=True)
    assert runs == ["start"] and not fut.done()  # cancelled at the grace, queued again
    with call(plugin):
        async with bg.carrying(1.0):
            pass
    assert await fut == "built" and runs == ["start", "start", "end"]


async def test_a_read_interrupted_before_gets_longer_each_time() -> None:
    plugin, bg = setup()
    runs: list[str] = []

    async def slow_read() -> str:
        runs.append("start")
        await asyncio.sleep(0.3)  # far longer than the grace of 0.05 s
        current_invocation(plugin.plugin_runtime_handler)
        return "built"

    fut = None
    for _ in range(6):
        with call(plugin):
            async with bg.carrying(0.05):
                fut = fut or bg.submit("refresh", slow_read, interruptible=True)
        if fut.done():
            break
    # 0.05 s, then 0.1, 0.2 (cut off each time), then 0.4: the fourth call lets it finish
    assert fut.done() and fut.result() == "built" and runs == ["start"] * 4


async def test_grace_stops_a_write_at_its_next_checkpoint() -> None:
    plugin, bg = setup()
    settled: list[int] = []

    async def recovery() -> list[int]:
        for n in range(len(settled), 5):
            await checkpoint()
            await asyncio.sleep(0.03)
            current_invocation(plugin.plugin_runtime_handler)
            settled.append(n)  # one entry settled, never half of one
        return settled

    with call(plugin):
        async with bg.carrying(0.05):
            fut = bg.submit("recovery", recovery)
    assert 1 <= len(settled) < 5 and not fut.done()
    with call(plugin):
        async with bg.carrying(1.0):
            pass
    assert await fut == [0, 1, 2, 3, 4]


async def test_join_runs_the_job_in_the_waiting_call() -> None:
    plugin, bg = setup()
    seen: list[Any] = []
    with call(plugin, 1):
        fut = bg.submit("recovery", host_call(plugin, seen))
    with call(plugin, 1):  # a write: it waits for recovery, which no carrier runs
        assert await bg.join(fut) == "done"
    assert seen == [binding(1)]


async def test_a_cancelled_carrier_cancels_its_jobs() -> None:
    plugin, bg = setup()
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def long_job() -> None:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def action() -> None:
        with call(plugin):
            async with bg.carrying(5.0):
                bg.submit("long", long_job)
                await asyncio.sleep(10)

    task = asyncio.create_task(action())
    await started.wait()
    task.cancel()  # the host cancels the action (as it does when it revokes the installation)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]
    assert bg.pending() == ["long"]  # queued again for a later call of a live installation


async def test_stop_cancels_queued_and_running_work_and_refuses_new() -> None:
    plugin, bg = setup()
    seen: list[Any] = []
    with call(plugin):
        queued = bg.submit("q", host_call(plugin, seen))
    bg.stop()
    assert queued.cancelled()
    with call(plugin):
        after = bg.submit("r", host_call(plugin, seen))
        async with bg.carrying(1.0):
            pass
    assert after.cancelled() and seen == []


async def test_a_job_fails_normally_when_its_own_code_fails() -> None:
    plugin, bg = setup()

    async def broken() -> None:
        raise ValueError("bad")

    with call(plugin):
        async with bg.carrying(1.0):
            fut = bg.submit("b", broken)
    with pytest.raises(ValueError, match="bad"):
        await fut
    assert bg.counts["failed"] == 1 and bg.pending() == []


def test_an_ended_invocation_is_an_unknown_outcome() -> None:
    """The SDK re-checks the invocation after the host answered: the write may have been applied."""
    from langbot_plugin.entities.io.errors import ActionCallError

    from ltm.ports import is_unknown_outcome

    assert is_unknown_outcome(ActionCallError("RuntimeError: Plugin invocation has ended"))
    assert is_unknown_outcome(RuntimeError("Runner invocation has ended"))
    assert not is_unknown_outcome(ActionCallError("ActionCallError: Storage with key k not found"))  # control


# ------------------------------------------------------------------------------- random schedules
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

STEP = st.one_of(
    st.tuples(
        st.just("submit"),
        st.integers(0, 3),  # job key
        st.integers(0, 3),  # its length in 10 ms steps (a host call after each)
        st.booleans(),  # interruptible (a read) or not (a write with checkpoints)
        st.booleans(),  # submitted inside a carrier or in a bare call
    ),
    st.tuples(st.just("carry"), st.sampled_from([0.0, 0.005, 0.02, 0.2])),
    st.tuples(st.just("idle"), st.integers(1, 3)),
)


@given(st.lists(STEP, max_size=12))
@settings(max_examples=30, deadline=None)
def test_random_schedules_never_call_the_host_outside_a_live_call(steps: list[tuple[Any, ...]]) -> None:
    """Whatever the order of submissions, carriers and their graces: every host call of a job is made
    under a live invocation (the SDK would refuse any other), every job ends exactly once after enough
    live calls, and its steps are never run twice past a completed step."""
    asyncio.run(_schedule(steps))


async def _schedule(steps: list[tuple[Any, ...]]) -> None:
    plugin, bg = setup()
    handler = plugin.plugin_runtime_handler
    calls: list[bool] = []
    futures: dict[int, asyncio.Future[Any]] = {}
    done_steps: dict[int, list[int]] = {}

    def job(key: int, length: int, interruptible: bool) -> Any:
        async def run() -> int:
            for n in range(len(done_steps.setdefault(key, [])) if not interruptible else 0, length):
                if not interruptible:
                    await checkpoint()
                await asyncio.sleep(0.01)
                calls.append(current_invocation(handler) is not None)  # raises once the invocation ended
                if not interruptible:
                    done_steps[key].append(n)
            return key

        return run

    for step in steps:
        if step[0] == "submit":
            _, key, length, interruptible, carried_ = step
            with call(plugin):
                if carried_:
                    async with bg.carrying(0.02):
                        futures[key] = bg.submit(key, job(key, length, interruptible), interruptible=interruptible)
                else:
                    futures[key] = bg.submit(key, job(key, length, interruptible), interruptible=interruptible)
        elif step[0] == "carry":
            with call(plugin):
                async with bg.carrying(step[1]):
                    await asyncio.sleep(0.005)
        else:
            await asyncio.sleep(0.01 * step[1])
    for _ in range(3):  # enough live calls with room for every job
        with call(plugin):
            async with bg.carrying(1.0):
                pass
    assert all(calls), "a job called the host outside a live invocation"
    for key, fut in futures.items():
        assert fut.done() and not fut.cancelled() and fut.exception() is None, (key, fut)
    for key, seen in done_steps.items():
        assert seen == sorted(set(seen)), f"a write step of job {key} ran twice: {seen}"
    assert bg.pending() == []


async def test_an_after_call_job_is_not_waited_for_by_its_own_call_and_runs_in_the_next() -> None:
    """Issue 38: the chat turn's snapshot is queued ``after_call``: the hook's carrier returns at once
    although the job would block; the next call carries it, with its own invocation."""
    plugin, bg = setup()
    seen: list[Any] = []
    gate = asyncio.Event()

    async def slow() -> str:
        await gate.wait()
        return await host_call(plugin, seen)()

    with call(plugin, 1):
        async with bg.carrying(1.0):
            fut = bg.submit("snap", slow, after_call=True)
            started = asyncio.get_running_loop().time()
        elapsed = asyncio.get_running_loop().time() - started
    assert elapsed < 0.5 and not fut.done() and seen == []  # not run, not waited for: no grace spent
    gate.set()
    with call(plugin, 1):
        async with bg.carrying(1.0):
            pass
    assert fut.done() and fut.result() == "done" and seen == [binding(1)]
    # control: the same job without after_call is run, and waited for, by the call that queued it
    ran: list[Any] = []
    with call(plugin, 1):
        async with bg.carrying(1.0):
            other = bg.submit("plain", host_call(plugin, ran))
    assert other.done() and ran == [binding(1)]


async def test_the_snapshot_writer_keeps_the_latest_per_chat_and_drops_a_deleted_kbs() -> None:
    """The last-turn snapshots (issue 38): queued after the turn, one write per chat for a burst (the
    latest), none for a knowledge base deleted before its write; ``pending`` answers meanwhile."""
    from ltm.domain.scope import derive_scope
    from ltm.service.chat_turn import SnapshotWriter
    from ltm.service.snapshots import InjectionSnapshot

    plugin, bg = setup()
    saved: list[tuple[str, str]] = []

    async def save(scope: Any, snap: InjectionSnapshot) -> None:
        saved.append((scope.collection, snap.at))

    writer = SnapshotWriter(save, bg)
    kept = derive_scope(session_name="person_a", bot_uuid="b", isolation="session", collection="kb1", sender_id="a")
    gone = derive_scope(session_name="person_c", bot_uuid="b", isolation="session", collection="kb2", sender_id="c")
    with call(plugin, 1):
        async with bg.carrying(1.0):  # the hook's call: queues, never writes
            for at in ("t1", "t2", "t3"):
                writer.later(kept, InjectionSnapshot(at=at))
            writer.later(gone, InjectionSnapshot(at="g1"))
    assert saved == [] and writer.pending(kept) == InjectionSnapshot(at="t3")
    assert writer.discard_collection("kb2") == 1 and writer.pending(gone) is None
    with call(plugin, 1):
        async with bg.carrying(1.0):  # the next call carries the write
            pass
    assert saved == [("kb1", "t3")] and writer.pending(kept) is None
    assert writer.counts["coalesced"] == 2 and writer.counts["written"] == 1
