"""The journal of the mutations in flight, and the recovery of what a restart left half-done.

Journal record, plugin storage ``journal/<op_id>`` (UTF-8 JSON), written before the first write and
deleted once the audit entries are written::

    {"op_id": "<16 hex>", "operation": "episode.forget", "started_at": "<ISO-8601 UTC>",
     "actor": {"surface": "...", "sender_id": "...", "query_id": 1 | null},
     "parts": [{"lock_key": "l2:...", "scope": <Scope.describe()>,
                "expect": [<expectation>, ...],      # what the store holds once the step applied
                "audit": ["<target id>", ...] | null,  # the step owes an audit entry (its targets)
                "audit_op": "" | "tombstone.record"}]}  # the audited operation, when not the mutation's

The expectations are :mod:`.expectations`. :meth:`Journal.recover` reads every open entry after a
restart: all expectations met means the operation applied (its owed audit entries are written
once), none met means it never happened (dropped), anything else fences its scopes and is reported.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...domain.errors import BackendError
from ...domain.scope import Scope, audit_log_key
from ...domain.timefields import to_iso
from ..background import Background, checkpoint
from .actor import Actor
from .errors import backend
from .expectations import EpisodeGone, EpisodeIs, Expectation, expectation_of
from .fences import Fences
from .plan import WriteStep
from .reads import Reader
from .records import scope_of_record
from .stores import Stores

log = logging.getLogger(__name__)

JOURNAL_PREFIX = "journal/"


@dataclass
class Bookkeeping:
    """An applied mutation whose audit entries and journal close are still to be written."""

    op_id: str
    actor: Actor
    operation: str
    steps: list[WriteStep]
    reason: str
    locks: list[str]
    audited: set[int] = field(default_factory=set)
    tried: set[int] = field(default_factory=set)  # appends that failed: they may have landed
    started_at: str = ""


class Journal:
    """Open journal entries, the applied mutations whose bookkeeping is pending, and recovery."""

    def __init__(self, stores: Stores, fences: Fences, reads: Reader, background: Background) -> None:
        self.stores = stores
        self.fences = fences
        self.reads = reads
        self.background = background
        self._pending: dict[str, Bookkeeping] = {}  # op id -> applied, bookkeeping not yet written
        self._started: dict[str, str] = {}  # op id -> when its journal entry was written
        self._recovery: asyncio.Future[list[dict[str, Any]]] | None = None

    async def begin(self, actor: Actor, operation: str, steps: Sequence[WriteStep]) -> str:
        """Persist the intent of a mutation before its first write (the record of the module
        docstring). :meth:`recover` settles what a crash leaves."""
        op_id = uuid.uuid4().hex[:16]
        started_at = to_iso(self.stores.clock())
        entry = {
            "op_id": op_id,
            "operation": operation,
            "actor": actor.to_record(),
            "started_at": started_at,
            "parts": [
                {
                    "lock_key": s.lock_key,
                    "scope": s.scope.describe(),
                    "expect": [x.to_json() for x in s.expect],
                    "audit": list(s.audit[0][:50]) if s.audit else None,
                    "audit_op": s.audit_op,
                }
                for s in steps
            ],
        }
        await backend(
            self.stores.kv.set(JOURNAL_PREFIX + op_id, json.dumps(entry, ensure_ascii=False).encode()), "journal write"
        )
        if len(self._started) > 10_000:  # entries of mutations that never reached finish (refused, cancelled)
            self._started.clear()
        self._started[op_id] = started_at
        return op_id

    async def finish(self, book: Bookkeeping) -> bool:
        """Audit (one entry per step that owes one, each once), then close the journal entry.
        True when done. On a failure the operation stays pending: the next write to one of its
        scopes finishes it first (:meth:`settle_pending`), a restart leaves it to :meth:`recover`.
        An append that failed may still have landed (a timeout after the write, a failure after the
        entry's chunk was stored): before writing it again the log is read for it."""
        book.started_at = book.started_at or self._started.pop(book.op_id, "")
        try:
            for n, s in enumerate(book.steps):
                if s.audit and n not in book.audited:
                    op = s.audit_op or book.operation
                    why = s.audit_reason or book.reason
                    if n in book.tried and await self._audited(s.scope, book.op_id, op, book.started_at):
                        book.audited.add(n)
                        continue
                    book.tried.add(n)
                    await self.stores.audit(s.scope, book.actor, op, s.audit[0], s.audit[1], why, op_id=book.op_id)
                    book.audited.add(n)
            await self.stores.kv.delete(JOURNAL_PREFIX + book.op_id)
        except Exception as exc:
            log.warning("%s applied, its audit/journal bookkeeping is pending: %s", book.operation, exc)
            self._pending[book.op_id] = book
            return False
        self._pending.pop(book.op_id, None)
        return True

    async def settle_pending(self, locks: Sequence[str]) -> None:
        """Before a write: finish the bookkeeping of an earlier applied operation on the same
        scopes, so its journal never outlives a change it could be misjudged by. Refuses the write
        (nothing applied) while that bookkeeping still fails."""
        for book in [b for b in self._pending.values() if set(b.locks) & set(locks)]:
            if not await self.finish(book):
                raise BackendError(
                    f"the audit entry of an earlier {book.operation} is not recorded yet",
                    key="error.backend",
                    what="audit write",
                )

    async def close(self, op_id: str) -> None:
        self._started.pop(op_id, None)
        try:
            await self.stores.kv.delete(JOURNAL_PREFIX + op_id)
        except Exception as exc:
            log.warning("could not close journal %s: %s", op_id, exc)

    # ------------------------------------------------------------------ recovery
    def start_recovery(self) -> asyncio.Future[list[dict[str, Any]]]:
        """Run :meth:`recover` in the background (the plugin answers the host at once after a
        restart; :mod:`.background` runs it inside a live call); every write waits for it first
        (:meth:`wait_recovered`), reads do not."""
        if self._recovery is None:
            self._recovery = self.background.submit("journal-recovery", self._recover_logged)
        return self._recovery

    def stop_recovery(self) -> None:
        """Cancel a background recovery still running (its installation was revoked)."""
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()

    async def _recover_logged(self) -> list[dict[str, Any]]:
        try:
            report = await self.recover()
        except Exception:
            log.exception("recovery of half-finished operations failed; they stay in the journal")
            return []
        for outcome in report:
            log.warning("recovered %s (%s): %s", outcome["op_id"], outcome["operation"], outcome["state"])
        return report

    async def wait_recovered(self) -> None:
        """Until the background recovery settled the journal: a write racing it could change a
        state recovery is still judging. Shielded: a cancelled write never cancels recovery."""
        task = self._recovery
        if task is not None and not task.done():
            await self.background.join(task)  # run here when no other call is running it

    @property
    def recovering(self) -> bool:
        return self._recovery is not None and not self._recovery.done()

    async def recover(self) -> list[dict[str, Any]]:
        """After a restart: settle every open journal entry. An operation whose expected state is
        fully present is completed (each owed audit entry written once); one with no trace is
        dropped (it was never acknowledged); a partial one fences its scopes and is reported."""
        report: list[dict[str, Any]] = []
        for key in sorted(await self.stores.kv.keys(JOURNAL_PREFIX)):
            await checkpoint()  # between entries: a closing call may hand the rest to the next one
            raw = await self.stores.kv.get(key)
            if not raw:
                continue
            entry = json.loads(raw)
            parts = [
                (p, scope_of_record(p["scope"]), [expectation_of(x) for x in p.get("expect") or []])
                for p in entry["parts"]
            ]
            actor = Actor(surface="recovery", sender_id=str(entry.get("actor", {}).get("sender_id") or ""))
            # a step that expects nothing checkable (a re-joined link) does not decide the state
            states = {await self.expected_state(scope, expect) for _, scope, expect in parts if expect}
            state = states.pop() if len(states) == 1 else "partial" if states else "applied"
            outcome = {"op_id": entry["op_id"], "operation": entry["operation"], "state": state}
            if state == "applied":
                for p, scope, expect in parts:
                    if p.get("audit") is None:
                        continue
                    op = p.get("audit_op") or entry["operation"]
                    if not await self._audited(scope, entry["op_id"], op, str(entry.get("started_at") or "")):
                        targets = p["audit"] or [x.target for x in expect][:50]
                        done = "completed after restart"
                        await self.stores.audit(scope, actor, op, targets, done, op_id=entry["op_id"])
                await self.stores.kv.delete(key)
            elif state == "not_applied":
                await self.stores.kv.delete(key)
            else:
                for lock_key, scope in {p["lock_key"]: scope for p, scope, _ in parts}.items():
                    await self.fences.set_fence(lock_key, scope, entry["operation"], "half-finished before restart")
            report.append(outcome)
            log.warning("recovered operation %s (%s): %s", entry["op_id"], entry["operation"], state)
        # on a backend that drops metadata, the two halves of the rows (vectors, metadata) are
        # compared by file id once the journal is settled, before any write (ltm/service/sidecar.py)
        reconcile = getattr(self.stores.vectors, "reconcile_all", None)
        if callable(reconcile):
            try:
                await reconcile()
            except Exception as exc:  # the next recovery tries again; what it would clean is invisible
                log.warning("reconciling vectors and metadata after a restart failed: %s", exc)
        return report

    async def _audited(self, scope: Scope, op_id: str, operation: str, since: str) -> bool:
        """Whether the scope's log holds the entry of ``operation`` by ``op_id`` (newest first, down
        to the entries older than ``since``, when the operation started)."""
        page = 1
        while True:
            entries, total = await self.stores.audit_log.page(audit_log_key(scope), page, 100)
            for e in entries:
                if ((e.get("extra") or {}).get("op_id"), e.get("operation")) == (op_id, operation):
                    return True
            if not entries or page * 100 >= total or (since and str(entries[-1].get("at") or "") < since):
                return False
            page += 1

    async def expected_state(self, scope: Scope, expect: Sequence[Expectation]) -> str:
        """``applied`` when the store meets every expectation, ``not_applied`` when it meets none,
        else ``partial``."""
        ids = [x.id for x in expect if isinstance(x, (EpisodeIs, EpisodeGone))]
        found = await self.reads.fetch_ids(scope, ids) if ids else {}
        hits = misses = 0
        for x in expect:
            if isinstance(x, (EpisodeIs, EpisodeGone)):
                ok = x.met_by(found.get(x.id))
            else:
                ok = x.met_by(await self.stores.kv.get(x.key))
            hits, misses = hits + ok, misses + (not ok)
        if misses == 0:
            return "applied"
        return "not_applied" if hits == 0 else "partial"
