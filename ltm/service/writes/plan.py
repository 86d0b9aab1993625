"""A plan: the steps of one mutation, built under its write locks and committed once.

A verb builds a plan inside ``async with plan:`` (which holds the plan's locks), reads what it must
under them, adds the steps, and commits: :meth:`Plan.commit` runs them as one all-or-nothing
mutation of the engine (:meth:`~.engine.WriteEngine.mutate`), or writes nothing when the plan has
no steps. Leaving the block releases the locks and then runs what follows a commit (the retire
cascade). A neighbour that writes with a verb (the review queue's candidate record) extends the
verb's plan with its own steps before the one commit, so both land or neither does.

The locks cannot be skipped: reading for a plan, adding to it and committing it outside its block
is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Protocol

from ...domain.scope import Scope
from ..locks import ScopeLocks
from .actor import Actor
from .expectations import Expectation


@dataclass
class WriteStep:
    """One host write of a mutation: its lock (the write scope it fences), what the store holds once
    it applied, how to apply it, how to take it back (idempotent; only multi-step mutations use it)
    and the audit entry it owes its scope's log (``(targets, summary)``), if any."""

    scope: Scope
    lock_key: str
    expect: list[Expectation]
    apply: Callable[[], Awaitable[Any]]
    undo: Callable[[], Awaitable[Any]] | None = None
    audit: tuple[list[str], str] | None = None
    audit_op: str = ""  # the audited operation when it is not the mutation's own (candidate.accept, ...)
    audit_reason: str = ""  # the audited reason when it is not the mutation's own
    erases: tuple[str, ...] = ()  # row ids it deletes: their copies are erased once committed (erasure.py)


class Mutator(Protocol):
    """What a plan commits through (the write engine)."""

    locks: ScopeLocks

    async def mutate(
        self,
        actor: Actor,
        operation: str,
        steps: Sequence[WriteStep],
        *,
        reason: str = "",
        verify: Callable[[], Awaitable[Any]] | None = None,
    ) -> None: ...


class PlanError(RuntimeError):
    """A plan used out of order (outside its locks, extended after its commit): a programming error."""


class Plan:
    """The steps of one audited mutation (``operation`` by ``actor``) under ``locks``."""

    def __init__(self, writes: Mutator, actor: Actor, operation: str, locks: Sequence[str], reason: str = "") -> None:
        self.writes = writes
        self.actor = actor
        self.operation = operation
        self.locks = list(locks)
        self.reason = reason
        self.steps: list[WriteStep] = []
        self.verify: Callable[[], Awaitable[Any]] | None = None  # a read-back before the audit
        self.committed = False
        self.sealed = ""  # why nothing may be added any more (a plan that writes nothing by design)
        self._after: list[Callable[[], Awaitable[None]]] = []
        self._held: AsyncExitStack | None = None

    async def __aenter__(self) -> Plan:
        if self._held is not None or self.committed:
            raise PlanError(f"{self.operation}: a plan is held once")
        stack = AsyncExitStack()
        await stack.enter_async_context(self.writes.locks.hold_all(self.locks))
        self._held = stack
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held.aclose()
        if self.committed and not isinstance(exc, asyncio.CancelledError):
            for follow in self._after:
                await follow()

    @property
    def held(self) -> bool:
        return self._held is not None

    def require_held(self) -> None:
        """Refuse to read for, extend or commit a plan outside ``async with plan:``."""
        if self._held is None:
            raise PlanError(f"{self.operation}: the plan's locks are not held")

    def add(self, *steps: WriteStep) -> None:
        """More writes that commit with this plan, all or nothing."""
        self.require_held()
        if self.committed or self.sealed:
            raise PlanError(f"{self.operation}: {self.sealed or 'the plan is committed'}")
        self.steps.extend(steps)

    def then(self, follow: Callable[[], Awaitable[None]]) -> None:
        """Run ``follow`` once the plan committed and its locks were released."""
        self._after.append(follow)

    async def commit(self) -> None:
        """Write the plan's steps as one mutation (none: nothing is written, nothing audited)."""
        self.require_held()
        if self.committed:
            raise PlanError(f"{self.operation}: a plan commits once")
        if self.steps:
            await self.writes.mutate(self.actor, self.operation, self.steps, reason=self.reason, verify=self.verify)
        self.committed = True
