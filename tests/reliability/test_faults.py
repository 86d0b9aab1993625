"""Fault injection at every host call of every write path, through the REAL host adapters.

For each write path (remember, remember with supersede, forget, archive, restore, bulk delete - one
chunk and several -, update_profile of a speaker and of a session, document ingest over two scopes,
document delete, import - one chunk and several -, confirm, forget --never with its tombstone, and
the review queue's propose, accept, reject and tombstone lift, and forgetting or archiving a reviewed
summary, which gives its sources back in the same mutation), a clean run first enumerates its host
calls (``FakeHostHandler.calls``).
Then, for each call index and each fault, the same write runs again from the same seeded store with
that fault injected at that call:

- ``timeout_before`` / ``connection_before`` / ``cancel_before``: the call fails before the host
  applies it (``ActionCallTimeoutError`` / ``ConnectionClosedError`` / ``CancelledError``);
- ``timeout_after`` / ``connection_after`` / ``cancel_after``: the host applies the call, then the
  failure surfaces (the plugin cannot know the outcome) - only for host writes (for a read both are
  the same, so reads get the ``_before`` variants);
- ``error_answer``: the host answers an error (``ActionCallError``): authoritative, nothing applied.

Asserted for every cell of the matrix (:func:`_check_cell`):

1. the caller gets a value (acknowledged) or a service error with a clear localized message (or
   the ``CancelledError`` itself) - never a raw SDK exception;
2. the user's data (vector rows + plugin storage, without audit/journal/fence keys) equals the state
   before or the state after the write - never a mix - and an acknowledged write is never lost;
3. an unknown outcome of a data write fences the scope; a deterministic failure (error answer) or a
   failure of a read before the write never fences;
4. a fence: further writes to that scope are refused (``error.fenced``) - in this process and after
   a restart - while another scope still accepts writes and the fenced scope can still be read;
   the fence is audited (``fence.set``), and clearing it (audited ``fence.clear``) lets writes in;
5. after a restart, ``recover()`` leaves exactly one audit entry of the operation when the data is
   in its after-state and none when it is in its before-state, and settles the journal.

Matrix size: the paths' host calls x applicable faults (7 for a host write, 4 for a read) - 1,725
cells over 22 write paths (the counts per path are in ``test_fault_matrix``'s docstring).

A cell that violates an assertion fails the test.

A path with follow-ups (``correct_with_follow_ups``: a correction of a memory that a summary cites
and a pending proposal covers, whose retire cascade runs after the correction committed) is injected
up to its correction's journal close: a refused commit runs no follow-up (the data is in its
before-state); a commit the caller got no answer for (an unknown outcome, a cancellation) may leave
the correction applied with its follow-ups not run, and an acknowledged one is in its after-state.

Around the matrix, for every path: each write scope of its mutation fenced beforehand refuses the
whole write and changes nothing (``test_a_fence_on_any_scope_of_a_write_refuses_it_whole``), and a
failed journal close followed by the next write in the same process audits the operation once
(``test_a_failed_journal_close_then_the_next_write_audits_once``).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

from ltm.adapters.host_index import strip_host_keys
from ltm.domain.errors import FencedError, LtmError
from ltm.domain.filters import Criteria
from ltm.domain.scope import Scope
from ltm.domain.storage_keys import l2_lock_key
from ltm.i18n import error_text
from ltm.service import Actor, MemoryService, Settings
from tests.support import with_consolidator, with_review
from tests.support.reliability import (
    ALL_FAULTS,
    CONNECTION_AFTER,
    CONNECTION_BEFORE,
    EMBEDDING_MODEL,
    ERROR_ANSWER,
    KB,
    TIMEOUT_AFTER,
    TIMEOUT_BEFORE,
    Determinism,
    Fault,
    FaultyHost,
    HostCall,
    assert_clear_message,
    classify,
    data_state,
    describe_diff,
    host_service,
)

ADMIN = Actor(surface="test", sender_id="admin", privilege=2)
SETTINGS = Settings(max_profile_traits=200)
A_ID = ("person_alice", "bot1", "alice")
B_ID = ("person_bob", "bot1", "bob")  # "another scope": never written by a path under test
C_ID = ("group_g1", "bot1", "carol")


def settings() -> Settings:
    return SETTINGS


async def scope(svc: MemoryService, ident: tuple[str, str, str]) -> Scope:
    return await svc.scope_for(kb_id=KB, session_name=ident[0], bot_uuid=ident[1], sender_id=ident[2])


# --------------------------------------------------------------------------------------------
# write paths
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WritePath:
    name: str
    operation: str  # the audit operation the write records
    run: Callable[[MemoryService, dict[str, Any]], Awaitable[Any]]
    seed_extra: Callable[[MemoryService, dict[str, Any]], Awaitable[None]] | None = None
    audits: int = 1  # audit entries of ``operation`` one complete run writes (one per scope)
    # the run's first mutation has follow-ups (the retire cascade) that commit on their own after
    # it: the matrix injects into the first mutation's calls, up to its journal close
    commit_only: bool = False
    # the neighbours its service is made with (their rules in the writes): "review", "consolidation"
    neighbours: tuple[str, ...] = ()
    seed_with_neighbours: bool = True  # its seed_extra writes with them (else as the base seed)


async def _seed(svc: MemoryService) -> dict[str, Any]:
    """Three episodes of A (two tagged ``t``), one archived; one of B; profiles of A."""
    a, b = await scope(svc, A_ID), await scope(svc, B_ID)
    ctx: dict[str, Any] = {}
    e1, _ = await svc.remember(a, {"content": "Alice drinks jasmine tea", "tags": ["t"]}, ADMIN)
    e2, _ = await svc.remember(a, {"content": "Alice lives in Berlin", "tags": ["t"]}, ADMIN)
    e3, _ = await svc.remember(a, {"content": "Alice plays the cello"}, ADMIN)
    await svc.set_status(a, e3.id, "archived", ADMIN)
    await svc.remember(b, {"content": "Bob likes coffee"}, ADMIN)
    await svc.update_profile(a, {"add_traits": ["curious"], "set_preferences": {"drink": "tea"}}, ADMIN)
    await svc.update_profile(a, {"target": "session", "add_notes": ["weekly call"]}, ADMIN)
    ctx.update(e1=e1.id, e2=e2.id, e3=e3.id)
    return ctx


# ids per backend delete call in every service here: the bulk path's 101 rows take two calls, every
# other path deletes fewer, in one
FAULT_DELETE_BATCH = 100


async def _seed_bulk(svc: MemoryService, ctx: dict[str, Any]) -> None:
    """101 more episodes of A tagged ``bulk``: the delete needs two chunks of 100."""
    items = [
        {
            "session_name": A_ID[0],
            "bot_uuid": A_ID[1],
            "sender_id": A_ID[2],
            "content": f"bulk row {n}",
            "tags": ["bulk"],
        }
        for n in range(101)
    ]
    await svc.ingest_document(KB, "doc-bulk", {"episodes": items}, ADMIN)


async def _run_remember(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.remember(await scope(svc, A_ID), {"content": "Alice moved to Hamburg"}, ADMIN)


async def _run_supersede(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    raw = {"content": "Alice lives in Hamburg now", "supersedes": [ctx["e2"]]}
    return await svc.remember(await scope(svc, A_ID), raw, ADMIN)


async def _run_forget(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.forget(await scope(svc, A_ID), ctx["e1"], ADMIN, reason="user asked")


async def _run_archive(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.set_status(await scope(svc, A_ID), ctx["e1"], "archived", ADMIN)


async def _run_restore(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.set_status(await scope(svc, A_ID), ctx["e3"], "active", ADMIN)


async def _run_bulk(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.bulk_delete(await scope(svc, A_ID), Criteria(statuses=None), ADMIN, tag="t")


async def _run_bulk_chunks(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    assert svc.delete_batch == FAULT_DELETE_BATCH  # the default batch (2,000 ids) would make this one call
    return await svc.bulk_delete(await scope(svc, A_ID), Criteria(statuses=None), ADMIN, tag="bulk")


async def _run_profile_speaker(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.update_profile(await scope(svc, A_ID), {"add_traits": ["patient"]}, ADMIN)


async def _run_profile_session(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.update_profile(await scope(svc, A_ID), {"target": "session", "add_notes": ["moved"]}, ADMIN)


async def _run_ingest(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    doc = {
        "episodes": [
            {"session_name": A_ID[0], "bot_uuid": A_ID[1], "sender_id": A_ID[2], "content": "Alice ran a marathon"},
            {"session_name": C_ID[0], "bot_uuid": C_ID[1], "sender_id": C_ID[2], "content": "Carol organises"},
        ]
    }
    return await svc.ingest_document(KB, "doc-1", doc, ADMIN)


async def _run_delete_document(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.delete_document(KB, "doc-2", ADMIN)


async def _seed_document(svc: MemoryService, ctx: dict[str, Any]) -> None:
    doc = {
        "episodes": [
            {"session_name": A_ID[0], "bot_uuid": A_ID[1], "sender_id": A_ID[2], "content": "Alice doc fact"},
            {"session_name": C_ID[0], "bot_uuid": C_ID[1], "sender_id": C_ID[2], "content": "Carol doc fact"},
        ]
    }
    await svc.ingest_document(KB, "doc-2", doc, ADMIN)


async def _run_import(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    from ltm.service.transfer import import_scope

    payload = {"episodes": [{"id": "x1", "content": "Imported fact one"}, {"id": "x2", "content": "Imported two"}]}
    return await import_scope(svc, await scope(svc, A_ID), payload, ADMIN)


async def _run_import_chunks(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    from ltm.service import transfer

    chunk = transfer.WRITE_CHUNK
    transfer.WRITE_CHUNK = 1  # one row per upsert: the two imported rows are two steps
    try:
        return await _run_import(svc, ctx)
    finally:
        transfer.WRITE_CHUNK = chunk


def _review(svc: MemoryService) -> Any:
    assert svc.review is not None, "the path's service is made with its review queue (neighbours)"
    return svc.review


def _service(fake: Any, path: WritePath, det: Determinism, *, seeding: bool = False) -> MemoryService:
    """A service over ``fake`` made with the neighbours ``path`` names (none while the base seed is
    written: it runs before any of them joined)."""
    names = () if seeding else path.neighbours
    return host_service(
        fake,
        settings,
        det.clock,
        delete_batch=FAULT_DELETE_BATCH,
        review=with_review() if "review" in names else None,
        consolidator=with_consolidator() if "consolidation" in names else None,
    )


async def _seed_candidate(svc: MemoryService, ctx: dict[str, Any]) -> None:
    from ltm.domain.candidates import Proposal

    cand = await _review(svc).propose(
        await scope(svc, A_ID), Proposal("Alice collects stamps", "", "preference"), ADMIN, origin="test"
    )
    ctx["cand"] = cand.id


async def _seed_tombstone(svc: MemoryService, ctx: dict[str, Any]) -> None:
    _review(svc)
    await svc.forget(await scope(svc, A_ID), ctx["e2"], ADMIN, reason="wrong", never=True)
    ctx["tomb"] = (await _review(svc).list_tombstones(await scope(svc, A_ID)))[0][0].id


async def _run_confirm(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await svc.confirm_episode(await scope(svc, A_ID), ctx["e1"], ADMIN)


async def _run_forget_never(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    _review(svc)
    return await svc.forget(await scope(svc, A_ID), ctx["e1"], ADMIN, reason="never again", never=True)


async def _run_propose(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    from ltm.domain.candidates import Proposal

    return await _review(svc).propose(
        await scope(svc, A_ID), Proposal("Alice collects coins", "", "preference"), ADMIN, origin="test"
    )


async def _run_accept(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await _review(svc).accept(await scope(svc, A_ID), ctx["cand"], ADMIN)


async def _run_reject(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await _review(svc).reject(await scope(svc, A_ID), ctx["cand"], ADMIN, reason="not true")


async def _run_lift(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    return await _review(svc).lift_tombstone(await scope(svc, A_ID), ctx["tomb"], ADMIN, reason="was right")


def _consolidator(svc: MemoryService) -> Any:
    assert svc.consolidator is not None, "the path's service is made with its consolidator (neighbours)"
    return svc.consolidator


async def _seed_summary(svc: MemoryService, ctx: dict[str, Any]) -> None:
    """A reviewed summary of A's two active memories, written as consolidation writes it: it
    replaces them (superseded by it) and keeps their ids as lineage."""
    sources = [ctx["e1"], ctx["e2"]]
    raw = {"content": "Alice drinks jasmine tea and lives in Berlin", "claim_type": "inference"}
    links = {"sources": sources, "proposal_id": "cp_" + "0" * 20}
    plan = svc.episodes.plan_remember(await scope(svc, A_ID), raw, ADMIN, origin="consolidation")
    plan.link(links)
    plan.replacing(sources)
    async with plan:
        await plan.commit()
    summary, _ = plan.remembered
    ctx["summary"] = summary.id


async def _run_forget_summary(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    _consolidator(svc)
    return await svc.forget(await scope(svc, A_ID), ctx["summary"], ADMIN, reason="wrong summary")


async def _run_archive_summary(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    _consolidator(svc)
    return await svc.set_status(await scope(svc, A_ID), ctx["summary"], "archived", ADMIN)


async def _seed_correctable(svc: MemoryService, ctx: dict[str, Any]) -> None:
    """What a correction of A's active ``e1`` retires once it commits: a summary that cites ``e1``
    (its lineage; ``e1`` not replaced, so still active) and a pending consolidation proposal over it."""
    from ltm.domain.consolidation import source_refs
    from ltm.service.consolidation.proposals import Proposal

    a = await scope(svc, A_ID)
    raw = {"content": "Alice likes hot drinks", "claim_type": "inference"}
    plan = svc.episodes.plan_remember(a, raw, ADMIN, origin="consolidation")
    plan.link({"sources": [ctx["e1"]], "proposal_id": "cp_" + "1" * 20})
    async with plan:
        await plan.commit()
    ctx["derived"] = plan.remembered[0].id
    e1 = await svc.get_episode(a, ctx["e1"])
    proposal = Proposal(
        id="cp_" + "2" * 20,
        collection=a.collection,
        user_key=a.user_key,
        scope_key=a.scope_key,
        sender_id=a.sender_id,
        created_at="2025-03-01T12:00:00Z",
        created_by=ADMIN.to_record(),
        sources=source_refs([e1]),
        summary="Alice drinks tea",
        valid_from=None,
        valid_until=None,
    )
    await _consolidator(svc).proposals.store(proposal)
    ctx["proposal"] = proposal.id


async def _run_correct(svc: MemoryService, ctx: dict[str, Any]) -> Any:
    _consolidator(svc)
    raw = {"content": "Alice drinks green tea now", "supersedes": [ctx["e1"]]}
    return await svc.remember(await scope(svc, A_ID), raw, ADMIN)


PATHS: dict[str, WritePath] = {
    p.name: p
    for p in (
        WritePath("remember", "episode.remember", _run_remember),
        WritePath("remember_supersede", "episode.remember", _run_supersede),
        WritePath("forget", "episode.forget", _run_forget),
        WritePath("archive", "episode.archive", _run_archive),
        WritePath("restore", "episode.restore", _run_restore),
        WritePath("bulk_delete", "episode.bulk_delete", _run_bulk),
        WritePath("bulk_delete_two_chunks", "episode.bulk_delete", _run_bulk_chunks, _seed_bulk),
        WritePath("update_profile_speaker", "profile.update", _run_profile_speaker),
        WritePath("update_profile_session", "profile.update", _run_profile_session),
        WritePath("ingest_document_two_scopes", "document.ingest", _run_ingest, audits=2),
        WritePath("delete_document", "episode.bulk_delete", _run_delete_document, _seed_document, audits=2),
        WritePath("import_scope", "episode.import", _run_import),
        WritePath("import_two_chunks", "episode.import", _run_import_chunks),
        WritePath("confirm", "episode.confirm", _run_confirm),
        WritePath("forget_never", "episode.forget", _run_forget_never, neighbours=("review",)),
        WritePath("candidate_propose", "candidate.propose", _run_propose, neighbours=("review",)),
        WritePath("candidate_accept", "candidate.accept", _run_accept, _seed_candidate, neighbours=("review",)),
        WritePath("candidate_reject", "candidate.reject", _run_reject, _seed_candidate, neighbours=("review",)),
        WritePath("tombstone_lift", "tombstone.lift", _run_lift, _seed_tombstone, neighbours=("review",)),
        WritePath(
            "forget_summary",
            "consolidation.restore",
            _run_forget_summary,
            _seed_summary,
            neighbours=("consolidation",),
            seed_with_neighbours=False,
        ),
        WritePath(
            "archive_summary",
            "consolidation.restore",
            _run_archive_summary,
            _seed_summary,
            neighbours=("consolidation",),
            seed_with_neighbours=False,
        ),
        WritePath(
            "correct_with_follow_ups",
            "episode.remember",
            _run_correct,
            _seed_correctable,
            commit_only=True,
            neighbours=("consolidation",),
        ),
    )
}


# --------------------------------------------------------------------------------------------
# templates: seed once per path, restore cheaply per cell
# --------------------------------------------------------------------------------------------


@dataclass
class Template:
    storage: dict[str, bytes]
    rows: dict[str, Any]
    ctx: dict[str, Any]
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    calls: list[HostCall] = field(default_factory=list)
    result: Any = None
    locks: list[str] = field(default_factory=list)  # the write scopes of the run's first mutation
    mid: dict[str, Any] | None = None  # commit_only: the first mutation applied, its follow-ups not run
    vdb: str = "chroma"  # the host's vector store (a metadata-dropping one: served by the sidecar)
    held: dict[str, Any] = field(default_factory=dict)  # a dropping store's own state (rows, dimensions)


_TEMPLATES: dict[tuple[str, str], Template] = {}
# the fault matrix runs on the host's default Chroma and on pgvector, which keeps only text, file_id
# and the chunk uuid: every write path through the sidecar (its two halves, ADR 0008). Milvus and
# Valkey Search differ from pgvector in what the fake stores, not in what the sidecar writes.
MATRIX_VDBS = ("chroma", "pgvector")


def _held(fake: FaultyHost) -> dict[str, Any]:
    return copy.deepcopy(
        {"rows": fake.dropping_rows, "pg": fake.pg_dims, "milvus": fake.milvus_dims, "valkey": fake.valkey_dims}
    )


def _restore(t: Template) -> FaultyHost:
    fake = FaultyHost(bots=["bot1", "bot2"], vdb=t.vdb)
    fake.add_knowledge_base(KB)
    fake.storage = dict(t.storage)
    if t.vdb != "chroma":
        held = copy.deepcopy(t.held)
        fake.dropping_rows, fake.pg_dims = held["rows"], held["pg"]
        fake.milvus_dims, fake.valkey_dims = held["milvus"], held["valkey"]
        return fake
    if t.rows["ids"]:
        host = {
            "_langbot_instance_uuid": fake.instance_uuid,
            "_langbot_workspace_uuid": fake.workspace_uuid,
            "_langbot_knowledge_base_uuid": KB,
        }
        fake._collection(KB).upsert(
            ids=t.rows["ids"],
            embeddings=t.rows["embeddings"],
            metadatas=[{**strip_host_keys(md), **host} for md in t.rows["metadatas"]],
            documents=t.rows["documents"],
        )
    return fake


async def _template(path: WritePath, det: Determinism, vdb: str = "chroma") -> Template:
    if (vdb, path.name) in _TEMPLATES:
        return _TEMPLATES[(vdb, path.name)]
    fake = FaultyHost(bots=["bot1", "bot2"], vdb=vdb)
    fake.add_knowledge_base(KB)
    svc = _service(fake, path, det, seeding=True)
    await svc.register_kb(KB, {"embedding_model": EMBEDDING_MODEL, "isolation": "session"})
    det.reset("seed")
    ctx = await _seed(svc)
    if path.seed_extra:  # its neighbours join now (the same stores, the service made with them)
        await path.seed_extra(_service(fake, path, det) if path.seed_with_neighbours else svc, ctx)
    if vdb == "chroma":
        rows = fake._collection(KB).get(include=["embeddings", "metadatas", "documents"])
        rows["embeddings"] = [list(map(float, v)) for v in rows["embeddings"]]
    else:
        rows = {"ids": []}
    t = Template(dict(fake.storage), rows, ctx, vdb=vdb, held=_held(fake) if vdb != "chroma" else {})
    fake.close()
    # the clean run: the after-state and the host calls of the write
    fake = _restore(t)
    svc = _service(fake, path, det)
    t.before = data_state(fake)
    det.reset()
    fake.calls.clear()
    begin = svc.writes.journal.begin

    async def first_locks(actor: Actor, operation: str, steps: Any) -> str:
        if not t.locks:
            t.locks.extend(dict.fromkeys(s.lock_key for s in steps))
        return await begin(actor, operation, steps)

    svc.writes.journal.begin = first_locks  # type: ignore[method-assign]
    t.result = await path.run(svc, ctx)
    t.calls = classify(fake.calls)
    t.after = data_state(fake)
    assert t.after != t.before, f"{path.name}: the clean run changed nothing"
    assert not await svc.fences(), f"{path.name}: the clean run left a fence"
    assert not [k for k in fake.storage if k.startswith("journal/")], f"{path.name}: the clean run left a journal"
    fake.close()
    if path.commit_only:
        t.mid = await _without_follow_ups(path, t, det)
    _TEMPLATES[(vdb, path.name)] = t
    return t


async def _without_follow_ups(path: WritePath, t: Template, det: Determinism) -> dict[str, Any]:
    """The data once the path's first mutation applied and nothing after it ran: what a caller
    that got no answer (an unknown outcome, a cancellation) leaves, since follow-ups run only after
    an acknowledged commit."""
    from ltm.service.writes.plan import Plan

    fake = _restore(t)
    try:
        svc = _service(fake, path, det)
        det.reset()
        then = Plan.then
        Plan.then = lambda self, follow: None  # type: ignore[method-assign]
        try:
            await path.run(svc, t.ctx)
        finally:
            Plan.then = then  # type: ignore[method-assign]
        mid = data_state(fake)
    finally:
        fake.close()
    assert mid not in (t.before, t.after), f"{path.name}: its follow-ups change nothing"
    return mid


def _faults_for(call: HostCall) -> tuple[Fault, ...]:
    return ALL_FAULTS if call.is_write else tuple(f for f in ALL_FAULTS if not f.applied)


# --------------------------------------------------------------------------------------------
# one cell
# --------------------------------------------------------------------------------------------


def _audit_ops(fake: FaultyHost, operation: str) -> dict[str, int]:
    """operation -> count over every audit chunk of the store (orphans included)."""
    count = 0
    for k, v in fake.storage.items():
        if k.startswith("audit/") and "/c/" in k:
            count += sum(1 for e in json.loads(v) if e.get("operation") == operation)
    return {operation: count}


def _audit_has(fake: FaultyHost, operation: str, target: str) -> bool:
    for k, v in fake.storage.items():
        if k.startswith("audit/") and "/c/" in k:
            if any(e.get("operation") == operation and target in e.get("targets", []) for e in json.loads(v)):
                return True
    return False


async def _fenced_scope(svc: MemoryService, fence_key: str) -> tuple[Scope, str]:
    """The scope a fence key belongs to, and what it fences: "l2", "session" or "speaker"."""
    for ident in (A_ID, C_ID, B_ID):
        s = await scope(svc, ident)
        if fence_key == l2_lock_key(s):
            return s, "l2"
        if fence_key == f"l1:{s.scope_key}#session":
            return s, "session"
        if fence_key == f"l1:{s.user_key}#speaker:{s.sender_id}":
            return s, "speaker"
    raise AssertionError(f"no known scope for the fence {fence_key}")


async def _follow_up_write(svc: MemoryService, fence_key: str) -> Any:
    """A write to the fenced scope: a remember for an L2 fence, a profile update for an L1 fence."""
    s, kind = await _fenced_scope(svc, fence_key)
    if kind == "l2":
        return await svc.remember(s, {"content": "written after the fence"}, ADMIN)
    return await svc.update_profile(s, {"target": kind, "add_notes": ["after the fence"]}, ADMIN)


async def _check_cell(path: WritePath, t: Template, call: HostCall, fault: Fault, det: Determinism) -> list[str]:
    """Run one cell; return its violations (empty = the cell passes)."""
    problems: list[str] = []
    cell = f"{path.name} {call.label()} {fault.name}"
    fake = _restore(t)
    try:
        svc = _service(fake, path, det)
        det.reset()
        fake.calls.clear()
        fake.arm(call.index, fault)
        acked, error = False, None
        try:
            await path.run(svc, t.ctx)
            acked = True
        except asyncio.CancelledError:
            if not fault.name.startswith("cancel"):
                problems.append(f"{cell}: CancelledError without a cancellation")
        except LtmError as exc:
            error = exc
            try:
                assert_clear_message(error_text(exc, "en_US"))
                assert_clear_message(error_text(exc, "zh_Hans"), lang="zh_Hans")
            except AssertionError as msg:
                problems.append(f"{cell}: unclear message: {msg}")
        except Exception as exc:  # noqa: BLE001 - the finding
            problems.append(f"{cell}: unhandled {type(exc).__name__}: {exc}")
        fake.disarm()
        if fake.fired is None:
            problems.append(f"{cell}: the fault never fired (call sequence diverged)")
        now = data_state(fake)
        if now == t.mid and acked:
            problems.append(f"{cell}: acknowledged but its follow-ups did not run")
        elif now != t.before and now != t.after and now != t.mid:
            diff = f"vs before: {describe_diff(t.before, now)}; vs after: {describe_diff(t.after, now)}"
            problems.append(f"{cell}: MIXED state ({diff})")
        if acked and now != t.after:
            problems.append(
                f"{cell}: acknowledged but the data is not in its after-state ({describe_diff(t.after, now)})"
            )
        fences = await svc.fences()
        if not fault.unknown or not call.is_data_write:
            if fences:
                problems.append(f"{cell}: fenced {sorted(fences)} though the outcome is known")
        elif not fences:
            problems.append(f"{cell}: unknown outcome of a data write but no fence")
        elif error is not None and not isinstance(error, FencedError):
            problems.append(f"{cell}: fenced but the caller got {type(error).__name__} ({error.key})")
        # restart: recovery settles the journal; one audit entry iff the data is in its after-state
        svc2 = _service(fake, path, det)
        try:
            await svc2.recover()
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{cell}: recover() raised {type(exc).__name__}: {exc}")
        if data_state(fake) != now:
            problems.append(f"{cell}: recover() changed the data")
        audits = _audit_ops(fake, path.operation)[path.operation] - _audit_ops_before(t, path.operation)
        state = "after" if now in (t.after, t.mid) else "before" if now == t.before else "mixed"
        want = {"after": path.audits, "before": 0}.get(state)
        if want is not None and audits != want:
            problems.append(f"{cell}: {audits} audit entries of {path.operation} with the data {state}")
        fences2 = await svc2.fences()
        if state == "mixed" and not fences2:
            problems.append(f"{cell}: mixed state left unfenced after recovery")
        if [k for k in fake.storage if k.startswith("journal/")] and not fences2:
            problems.append(f"{cell}: an open journal entry without a fence after recovery")
        for key, record in fences2.items():
            problems += await _check_fence(cell, fake, svc, svc2, key, record)
    finally:
        fake.close()
    return problems


_AUDIT_BEFORE: dict[tuple[int, str], int] = {}


def _audit_ops_before(t: Template, operation: str) -> int:
    k = (id(t), operation)
    if k not in _AUDIT_BEFORE:
        _AUDIT_BEFORE[k] = sum(
            sum(1 for e in json.loads(v) if e.get("operation") == operation)
            for key, v in t.storage.items()
            if key.startswith("audit/") and "/c/" in key
        )
    return _AUDIT_BEFORE[k]


async def _check_fence(
    cell: str, fake: FaultyHost, svc: MemoryService, svc2: MemoryService, key: str, record: dict[str, Any]
) -> list[str]:
    problems: list[str] = []
    if not _audit_has(fake, "fence.set", key):
        problems.append(f"{cell}: fence {key} not audited")
    for label, service in (("same process", svc), ("after restart", svc2)):
        before = data_state(fake)
        try:
            await _follow_up_write(service, key)
            problems.append(f"{cell}: a write to fenced {key} was accepted ({label})")
        except FencedError as exc:
            if exc.key != "error.fenced":
                problems.append(f"{cell}: refusal key {exc.key} ({label})")
            try:
                assert_clear_message(error_text(exc))
            except AssertionError as msg:
                problems.append(f"{cell}: unclear fence message: {msg}")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{cell}: fenced write raised {type(exc).__name__}: {exc} ({label})")
        if data_state(fake) != before:
            problems.append(f"{cell}: a refused write changed the data ({label})")
    # reads of the fenced scope still work; another scope still accepts writes
    fenced, _ = await _fenced_scope(svc2, key)
    try:
        await svc2.list_episodes(fenced, statuses=None)
        await svc2.get_profile(fenced, "speaker", fenced.sender_id)
        await svc2.get_profile(fenced, "session")
        await svc2.recall(fenced, "Alice tea")
    except Exception as exc:  # noqa: BLE001
        problems.append(f"{cell}: reading the fenced scope failed: {type(exc).__name__}: {exc}")
    try:
        await svc2.remember(await scope(svc2, B_ID), {"content": "Bob is unaffected"}, ADMIN)
        await svc2.update_profile(await scope(svc2, B_ID), {"add_traits": ["unaffected"]}, ADMIN)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"{cell}: another scope refused a write: {type(exc).__name__}: {exc}")
    # clearing is audited and lets writes in again
    if not await svc2.clear_fence(key, ADMIN, reason="checked by the operator"):
        problems.append(f"{cell}: clear_fence({key}) returned False")
    if not _audit_has(fake, "fence.clear", key):
        problems.append(f"{cell}: fence clear of {key} not audited")
    try:
        await _follow_up_write(svc2, key)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"{cell}: a write after clearing {key} failed: {type(exc).__name__}: {exc}")
    return problems


# --------------------------------------------------------------------------------------------
# the matrix
# --------------------------------------------------------------------------------------------


@pytest.fixture
def det(monkeypatch: pytest.MonkeyPatch) -> Iterator[Determinism]:
    d = Determinism()
    with d.patched(monkeypatch):
        yield d


async def _matrix(name: str, det: Determinism, vdb: str = "chroma") -> tuple[int, list[str]]:
    path = PATHS[name]
    t = await _template(path, det, vdb)
    cells = 0
    problems: list[str] = []
    for call in t.calls[: _first_journal_close(t) + 1] if path.commit_only else t.calls:
        for fault in _faults_for(call):
            problems += await _check_cell(path, t, call, fault, det)
            cells += 1
    return cells, problems


def _journal_closes(t: Template) -> list[HostCall]:
    return [c for c in t.calls if c.action is A.DELETE_PLUGIN_STORAGE and c.key.startswith("journal/")]


def _first_journal_close(t: Template) -> int:
    return _journal_closes(t)[0].index


@pytest.mark.parametrize("vdb", MATRIX_VDBS)
@pytest.mark.parametrize("name", sorted(PATHS))
async def test_fault_matrix(name: str, vdb: str, det: Determinism) -> None:
    """Every host call of the write path x every applicable fault (see the module docstring).
    Cells: remember 63, remember_supersede 67, forget 63, archive 63, restore 63, bulk_delete 63,
    bulk_delete_two_chunks 74, update_profile_speaker 59, update_profile_session 59,
    ingest_document_two_scopes 107, delete_document 115, import_scope 63, import_two_chunks 74, confirm 63,
    forget_never 92, candidate_propose 108, candidate_accept 119, candidate_reject 85, tombstone_lift 59,
    forget_summary 96, archive_summary 96, correct_with_follow_ups (its correction's calls only) 74 -
    1,725 in total (on Chroma; pgvector's paths make more calls: the sidecar's metadata values)."""
    cells, problems = await _matrix(name, det, vdb)
    assert cells > 0
    assert not problems, f"{len(problems)} of {cells} cells failed:\n" + "\n".join(problems[:40])


async def test_every_write_path_calls_the_host_for_its_data(det: Determinism) -> None:
    """The clean runs really write through the host: each path has a data write among its calls."""
    for name, path in PATHS.items():
        t = await _template(path, det)
        assert any(c.is_data_write for c in t.calls), f"{name}: no data write among {[c.label() for c in t.calls]}"


async def test_error_answer_on_the_data_write_is_not_fenced_and_retry_succeeds(det: Determinism) -> None:
    """A deterministic refusal: nothing applied, no fence, no journal left, and the same write
    succeeds on retry in the same process."""
    t = await _template(PATHS["remember"], det)
    call = next(c for c in t.calls if c.is_data_write)
    fake = _restore(t)
    try:
        svc = _service(fake, PATHS["remember"], det)
        fake.arm(call.index, ERROR_ANSWER)
        with pytest.raises(LtmError) as info:
            await _run_remember(svc, t.ctx)
        assert info.value.key == "error.backend"
        assert data_state(fake) == t.before
        assert not await svc.fences()
        assert not [k for k in fake.storage if k.startswith("journal/")]
        await _run_remember(svc, t.ctx)
    finally:
        fake.close()


async def test_real_task_cancellation_during_the_vector_write_fences(det: Determinism) -> None:
    """``task.cancel()`` while the vector upsert is in flight (dispatched, unanswered): fenced;
    cancelled while still embedding: not fenced."""
    t = await _template(PATHS["remember"], det)
    for action_name, fenced in (("VECTOR_UPSERT", True), ("INVOKE_EMBEDDING", False)):
        fake = _restore(t)
        try:
            svc = _service(fake, PATHS["remember"], det)
            entered, release = asyncio.Event(), asyncio.Event()

            async def pause(
                action: Any,
                data: dict[str, Any],
                name: str = action_name,
                entered: asyncio.Event = entered,
                release: asyncio.Event = release,
            ) -> None:
                if action.name == name:
                    entered.set()
                    await release.wait()

            fake.pause = pause
            task = asyncio.create_task(_run_remember(svc, t.ctx))
            await asyncio.wait_for(entered.wait(), 5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            fake.pause = None
            assert data_state(fake) == t.before
            assert bool(await svc.fences()) is fenced, action_name
            # cancelled before anything was dispatched: nothing for recovery to settle
            assert bool([k for k in fake.storage if k.startswith("journal/")]) is fenced, action_name
        finally:
            fake.close()


# --------------------------------------------------------------------------------------------
# fences of every write scope, and a journal close that failed before the next write
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PATHS))
async def test_a_fence_on_any_scope_of_a_write_refuses_it_whole(name: str, det: Determinism) -> None:
    """For each write scope the path's mutation writes (several for a document over two chats, a
    profile with its memory, ...): that scope fenced beforehand refuses the whole write with
    ``error.fenced`` and nothing changes in any scope. The positive control is the clean run, which
    changed the data (checked by the template)."""
    path = PATHS[name]
    t = await _template(path, det)
    assert t.locks, f"{name}: the clean run wrote through no mutation"
    problems: list[str] = []
    for lock in t.locks:
        fake = _restore(t)
        try:
            svc = _service(fake, path, det)
            fenced, _ = await _fenced_scope(svc, lock)
            await svc.writes.fencing.set_fence(lock, fenced, "test", "fenced before the write")
            det.reset()
            try:
                await path.run(svc, t.ctx)
                problems.append(f"{name}: accepted with {lock} fenced")
            except FencedError as exc:
                if exc.key != "error.fenced":
                    problems.append(f"{name}: {lock} fenced, refused with {exc.key}")
            except Exception as exc:  # noqa: BLE001 - the finding
                problems.append(f"{name}: {lock} fenced, raised {type(exc).__name__}: {exc}")
            if data_state(fake) != t.before:
                problems.append(f"{name}: {lock} fenced, data changed ({describe_diff(t.before, data_state(fake))})")
            if [k for k in fake.storage if k.startswith("journal/")]:
                problems.append(f"{name}: {lock} fenced, a journal entry was left")
        finally:
            fake.close()
    assert not problems, "\n".join(problems)


JOURNAL_CLOSE_FAULTS = (ERROR_ANSWER, TIMEOUT_BEFORE, TIMEOUT_AFTER, CONNECTION_BEFORE, CONNECTION_AFTER)


@pytest.mark.parametrize("name", sorted(PATHS))
async def test_a_failed_journal_close_then_the_next_write_audits_once(name: str, det: Determinism) -> None:
    """The write applied and audited, then closing its journal entry failed (any fault but a
    cancellation, which leaves the entry to recovery): the write is acknowledged, and the next write
    to each of its scopes in the same process finishes its bookkeeping first - without writing its
    audit entries again (one entry of the operation per scope, as after a clean run)."""
    path = PATHS[name]
    t = await _template(path, det)
    closes = _journal_closes(t)
    assert closes, f"{name}: no journal close among the calls"
    problems: list[str] = []
    for fault in JOURNAL_CLOSE_FAULTS:
        cell = f"{name} {closes[0].label()} {fault.name}"
        fake = _restore(t)
        try:
            svc = _service(fake, path, det)
            det.reset()
            fake.calls.clear()
            fake.arm(closes[0].index, fault)
            try:
                await path.run(svc, t.ctx)
            except Exception as exc:  # noqa: BLE001 - the finding
                problems.append(f"{cell}: not acknowledged: {type(exc).__name__}: {exc}")
                continue
            finally:
                fake.disarm()
            if fake.fired is None:
                problems.append(f"{cell}: the fault never fired")
            if data_state(fake) != t.after:
                problems.append(f"{cell}: acknowledged but not in its after-state")
            own = _audit_ops(fake, path.operation)[path.operation] - _audit_ops_before(t, path.operation)
            followed = 0
            for lock in t.locks:
                det.reset(f"follow{followed}")
                await _follow_up_write(svc, lock)
                followed += (await _fenced_scope(svc, lock))[1] == "l2" and path.operation == "episode.remember"
                followed += (await _fenced_scope(svc, lock))[1] != "l2" and path.operation == "profile.update"
            audits = _audit_ops(fake, path.operation)[path.operation] - followed - _audit_ops_before(t, path.operation)
            if own != path.audits or audits != path.audits:
                problems.append(f"{cell}: {own} entries of {path.operation} before the next write, {audits} after")
            if [k for k in fake.storage if k.startswith("journal/")]:
                problems.append(f"{cell}: a journal entry outlived the next write")
            if await svc.fences():
                problems.append(f"{cell}: fenced {sorted(await svc.fences())}")
        finally:
            fake.close()
    assert not problems, "\n".join(problems)
