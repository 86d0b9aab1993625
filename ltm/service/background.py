"""Work that outlives the call that started it, run only where the host allows host calls.

The SDK ties every host call to the *invocation* of the action that makes it: when the plugin runs
from its installed package, each action from the runtime carries an installation binding and runs
inside ``bind_invocation(...)``; the invocation is marked ended when the action returns, and a host
call from a task that action started fails afterwards ("Plugin invocation has ended"). Revoking an
installation cancels its actions. So there is no plugin-lifetime authority to borrow, and this module
does not invent one: background work (journal recovery, recall snapshots, TTL refreshes, re-embed
fills, deleting a dropped knowledge base's snapshots) is a *job* that runs inside a call that is
still live, its *carrier*.

- :meth:`Background.submit` queues a job (one per key; a second submit returns the first one's
  future). With no invocation in the caller's context (debug attach, ``lbp run``; the tests; the
  CLI) nothing can end, and the job starts at once as a task (after ``delay``), as before.
- :meth:`Background.carrying` wraps one call of a component (listener, command, tool, engine,
  page, ``initialize``). On entry it starts every queued job as a task of that call's context, so the
  job's host calls carry that call's invocation; the call's own work runs meanwhile. On exit it
  starts what the call queued, then waits at most ``grace`` seconds. A job still running then is
  *interrupted*: a read-only job (``interruptible``) is cancelled (one interrupted ``n`` times before
  gets ``grace * (2**n - 1)`` seconds more, so a slow read completes in a later call), any other is
  asked to stop at its next :func:`checkpoint` and awaited (its host calls are bounded by the SDK's
  call timeout, and at most :data:`HOLD_S` more). An interrupted job goes back to the queue for the next call; its
  future stays pending. No job ever outlives its carrier.
- A carrier that is cancelled (the host cancels an action, e.g. when it revokes the installation)
  cancels its jobs at once; :meth:`Background.stop` (the installation was revoked) cancels every job
  and its future, and refuses new ones.
- :meth:`Background.join` waits for a job from inside a call, running it there when no carrier is
  running it (a write waits for the journal recovery this way).

A job must be restartable: an interrupted attempt is run again from the start by a later carrier.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..ports import HOST_CALLS

log = logging.getLogger(__name__)

HOLD_S = 15.0  # after the grace: the longest a carrier waits for a job to reach a checkpoint
CHAT_GRACE_S = 1.0  # a chat turn's calls (listener, tools, engine): the reply waits for them
OPERATOR_GRACE_S = 5.0  # commands, the console, document ingestion, initialize

Live = Callable[[], "bool | None"]


class Deferred(BaseException):  # noqa: N818 - a signal, not an error: passes every `except Exception`
    """Raised by :func:`checkpoint` when the job's carrier asked it to stop: it runs again later."""


@dataclass(eq=False)
class _Attempt:
    job: _Job
    carrier: _Carrier | None
    task: asyncio.Task[None] | None = None
    stop: bool = False


@dataclass(eq=False)
class _Job:
    key: Hashable
    factory: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]
    interruptible: bool
    attempt: _Attempt | None = None
    interrupts: int = 0
    origin: _Carrier | None = None  # ``after_call``: the call that queued it does not carry it


@dataclass(eq=False)
class _Carrier:
    grace: float
    attempts: set[_Attempt] = field(default_factory=set)
    open: bool = True


_CARRIER: ContextVar[_Carrier | None] = ContextVar("ltm_background_carrier", default=None)
_ATTEMPT: ContextVar[_Attempt | None] = ContextVar("ltm_background_attempt", default=None)


async def checkpoint() -> None:
    """A point where the running job may stop (its carrier is closing): raises :class:`Deferred`."""
    attempt = _ATTEMPT.get()
    if attempt is not None and attempt.stop:
        raise Deferred


def _never_ends() -> bool | None:
    return None


