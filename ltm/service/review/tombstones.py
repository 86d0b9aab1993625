"""Value tombstones: a person's decision that a value must not come back (a rejected candidate,
``forget --never``), per scope, keyed on the normalised value (:mod:`ltm.domain.tombstone`).

A tombstone holds no text: a hash, the reason, who, when, and the ids it came from. The review
queue's guard refuses a tombstoned value on every ``remember``, document ingest and import;
``forget --never`` records one in the same mutation as the delete (the retire pipeline,
:mod:`ltm.service.retire`). An admin can lift a tombstone. Storage:
``tomb/<kb>/<user_key>/<tombstone id>``, one record each.

Audience (issue 35): a tombstone records the audience of the memory it came from (a forgotten
episode's, a rejected candidate's) and is listed, shown, lifted and enforced only where that
audience reads (:func:`ltm.domain.audience.may_read`, :func:`ltm.domain.audience.write_audiences`), so a
private chat's decision and its reason never reach a group. A member's ``forget --never`` binds only
that member's own statements (:func:`ltm.domain.tombstone.value_key` with ``own``); an admin's binds
the value for the memory's audience.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from ...domain.actors import actor_record
from ...domain.audience import SHARED, may_read, tombstone_audience, write_audiences
from ...domain.errors import NotFoundError, TombstonedError
from ...domain.keys import kb_part
from ...domain.records import Record
from ...domain.scope import Scope
from ...domain.storage_keys import TOMB_PREFIX, l2_lock_key, owned_keys
from ...domain.tombstone import TOMBSTONE_ID_PREFIX, guard_keys, subject_of, value_key
from ..retire import RetireEvent
from ..writes import Actor, KvCites, WriteStep, backend, caller_of, need_l2, require_admin
from .records import ReviewPart, clean_reason

log = logging.getLogger(__name__)

TOMBSTONE_ID = re.compile(r"^" + TOMBSTONE_ID_PREFIX + r"[0-9a-f]{16}$")


@dataclass
class Tombstone(Record):
    id: str
    collection: str
    user_key: str
    subject: str  # the speaker of a first-person value, "" for the whole scope
    kind: str  # "rejected" | "forgotten"
    reason: str
    by: dict[str, Any]
    at: str
    sources: list[str] = field(default_factory=list)  # candidate / episode ids, newest last
    count: int = 1
    # who may read it (ltm.domain.audience.audience_of of the memory it came from); a record stored
    # before tombstones had one is shared, as it was enforced then
    audience: str = SHARED


class TombstoneBook(ReviewPart):
    """The tombstones of one service's scopes."""

    async def tombstone_for(self, scope: Scope, content: str, sender_id: str) -> Tombstone | None:
        """The tombstone that refuses ``content`` said by ``sender_id`` written in this scope, if
        any: a shared one, or one of the audience the statement would get (a private chat's)."""
        if not scope.collection:
            return None
        for tid in guard_keys(content, sender_id, write_audiences(scope)):
            raw = await self._read(self._tkey(scope, tid))
            if raw:
                return Tombstone.from_dict(raw)
        return None

    def refusal(self, tb: Tombstone) -> TombstonedError:
        return TombstonedError(
            f"the value was {tb.kind} ({tb.id})",
            key=f"review.error.tombstoned_{tb.kind}" if tb.kind in ("rejected", "forgotten") else None,
            tombstone=tb.id,
            kind=tb.kind,
            reason=tb.reason or "-",
            at=tb.at,
            by=str(tb.by.get("sender_id") or tb.by.get("surface") or "-"),
        )

    def record_step(
        self,
        scope: Scope,
        content: str,
        sender_id: str,
        kind: str,
        reason: str,
        actor: Actor,
        source: str,
        operation: str,
        *,
        audit: tuple[list[str], str] | None = None,
        audit_op: str = "",
        audience: str = SHARED,
        own: bool = False,
    ) -> tuple[WriteStep, str] | None:
        """The write that records (or re-records) the tombstone of a value, as one step of the
        mutation that decides it (a reject, a ``forget --never``), and its id. The record is read
        and merged when the step runs, under the tombstone's lock. Taking it back restores the old
        record only if nobody wrote it since; otherwise it removes just this decision's source
        (another decision, or a lift, that came in between stays). ``audience``: the memory's;
        ``own``: a member's decision about their own statement (keyed on them, whatever the words)."""
        tid = value_key(content, sender_id, audience, own=own)
        if not tid:
            return None
        key = self._tkey(scope, tid)
        lock = l2_lock_key(scope)
        before: list[bytes | None] = []  # what the record was, once read
        written: list[bytes] = []  # what this step wrote

        async def put(value: bytes | None) -> None:
            await self.service.writes.kv_put(lock, scope, operation, key, value)

        async def apply() -> None:
            async with self.locks.hold("tomb:" + key):
                old = await backend(self.service.kv.get(key), "review read")
                before[:] = [old]
                tb = Tombstone(
                    id=tid,
                    collection=scope.collection,
                    user_key=scope.user_key,
                    subject=str(sender_id or "") if own else subject_of(content, sender_id),
                    kind=kind,
                    reason=reason,
                    by=actor_record(actor),
                    at=self._now(),
                    sources=[source],
                    count=1,
                    audience=audience,
                )
                if old:
                    prev = Tombstone.from_dict(json.loads(old))
                    tb.sources = [*[s for s in prev.sources if s != source], source][-10:]
                    tb.count = prev.count + 1
                written[:] = [self._bytes(tb.to_dict())]
                await put(written[0])

        async def undo() -> None:
            if not before:  # never read, so never written
                return
            async with self.locks.hold("tomb:" + key):
                now = await backend(self.service.kv.get(key), "review read")
                if now is None:
                    return  # lifted meanwhile (or never written)
                if written and now == written[0]:
                    await put(before[0])
                    return
                tb = Tombstone.from_dict(json.loads(now))
                if source in tb.sources:
                    tb.sources = [s for s in tb.sources if s != source]
                    tb.count = max(1, tb.count - 1)
                    await put(self._bytes(tb.to_dict()))

        expect = [KvCites(key, source)]  # the decision's source is in the record once applied
        step = WriteStep(scope, lock, expect, apply, undo, audit=audit, audit_op=audit_op)
        return step, tid

    async def delete_kb(self, kb_id: str) -> int:
        """The knowledge base ``kb_id`` is gone: every tombstone of it goes too (no row of it is
        left for a value to come back to). How many went."""
        return await self._delete_kb_records(TOMB_PREFIX, "tombstone", kb_id)

    async def list_tombstones(self, scope: Scope, page: int = 1, page_size: int = 10) -> tuple[list[Tombstone], int]:
        """Tombstones of this scope this reader's audience may see, newest first (they are few:
        each is a person's decision)."""
        need_l2(scope)
        prefix = f"{TOMB_PREFIX}{kb_part(scope.collection)}/"
        items = []
        keys = await backend(self.service.kv.keys(prefix), "review keys")
        for k in owned_keys(scope, keys):  # exact owner: a launcher id extending this one is not this scope
            raw = await self._read(k)
            if raw:
                tb = Tombstone.from_dict(raw)
                if may_read(scope, tb.audience):  # another person's private decision stays theirs
                    items.append(tb)
        items.sort(key=lambda t: (t.at, t.id), reverse=True)
        start = (max(1, page) - 1) * page_size
        return items[start : start + page_size], len(items)

    async def lift_tombstone(self, scope: Scope, tombstone_id: str, actor: Actor, reason: str = "") -> Tombstone:
        """An admin lifts a tombstone: the value may be stored again. Audited. A memory admin's verb."""
        require_admin("tombstone", actor, self.service.settings)
        need_l2(scope)
        reason = clean_reason(reason)
        if not isinstance(tombstone_id, str) or not TOMBSTONE_ID.match(tombstone_id):
            raise NotFoundError(
                f"no tombstone {tombstone_id}", key="review.error.tombstone_missing", id=str(tombstone_id)
            )
        key = self._tkey(scope, tombstone_id)
        operation = "tombstone.lift"
        async with self.locks.hold("tomb:" + key):
            raw = await backend(self.service.kv.get(key), "review read")
            if not raw:
                raise NotFoundError(
                    f"no tombstone {tombstone_id}", key="review.error.tombstone_missing", id=tombstone_id
                )
            tb = Tombstone.from_dict(json.loads(raw))
            if not may_read(scope, tb.audience):  # as absent as it is from this reader's list
                raise NotFoundError(
                    f"no tombstone {tombstone_id}", key="review.error.tombstone_missing", id=tombstone_id
                )
            step = self.service.writes.kv_step(
                scope, operation, key, None, raw, audit=([tb.id], f"tombstone {tb.id} lifted")
            )
            await self.service.writes.mutate(actor, operation, [step], reason=reason)
        log.info("tombstone %s lifted in %s", tb.id, scope.user_key)
        return tb

    async def scrub_person_steps(self, scope: Scope, sender_id: str) -> list[WriteStep]:
        """A person's erasure (``forget-me``): the tombstones of this scope they decided or whose
        value is theirs keep their hash (the value stays refused where it was) but lose the reason,
        and the decider's id when it is theirs. One step per changed record; every audience."""
        if not sender_id or not scope.collection:
            return []
        prefix = f"{TOMB_PREFIX}{kb_part(scope.collection)}/"
        steps = []
        for k in owned_keys(scope, await backend(self.service.kv.keys(prefix), "review keys")):
            old = await backend(self.service.kv.get(k), "review read")
            if not old:
                continue
            tb = Tombstone.from_dict(json.loads(old))
            theirs = str(tb.by.get("sender_id") or "") == sender_id
            if not theirs and tb.subject != sender_id:
                continue
            if not tb.reason and not theirs:
                continue
            tb.reason = ""
            if theirs:
                tb.by = {"surface": str(tb.by.get("surface") or ""), "erased": True}
            audit = ([tb.id], f"tombstone {tb.id}: reason erased on request")
            steps.append(
                self.service.writes.kv_step(scope, "tombstone.scrub", k, self._bytes(tb.to_dict()), old, audit=audit)
            )
        return steps

    async def tombstone_steps(self, event: RetireEvent) -> list[WriteStep]:
        """``forget(..., never=True)``: a tombstone on each forgotten value, written in the same
        all-or-nothing mutation as the delete (audited ``tombstone.record``). It takes the forgotten
        memory's audience; a member's (not an admin's) binds only the member's own statements."""
        if not event.never or event.operation != "forget":
            return []
        admin = caller_of(event.actor, self.service.settings).admin
        steps = []
        for e in event.episodes:
            made = self.record_step(
                event.scope,
                e.content,
                e.sender_id,
                "forgotten",
                event.reason,
                event.actor,
                e.id,
                "episode.forget",
                audit_op="tombstone.record",
                audience=tombstone_audience(event.scope, e.audience),
                own=not admin,
            )
            if made is not None:
                step, tid = made
                step.audit = ([tid, e.id], f"forgot {e.id} for good")
                steps.append(step)
        return steps


def forget_tombstone_id(scope: Scope, content: str, sender_id: str, audience: str, admin: bool) -> str:
    """The id of the tombstone ``forget --never`` records on this memory (what the replies name)."""
    return value_key(content, sender_id, tombstone_audience(scope, audience), own=not admin)
