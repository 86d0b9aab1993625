"""The review queue: candidates, value tombstones, conflict parking and the one resolver.

One queue per memory scope (knowledge base + ``user_key``). A candidate is a statement waiting for
a person: extracted from the user's own words of a turn (rules or a model that may only pick
sentences), or parked by :meth:`ReviewQueue.guard` because a ``remember`` contradicted an active
memory. Its status is set only by rules and people:

- ``pending``: waiting; ``conflict``: waiting, and it contradicts the active memories it lists
  (both sides are kept for review);
- ``accepted``: :meth:`ReviewQueue.accept` wrote it through the normal write path: the plan of a
  ``remember`` (``origin="candidate"``, a ``candidate_id`` link, superseding the conflicting
  memories; reviewed, so the statement guards do not run again), or of a profile update for a
  name, extended with the candidate's record and committed once;
- ``rejected``: :meth:`ReviewQueue.reject` refused it and recorded a tombstone on its value.

A model's recommendation is stored next to the candidate and never read as a status. Accept and
reject are the only resolvers; the ``!memory`` command and the Memory Console both call them.

Tombstones are keyed on the normalised value (:mod:`ltm.domain.tombstone`), per scope, and hold no
text: a hash, the reason, who, when, and the ids it came from. The guard refuses a tombstoned value
on every ``remember`` and document ingest; ``accept`` refuses it too; ``forget(..., never=True)``
records one through the retire pipeline (:mod:`ltm.service.retire`). An admin can lift a tombstone.

The parts: :mod:`.tombstones` (the tombstone book), :mod:`.candidates` (the candidate store), this
module (the guard, extraction and the resolver).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ...domain import candidates as rules
from ...domain.actors import actor_record
from ...domain.audience import audience_of, tombstone_audience
from ...domain.conflict import find_conflicts
from ...domain.errors import ConflictError, InstructionLikeError, ParkedError, TombstonedError
from ...domain.expiry import bounds_validity
from ...domain.filters import ACTIVE, Criteria
from ...domain.models import DETAIL_FIELDS, Episode, EpisodeInput, Profile, content_hash
from ...domain.scope import Scope
from ...domain.tombstone import value_key
from ...ports import MODEL_TIMEOUT_S, ChatModel
from .. import content_gate as gate
from ..consent import is_opted_out, require_consent
from ..neighbours import ReviewHost
from ..retire import RetireEvent
from ..settings import bool_setting, int_setting
from ..writes.actor import Actor, require_admin
from ..writes.errors import need_l2
from ..writes.plan import WriteStep
from .candidates import ACCEPTED, CONFLICT, OPEN, PENDING, REJECTED, Candidate, CandidatePage, CandidateStore
from .records import ReviewPart, clean_reason
from .tombstones import Tombstone, TombstoneBook

log = logging.getLogger(__name__)

CONFLICT_SCAN_LIMIT = 2_000
# Statements from these origins are checked for conflicts; every origin is checked for tombstones.
CONFLICT_ORIGINS: tuple[str, ...] = ("tool", "command", "console")
# Which statements that read as instructions to the assistant wait for review is the content
# gate's table (ltm.service.content_gate.PATHS: the paths whose action is "park").


@dataclass(frozen=True)
class ReviewSettings:
    """The review part of the plugin config (``spec.config`` in manifest.yaml), read per call."""

    enabled: bool = False  # candidate_extraction_enabled
    auto_apply: bool = False  # candidate_auto_apply
    max_per_turn: int = 3  # candidate_max_per_turn
    model_uuid: str = ""  # candidate_model_uuid: empty = rules

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> ReviewSettings:
        c = dict(config or {})
        return cls(
            enabled=bool_setting(c.get("candidate_extraction_enabled"), False),
            auto_apply=bool_setting(c.get("candidate_auto_apply"), False),
            max_per_turn=int_setting(c.get("candidate_max_per_turn"), 3, 1, 10),
            model_uuid=str(c.get("candidate_model_uuid") or "").strip(),
        )


@dataclass
class ExtractReport:
    mode: str  # "rules" | "model"
    candidates: list[Candidate] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)  # auto-applied candidate ids
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (why, detail)
    redactions: int = 0
    truncated: bool = False
    model_error: str = ""


@dataclass
class Decision:
    candidate: Candidate
    episode: Episode | None = None
    superseded: list[Episode] = field(default_factory=list)
    profile: Profile | None = None
    parked: bool = False  # accept found a (new) conflict: the candidate waits with both sides shown


class _Skip(Exception):
    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(why)
        self.why, self.detail = why, detail


class ReviewQueue(ReviewPart):
    """Candidates, tombstones and the resolver over one :class:`~ltm.service.neighbours.ReviewHost`. Its :meth:`guard`
    and its tombstone book join the service's writes when the service is made with this queue
    (``MemoryService(review=)``, :mod:`ltm.service.compose`)."""

    def __init__(
        self,
        service: ReviewHost,
        settings: Callable[[], ReviewSettings] = ReviewSettings,
        model: ChatModel | None = None,
    ) -> None:
        super().__init__(service)
        self._settings = settings
        self.model = model
        self.tombstones = TombstoneBook(service)
        self.candidates = CandidateStore(service)

    @property
    def settings(self) -> ReviewSettings:
        return self._settings()

    async def delete_kb(self, kb_id: str) -> tuple[int, int]:
        """The knowledge base ``kb_id`` is gone: its candidates and tombstones go with it.
        ``(candidate records, tombstones)`` deleted."""
        return await self.candidates.delete_kb(kb_id), await self.tombstones.delete_kb(kb_id)

    # ------------------------------------------------------------------ the parts' reads and verbs
    async def tombstone_for(self, scope: Scope, content: str, sender_id: str) -> Tombstone | None:
        return await self.tombstones.tombstone_for(scope, content, sender_id)

    async def list_tombstones(self, scope: Scope, page: int = 1, page_size: int = 10) -> tuple[list[Tombstone], int]:
        return await self.tombstones.list_tombstones(scope, page, page_size)

    async def lift_tombstone(self, scope: Scope, tombstone_id: str, actor: Actor, reason: str = "") -> Tombstone:
        return await self.tombstones.lift_tombstone(scope, tombstone_id, actor, reason)

    async def tombstone_steps(self, event: RetireEvent) -> list[WriteStep]:
        return await self.tombstones.tombstone_steps(event)

    async def get(self, scope: Scope, candidate_id: str) -> Candidate:
        return await self.candidates.get(scope, candidate_id)

    async def list(
        self, scope: Scope, *, page: int = 1, page_size: int = 10, all_statuses: bool = False
    ) -> CandidatePage:
        return await self.candidates.list(scope, page=page, page_size=page_size, all_statuses=all_statuses)

    @staticmethod
    def readable(scope: Scope, cand: Candidate) -> bool:
        return CandidateStore.readable(scope, cand)

    # ------------------------------------------------------------------ the guard, proposing, the resolver
    async def guard(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """A statement guard: refuse a tombstoned value; park a contradicting statement as a
        ``conflict`` candidate and refuse the write (unless it names what it ``supersedes``)."""
        tb = await self.tombstones.tombstone_for(scope, data.content, scope.sender_id)
        if tb is not None:
            raise self.tombstones.refusal(tb)
        verdict = gate.screen(gate.path_of_origin(origin), {"content": data.content, "tags": list(data.tags)})
        if verdict.action == gate.PARK:
            await self._park_instruction(scope, data, actor, origin)
        if origin not in CONFLICT_ORIGINS or data.supersedes:
            return
        conflicts = await self._episode_conflicts(scope, data.content)
        if not conflicts:
            return
        fields = {k: getattr(data, k) for k in DETAIL_FIELDS}
        cand = await self.candidates.insert(
            scope,
            rules.Proposal(data.content, "", rules.classify(data.content) or "correction"),
            actor,
            origin=origin,
            status=CONFLICT,
            conflicts=conflicts,
            source_ref=data.source_ref,
            episode_fields=fields,
        )
        ids = ", ".join(c["id"] for c in conflicts)
        raise ParkedError(
            f"contradicts {ids}; parked as {cand.id}",
            candidate=cand.id,
            ids=ids,
            existing=" / ".join(c["content"] for c in conflicts)[:300],
        )

    async def _park_instruction(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None:
        """Queue an instruction-like statement as a candidate marked ``instruction-like`` (or find the
        one already waiting for it) and refuse the write: it is never stored active unreviewed."""
        vk = value_key(data.content, scope.sender_id)
        waiting = [o["id"] for o in await self.candidates.open_list(scope) if o.get("value_key") == vk]
        if waiting:
            cid = waiting[0]
        else:
            cand = await self.candidates.insert(
                scope,
                rules.Proposal(data.content, "", rules.classify(data.content) or "preference"),
                actor,
                origin=origin,
                status=PENDING,
                conflicts=[],
                source_ref=data.source_ref,
                episode_fields={k: getattr(data, k) for k in DETAIL_FIELDS},
                flags=[gate.INSTRUCTION_LIKE],
            )
            cid = cand.id
        raise InstructionLikeError(f"instruction-like; parked as {cid}", candidate=cid)

    async def _episode_conflicts(self, scope: Scope, content: str) -> list[dict[str, Any]]:
        """Active, currently valid memories of this speaker that ``content`` contradicts."""
        if not scope.collection:
            return []
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id, as_of_ts=self.service.clock().timestamp())
        episodes = await self.service.fetch(scope, crit, limit=CONFLICT_SCAN_LIMIT)
        aliases = [scope.sender_id]
        if scope.sender_id:
            aliases.append((await self.service.get_profile(scope, "speaker", scope.sender_id)).name)
        # A statement bounded in time ("staying at my parents' until Friday") does not contradict a
        # durable one ("I live in Tokyo"): a stay is not a move. Two bounded ones, or two durable
        # ones, are compared as before.
        bounded = bounds_validity(content)
        episodes = [e for e in episodes if bounds_validity(e.content) == bounded]
        by_id = {e.id: e for e in episodes}
        out = []
        for eid, v in find_conflicts(content, [(e.id, e.content) for e in episodes], aliases):
            e = by_id[eid]
            out.append(
                {
                    "kind": "episode",
                    "id": e.id,
                    "content": e.content,
                    "sender_id": e.sender_id,
                    "timestamp": e.timestamp,
                    "claim_type": e.claim_type,
                    "confidence": e.confidence,
                    "attribute": v.attribute,
                    "new_value": v.new_value,
                    "old_value": v.old_value,
                    "why": v.reason,
                }
            )
        return out

    async def _profile_conflicts(self, scope: Scope, patch: dict[str, Any]) -> list[dict[str, Any]]:
        name = str(patch.get("name") or "")
        if not name or not scope.sender_id:
            return []
        current = await self.service.get_profile(scope, "speaker", scope.sender_id)
        if current.name and current.name.casefold() != name.casefold():
            return [{"kind": "profile", "id": current.key, "field": "name", "content": current.name, "new_value": name}]
        return []

    async def propose(
        self,
        scope: Scope,
        proposal: rules.Proposal,
        actor: Actor,
        *,
        origin: str,
        source_ref: str = "",
        redactions: int = 0,
    ) -> Candidate:
        """Queue one statement of ``scope.sender_id``: refused when tombstoned; skipped (``_Skip``)
        when already queued or already remembered; ``conflict`` when it contradicts an active one."""
        need_l2(scope)
        await require_consent(self.service.kv, scope.bot_uuid, scope.sender_id)
        proposal, flags = _screened(proposal)
        tb = await self.tombstones.tombstone_for(scope, proposal.content, scope.sender_id)
        if tb is not None:
            raise self.tombstones.refusal(tb)
        vk = value_key(proposal.content, scope.sender_id)
        if any(o.get("value_key") == vk for o in await self.candidates.open_list(scope)):
            raise _Skip("queued", vk)
        if proposal.target == "profile":
            current = await self.service.get_profile(scope, "speaker", scope.sender_id) if scope.sender_id else None
            if (
                current is not None
                and current.name.casefold() == str(proposal.profile_patch.get("name", "")).casefold()
            ):
                raise _Skip("known", current.key)
            conflicts = await self._profile_conflicts(scope, proposal.profile_patch)
        else:
            if await self._same_statement(scope, proposal.content):
                raise _Skip("known", vk)
            conflicts = await self._episode_conflicts(scope, proposal.content)
        return await self.candidates.insert(
            scope,
            proposal,
            actor,
            origin=origin,
            status=CONFLICT if conflicts else PENDING,
            conflicts=conflicts,
            source_ref=source_ref,
            redactions=redactions,
            episode_fields={
                "claim_type": "user_statement",
                "source_ref": source_ref,
                "tags": [proposal.classification],
            },
            flags=flags,
        )

    async def _same_statement(self, scope: Scope, content: str) -> Episode | None:
        crit = Criteria(statuses=ACTIVE, sender_id=scope.sender_id, extra={"content_hash": content_hash(content)})
        found = await self.service.fetch(scope, crit, limit=1)
        return found[0] if found else None

    async def extract(self, scope: Scope, user_text: str, actor: Actor, *, source_ref: str = "") -> ExtractReport:
        """Candidates from the user's own text of one turn (see :mod:`ltm.domain.candidates`).

        With ``candidate_model_uuid`` set, the model may only pick sentences, within
        :data:`MODEL_TIMEOUT_S`; any fault in its answer writes nothing. Rule candidates are
        accepted at once when ``candidate_auto_apply`` is on; model candidates always wait."""
        s = self.settings
        need_l2(scope)
        turn = rules.prepare(user_text)
        mode = "model" if s.model_uuid and self.model is not None else "rules"
        report = ExtractReport(mode=mode, redactions=turn.redactions, truncated=turn.truncated)
        if not turn.sentences:
            return report
        if await is_opted_out(self.service.kv, scope.bot_uuid, scope.sender_id):
            report.skipped.append(("opted_out", ""))  # nothing of theirs is read further (issue 35)
            return report
        if mode == "model":
            system, user = rules.model_messages(turn, s.max_per_turn)
            try:
                raw = await asyncio.wait_for(
                    self.model.complete(s.model_uuid, system, user, MODEL_TIMEOUT_S),  # type: ignore[union-attr]
                    MODEL_TIMEOUT_S,
                )
                proposals = rules.parse_model_result(raw, turn, s.max_per_turn)
            except rules.ModelResultError as exc:
                report.model_error = str(exc.params.get("reason") or exc)
                log.warning("candidate model result rejected in %s: %s", scope.user_key, report.model_error)
                return report
            except TimeoutError:
                report.model_error = f"no answer within {MODEL_TIMEOUT_S:.0f} s"
                log.warning("candidate model timed out in %s", scope.user_key)
                return report
            except Exception as exc:  # the host refused the call: nothing is proposed this turn
                report.model_error = f"model call failed: {type(exc).__name__}"
                log.warning("candidate model call failed in %s: %s", scope.user_key, exc)
                return report
        else:
            proposals = rules.extract_by_rules(turn, s.max_per_turn)
        for p in proposals:
            try:
                cand = await self.propose(
                    scope, p, actor, origin=mode, source_ref=source_ref, redactions=turn.redactions
                )
            except TombstonedError as exc:
                report.skipped.append(("tombstoned", str(exc.params.get("tombstone"))))
                continue
            except _Skip as skip:
                report.skipped.append((skip.why, skip.detail))
                continue
            except ConflictError as exc:
                if exc.key != "review.error.queue_full":
                    raise
                report.skipped.append(("queue_full", str(exc.params.get("limit"))))
                log.warning("review queue of %s is full; candidate dropped", scope.user_key)
                continue
            report.candidates.append(cand)
            if s.auto_apply and mode == "rules" and cand.status == PENDING and not cand.flags:
                auto = Actor(surface="auto-apply", sender_id=actor.sender_id, query_id=actor.query_id)
                decision = await self._accept(scope, cand.id, auto, reason="candidate_auto_apply")
                if not decision.parked:
                    report.accepted.append(cand.id)
        log.info(
            "extract in %s (%s): %d candidates, %d skipped, %d redacted",
            scope.user_key,
            mode,
            len(report.candidates),
            len(report.skipped),
            turn.redactions,
        )
        return report

    async def _candidate_scope(self, scope: Scope, cand: Candidate) -> Scope:
        proposed = Scope.from_describe(cand.scope)
        cscope = await self.service.scope_for(
            kb_id=proposed.collection,
            session_name=proposed.session_name,
            bot_uuid=proposed.bot_uuid,
            sender_id=cand.sender_id,
        )
        if (cscope.user_key, cscope.collection) != (scope.user_key, scope.collection):
            raise ConflictError("the knowledge base isolation changed", key="review.error.scope_changed")
        return cscope

    async def _park(self, scope: Scope, cand: Candidate, conflicts: list[dict[str, Any]], actor: Actor) -> Decision:
        cand.status = CONFLICT
        cand.conflicts_with = conflicts
        audit = (
            [cand.id, *[c["id"] for c in conflicts]][:50],
            f"candidate {cand.id} contradicts {len(conflicts)} active memories: parked for review",
        )
        steps = await self.candidates.save_steps(scope, cand, "candidate.park", audit)
        await self.service.writes.mutate(actor, "candidate.park", steps)
        return Decision(cand, parked=True)

    async def _applied(self, scope: Scope, cand: Candidate) -> Episode | None:
        """The episode an earlier, interrupted accept of this candidate already wrote."""
        crit = Criteria(statuses=None, sender_id=scope.sender_id, extra={"content_hash": content_hash(cand.content)})
        for e in await self.service.fetch(scope, crit, limit=50):
            if e.extra.get("candidate_id") == cand.id:
                return e
        return None

    async def _open_candidate(self, scope: Scope, candidate_id: str) -> Candidate:
        """The candidate a decision is about: it must still be open (decided once)."""
        cand = await self.candidates.get(scope, candidate_id)
        if cand.status not in OPEN:
            raise ConflictError(
                f"{cand.id} is {cand.status}", key="review.error.decided", id=cand.id, status=cand.status
            )
        return cand

    def _decide(self, cand: Candidate, status: str, actor: Actor, reason: str) -> None:
        cand.status = status
        cand.decided_by = actor_record(actor)
        cand.decided_at = self._now()
        cand.reason = reason

    async def _record_steps(self, scope: Scope, decided: Candidate, reason: str) -> list[WriteStep]:
        """The accepted candidate's record, as steps of the write that accepts it (its own audit)."""
        op = "candidate.accept"
        audit = (
            [decided.id, decided.result_id, *decided.superseded][:50],
            f"candidate {decided.id} accepted as {decided.result_id}"
            + (f", superseding {', '.join(decided.superseded)}" if decided.superseded else ""),
        )
        return await self.candidates.save_steps(scope, decided, op, audit, op, reason)

    async def accept(self, scope: Scope, candidate_id: str, actor: Actor, reason: str = "") -> Decision:
        """Write an open candidate through the normal write path and link the result to it: the
        memory (or profile) write and the candidate's record are one all-or-nothing mutation.

        A pending candidate that now contradicts an active memory is parked instead (``parked``);
        accepting a ``conflict`` candidate supersedes the memories it contradicts. A tombstoned
        value is refused and the candidate is left as it was. A memory admin's verb."""
        require_admin("candidate", actor, self.service.settings)
        return await self._accept(scope, candidate_id, actor, reason)

    async def _accept(self, scope: Scope, candidate_id: str, actor: Actor, reason: str) -> Decision:
        """:meth:`accept` once allowed: by an admin, or by ``candidate_auto_apply`` (the operator's
        standing decision for rule-extracted candidates)."""
        reason = clean_reason(reason)
        need_l2(scope)
        op = "candidate.accept"
        async with self.locks.hold(f"cand:{self._base(scope)}:{candidate_id}"):
            cand = await self._open_candidate(scope, candidate_id)
            cscope = await self._candidate_scope(scope, cand)
            tb = await self.tombstones.tombstone_for(cscope, cand.content, cand.sender_id)
            if tb is not None:
                raise self.tombstones.refusal(tb)
            decision = Decision(cand)
            decided = replace(cand)  # written only if the whole mutation commits
            self._decide(decided, ACCEPTED, actor, reason)
            if cand.target == "profile":
                current = await self._profile_conflicts(cscope, cand.profile_patch)
                if current and cand.status == PENDING:
                    return await self._park(scope, cand, current, actor)

                plan = self.service.profiles.plan_update(cscope, {"target": "speaker", **cand.profile_patch}, actor)
                async with plan:
                    decision.profile = await plan.settle()
                    decided.result_id = "profile:" + decision.profile.key
                    plan.add(*await self._record_steps(scope, decided, reason))
                    await plan.commit()
            else:
                current = await self._episode_conflicts(cscope, cand.content)
                ids = {c["id"] for c in current}
                known = {c["id"] for c in cand.conflicts_with if c.get("kind") == "episode"}
                if current and (cand.status == PENDING or ids - known):
                    return await self._park(scope, cand, current, actor)
                episode = await self._applied(cscope, cand)
                if episode is None:
                    raw = {"content": cand.content, **cand.episode_fields, "supersedes": sorted(ids)}
                    remember = self.service.episodes.plan_remember(
                        cscope, raw, actor, origin="candidate", said_at=cand.created_at or None
                    )
                    remember.link({"candidate_id": cand.id, **({"flags": list(cand.flags)} if cand.flags else {})})
                    remember.reviewed()  # a person reviewed it: the statement guards do not run again
                    async with remember:
                        episode, decision.superseded = await remember.settle()
                        decided.result_id, decided.superseded = episode.id, [e.id for e in decision.superseded]
                        remember.add(*await self._record_steps(scope, decided, reason))
                        await remember.commit()
                else:  # an earlier accept wrote the memory and stopped before its record: link it now
                    decided.result_id, decided.superseded = episode.id, []
                    steps = await self._record_steps(scope, decided, reason)
                    await self.service.writes.mutate(actor, op, steps, reason=reason)
                decision.episode = episode
            decision.candidate = cand = decided
        log.info("candidate %s accepted in %s -> %s", cand.id, scope.user_key, cand.result_id)
        return decision

    async def reject(self, scope: Scope, candidate_id: str, actor: Actor, reason: str = "") -> Candidate:
        """Refuse an open candidate: it is never written or recalled, stays inspectable, and its
        value gets a tombstone (one all-or-nothing mutation). A conflict's other side stays as it is.
        A memory admin's verb."""
        require_admin("candidate", actor, self.service.settings)
        reason = clean_reason(reason)
        need_l2(scope)
        op = "candidate.reject"
        async with self.locks.hold(f"cand:{self._base(scope)}:{candidate_id}"):
            cand = await self._open_candidate(scope, candidate_id)
            decided = replace(cand)
            self._decide(decided, REJECTED, actor, reason)
            made = self.tombstones.record_step(
                scope,
                cand.content,
                cand.sender_id,
                "rejected",
                reason,
                actor,
                cand.id,
                op,
                audience=tombstone_audience(scope, audience_of(Scope.from_describe(cand.scope))),  # where proposed
            )
            decided.result_id = made[1] if made else ""
            audit = (
                [cand.id, *([decided.result_id] if made else [])],
                f"candidate {cand.id} rejected" + (f"; tombstone {decided.result_id}" if made else ""),
            )
            steps = ([made[0]] if made else []) + await self.candidates.save_steps(scope, decided, op, audit)
            await self.service.writes.mutate(actor, op, steps, reason=reason)
        log.info("candidate %s rejected in %s", decided.id, scope.user_key)
        return decided


def _screened(proposal: rules.Proposal) -> tuple[rules.Proposal, list[str]]:
    """A proposed candidate through the content gate (path ``candidate.extract``): its texts
    redacted, and its flags (``instruction-like``: never auto-applied)."""
    fields: dict[str, Any] = {
        "content": proposal.content,
        "evidence_quote": proposal.evidence_quote,
        "note": proposal.note,
    }
    name = proposal.profile_patch.get("name")
    if isinstance(name, str):
        fields["name"] = name
    out = gate.screen("candidate.extract", fields)
    patch = {**proposal.profile_patch, "name": out.fields["name"]} if "name" in out.fields else proposal.profile_patch
    screened = replace(
        proposal,
        content=out.fields["content"],
        evidence_quote=out.fields["evidence_quote"],
        note=out.fields["note"],
        profile_patch=patch,
    )
    return screened, out.flags