class Background:
    """The background jobs of one installation. ``live`` tells, in the current context, whether a
    host invocation is bound: ``None`` none (jobs run freely), ``True`` live, ``False`` ended."""

    def __init__(self, live: Live = _never_ends) -> None:
        self.live = live
        self._jobs: dict[Hashable, _Job] = {}
        self._queue: dict[Hashable, _Job] = {}
        self._stopped = False
        self.counts = {"started": 0, "done": 0, "interrupted": 0, "failed": 0}

    # ------------------------------------------------------------------ submitting
    def submit(
        self,
        key: Hashable,
        factory: Callable[[], Awaitable[Any]],
        *,
        delay: float = 0.0,
        interruptible: bool = False,
        after_call: bool = False,
    ) -> asyncio.Future[Any]:
        """Queue the job ``key`` (``factory`` makes one attempt); its future resolves with the
        result of the attempt that completes. A job of that key not yet done is returned instead.
        ``after_call``: the calling carrier neither runs nor waits for it (work the call's answer
        does not need, e.g. a chat turn's snapshot): a later call carries it."""
        job = self._jobs.get(key)
        if job is not None and not job.future.done():
            return job.future
        loop = asyncio.get_running_loop()
        job = _Job(key, factory, loop.create_future(), interruptible)
        if after_call:
            job.origin = _CARRIER.get()
        job.future.add_done_callback(_retrieve)
        job.future.add_done_callback(lambda f, job=job: self._settled(job, f))
        if self._stopped:
            job.future.cancel()
            return job.future
        self._jobs[key] = job
        live = self.live()
        if live is None:  # no invocation anywhere: nothing ends, run it as a plain task
            if delay > 0:
                loop.call_later(delay, self._start_free, job)
            else:
                self._start(job, None)
            return job.future
        self._queue[key] = job
        carrier = _CARRIER.get()
        if carrier is not None and carrier.open and live and not after_call:  # run alongside the call's work
            self._start(job, carrier)
        return job.future

    def pending(self) -> list[Hashable]:
        """Keys of the jobs not done (queued or running)."""
        return [k for k, j in self._jobs.items() if not j.future.done()]

    # ------------------------------------------------------------------ carriers
    @contextlib.asynccontextmanager
    async def carrying(self, grace: float = CHAT_GRACE_S) -> AsyncIterator[None]:
        """Around one call of the plugin: queued jobs run inside it, bounded by ``grace``."""
        if _CARRIER.get() is not None or self._stopped or not self.live():
            yield  # nested, revoked, or no live invocation: the outer carrier (or nobody) carries
            return
        carrier = _Carrier(grace)
        token = _CARRIER.set(carrier)
        try:
            self._start_queued(carrier)
            try:
                yield
            except asyncio.CancelledError:
                await self._abandon(carrier)
                raise
            except BaseException:
                await self._close(carrier)
                raise
            await self._close(carrier)
        finally:
            carrier.open = False
            _CARRIER.reset(token)

    def _start_queued(self, carrier: _Carrier) -> None:
        for job in list(self._queue.values()):
            if job.attempt is None and not job.future.done() and job.origin is not carrier:
                self._start(job, carrier)

    async def _close(self, carrier: _Carrier) -> None:
        """The call's own work is done: start what it queued, wait ``grace``, interrupt the rest."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + carrier.grace  # the loop's clock: the one its timeouts run on
        try:
            while True:
                self._start_queued(carrier)
                running = {a.task for a in carrier.attempts if a.task is not None and not a.task.done()}
                remaining = deadline - loop.time()
                if not running or remaining <= 0:
                    break
                await asyncio.wait(running, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            running = {a.task for a in carrier.attempts if a.task is not None and not a.task.done()}
            if not running:
                return
            for attempt in list(carrier.attempts):
                if attempt.task is None or attempt.task.done():
                    continue
                if attempt.job.interruptible:
                    # a read cut off before gets twice as long each time, so a slow one completes
                    extra = min(HOLD_S, carrier.grace * (2**attempt.job.interrupts - 1))
                    if extra <= 0:
                        attempt.task.cancel()
                    else:
                        loop.call_later(extra, attempt.task.cancel)
                else:
                    attempt.stop = True
            _, late = await asyncio.wait(running, timeout=HOLD_S)
            for task in late:  # past every host timeout: give up on it, it runs again later
                task.cancel()
            if late:
                await asyncio.wait(late)
        except asyncio.CancelledError:
            await self._abandon(carrier)
            raise

    async def _abandon(self, carrier: _Carrier) -> None:
        """The carrier itself was cancelled: its jobs stop now (they run again in a later call)."""
        tasks = [a.task for a in carrier.attempts if a.task is not None and not a.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.gather(*tasks, return_exceptions=True))

    # ------------------------------------------------------------------ attempts
    def _start_free(self, job: _Job) -> None:
        if not job.future.done() and job.attempt is None:
            self._start(job, None)

    def _start(self, job: _Job, carrier: _Carrier | None) -> _Attempt:
        attempt = _Attempt(job, carrier)
        job.attempt = attempt
        self._queue.pop(job.key, None)
        if carrier is not None:
            carrier.attempts.add(attempt)
        self.counts["started"] += 1
        attempt.task = asyncio.get_running_loop().create_task(self._run(attempt))
        return attempt

    async def _run(self, attempt: _Attempt) -> None:
        job = attempt.job
        _ATTEMPT.set(attempt)
        HOST_CALLS.set(None)  # a job's host calls are no turn's (the task copied its starter's context)
        try:
            result = await job.factory()
        except Deferred:
            self._requeue(job)
        except asyncio.CancelledError:
            if self._stopped:
                job.future.cancel()
            else:
                self._requeue(job)
        except BaseException as exc:
            if self.live() is False:  # the carrier's invocation ended under it: not the job's fault
                self._requeue(job)
            else:
                self.counts["failed"] += 1
                if not job.future.done():
                    job.future.set_exception(exc)
        else:
            self.counts["done"] += 1
            if not job.future.done():
                job.future.set_result(result)
        finally:
            job.attempt = None
            if attempt.carrier is not None:
                attempt.carrier.attempts.discard(attempt)

    def _settled(self, job: _Job, future: asyncio.Future[Any]) -> None:
        """A job's future was cancelled by its owner: its queued or running attempt goes too."""
        if future.cancelled():
            self._queue.pop(job.key, None)
            if job.attempt is not None and job.attempt.task is not None:
                job.attempt.task.cancel()

    def _requeue(self, job: _Job) -> None:
        if self._stopped or job.future.done():
            return
        job.interrupts += 1
        self.counts["interrupted"] += 1
        self._queue[job.key] = job
        log.debug("background job %s deferred to a later call", job.key)

    # ------------------------------------------------------------------ waiting, stopping
    async def join(self, future: asyncio.Future[Any]) -> Any:
        """Wait for the job of ``future`` from inside a call; a job nobody is running runs here
        (in this call's context). Cancelling the wait never cancels the job of another call."""
        job = next((j for j in self._jobs.values() if j.future is future), None)
        while not future.done() and job is not None:
            if job.attempt is None:
                if self.live() is False:
                    raise RuntimeError("Plugin invocation has ended")
                carrier = _CARRIER.get()
                self._start(job, carrier if carrier is not None and carrier.open else None)
            attempt = job.attempt
            assert attempt is not None and attempt.task is not None
            own = attempt.carrier is None and self.live() is not None
            try:
                await asyncio.wait({future, attempt.task}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                if own:  # run by this wait alone, in its invocation: it ends with it
                    attempt.task.cancel()
                raise
        return await asyncio.shield(future)

    def cancel_queued(self, future: asyncio.Future[Any]) -> bool:
        """Cancel the job of ``future`` if no attempt of it is running (a due job made redundant)."""
        job = next((j for j in self._jobs.values() if j.future is future), None)
        if job is None or job.attempt is not None or future.done():
            return False
        future.cancel()
        return True

    def stop(self) -> None:
        """The installation was revoked: cancel every job and its future; refuse new ones."""
        self._stopped = True
        for job in self._jobs.values():
            if job.attempt is not None and job.attempt.task is not None:
                job.attempt.task.cancel()
            job.future.cancel()
        self._queue.clear()

    @property
    def stopped(self) -> bool:
        return self._stopped


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a failed job's exception as seen (whoever waits for it sees it too)."""
    if not future.cancelled():
        future.exception()
