"""L2 episodes: remember, correct (supersede), confirm, archive/restore, forget, bulk delete, list.

Every verb checks the privilege policy itself, holds the scope's write lock (``l2:<kb>:<user_key>``)
and writes through :meth:`WriteEngine.mutate`; ``remember`` builds a :class:`RememberPlan` that a
neighbour (the review queue, consolidation) may extend before its one commit. Every read goes
through the one scope filter (:meth:`ltm.service.writes.Reader.fetch`). A retirement (a
correction, an archive, a forget, a bulk delete) writes with it what the retire pipeline adds in
the same all-or-nothing mutation, and runs the pipeline's cascades once it committed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..domain import date_resolution as date_rules
from ..domain import expiry as expiry_rules
from ..domain import privilege as policy
from ..domain import refs
from ..domain import restate as restate_rule
from ..domain.audience import audience_of
from ..domain.errors import ConflictError, NotFoundError, PermissionDenied, ValidationError
from ..domain.filters import ACTIVE, STATUSES, Criteria, scope_where
from ..domain.models import Episode, EpisodeInput, build_episode, content_hash, is_record_id, validate_episode_input
from ..domain.scope import Scope
from ..domain.storage_keys import l2_lock_key
from ..domain.timefields import parse_instant, to_iso, ts
from ..domain.vocabulary import listed_statuses
from . import content_gate as gate
from .consent import require_consent
from .retire import RetireEvent, RetirePipeline
from .scope_index import ScopeIndex
from .settings import Settings
from .writes.actor import Actor, caller_of, require_admin
from .writes.engine import WriteEngine
from .writes.errors import need_l2
from .writes.expectations import EpisodeIs, episodes_are
from .writes.plan import Plan, PlanError

log = logging.getLogger(__name__)

# A scope this large is not read whole to resolve a short reference: the whole id is asked for.
REF_SCAN_LIMIT = 20_000

# A remember identical to an active memory of the same scope and speaker stored less than this long
# ago is the natural retry of a write whose answer was lost (a plugin restart during the turn, a
# timeout): it returns the existing memory instead of storing a second copy. Longer than a turn
# plus the host's restart of the plugin, short enough that restating a fact days later still counts.
REMEMBER_RETRY_WINDOW_S = 600.0
# A restatement is looked for among this many active rows of the speaker, and embedded against at
# most this many that pass the cheap guards (ltm.domain.restate).
RESTATE_SCAN = 2000
RESTATE_EMBED = 16
SEEN_REFS = 10  # the evidence a reinforced memory keeps: the last source refs that restated it

# Statements whose own words may end their validity ("until Friday"): what a person or the model says
# now. An import or a document restores records as they were written (an open end stays open), and a
# summary takes its sources' validity.
EXPIRING_ORIGINS: tuple[str, ...] = ("tool", "command", "candidate", "console")
# The key in an episode's ``extra`` naming the words that set its ``valid_until`` (absent when the
# caller gave one, or none was set).
EXPIRES_BY = "expires_by"
# The key in an episode's ``extra`` naming the stored memory it refines: a statement that keeps all of
# that memory and adds to it ("allergic to penicillin" -> "allergic to penicillin and latex";
# ltm.domain.restate.refines). Both stay active: the refinement is a new fact, not a correction.
REFINES = "refines"


class Remembered(tuple):
    """What :meth:`Episodes.remember` returns: unpacks as ``(episode, superseded)``.
    ``existing`` is True when an identical memory stored moments ago was returned (a retry);
    ``already_known`` when the statement restated an active memory, which was reinforced instead."""

    existing: bool
    already_known: bool

    def __new__(
        cls, episode: Episode, superseded: list[Episode], existing: bool = False, already_known: bool = False
    ) -> Remembered:
        self = super().__new__(cls, (episode, superseded))
        self.existing = existing
        self.already_known = already_known
        return self

    @property
    def expires_by(self) -> str:
        """The words of the statement that set its ``valid_until``, or "" (the caller set it, or none)."""
        return str(self[0].extra.get(EXPIRES_BY) or "")

    @property
    def episode(self) -> Episode:
        return self[0]


@dataclass
class EpisodePage:
    items: list[Episode]
    page: int
    page_size: int
    has_more: bool


# Refuses (raises) or parks a statement before anything is written: the review queue's guard
# (tombstones, conflicts).
StatementGuard = Callable[[Scope, EpisodeInput, Actor, str], Awaitable[None]]


class Episodes:
    def __init__(
        self,
        writes: WriteEngine,
        settings: Callable[[], Settings],
        scope_index: Callable[[Scope], Awaitable[ScopeIndex]],
        *,
        guard: StatementGuard | None = None,
        retire: RetirePipeline | None = None,
    ) -> None:
        self.writes = writes
        self._settings = settings
        self._scope_index = scope_index
        # the rules of the neighbours, given by the service that makes them (MemoryService): the
        # review queue's guard and the retire pipeline (its tombstones, consolidation's rules)
        self.guard = guard
        self.retire = retire if retire is not None else RetirePipeline()

    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """Matching episodes of this scope, any status the criteria name (the one scope filter)."""
        return await self.writes.reads.fetch(scope, criteria, limit)

    def plan_remember(
        self, scope: Scope, raw: dict[str, Any], actor: Actor, *, origin: str = "tool", said_at: str | None = None
    ) -> RememberPlan:
        """The plan that stores one statement (validated now, before any lock): see
        :class:`RememberPlan`. ``said_at``: when the statement was made, if not now and not its
        ``event_at`` (a reviewed candidate's): the time its own words ("until Friday") are read at."""
        need_l2(scope)
        data = validate_episode_input(raw)
        screened = gate.screen_episode(gate.path_of_origin(origin), data)  # content and tags
        if data.status != "active":
            raise ValidationError("new memories are active", key="error.status", value=data.status)
        expires_by = bound_by_words(data, origin, said_at, self.writes.clock)
        plan = RememberPlan(self, scope, data, actor, origin, expires_by)
        # instruction-like: parked by the review queue's guard where the gate says park; stored
        # flagged where it says flag, or where no queue can park it
        plan.flags = screened.flags if screened.action == gate.FLAG or self.guard is None else []
        plan.dates = resolved_dates(data, said_at, self.writes.clock)
        return plan

    async def remember(self, scope: Scope, raw: dict[str, Any], actor: Actor, *, origin: str = "tool") -> Remembered:
        """Store one episode; optional ``supersedes`` ids (active, same scope, same speaker) become
        superseded in the same vector write. Statement guards (tombstones, conflict detection) run
        first. Returns (new episode, superseded episodes); see :class:`RememberPlan` for a restated
        fact (reinforced) and a retry (the memory already stored is returned)."""
        plan = self.plan_remember(scope, raw, actor, origin=origin)
        async with plan:
            await plan.commit()
        return plan.remembered

    async def screen_statement(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """Run the statement guards on one statement about to be written by a path that does not
        go through a :class:`RememberPlan` (document ingest, import). Raises what a guard raises."""
        await require_consent(self.writes.kv, scope.bot_uuid, scope.sender_id)  # opted out: nothing stored
        if self.guard is not None:
            await self.guard(scope, data, actor, origin)

    async def confirm_episode(self, scope: Scope, episode_id: str, actor: Actor, reason: str = "") -> Episode:
        """A person confirms an active memory: its confidence becomes ``confirmed`` (the only way an
        inference or an unverified statement is lifted; recall never lifts it). Audited once;
        confirming a confirmed memory changes nothing. A memory admin's verb."""
        need_l2(scope)
        require_admin("confirm", actor, self._settings())
        async with self.writes.locks.hold(l2_lock_key(scope)):
            episode = await self.get_episode(scope, episode_id)
            if episode.status != "active":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="review.error.confirm_status", status=episode.status
                )
            if episode.confidence == "confirmed":
                return episode
            at = to_iso(self.writes.clock())
            by = actor.operator or actor.sender_id or actor.surface
            extra = {**episode.extra, "confirmed_by": by, "confirmed_at": at}
            updated = episode.retagged(confidence="confirmed", extra=extra)
            step = self.writes.rewrite_step(
                scope,
                [updated],
                [episode],
                "episode.confirm",
                [EpisodeIs(episode.id, "active", confidence="confirmed")],
                ([episode.id], f"confirmed {episode.id} (was {episode.claim_type}/{episode.confidence})"),
            )
            await self.writes.mutate(actor, "episode.confirm", [step], reason=reason)
        log.info("confirm: %s in %s", episode.id, scope.user_key)
        return updated

    async def resolve(self, scope: Scope, ids: Sequence[str]) -> list[str]:
        """``ids`` with each short reference (``4f2a1``, as the memory block shows it) replaced by
        the whole id it names: the one row of this scope, in any status, whose id starts with it
        (:mod:`ltm.domain.refs`). Whole ids pass unchanged, unread. A reference that names no row,
        or several, is refused before anything else happens: it is never guessed."""
        short = [i for i in ids if isinstance(i, str) and refs.is_short_ref(i)]
        if not short:
            return list(ids)
        rows = await self.writes.reads.fetch(scope, Criteria(statuses=None), limit=REF_SCAN_LIMIT)
        if len(rows) >= REF_SCAN_LIMIT:
            raise ValidationError("scope too large for a short reference", key="error.ref_whole_id", id=short[0])
        held = [e.id for e in rows]
        whole: dict[str, str] = {}
        for ref in short:
            found = refs.matching(ref, held)
            if not found:
                raise NotFoundError(f"no memory {ref} in this scope", key="error.not_found", id=ref)
            if len(found) > 1:
                raise ValidationError(f"{ref} names {len(found)} memories", key="error.ref_ambiguous", id=ref)
            whole[ref] = found[0]
        return [whole.get(i, i) if isinstance(i, str) else i for i in ids]

    async def get_episode(self, scope: Scope, episode_id: str) -> Episode:
        if isinstance(episode_id, str) and refs.is_short_ref(episode_id):
            episode_id = (await self.resolve(scope, [episode_id]))[0]
        if not is_record_id(episode_id):  # names no record; never sent to a backend that may choke on it
            raise NotFoundError("no such memory in this scope", key="error.not_found", id=str(episode_id))
        found = await self.writes.reads.fetch(scope, Criteria(statuses=None, ids=(str(episode_id),)), limit=1)
        if not found:
            raise NotFoundError(f"no memory {episode_id} in this scope", key="error.not_found", id=episode_id)
        return found[0]

    async def list_episodes(
        self,
        scope: Scope,
        *,
        statuses: Sequence[str] | None = ACTIVE,
        page: int = 1,
        page_size: int = 10,
        sender_id: str | None = None,
        event_from_ts: float | None = None,
        event_until_ts: float | None = None,
        as_of_ts: float | None = None,
    ) -> EpisodePage:
        """A page of episodes, newest first. Pages through the backend; never loads other scopes.
        ``as_of_ts``: only the ones valid at that instant; the default statuses then are the
        as-of ones (active and superseded: what was true then)."""
        page = max(1, int(page))
        page_size = max(1, min(100, int(page_size)))
        statuses = listed_statuses(statuses, as_of=as_of_ts is not None)
        crit = Criteria(
            statuses=tuple(statuses) if statuses else None,
            sender_id=sender_id,
            event_from_ts=event_from_ts,
            event_until_ts=event_until_ts,
            as_of_ts=as_of_ts,
        )
        start = (page - 1) * page_size
        if crit.statuses == ACTIVE:  # the scope's index orders its active rows: read only the page
            idx = await self._scope_index(scope)
            if idx.complete:
                ordered = idx.matching_ids(scope_where(scope, crit))
                want = ordered[start : start + page_size]
                found = await self.writes.reads.fetch(scope, Criteria(statuses=None, ids=tuple(want))) if want else []
                got = {e.id: e for e in found}
                items = [got[i] for i in want if i in got and got[i].status == "active"]
                if len(items) == len(want):
                    return EpisodePage(items, page, page_size, len(ordered) > start + page_size)
                self.writes.index.invalidate(scope.collection, scope.user_key)  # changed by another process
        rows = await self.writes.reads.fetch(scope, crit)
        rows.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        return EpisodePage(rows[start : start + page_size], page, page_size, len(rows) > start + page_size)

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for e in await self.writes.reads.fetch(scope, Criteria(statuses=None)):
            counts[e.status] = counts.get(e.status, 0) + 1
        return counts

    async def forget(
        self, scope: Scope, episode_id: str, actor: Actor, reason: str = "", *, never: bool = False
    ) -> Episode:
        """Delete one episode of this scope from the vector index, verified by reading back. The
        speaker's own, or anyone's for a memory admin (:func:`ltm.domain.privilege.may_change_record`).

        One mutation: the delete, plus what the retire pipeline commits with it - with ``never`` a
        tombstone on the value (refused before anything happens when there is no tombstone book),
        and the sources a removed summary gives back. Then the pipeline's cascade removes the
        summaries derived from it and the pending proposals over it."""
        need_l2(scope)
        if never:
            self.retire.require_tombstones()
        operation = "episode.forget"
        async with self.writes.locks.hold(l2_lock_key(scope)):
            episode = await self.get_episode(scope, episode_id)
            if not policy.may_change_record(caller_of(actor, self._settings()), episode.sender_id):
                raise PermissionDenied(f"{episode.id} is not the caller's", key="policy.error.forget", id=episode.id)
            event = RetireEvent(scope, "forget", [episode], actor, reason, never=never)
            steps = self.writes.delete_steps(scope, [episode], operation, ([episode.id], f"forgot {episode.id}"))
            steps += await self.retire.steps(event)  # the tombstone, the sources a summary gives back
            verify = lambda: self.writes.verify_absent(scope, [episode.id], operation)  # noqa: E731
            await self.writes.mutate(actor, operation, steps, reason=reason, verify=verify)
        log.info("forget: %s in %s", episode.id, scope.user_key)
        await self.retire.after(event)  # derived summaries and pending proposals go
        return episode

    async def set_status(self, scope: Scope, episode_id: str, status: str, actor: Actor, reason: str = "") -> Episode:
        """Archive or restore (lifecycle change; the row keeps its own scope keys). A memory admin's verb."""
        if status not in ("archived", "active"):
            raise ValidationError("status: archived or active", key="error.status", value=status)
        need_l2(scope)
        require_admin("archive" if status == "archived" else "restore", actor, self._settings())
        async with self.writes.locks.hold(l2_lock_key(scope)):
            episode = await self.get_episode(scope, episode_id)
            if status == "archived" and episode.status != "active":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="error.archive_status", status=episode.status
                )
            if status == "active" and episode.status != "archived":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="error.restore_status", status=episode.status
                )
            # Restoring undoes the archive: a record that had been superseded before it was archived
            # (consolidation archives superseded records) goes back to superseded, never to active.
            target = "superseded" if status == "active" and episode.superseded_by else status
            updated = episode.retagged(status=target)
            op = "episode.archive" if status == "archived" else "episode.restore"
            audit = ([episode.id], f"{op.split('.')[1]} {episode.id}")
            step = self.writes.rewrite_step(scope, [updated], [episode], op, episodes_are([episode], target), audit)
            event = RetireEvent(scope, "archive", [episode], actor, reason)
            extra = await self.retire.steps(event) if status == "archived" else []
            await self.writes.mutate(actor, op, [step, *extra], reason=reason)
        log.info("status %s -> %s in %s", episode.id, status, scope.user_key)
        if status == "archived":
            await self.retire.after(event)
        return updated

    async def bulk_delete(self, scope: Scope, criteria: Criteria, actor: Actor, reason: str = "", tag: str = "") -> int:
        """Delete every episode of this scope matching ``criteria`` (and ``tag``); returns the count
        that was present before and is gone after (read back). All or nothing: a delete of more than
        ``delete_batch`` rows is several backend calls, and a failure in a later one writes the
        earlier ones back. The retire pipeline's writes commit with it; its cascade follows. A memory
        admin's verb (the cascade's own :meth:`delete_derived` follows an allowed removal)."""
        require_admin("delete", actor, self._settings())
        return await self._delete_matching(scope, criteria, actor, reason, tag, cascade=True)

    async def delete_derived(self, scope: Scope, ids: Sequence[str], actor: Actor, reason: str) -> int:
        """The cascade's own delete (summaries derived from a removed source): like
        :meth:`bulk_delete`, with the retire pipeline's writes (a summary gives its other sources
        back), but without running the cascade again."""
        return await self._delete_matching(scope, Criteria(statuses=None, ids=tuple(ids)), actor, reason, cascade=False)

    async def erase_matching(self, scope: Scope, criteria: Criteria, actor: Actor, reason: str = "") -> int:
        """The delete of :meth:`.erasure.Erasure.erase_episodes` (which checked the caller may change
        each row): :meth:`bulk_delete` without its admin rule, the cascade included."""
        return await self._delete_matching(scope, criteria, actor, reason, cascade=True, operation="episode.erase")

    async def _delete_matching(
        self,
        scope: Scope,
        criteria: Criteria,
        actor: Actor,
        reason: str,
        tag: str = "",
        *,
        cascade: bool,
        operation: str = "episode.bulk_delete",
    ) -> int:
        need_l2(scope)
        async with self.writes.locks.hold(l2_lock_key(scope)):
            victims = [e for e in await self.writes.reads.fetch(scope, criteria) if not tag or tag in e.tags]
            ids = [e.id for e in victims]
            if not ids:
                return 0
            event = RetireEvent(scope, "bulk_delete", victims, actor, reason)
            steps = self.writes.delete_steps(scope, victims, operation, (ids[:50], f"deleted {len(ids)} memories"))
            await self.writes.mutate(
                actor,
                operation,
                steps + await self.retire.steps(event),
                reason=reason,
                verify=lambda: self.writes.verify_absent(scope, ids, operation),
            )
        log.info("bulk delete in %s: %d", scope.user_key, len(ids))
        if cascade:
            await self.retire.after(event)
        return len(ids)


