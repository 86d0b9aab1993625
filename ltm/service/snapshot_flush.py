"""The recall index's copies in plugin storage: read on a scope's first use, written a little after
a change, in the background, never on a turn's or a write's path.

With a key-value store, each scope's index is also kept in plugin storage
(:mod:`ltm.service.index_snapshot`) with the scope's stamp, and read, stamp and value in one round
trip, on the scope's first use. Every write of this process moves the stamp first
(:meth:`SnapshotFlusher.before_write`), so a snapshot older than any write is never used; a write
whose outcome is unknown leaves no snapshot of the scope until the next one. A failed snapshot write
is only logged: the snapshot is a cache.

The :class:`SnapshotFlusher` owns what is known of the stored copies (the stamp per scope, the
copies written, voided or waiting) and asks its :class:`Held` (the recall index) which scopes are
busy and what each holds now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from ..domain.errors import BackendError
from ..ports import KeyValueStore, is_connection_lost
from . import index_snapshot
from .background import Background
from .scope_index import ScopeIndex

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (collection, user key)


class Held(Protocol):
    """What the flusher asks of the index whose copies it writes."""

    def busy(self, key: Key) -> bool:
        """Whether a write or build of the scope is in flight (no copy is taken then)."""
        ...

    def current(self, key: Key) -> ScopeIndex | None:
        """The scope's index held now, if any."""
        ...


