"""The write engine: every change to the memory is a list of :class:`~.plan.WriteStep` run by
:meth:`WriteEngine.mutate` (usually as a :class:`~.plan.Plan` committed once), with write fences,
a journal and recovery after a restart.

A step is one host write (a vector upsert or delete, one plugin-storage key), atomic by itself. It
names its write scope (``lock_key``: ``l2:<kb>:<user_key>`` or ``l1:<profile key>``), what the store
holds once it applied (typed :mod:`.expectations`), how to apply it, how to take it back
(multi-step mutations only) and the audit entry it owes its scope's log.

``mutate`` checks the fences of every lock (:mod:`.fences`), writes the journal entry
(:mod:`.journal`), runs the steps, optionally reads back, writes the owed audit entries and closes
the journal entry. The caller holds every lock (``engine.locks``). A deterministic failure of the
first write applied nothing; an unknown outcome (a timeout after dispatch, a lost connection, a
cancellation) fences the write scope: further writes there are refused until a person clears the
fence, because a late write could still land. Several steps are all or nothing: a failure takes the
applied steps back in reverse order.

The engine's parts: :attr:`WriteEngine.reads` (the reader every verb reads through),
:attr:`WriteEngine.fencing` and :attr:`WriteEngine.journal` (with recovery).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ...domain.backends import READBACK_DELAYS_S
from ...domain.errors import BackendError, FencedError, LtmError
from ...domain.filters import Criteria, scope_where
from ...domain.models import Episode
from ...domain.scope import Scope
from ...domain.storage_keys import l2_lock_key
from ...domain.text import check_text
from ...domain.timefields import now_utc
from ...ports import Embedder, KeyValueStore, VectorIndex, is_unknown_outcome
from ..audit import AuditLog
from ..background import Background
from ..locks import ScopeLocks
from ..readback import read_until
from ..recall_index import RecallIndex
from ..row_codec import stored_record
from .actor import Actor
from .errors import backend
from .expectations import EpisodeIs, Expectation, KvAbsent, KvHolds, episodes_are
from .fences import Fences
from .journal import Bookkeeping, Journal
from .plan import WriteStep
from .reads import Reader
from .stores import Stores

log = logging.getLogger(__name__)
T = TypeVar("T")

DELETE_BATCH = 2000


class WriteEngine:
    """The host writes, their steps and the one mutation over one installation's stores."""

    def __init__(
        self,
        kv: KeyValueStore,
        vectors: VectorIndex,
        index: RecallIndex,
        embedder: Callable[[Scope], Awaitable[Embedder]],
        clock: Callable[[], datetime] = now_utc,
        background: Background | None = None,
        delete_batch: int = DELETE_BATCH,
        on_erased: Callable[[Sequence[tuple[Scope, Sequence[str]]]], Awaitable[Any]] | None = None,
    ) -> None:
        self.stores = Stores(kv, vectors, clock)
        self.index = index
        self.background = background or Background()
        self.embedder = embedder
        self.locks = ScopeLocks()
        self.reads = Reader(lambda: self.stores.vectors)
        self.fencing = Fences(self.stores)
        self.journal = Journal(self.stores, self.fencing, self.reads, self.background)
        self.delete_batch = delete_batch  # ids per backend delete call
        # the waits of a read-back: a backend may show a write (or a delete) only a moment later
        self.readback_delays: tuple[float, ...] = READBACK_DELAYS_S
        # the erase of every copy of deleted rows (ltm/service/erasure.py), run once a mutation
        # whose steps delete rows committed; given by the service that composes the engine
        self.on_erased = on_erased

    # ------------------------------------------------------------------ the stores
    @property
    def kv(self) -> KeyValueStore:
        return self.stores.kv

    @property
    def vectors(self) -> VectorIndex:
        return self.stores.vectors

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.stores.clock

    @property
    def audit_log(self) -> AuditLog:
        return self.stores.audit_log

    async def audit(
        self,
        scope: Scope,
        actor: Actor,
        operation: str,
        targets: Sequence[str],
        summary: str,
        reason: str = "",
        op_id: str = "",
    ) -> None:
        """Append one entry to the scope's audit log (an event that is no mutation of its own)."""
        await self.stores.audit(scope, actor, operation, targets, summary, reason, op_id)

    # ------------------------------------------------------------------ host writes
    async def dispatch(self, lock_key: str, scope: Scope, operation: str, aw: Awaitable[T]) -> T:
        """Run one host write. An unknown outcome fences the scope; a deterministic failure does not."""
        try:
            return await aw
        except asyncio.CancelledError:
            self.index.invalidate(scope.collection, scope.user_key)  # the write may have landed
            await self.fencing.set_fence(lock_key, scope, operation, "cancelled after dispatch")
            raise
        except LtmError:
            raise
        except Exception as exc:
            if is_unknown_outcome(exc):
                self.index.invalidate(scope.collection, scope.user_key)
                await self.fencing.set_fence(lock_key, scope, operation, f"{type(exc).__name__}: {exc}")
                raise FencedError(str(exc), key="error.fenced_now", operation=operation) from exc
            log.warning("%s refused by the backend: %s", operation, exc)
            raise BackendError(f"{operation}: {exc}", key="error.backend", what=operation) from exc

    async def kv_put(self, lock_key: str, scope: Scope, operation: str, key: str, value: bytes | None) -> None:
        """One plugin-storage write (``None`` deletes), fenced on ``lock_key`` on an unknown outcome."""
        write = self.kv.set(key, value) if value is not None else self.kv.delete(key)
        await self.dispatch(lock_key, scope, operation, write)

    async def upsert(
        self, scope: Scope, episodes: Sequence[Episode], operation: str = "vector write", *, fence_check: bool = True
    ) -> None:
        """Embed and write episodes in ONE vector upsert (fenced on an unknown outcome). Taking back
        a step of a failed mutation writes with ``fence_check=False``: its own fence may be set."""
        lock_key = l2_lock_key(scope)
        if fence_check:
            await self.fencing.check_fence(lock_key)
        embedder = await self.embedder(scope)
        vectors = await backend(embedder.embed([e.content for e in episodes]), "embedding")
        if len(vectors) != len(episodes):
            raise BackendError("embedding count mismatch", key="error.backend", what="embedding")
        records = [stored_record(e, v) for e, v in zip(episodes, vectors, strict=True)]
        # the rows' seal keys are stored before the host write (ltm/service/sealing.py): a key that
        # cannot be stored sends nothing, so it fences nothing
        seal = getattr(self.vectors, "seal_records", None)
        sent = (await backend(seal(scope.collection, records), "storage write"))[0] if seal is not None else records
        async with self.index.writing(scope.collection, scope.user_key):  # its snapshot's stamp moves first
            await self.dispatch(lock_key, scope, operation, self.vectors.upsert(scope.collection, sent))
            for r in records:
                self.index.on_upsert(scope.collection, scope.user_key, r.id, r.document, r.metadata)

    async def delete_ids(self, scope: Scope, ids: Sequence[str], operation: str) -> None:
        """Delete rows of this scope by id through the one filter builder, in ONE backend call
        (fenced on an unknown outcome). More than ``delete_batch`` ids: :meth:`delete_steps`."""
        where = scope_where(scope, Criteria(statuses=None, ids=tuple(ids)))
        async with self.index.writing(scope.collection, scope.user_key):  # its snapshot's stamp moves first
            await self.dispatch(l2_lock_key(scope), scope, operation, self.vectors.delete(scope.collection, where))
            for rid in ids:
                self.index.on_delete(scope.collection, scope.user_key, rid)

    async def verify_absent(self, scope: Scope, ids: Sequence[str], operation: str) -> None:
        """Read back after a delete: the backend's returned count is not trusted (host Chroma says 0).
        The delete call's success is authoritative; a read-back that fails only leaves it unverified."""
        batch = self.delete_batch  # a filter of that many ids is what the delete itself sent

        async def present() -> list[str]:
            return [
                e.id
                for i in range(0, len(ids), batch)
                for e in await self.reads.fetch(scope, Criteria(statuses=None, ids=tuple(ids[i : i + batch])), limit=1)
            ]

        try:  # a delete may become visible a moment late: read again within the bound first
            still, _ = await read_until(present, lambda found: not found, self.readback_delays)
        except LtmError as exc:
            log.warning("%s applied; read-back failed, not verified: %s", operation, exc)
            return
        if still:
            raise BackendError("the record is still present after delete", key="error.delete_unverified")

    # ------------------------------------------------------------------ steps
    def rewrite_step(
        self,
        scope: Scope,
        updated: Sequence[Episode],
        originals: Sequence[Episode],
        operation: str,
        expect: list[Expectation],
        audit: tuple[list[str], str] | None,
        *,
        audit_op: str = "",
    ) -> WriteStep:
        """One vector write of existing rows of ``scope`` (``updated``), taken back by writing
        ``originals`` (the rows as read under the lock)."""
        return WriteStep(
            scope,
            l2_lock_key(scope),
            expect,
            apply=lambda: self.upsert(scope, list(updated), operation),
            undo=lambda: self.upsert(scope, list(originals), operation + ".undo", fence_check=False),
            audit=audit,
            audit_op=audit_op,
        )

    def restore_step(self, scope: Scope, episodes: Sequence[Episode], cause: str, operation: str) -> WriteStep:
        """One vector write that makes ``episodes`` active again, their ``superseded_by`` cleared
        (a removed summary giving its sources back)."""
        restored = [e.retagged(status="active", superseded_by="") for e in episodes]
        ids = [e.id for e in restored]
        audit = (ids[:50], f"{len(ids)} memories active again: {cause} no longer replaces them")
        return self.rewrite_step(
            scope, restored, episodes, operation, episodes_are(ids, "active"), audit, audit_op=operation
        )

    def kv_step(
        self,
        scope: Scope,
        operation: str,
        key: str,
        new: bytes | None,
        old: bytes | None,
        *,
        audit: tuple[list[str], str] | None = None,
        audit_op: str = "",
        expect: list[Expectation] | None = None,
        lock_key: str | None = None,
    ) -> WriteStep:
        """One plugin-storage write (``new``; ``None`` deletes) that belongs to the memory of
        ``scope``: fenced with its L2 writes (or ``lock_key``), taken back by restoring ``old``.
        ``expect`` defaults to exactly ``new`` (or absent)."""
        lock = lock_key or l2_lock_key(scope)
        if expect is None:
            expect = [KvHolds.of(key, new) if new is not None else KvAbsent(key)]
        return WriteStep(
            scope,
            lock,
            expect,
            apply=lambda: self.kv_put(lock, scope, operation, key, new),
            undo=lambda: self.kv_put(lock, scope, operation, key, old),
            audit=audit,
            audit_op=audit_op,
        )

    def insert_step(
        self,
        scope: Scope,
        new: Episode,
        rewritten: Sequence[Episode],
        originals: Sequence[Episode],
        operation: str,
        expect: list[Expectation],
        audit: tuple[list[str], str] | None,
    ) -> WriteStep:
        """One vector write of a NEW row with rewritten existing rows of ``scope`` (a statement
        and the rows it supersedes), taken back by deleting the new row and writing ``originals``
        (the rewritten rows as read under the lock) again."""

        async def undo() -> None:
            await self.delete_ids(scope, [new.id], operation + ".undo")
            if originals:
                await self.upsert(scope, list(originals), operation + ".undo", fence_check=False)

        return WriteStep(
            scope,
            l2_lock_key(scope),
            expect,
            apply=lambda: self.upsert(scope, [new, *rewritten], operation),
            undo=undo,
            audit=audit,
        )

    def new_row_steps(
        self,
        scope: Scope,
        episodes: Sequence[Episode],
        operation: str,
        audit: tuple[list[str], str] | None,
        chunk_size: int | None = None,
    ) -> list[WriteStep]:
        """The steps that write NEW rows (ids not in the store), ``chunk_size`` rows per upsert (all
        in one by default); each is taken back by deleting its ids. The first step owes the audit."""
        out: list[WriteStep] = []
        size = chunk_size or max(1, len(episodes))
        for i in range(0, len(episodes), size):
            chunk = list(episodes[i : i + size])
            ids = [e.id for e in chunk]
            out.append(
                WriteStep(
                    scope,
                    l2_lock_key(scope),
                    [EpisodeIs(e.id, e.status) for e in chunk],
                    apply=lambda chunk=chunk: self.upsert(scope, chunk, operation),
                    undo=lambda ids=ids: self.delete_ids(scope, ids, operation + ".undo"),
                    audit=audit if i == 0 else None,
                )
            )
        return out

    def delete_steps(
        self, scope: Scope, victims: Sequence[Episode], operation: str, audit: tuple[list[str], str] | None
    ) -> list[WriteStep]:
        """The steps that delete ``victims`` (rows of ``scope`` as read), ``delete_batch`` ids per
        backend call; each is taken back by writing its rows again. The first step owes the audit."""
        out: list[WriteStep] = []
        for i in range(0, len(victims), self.delete_batch):
            chunk = list(victims[i : i + self.delete_batch])
            ids = [e.id for e in chunk]
            out.append(
                WriteStep(
                    scope,
                    l2_lock_key(scope),
                    episodes_are(ids, "absent"),
                    apply=lambda ids=ids: self.delete_ids(scope, ids, operation),
                    undo=lambda chunk=chunk: self.upsert(scope, chunk, operation + ".undo", fence_check=False),
                    audit=audit if i == 0 else None,
                    erases=tuple(ids),
                )
            )
        return out

    # ------------------------------------------------------------------ mutate
    async def mutate(
        self,
        actor: Actor,
        operation: str,
        steps: Sequence[WriteStep],
        *,
        reason: str = "",
        verify: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        """One audited mutation: fence check, journal, the writes (fenced on an unknown outcome),
        an optional read-back, the audit entries, the journal closed. The caller holds every lock.

        One step is one host write, atomic by itself: a deterministic failure applied nothing (the
        journal is closed), an unknown outcome fences the scope and leaves the journal for
        :meth:`~.journal.Journal.recover`. Several steps (chunks, several scopes, a document index) are all or
        nothing: when one fails (or the read-back does), the steps already applied - and the
        failing one, if its outcome is unknown - are taken back with their ``undo`` in reverse
        order, so the store is in its before-state again. A fence set by the failing write stays
        (a late write could still land). If taking back fails too, every lock of the operation is
        fenced and the journal stays: recovery reports it."""
        check_text(reason or "", "reason")
        await self.journal.wait_recovered()
        locks = list(dict.fromkeys(s.lock_key for s in steps))
        for key in locks:
            await self.fencing.check_fence(key)
        await self.journal.settle_pending(locks)
        op_id = await self.journal.begin(actor, operation, steps)
        done = 0
        try:
            for step in steps:
                await step.apply()
                done += 1
            if verify is not None:
                await verify()
        except BaseException as exc:
            # Every host write goes through dispatch, which fences on an unknown outcome: without a
            # fence, the failing write was refused or never dispatched.
            fenced = [k for k in locks if await self.fencing.fence_of(k) is not None]
            if done == 0 and not fenced:
                await self.journal.close(op_id)  # nothing was applied
                raise
            if done == 0 and len(steps) == 1:
                raise  # one write, outcome unknown: fenced, and the journal stays for recover()
            applied = list(steps[: done + 1 if fenced and done < len(steps) else done])
            ok, cancelled = await self._take_back(operation, applied, exc)
            if ok:
                await self.journal.close(op_id)
            else:
                for key in locks:
                    if await self.fencing.fence_of(key) is None:
                        scope = next(s.scope for s in steps if s.lock_key == key)
                        await self.fencing.set_fence(key, scope, operation, "partly applied; taking back failed")
            if cancelled and not isinstance(exc, asyncio.CancelledError):
                raise asyncio.CancelledError from exc  # a cancellation during the taking back wins
            if not ok and not isinstance(exc, (asyncio.CancelledError, FencedError)):
                raise FencedError(str(exc), key="error.fenced_now", operation=operation) from exc
            raise
        await self.journal.finish(Bookkeeping(op_id, actor, operation, list(steps), reason, locks))
        erased = [(s.scope, s.erases) for s in steps if s.erases]
        if erased and self.on_erased is not None:  # the rows are gone: so is every copy of them
            await self.on_erased(erased)

    async def _take_back(self, operation: str, applied: Sequence[WriteStep], cause: BaseException) -> tuple[bool, bool]:
        """Undo ``applied`` in reverse order (all of them, even after a failure or a cancellation).
        Returns (every undo succeeded, a cancellation arrived meanwhile)."""
        log.warning("%s failed after %d of its writes (%s); taking them back", operation, len(applied), cause)
        ok, cancelled = True, False
        for step in reversed(applied):
            try:
                if step.undo is not None:
                    await step.undo()
            except asyncio.CancelledError:
                log.error("%s: taking back a write in %s was cancelled", operation, step.lock_key)
                ok, cancelled = False, True
            except Exception as exc:
                log.error("%s: taking back a write in %s failed: %s", operation, step.lock_key, exc)
                ok = False
            self.index.invalidate(step.scope.collection, step.scope.user_key)
        return ok, cancelled