def bound_by_words(data: EpisodeInput, origin: str, said_at: str | None, now: Callable[[], datetime]) -> str:
    """Set ``data.valid_until`` from the statement's own words when the caller gave none
    (:mod:`ltm.domain.expiry`), read at the statement's time (its ``event_at``, else ``said_at``
    - when a reviewed candidate was said -, else ``now()``; UTC); returns the words that set it,
    or "". A ``valid_from`` at or after that end keeps it open."""
    if data.valid_until is not None or origin not in EXPIRING_ORIGINS:
        return ""
    when = data.event_at or said_at
    at = parse_instant(when, "said_at") if when else now()
    found = expiry_rules.expiry_of(data.content, at)
    if found is None:
        return ""
    until = to_iso(found.until)
    if data.valid_from is not None and ts(data.valid_from, 0.0) >= found.until.timestamp():
        return ""
    data.valid_until = until
    return found.phrase


def resolved_dates(data: EpisodeInput, said_at: str | None, now: Callable[[], datetime]) -> list[str]:
    """The statement's relative dates ("yesterday", "上周") resolved to absolute ones
    (:mod:`ltm.domain.date_resolution`), read at the same instant as its expiry words: kept in
    the episode's ``extra`` beside its verbatim text, for the lexical leg and the time rules."""
    when = data.event_at or said_at
    at = parse_instant(when, "said_at") if when else now()
    return date_rules.encode(date_rules.resolve_dates(data.content, at))