class SnapshotFlusher:
    """The stored copies of one recall index's scopes (see the module's docstring)."""

    def __init__(self, kv: KeyValueStore, background: Background, held: Held, delay: float = 2.0) -> None:
        self.store = index_snapshot.SnapshotStore(kv)
        self.background = background
        self.held = held
        self.delay = delay  # seconds after the last change: a burst of writes costs one snapshot
        self.counts = {"read": 0, "used": 0, "written": 0, "discarded": 0, "failed": 0, "rejected": 0}
        # the stamp this process last set or read per scope (None: unknown, no snapshot is written
        # until the next write moves it), stamps being moved, scopes whose write outcome was
        # unknown, scopes waiting for a snapshot write
        self._rejected: set[tuple[Key, str]] = set()  # malformed snapshots already logged
        self._stamps: dict[Key, str | None] = {}
        self._bumps: dict[Key, int] = {}
        self._overlap: set[Key] = set()
        self._tainted: set[Key] = set()
        self._pending: set[Key] = set()
        self._void: set[Key] = set()  # stored copy voided by a write, not yet replaced
        self._written: dict[Key, tuple[str, int, int]] = {}
        self._job: asyncio.Future[int] | None = None
        self._lock = asyncio.Lock()  # one flush at a time (see flush)

    # -------------------------------------------------------------- reads
    def known_absent(self, key: Key) -> bool:
        return self.store.known_absent(*key)

    async def read(self, key: Key, max_docs: int) -> tuple[str | None, index_snapshot.Loaded | None]:
        """The scope's stamp and its stored snapshot when one is valid for that stamp."""
        raw: bytes | None = None
        try:
            stamp, raw = await self.store.read(*key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the snapshot is a cache: the host answers instead
            log.warning("recall snapshot of %s/%s could not be read: %s", *key, exc)
            stamp, raw = None, None
        loaded = self._loaded(key, raw, stamp, max_docs)
        self.counts["read"] += 1
        if loaded is not None and stamp is not None:
            self.counts["used"] += 1
        return stamp, loaded

    def _loaded(self, key: Key, raw: bytes | None, stamp: str | None, max_docs: int) -> index_snapshot.Loaded | None:
        """The stored snapshot when it decodes completely and consistently for ``stamp``; else None
        (the host is listed and the next flush replaces the value). A malformed one is logged once
        per scope and stamp: it is a fault, where a snapshot of an older stamp is routine."""
        if not raw or stamp is None:
            return None
        try:
            return index_snapshot.load(raw, *key, stamp, max_docs)
        except index_snapshot.Rejected as exc:
            if exc.stale:
                log.debug("recall snapshot of %s/%s is older than its stamp: rebuilt from the host", *key)
            elif (key, stamp) not in self._rejected:
                self._rejected.add((key, stamp))
                self.counts["rejected"] += 1
                log.warning("recall snapshot of %s/%s ignored (%s): rebuilt from the host", *key, exc)
            return None

    async def read_stamp(self, key: Key) -> str | None:
        try:
            return await self.store.read_stamp(*key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # unknown stamp: this build is not snapshotted
            log.warning("recall snapshot stamp of %s/%s could not be read: %s", *key, exc)
            return None

    # -------------------------------------------------------------- what the index tells
    def installed(self, key: Key, idx: ScopeIndex, stamp_current: bool) -> None:
        """The index now holds ``idx`` for the scope; ``stamp_current``: no write of this process
        since its stamp was read."""
        if stamp_current:
            self._stamps[key] = idx.stamp
        if idx.from_snapshot:
            self._written[key] = (idx.stamp or "", id(idx), idx.version)  # storage holds this already
        else:
            self.schedule(key)

    def replaced(self, key: Key, old: ScopeIndex, new: ScopeIndex) -> None:
        """A refresh replaces ``old`` by ``new``: when both hold the same rows, the stored copy of
        ``old`` holds ``new``'s too (it is not written again)."""
        w = self._written.get(key)
        if w is not None and w[1:] == (id(old), old.version) and old.same_rows(new):
            self._written[key] = (w[0], id(new), new.version)

    async def before_write(self, key: Key) -> None:
        """Move the scope's stamp before a host write (a stamp that cannot be moved refuses the
        write: :class:`BackendError`, nothing sent); the stored copy is void from now on."""
        if self._bumps.get(key):
            self._overlap.add(key)  # two bumps in flight: which token the store keeps is unknown
        self._bumps[key] = self._bumps.get(key, 0) + 1
        token: str | None = None
        try:
            token = await self.store.bump(*key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("recall snapshot stamp of %s/%s could not be moved: %s", *key, exc)
            raise BackendError(f"recall snapshot stamp: {exc}", key="error.backend", what="storage write") from exc
        finally:
            self._bumps[key] -= 1
            overlapped = key in self._overlap
            if not self._bumps[key]:
                del self._bumps[key]
                self._overlap.discard(key)
            self._stamps[key] = None if token is None or overlapped else token
        self._tainted.discard(key)
        self._void.add(key)

    def write_failed(self, key: Key) -> None:
        """A write of the scope failed: its outcome may be unknown, no snapshot until the next one."""
        self._tainted.add(key)

    def drop_collection(self, collection: str) -> None:
        """A knowledge base is gone: its stamps are forgotten and its snapshots deleted in the background."""
        for key in [k for k in self._stamps if k[0] == collection]:
            self._stamps[key] = None
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to run it on
            asyncio.get_running_loop()
            store = self.store
            task = self.background.submit(("recall-drop", collection), lambda: store.drop_collection(collection))
            task.add_done_callback(_logged("dropping the recall snapshots of a knowledge base"))

    # -------------------------------------------------------------- writing the copies
    def schedule(self, key: Key) -> None:
        """Write (or discard) the scope's snapshot a little later, in the background."""
        self._pending.add(key)
        self._arm()

    def _arm(self) -> None:
        if self._job is not None and not self._job.done():
            return  # a flush is due, or running (it arms the next one for keys added meanwhile)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        job = self._job = self.background.submit("recall-snapshots", self._flush_pending, delay=max(0.0, self.delay))
        job.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Future[int]) -> None:
        _logged("writing recall snapshots")(task)
        if self._job is task:
            self._job = None
        if self._pending:
            self._arm()

    async def flush(self) -> int:
        """Write the snapshot of every scope changed since the last flush, now (normally run
        :attr:`delay` seconds after a change). Failures are logged, never raised: the snapshot is a
        cache. A scope with a write or build in flight waits for its end (a copy a write voided is
        deleted at once). Flushes run one at a time: one that starts while another runs waits for
        it, so when it returns every change before it started has been flushed. Returns the number
        of snapshots written."""
        if self._job is not None:
            self.background.cancel_queued(self._job)  # due but not running: this call writes it
        return await self._flush_pending()

    async def _flush_pending(self) -> int:
        async with self._lock:
            keys, written = list(self._pending), 0
            self._pending.clear()
            for key in keys:
                try:
                    written += await self._flush_one(key)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.counts["failed"] += 1
                    if is_connection_lost(exc):  # a restart of the plugin: the next instance builds its own
                        log.info("recall snapshots not written: the host connection is closed (%s)", exc)
                        break
                    log.warning("recall snapshot of %s/%s not written: %s", *key, exc)
            return written

    async def _flush_one(self, key: Key) -> int:
        if self.held.busy(key):
            # no new copy while a write or build runs (it schedules the scope again when it ends),
            # but a copy a write voided goes now: its text must not outlast this flush
            if key in self._void:
                await self._discard(key)
            return 0
        idx, stamp = self.held.current(key), self._stamps.get(key)
        if idx is not None and stamp is not None and key not in self._tainted and idx.only_active:
            if self._written.get(key) == (stamp, id(idx), idx.version):
                return 0
            value = idx.snapshot(stamp)  # taken synchronously: the content matches ``stamp``
            if len(value) <= index_snapshot.MAX_BYTES:
                self._written[key] = (stamp, id(idx), idx.version)
                self._void.discard(key)
                await self.store.write(*key, value)
                self.counts["written"] += 1
                return 1
        if key in self._void:  # a write of this process voided the stored copy: delete what it holds
            await self._discard(key)
        return 0

    async def _discard(self, key: Key) -> None:
        self._void.discard(key)
        self._written.pop(key, None)
        try:
            await self.store.discard(*key)
        except BaseException:
            self._void.add(key)  # still stored: the next flush of the scope tries again
            raise
        self.counts["discarded"] += 1


def _logged(what: str) -> Callable[[asyncio.Future[Any]], None]:
    def done(task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("%s failed: %s", what, task.exception())

    return done
