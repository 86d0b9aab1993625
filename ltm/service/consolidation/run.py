"""Consolidation: preview cleanup candidates, store a reviewed one-use summary proposal, run it.

- :meth:`Consolidator.preview` changes no memory. It lists superseded records that may be archived
  (with risk notes) and, with a model configured, asks the model for a summary of a bounded set of
  active records of the scope (given as escaped JSON data). A valid draft is stored as a one-use
  proposal in the key-value store (``consolidation/<user_key>/<proposal id>``) and audited.
- :meth:`Consolidator.run` (only with ``consolidation_enabled``) archives the superseded candidates
  (never an active record) and, given a proposal id, re-checks every source and writes the summary
  through ``MemoryService.remember`` with its lineage. A missing, used, stale, expired or other
  scope's proposal is refused and nothing changes.
- Cascades (the retire pipeline, :mod:`ltm.service.retire`): a removed summary gives its sources
  back in the same mutation; afterwards :meth:`Consolidator.on_retired` removes the summaries
  derived from a retired record (same scope) and every pending proposal that contains it;
  :meth:`Consolidator.on_kb_deleted` drops the proposals of a deleted knowledge base.

The model is the port :class:`ltm.ports.ChatModel` (``main.compose`` gives the host's,
``ltm.adapters.host_chat.HostChatModel``); this module imports nothing of LangBot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...domain import consolidation as rules
from ...domain.audience import narrowest_audience
from ...domain.errors import (
    ConflictError,
    FencedError,
    NotFoundError,
    ValidationError,
)
from ...domain.filters import ACTIVE, Criteria
from ...domain.models import Episode
from ...domain.scope import Scope
from ...domain.storage_keys import l2_lock_key, proposal_key
from ...domain.timefields import to_iso
from ...ports import MODEL_TIMEOUT_S, ChatModel
from .. import content_gate as gate
from ..neighbours import ConsolidationHost
from ..retire import RetireEvent
from ..writes.actor import Actor, require_admin
from ..writes.errors import backend, need_l2
from ..writes.expectations import episodes_are
from ..writes.plan import WriteStep
from .proposals import PROPOSAL_TTL_DAYS, Proposal, ProposalStore, new_proposal_id
from .settings import ConsolidationSettings

log = logging.getLogger(__name__)

# a summary of up to 100 memories is a long answer: three times the bound of one model call
SUMMARY_TIMEOUT_S = 3 * MODEL_TIMEOUT_S

# Preview outcomes of the summary path besides the draft codes of ltm.domain.consolidation.
DRAFT_NO_MODEL = "no_model"
DRAFT_NO_SOURCES = "no_sources"
DRAFT_MODEL_FAILED = "model_failed"
DRAFT_MODEL_TIMEOUT = "model_timeout"
DRAFT_KB_DELETED = "kb_deleted"
DRAFT_SOURCES_CHANGED = "sources_changed"


STALE_REASONS = ("missing_source", "inactive", "changed", "validity", "sender", "covered")


# remember's refusals of a replaced source, as the stale reason of the proposal
_TARGET_ERRORS = {
    "error.supersede_missing": "missing_source",
    "error.supersede_status": "inactive",
    "error.supersede_speaker": "sender",
}


def _stale(reason: str) -> ConflictError:
    """A stale proposal: one message key per reason (``consol.error.stale_<reason>``)."""
    code = reason if reason in STALE_REASONS else "changed"
    return ConflictError(f"proposal is stale: {reason}", key=f"consol.error.stale_{code}", reason=code)


@dataclass
class Preview:
    scope: Scope
    enabled: bool
    model_configured: bool
    candidates: list[rules.ArchiveCandidate] = field(default_factory=list)
    sources: list[Episode] = field(default_factory=list)
    proposal: Proposal | None = None
    draft_error: str = ""  # "" or a DRAFT_* / rules.DRAFT_* code
    skipped_long: int = 0
    apply_profile_updates: bool = False

    def to_public(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "model_configured": self.model_configured,
            "candidates": [
                {
                    "id": c.episode.id,
                    "content": c.episode.content,
                    "status": c.episode.status,
                    "superseded_by": c.episode.superseded_by,
                    "importance": c.episode.importance,
                    "timestamp": c.episode.timestamp,
                    "age_days": c.age_days,
                    "risks": list(c.risks),
                }
                for c in self.candidates
            ],
            "sources": [
                {
                    "id": e.id,
                    "content": e.content,
                    "sender_id": e.sender_id,
                    "timestamp": e.timestamp,
                    "valid_from": e.valid_from,
                    "valid_until": e.valid_until,
                }
                for e in self.sources
            ],
            "proposal": self.proposal.to_public() if self.proposal else None,
            "draft_error": self.draft_error,
            "skipped_long": self.skipped_long,
            "apply_profile_updates": self.apply_profile_updates,
        }


@dataclass
class RunResult:
    archived: list[str] = field(default_factory=list)
    summary: Episode | None = None
    proposal_id: str = ""

    def to_public(self) -> dict[str, Any]:
        return {
            "archived": list(self.archived),
            "summary": self.summary.to_public() if self.summary else None,
            "proposal_id": self.proposal_id,
        }


class Consolidator:
    """Consolidation over one :class:`~ltm.service.neighbours.ConsolidationHost`. Its :meth:`give_back_steps` and
    :meth:`on_retired` join the service's retire pipeline when the service is made with this
    consolidator (``MemoryService(consolidator=)``, :mod:`ltm.service.compose`)."""

    def __init__(
        self,
        service: ConsolidationHost,
        model: ChatModel | None = None,
        *,
        settings: Callable[[], ConsolidationSettings] | None = None,
        model_for: Callable[[str], ChatModel | None] | None = None,
        model_timeout: float = SUMMARY_TIMEOUT_S,
    ) -> None:
        self.service = service
        self.model = model
        self.model_for = model_for
        self.model_timeout = model_timeout
        self._settings = settings or ConsolidationSettings
        self._kb_epoch: dict[str, int] = {}
        self.proposals = ProposalStore(service)

    @property
    def settings(self) -> ConsolidationSettings:
        return self._settings()

    def _model(self, s: ConsolidationSettings) -> ChatModel | None:
        """A model is used only when ``consolidation_model_uuid`` is set."""
        if not s.model_uuid:
            return None
        if self.model is not None:
            return self.model
        return self.model_for(s.model_uuid) if self.model_for else None

    async def _ask(self, model: ChatModel, model_uuid: str, messages: list[dict[str, str]]) -> str:
        """One bounded model call: the system messages as its system prompt, the rest as its user
        message."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        # the host applies the timeout itself; the guard here only catches a host that does not
        return await asyncio.wait_for(
            model.complete(model_uuid, system, user, self.model_timeout), timeout=self.model_timeout * 1.1 + 1.0
        )

    # ------------------------------------------------------------------ reads
    async def _archive_candidates(self, scope: Scope, s: ConsolidationSettings) -> list[rules.ArchiveCandidate]:
        svc = self.service
        superseded = await svc.fetch(scope, Criteria(statuses=("superseded",)))
        repl_ids = sorted({e.superseded_by for e in superseded if e.superseded_by})
        replacements: dict[str, Episode] = {}
        for i in range(0, len(repl_ids), 100):
            for e in await svc.fetch(scope, Criteria(statuses=None, ids=tuple(repl_ids[i : i + 100]))):
                replacements[e.id] = e
        return rules.archive_candidates(
            superseded,
            replacements,
            now_ts=svc.clock().timestamp(),
            min_age_days=s.min_age_days,
            max_candidates=s.max_candidates,
        )

    async def _summaries(self, scope: Scope, statuses: tuple[str, ...] | None = None) -> list[Episode]:
        found = await self.service.fetch(scope, Criteria(statuses=statuses, extra={"origin": rules.ORIGIN}))
        return [e for e in found if rules.is_summary(e)]

    async def _covered(self, scope: Scope) -> set[str]:
        """Ids already cited by an active summary of the scope."""
        return {sid for e in await self._summaries(scope, ACTIVE) for sid in rules.sources_of(e)}

    async def _by_ids(self, scope: Scope, ids: Sequence[str]) -> dict[str, Episode]:
        return await self.service.writes.reads.fetch_ids(scope, ids)

    async def _recheck(self, scope: Scope, p: Proposal) -> rules.ProposalCheck:
        """Whether every source of ``p`` is still as it was drafted (present, active, unchanged,
        of its speaker, valid over its interval), read now."""
        return rules.recheck_sources(
            p.sources,
            await self._by_ids(scope, p.source_ids),
            sender_id=p.sender_id,
            valid_from=p.valid_from,
            valid_until=p.valid_until,
        )

    async def list_proposals(self, scope: Scope) -> list[Proposal]:
        """Pending proposals of the scope, newest first."""
        return await self.proposals.list_pending(scope)

    async def _kb_alive(self, kb_id: str, epoch: int) -> bool:
        return self._kb_epoch.get(kb_id, 0) == epoch and await self.service.kb_settings(kb_id) is not None

    # ------------------------------------------------------------------ preview
    async def preview(self, scope: Scope, actor: Actor, *, lang: str | None = None) -> Preview:
        """Candidates and (with a model) a stored one-use summary proposal. Changes no memory. A
        memory admin's verb (it stores a proposal and spends a model call)."""
        require_admin("consolidate", actor, self.service.settings)
        need_l2(scope)
        s = self.settings
        svc = self.service
        out = Preview(
            scope=scope,
            enabled=s.enabled,
            model_configured=bool(s.model_uuid),
            apply_profile_updates=s.apply_profile_updates,
        )
        out.candidates = await self._archive_candidates(scope, s)
        model = self._model(s)
        if model is None:
            out.draft_error = DRAFT_NO_MODEL if s.model_uuid else ""
            return out
        epoch = self._kb_epoch.get(scope.collection, 0)
        now = svc.clock()
        active = await svc.fetch(scope, Criteria(statuses=ACTIVE))
        selection = rules.select_sources(
            active,
            now_ts=now.timestamp(),
            min_age_days=s.min_age_days,
            max_sources=s.max_candidates,
            already_summarised=await self._covered(scope),
        )
        if selection is None:
            out.draft_error = DRAFT_NO_SOURCES
            return out
        out.sources = selection.sources
        out.skipped_long = selection.skipped_long
        ids = [e.id for e in selection.sources]
        messages = rules.build_prompt(selection.sources, lang=lang or svc.settings.language)
        try:
            answer = await self._ask(model, s.model_uuid, messages)
        except TimeoutError:
            log.warning("consolidation model timed out in %s", scope.user_key)
            out.draft_error = DRAFT_MODEL_TIMEOUT
            return out
        except Exception as exc:  # the host answers an error: no draft, nothing stored
            log.warning("consolidation model failed in %s: %s", scope.user_key, exc)
            out.draft_error = DRAFT_MODEL_FAILED
            return out
        try:
            draft = rules.parse_draft(answer, ids, budget_tokens=svc.settings.recall_token_budget)
        except rules.DraftRejected as exc:
            log.info("consolidation draft refused in %s: %s", scope.user_key, exc)
            out.draft_error = exc.code
            return out
        interval = rules.common_validity(selection.sources)
        if interval is None:  # select_sources only picks currently valid records; kept as a guard
            out.draft_error = DRAFT_NO_SOURCES
            return out
        proposal = Proposal(
            id=new_proposal_id(),
            collection=scope.collection,
            user_key=scope.user_key,
            scope_key=scope.scope_key,
            sender_id=selection.sender_id,
            created_at=to_iso(svc.clock()),
            created_by={"surface": actor.surface, "sender_id": actor.sender_id},
            sources=rules.source_refs(selection.sources),
            # the model's words pass the gate before an admin sees them (and again when applied)
            summary=gate.screen("consolidation.summary", {"content": draft.summary}).fields["content"],
            valid_from=interval[0],
            valid_until=interval[1],
            model_uuid=s.model_uuid,
        )
        # The knowledge base may have been deleted while the model was thinking: then nothing is kept.
        if not await self._kb_alive(scope.collection, epoch):
            out.draft_error = DRAFT_KB_DELETED
            return out
        await self.proposals.store(proposal)
        # Close the races with a concurrent delete (the KB, or a source): re-check after storing.
        # A deletion that commits after this check finds the stored proposal through its own cascade.
        if not await self._kb_alive(scope.collection, epoch):
            await self.proposals.delete(proposal)
            out.draft_error = DRAFT_KB_DELETED
            return out
        check = await self._recheck(scope, proposal)
        if not check.ok:
            await self.proposals.delete(proposal)
            out.draft_error = DRAFT_SOURCES_CHANGED
            return out
        await svc.writes.audit(
            scope,
            actor,
            "consolidation.preview",
            [proposal.id, *ids][:50],
            f"proposal {proposal.id}: summary of {len(ids)} memories",
        )
        await self.proposals.prune(scope, keep=proposal.id)
        out.proposal = proposal
        log.info("consolidation proposal %s stored in %s (%d sources)", proposal.id, scope.user_key, len(ids))
        return out

    # ------------------------------------------------------------------ run
    async def run(self, scope: Scope, actor: Actor, proposal_id: str | None = None) -> RunResult:
        """Archive the superseded candidates and, with ``proposal_id``, apply that reviewed proposal.
        Refused (nothing changes, nothing audited) when disabled or when the proposal is missing,
        used, stale, expired or of another scope. A memory admin's verb."""
        require_admin("consolidate", actor, self.service.settings)
        need_l2(scope)
        s = self.settings
        if not s.enabled:
            raise ConflictError("consolidation is disabled", key="consol.error.disabled")
        if proposal_id is not None and not rules.PROPOSAL_ID_RE.match(str(proposal_id)):
            raise ValidationError("malformed proposal id", key="consol.error.proposal_id")
        result = RunResult(proposal_id=proposal_id or "")
        if proposal_id:
            result.summary = await self._apply(scope, actor, proposal_id)
        result.archived = await self._archive(scope, actor, s)
        targets = [*([proposal_id] if proposal_id else []), *([result.summary.id] if result.summary else [])]
        await self.service.writes.audit(
            scope,
            actor,
            "consolidation.run",
            [*targets, *result.archived][:50],
            f"consolidation run: {len(result.archived)} archived"
            + (f", summary {result.summary.id} from {proposal_id}" if result.summary else ""),
        )
        log.info(
            "consolidation run in %s: %d archived, summary %s",
            scope.user_key,
            len(result.archived),
            result.summary.id if result.summary else "-",
        )
        return result

    async def _archive(self, scope: Scope, actor: Actor, s: ConsolidationSettings) -> list[str]:
        """Archive the superseded candidates under the scope lock, in one audited write. The status of
        every record is read under the lock: an active record is never archived here."""
        svc = self.service
        lock = l2_lock_key(scope)
        async with svc.locks.hold(lock):
            cands = [c for c in await self._archive_candidates(scope, s) if c.episode.status == "superseded"]
            if not cands:
                return []
            updated = [c.episode.retagged(status="archived") for c in cands]
            ids = [e.id for e in updated]
            originals = [c.episode for c in cands]
            audit = (ids[:50], f"archived {len(ids)} superseded memories")
            op = "consolidation.archive"
            step = svc.writes.rewrite_step(scope, updated, originals, op, episodes_are(ids, "archived"), audit)
            await svc.writes.mutate(actor, op, [step], reason="consolidation")
        # No retire event: these records left the active set when they were superseded (and the
        # cascade ran then).
        return ids

    async def _claim(self, scope: Scope, proposal_id: str) -> tuple[Proposal, list[Episode]]:
        """Under the scope lock: load, check and mark the proposal used (one use). Raises when it
        cannot be applied; a stale one is invalidated (its text dropped)."""
        svc = self.service
        async with svc.locks.hold(l2_lock_key(scope)):
            p = await self.proposals.load(scope.user_key, proposal_id)
            if p is None or p.user_key != scope.user_key or p.collection != scope.collection or p.id != proposal_id:
                # Another scope's proposal is reported as missing: its existence is not disclosed.
                raise NotFoundError("no such proposal in this scope", key="consol.error.proposal_missing")
            if p.status == "used":
                raise ConflictError("proposal already used", key="consol.error.proposal_used")
            if p.status != "pending":
                raise ConflictError("proposal is stale", key="consol.error.proposal_stale")
            now = to_iso(svc.clock())
            if self.proposals.expired(p):
                await self.proposals.store(p.spent("stale", now, reason="expired"), held=True)
                raise ConflictError("proposal expired", key="consol.error.proposal_expired", days=PROPOSAL_TTL_DAYS)
            if set(p.source_ids) & await self._covered(scope):  # replaced by another summary already
                check = rules.ProposalCheck(False, "covered")
            else:
                check = await self._recheck(scope, p)
            if not check.ok:
                await self.proposals.store(p.spent("stale", now, reason=check.reason), held=True)
                raise _stale(check.reason)
            if not rules.summary_fits(p.summary, svc.settings.recall_token_budget):
                raise ValidationError("summary does not fit the recall budget", key="consol.error.budget")
            await self.proposals.store(p.spent("used", now), held=True)
            return p, check.sources

    async def _apply(self, scope: Scope, actor: Actor, proposal_id: str) -> Episode:
        svc = self.service
        p, sources = await self._claim(scope, proposal_id)
        raw, links = rules.summary_fields(p.summary, sources, p.id)
        target = scope.with_sender(p.sender_id)
        audience = narrowest_audience([e.audience for e in sources])  # never wider than its sources
        if audience is None:  # sources from two private chats: no one may read all of them
            await self.proposals.store(p.spent("stale", to_iso(svc.clock()), reason="sender"))
            raise _stale("sender")
        # Guarded: the statement guards see origin "consolidation" and decide (the review queue
        # refuses a tombstoned value on every write path and parks conflicts only for
        # conversational origins). The summary replaces its sources in the same vector write
        # (each checked present, active and of the speaker under the write's lock), so they leave
        # default recall and injection exactly when it arrives.
        try:
            plan = svc.episodes.plan_remember(target, raw, actor, origin=rules.ORIGIN)
            plan.link(links)
            plan.for_audience(audience)
            plan.replacing(p.source_ids)
            async with plan:
                await plan.commit()
            summary = plan.remembered.episode
        except FencedError:
            raise  # the outcome is unknown: the proposal stays used (no second summary)
        except (NotFoundError, ConflictError) as exc:
            await self._release(scope, p)  # nothing was written; stale when a source changed
            reason = _TARGET_ERRORS.get(exc.key)
            if reason is None:
                raise
            raise _stale(reason) from exc  # a source retired between the claim and the write
        except BaseException:
            await self._release(scope, p)  # nothing was written: the proposal may be run again
            raise
        await self.proposals.store(p.spent("used", to_iso(svc.clock()), result_id=summary.id))
        return summary

    async def _release(self, scope: Scope, p: Proposal) -> None:
        """Put a claimed proposal back after a write that certainly failed, unless a source changed
        meanwhile (then it is stale: the cascade skipped it while it was claimed)."""
        try:
            check = await self._recheck(scope, p)
            await self.proposals.store(
                p if check.ok else p.spent("stale", to_iso(self.service.clock()), reason=check.reason)
            )
        except Exception as exc:  # the claim stays: a used proposal cannot be applied twice
            log.warning("could not release consolidation proposal %s: %s", p.id, exc)

    # ------------------------------------------------------------------ discard
    async def discard(self, scope: Scope, actor: Actor, proposal_id: str) -> bool:
        """Drop a pending proposal of this scope (audited). False when there is none. A memory
        admin's verb."""
        require_admin("consolidate", actor, self.service.settings)
        need_l2(scope)
        if not rules.PROPOSAL_ID_RE.match(str(proposal_id)):
            raise ValidationError("malformed proposal id", key="consol.error.proposal_id")
        svc = self.service
        op = "consolidation.discard"
        async with svc.locks.hold(l2_lock_key(scope)):
            key = proposal_key(scope.user_key, proposal_id)
            raw = await backend(svc.kv.get(key), "storage read")
            p = await self.proposals.load(scope.user_key, proposal_id) if raw else None
            if p is None or p.collection != scope.collection or p.user_key != scope.user_key or p.status != "pending":
                return False
            step = svc.writes.kv_step(scope, op, key, None, raw, audit=([p.id], f"proposal {p.id} discarded"))
            await svc.writes.mutate(actor, op, [step])  # one journaled, fenced, audited delete
        return True

    # ------------------------------------------------------------------ cascades
    async def give_back_steps(self, event: RetireEvent) -> list[WriteStep]:
        """Retire step provider: an ACTIVE summary that is forgotten, archived or deleted gives its
        sources back - the ones it still replaces (superseded by it, not retired in the same
        event) become active again, in the same all-or-nothing mutation as the removal (audited
        ``consolidation.restore``). A summary that a correction had superseded gives nothing back:
        the correction replaced it. Called under the scope's write lock."""
        if event.operation not in ("forget", "archive", "bulk_delete"):
            return []
        leaving = {e.id for e in event.episodes}
        svc = self.service
        steps: list[WriteStep] = []
        for summary in event.episodes:
            if not rules.is_summary(summary) or summary.status != "active":
                continue
            found = await self._by_ids(event.scope, rules.sources_of(summary))
            back = [
                e
                for e in found.values()
                if e.status == "superseded" and e.superseded_by == summary.id and e.id not in leaving
            ]
            if back:
                steps.append(svc.writes.restore_step(event.scope, back, summary.id, "consolidation.restore"))
        return steps

    async def on_retired(self, event: RetireEvent) -> None:
        """The retire pipeline's cascade: delete the summaries derived from a retired record (same
        scope only; from every index, through ``Episodes.delete_derived``, which does not cascade
        again) and drop every pending proposal of the scope that contains it. Both parts run even
        when one fails; the first failure is re-raised (the pipeline logs it: the retirement itself
        already committed)."""
        retired = {e.id for e in event.episodes if not rules.is_summary(e)}
        scope = event.scope
        if not retired or not scope.collection or not scope.user_key:
            return
        if event.operation == "consolidate":
            # the sources were just replaced by their own summary, which stays; another pending
            # proposal over them is refused as ``covered`` when it is run
            return
        failure: BaseException | None = None
        victims: list[str] = []
        try:
            victims = [e.id for e in await self._summaries(scope) if retired & set(rules.sources_of(e))]
            if victims:
                actor = Actor(
                    surface="consolidation",
                    sender_id=event.actor.sender_id,
                    query_id=event.actor.query_id,
                    privilege=event.actor.privilege,
                )
                await self.service.episodes.delete_derived(
                    scope, victims, actor, reason=f"derived summary of a source that was removed ({event.operation})"
                )
        except Exception as exc:
            log.error("derived summaries of %s in %s not removed: %s", sorted(retired)[:5], scope.user_key, exc)
            failure = exc
        dropped = 0
        try:
            for p in await self.proposals.scope_proposals(scope):
                if p.status == "pending" and retired & set(p.source_ids):
                    await self.proposals.delete(p)
                    dropped += 1
        except Exception as exc:
            log.error("pending proposals of %s in %s not dropped: %s", sorted(retired)[:5], scope.user_key, exc)
            failure = failure or exc
        if dropped or victims:
            log.info(
                "consolidation cascade after %s in %s: %d summaries, %d proposals",
                event.operation,
                scope.user_key,
                len(victims),
                dropped,
            )
        if failure is not None:
            raise failure

    async def on_kb_deleted(self, kb_id: str) -> int:
        """The knowledge base is gone: drop every proposal of that collection (any scope) and make a
        preview still waiting for its model discard its draft. Returns the number dropped."""
        self._kb_epoch[kb_id] = self._kb_epoch.get(kb_id, 0) + 1
        n = await self.proposals.drop_collection(kb_id)
        log.info("consolidation proposals of deleted knowledge base %s dropped: %d", kb_id, n)
        return n