class RememberPlan(Plan):
    """The plan of one ``remember``, under the scope's write lock (``async with plan:``).

    Before it settles, a neighbour may shape it: :meth:`link` its lineage (kept in the episode's
    ``extra``), narrow who may read it (:meth:`for_audience`: a summary takes its sources'), name
    the active memories it is :meth:`replacing` as a whole (a reviewed summary's sources:
    superseded by it in the same vector write, like ``supersedes``, checked under the lock the
    same way, but chosen by a person's review, and announced to the retire listeners as
    ``consolidate``), or mark it :meth:`reviewed` (a person read it: the guards do not run again).

    :meth:`settle` reads the store and decides what the plan writes (:attr:`remembered`):

    - a retry: a plain plan (no lineage) identical to an active memory of the same scope, speaker
      and audience (short ids resolved first) stored within :data:`REMEMBER_RETRY_WINDOW_S`
      returns that memory (``existing``) and commits nothing - no write, no audit, even while the
      scope is fenced: that is how a write whose outcome was unknown is found;
    - a restatement (no ``supersedes``, nothing replaced) of an active memory reinforces it
      (``already_known``, operation ``episode.reinforce``): no new row;
    - otherwise the new episode, superseding what it names, after the statement guards.

    Then the neighbour may :meth:`~ltm.service.writes.Plan.add` its own steps (the review queue's
    candidate record), which commit with the plan's, all or nothing. Once committed and the lock
    released, the superseded and replaced memories are announced to the retire pipeline."""

    def __init__(
        self, episodes: Episodes, scope: Scope, data: EpisodeInput, actor: Actor, origin: str, expires_by: str
    ) -> None:
        super().__init__(episodes.writes, actor, "episode.remember", [l2_lock_key(scope)])
        self.episodes = episodes
        self.engine: WriteEngine = episodes.writes
        self.scope = scope
        self.data = data
        self.origin = origin
        self.expires_by = expires_by
        self.dates: list[str] = []  # the resolved relative dates (date_resolution.encode), set by plan_remember
        self.lineage: dict[str, Any] | None = None
        self.audience: str | None = None
        self.replaces: tuple[str, ...] = ()
        self.guarded = True
        self.flags: list[str] = []  # the content gate's marks, kept in the episode's extra
        self._remembered: Remembered | None = None
        self._done = ""  # the log line of the commit
        self.refined: Episode | None = None  # the stored memory this statement refines (settle)

    # ------------------------------------------------------------------ shaping, before it settles
    def _shaping(self) -> None:
        if self._remembered is not None:
            raise PlanError("episode.remember: the plan is settled; shape it before")

    def link(self, lineage: dict[str, Any]) -> None:
        """Keep ``lineage`` (``{"candidate_id": ...}``, ``{"sources": [...]}``) in the episode's ``extra``."""
        self._shaping()
        self.lineage = dict(lineage)

    def for_audience(self, audience: str) -> None:
        self._shaping()
        self.audience = audience

    def replacing(self, ids: Sequence[str]) -> None:
        self._shaping()
        self.replaces = tuple(ids)

    def reviewed(self) -> None:
        """A person reviewed the statement: the statement guards do not run."""
        self._shaping()
        self.guarded = False

    # ------------------------------------------------------------------ settling and committing
    @property
    def remembered(self) -> Remembered:
        if self._remembered is None:
            raise PlanError("episode.remember: the plan is not settled")
        return self._remembered

    async def settle(self) -> Remembered:
        """Read under the lock and decide the plan's writes (once)."""
        self.require_held()
        if self._remembered is not None:
            return self._remembered
        scope, data, ep = self.scope, self.data, self.episodes
        # the speaker opted out: refused before anything is read, reviewed or not (issue 35)
        await require_consent(self.engine.kv, scope.bot_uuid, scope.sender_id)
        # stored whole, never short; resolved first, so a retry naming its target by short id
        # compares with what the first attempt stored
        data.supersedes = await ep.resolve(scope, data.supersedes)
        if self.lineage is None:
            same = await self._retry_of(self.audience if self.audience is not None else audience_of(scope))
            if same is not None:
                log.info("remember: %s already stored in %s (a retry)", same.id, scope.user_key)
                self._remembered = Remembered(same, [], existing=True)
                self.sealed = "a retry commits nothing"
                return self._remembered
        if not data.supersedes and not self.replaces:  # a correction or a summary is never a restatement
            known = await self._restated()
            if known is not None:
                self._remembered = self._reinforce(known)
                return self._remembered
        targets = await self._supersede_targets(data.supersedes)
        replaced = await self._supersede_targets([i for i in self.replaces if i not in data.supersedes])
        if self.guarded:  # a parked statement keeps the caller's fields: its words are read again on accept
            await ep.screen_statement(
                scope, replace(data, valid_until=None) if self.expires_by else data, self.actor, self.origin
            )
        episode = build_episode(
            data, scope, origin=self.origin, timestamp=to_iso(self.engine.clock()), audience=self.audience
        )
        if self.lineage:
            episode.extra = dict(self.lineage)
        if self.expires_by:
            episode.extra = {**episode.extra, EXPIRES_BY: self.expires_by}
        episode.extra = gate.with_flags(episode.extra, self.flags)
        if self.refined is not None:  # it adds to a stored memory, which stays: linked, not folded
            episode.extra = {**episode.extra, REFINES: self.refined.id}
        if self.dates:
            episode.extra = {**episode.extra, date_rules.DATES_KEY: list(self.dates)}
        targets = [*targets, *replaced]
        retired = [t.retagged(status="superseded", superseded_by=episode.id) for t in targets]
        summary = f"remembered {episode.id}" + (
            f", superseding {', '.join(t.id for t in targets[:50])}" if targets else ""
        )
        expect = [EpisodeIs(episode.id, "active"), *episodes_are(targets, "superseded")]
        audit = ([episode.id, *[t.id for t in targets]][:50], summary)
        self.add(self.engine.insert_step(scope, episode, retired, targets, "episode.remember", expect, audit))
        self._done = f"remember: {episode.id} in {scope.user_key} (supersedes {len(targets)})" + (
            f", refines {self.refined.id}" if self.refined is not None else ""
        )
        corrected = [t for t in targets if t.id not in {r.id for r in replaced}]
        if corrected:
            self.then(lambda: ep.retire.after(RetireEvent(scope, "supersede", corrected, self.actor)))
        if replaced:
            self.then(lambda: ep.retire.after(RetireEvent(scope, "consolidate", replaced, self.actor)))
        self._remembered = Remembered(episode, retired)
        return self._remembered

    async def commit(self) -> None:
        """Settle (when not yet) and write the plan once; a retry writes nothing."""
        await self.settle()
        await super().commit()
        if self._done:
            log.info("%s", self._done)

    # ------------------------------------------------------------------ the reads that decide
    async def _retry_of(self, audience: str) -> Episode | None:
        """The active memory that the statement repeats: the same statement (content, times, the
        corrections, whole ids) by the same speaker with the same ``audience`` in this scope,
        stored within the retry window; the newest one, or None. The audience matters in ``bot``
        isolation, where a private chat and a group share the scope: the same words said in the
        group after the private chat are the group's memory, not the private one."""
        scope, data = self.scope, self.data
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id, extra={"content_hash": content_hash(data.content)})
        since = self.engine.clock().timestamp() - REMEMBER_RETRY_WINDOW_S
        same = [
            e
            for e in await self.engine.reads.fetch(scope, crit, limit=50)
            if (e.event_at, e.valid_from, e.valid_until) == (data.event_at, data.valid_from, data.valid_until)
            and sorted(e.supersedes) == sorted(data.supersedes)
            and e.audience == audience
            and e.sender_id == scope.sender_id
            and ts(e.timestamp, 0.0) >= since
        ]
        return max(same, key=lambda e: (e.timestamp, e.id)) if same else None

    async def _restated(self) -> Episode | None:
        """The active memory of this scope, speaker and audience, with the same times, that the
        statement restates (:func:`ltm.domain.restate.restates`), or None; when none, the one it
        refines (:func:`ltm.domain.restate.refines`: it keeps all of it and adds) is kept in
        :attr:`refined`. A statement said now with no time of its own (no ``event_at``, no past
        tense, no time word) is compared with rows of any ``event_at``: "I live in Lisbon" said two
        days ago and "I'm living in Lisbon now" are one state. The cheap test
        (:func:`ltm.domain.restate.candidate`) picks the few rows worth embedding; the new text is
        embedded with them in one call (the plugin's embedder, the one its rows were written with)."""
        scope, data = self.scope, self.data
        want = self.audience if self.audience is not None else audience_of(scope)
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id)
        any_event = data.event_at is None and restate_rule.timeless(data.content)
        rows = [
            e
            for e in await self.engine.reads.fetch(scope, crit, limit=RESTATE_SCAN)
            if e.sender_id == scope.sender_id
            and e.audience == want
            and (e.valid_from, e.valid_until) == (data.valid_from, data.valid_until)
            and (e.event_at == data.event_at or any_event)
            and restate_rule.candidate(data.content, e.content)
        ]
        if not rows:
            return None
        rows.sort(key=lambda e: (e.event_at != data.event_at, -restate_rule.lexical_overlap(data.content, e.content)))
        rows = rows[:RESTATE_EMBED]
        embedder = await self.engine.embedder(scope)
        vectors = await embedder.embed([data.content, *[e.content for e in rows]])
        best: tuple[float, Episode] | None = None
        refined: tuple[float, Episode] | None = None
        for e, v in zip(rows, vectors[1:], strict=True):
            cos = restate_rule.cosine(vectors[0], v)
            verdict = restate_rule.restates(data.content, e.content, cos)
            if verdict.duplicate and (best is None or cos > best[0]):
                best = (cos, e)
            elif (
                cos >= restate_rule.COSINE_MIN
                and restate_rule.refines(data.content, e.content)
                and (refined is None or cos > refined[0])
            ):
                refined = (cos, e)
        self.refined = refined[1] if refined and not best else None
        return best[1] if best else None

    def _reinforce(self, known: Episode) -> Remembered:
        """Restating ``known``: its seen count and last-seen time rise and the statement's source
        ref joins its evidence (bounded), in one audited write (with the steps a neighbour adds,
        e.g. the accepted candidate's record). No new row."""
        at = to_iso(self.engine.clock())
        seen = int(known.extra.get("seen") or 1) + 1
        evidence = [
            *list(known.extra.get("seen_refs") or []),
            *([self.data.source_ref] if self.data.source_ref else []),
        ]
        extra = {**known.extra, "seen": seen, "last_seen": at, "seen_refs": evidence[-SEEN_REFS:]}
        updated = known.retagged(extra=extra)
        self.operation = "episode.reinforce"
        self.add(
            self.engine.rewrite_step(
                self.scope,
                [updated],
                [known],
                "episode.reinforce",
                [EpisodeIs(known.id, "active")],
                ([known.id], f"reinforced {known.id} (seen {seen})"),
            )
        )
        self._done = f"remember: {known.id} restated in {self.scope.user_key} (seen {seen})"
        return Remembered(updated, [], already_known=True)  # not a retry: it writes the reinforcement

    async def _supersede_targets(self, ids: Sequence[str]) -> list[Episode]:
        """The active records of this scope ``ids`` names, which a new statement of ``scope.sender_id``
        replaces: the speaker's own, or, for a memory admin, a shared one
        (:func:`ltm.domain.privilege.may_supersede`)."""
        if not ids:
            return []
        scope = self.scope
        caller = policy.Caller(scope.sender_id, caller_of(self.actor, self.episodes._settings()).admin)
        ids = await self.episodes.resolve(scope, ids)
        found = await self.engine.reads.fetch_ids(scope, ids)
        out = []
        for sid in ids:
            ep = found.get(sid)
            if ep is None:
                raise NotFoundError(f"no memory {sid} in this scope", key="error.supersede_missing", id=sid)
            if ep.status != "active":
                raise ConflictError(f"{sid} is {ep.status}", key="error.supersede_status", id=sid, status=ep.status)
            if ep.sender_id and ep.sender_id != scope.sender_id:
                raise ConflictError(f"{sid} belongs to another speaker", key="error.supersede_speaker", id=sid)
            if not policy.may_supersede(caller, ep.sender_id):
                raise PermissionDenied(f"{sid} is a shared memory", key="policy.error.supersede", id=sid)
            out.append(ep)
        return out
