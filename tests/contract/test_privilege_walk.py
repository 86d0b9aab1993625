"""The privilege matrix walked through the SERVICE, verb by verb, for a member and for admins.

Every public verb of the service (the façade, the review queue, the consolidator, export/import,
health) is either a row here, naming the policy verb of ``docs/commands.md`` it answers to, or
listed in :data:`OUTSIDE_MATRIX` with the reason it is not one: a verb added without either fails
:func:`test_every_public_service_verb_is_classified`. The expected answer of each row is read from
the documented matrix itself (the markdown table), so the walk checks that the docs are what the
service enforces, whatever surface calls it: a member is refused every admin verb with the
localized refusal and nothing is written (no row, no record, no audit entry); the host admin, a
speaker listed in ``admin_sender_ids`` and the console's operator are let through (the positive
controls), and reads are open to the member too.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ltm.service.health as health
import ltm.service.transfer as transfer
from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.numpy_index import NumpyIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.candidates import Proposal
from ltm.domain.errors import LtmError, PermissionDenied
from ltm.domain.filters import Criteria
from ltm.domain.privilege import POLICY
from ltm.domain.scope import Scope
from ltm.i18n import error_text
from ltm.service import Actor, MemoryService, Settings
from ltm.service.consolidation import ConsolidationSettings, Consolidator
from ltm.service.review import ReviewQueue, ReviewSettings
from tests.support import KB, build_service, scope_of, with_consolidator, with_review
from tests.support.console.state import stored_state

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands.md"

CAROL = Actor(surface="tool", sender_id="carol")  # the speaker whose memories the verbs act on
SEED_ADMIN = Actor(surface="test", sender_id="seed-admin", privilege=2)
MEMBER = Actor(surface="test", sender_id="bob", query_id=7)
HOST_ADMIN = Actor(surface="test", sender_id="root", query_id=8, privilege=2)
LISTED_ADMIN = Actor(surface="test", sender_id="ops-lead", query_id=9)  # in admin_sender_ids
OPERATOR = Actor.console("ops@example")  # the Memory Console's dashboard operator
ACTORS = {"member": MEMBER, "host_admin": HOST_ADMIN, "listed_admin": LISTED_ADMIN, "operator": OPERATOR}

# Policy verbs that no service verb implements: they are answered by the surface alone.
SURFACE_ONLY = {"help": "the command's own usage text"}

# Public service verbs that are not a verb of the privilege matrix, and why.
OUTSIDE_MATRIX = {
    "MemoryService.remember": "a statement of the speaker (tool, listener); its supersedes follow the record rules",
    "MemoryService.update_profile": "the profile rules (may_edit_profile), tested in test_policy_surfaces",
    "MemoryService.screen_statement": "the statement guards of a write that is already allowed",
    "MemoryService.fetch": "the service's own scope-filtered read, under every read verb",
    "MemoryService.scope_index": "the recall index of a scope, under recall",
    "MemoryService.save_injection": "the listener's record of what it injected (no person's verb)",
    "MemoryService.prepare_turn": "the listener's turn: recall for the speaker's own text, as the hook does",
    "MemoryService.record_turn": "the listener's turn, published: its snapshot queued (no person's verb)",
    "MemoryService.known_scopes": "the console's list of memory spaces: the sessions the records name, no memory",
    "MemoryService.caller": "the policy's view of an actor",
    "MemoryService.scope_for": "derives keys; reads and writes nothing",
    "MemoryService.embedder": "the scope's embedder",
    "MemoryService.kb_settings": "knowledge-base settings (host lifecycle)",
    "MemoryService.known_kbs": "knowledge-base list (host lifecycle)",
    "MemoryService.resolve_kb": "knowledge-base lookup (host lifecycle)",
    "MemoryService.register_kb": "the host creates a knowledge base (engine lifecycle)",
    "MemoryService.ingest_document": "the host's document upload into the engine (an operator's action in LangBot)",
    "MemoryService.delete_document": "the host's document delete (an operator's action in LangBot)",
    "MemoryService.fences": "write fences of the installation (recovery)",
    "MemoryService.fence_of": "write fences of the installation (recovery)",
    "MemoryService.clear_fence": "recovery and the engine lifecycle clear their own fences",
    "MemoryService.clear_kb_fences": "recovery and the engine lifecycle clear their own fences",
    "MemoryService.backup": "the whole installation, the console operator's (backup.require_operator; test_backup)",
    "MemoryService.check_backup": "the same policy as restore_backup; reads and writes nothing",
    "MemoryService.restore_backup": "the same policy as backup (backup.require_operator; test_backup)",
    "MemoryService.require_mover": "the policy of backup and restore itself",
    "MemoryService.recover": "recovery of the installation's journal",
    "MemoryService.start_recovery": "recovery of the installation's journal",
    "MemoryService.stop_recovery": "recovery of the installation's journal",
    "MemoryService.wait_recovered": "recovery of the installation's journal",
    "MemoryService.stop_background": "the host revokes the installation (its queued background work stops)",
    "MemoryService.background_report": "the console's diagnostics: this process's background work, no memory",
    "ReviewQueue.guard": "the statement guard composed into every write",
    "ReviewQueue.propose": "the listener queues the speaker's own statement",
    "ReviewQueue.extract": "the listener's candidate extraction from the speaker's own words",
    "ReviewQueue.tombstone_for": "the guard's lookup",
    "ReviewQueue.readable": "the read rule for a candidate already in hand",
    "ReviewQueue.tombstone_steps": "a retire step of an allowed forget",
    "Consolidator.give_back_steps": "a retire step of an allowed removal",
    "Consolidator.on_retired": "the cascade of an allowed retirement",
    "Consolidator.on_kb_deleted": "the engine lifecycle",
    "ReviewQueue.delete_kb": "the engine lifecycle: the host deleted the knowledge base",
    "Consolidator.list_proposals": "a read of the scope (the console's proposal list)",
    "health.isolation_probe": "the probe itself, run only by run_health's admin probe",
}


@dataclass
class Env:
    svc: MemoryService
    review: ReviewQueue
    cons: Consolidator
    scope: Scope  # the chat the actor speaks in, as that actor
    ids: dict[str, str]


async def env_for(tmp: Path, actor: Actor) -> Env:
    """A group chat with Carol's memories in every state a verb needs: active, superseded,
    archived, a tombstone and a pending candidate."""
    svc = await build_service(
        "numpy",
        tmp,
        settings=lambda: Settings.from_config({"admin_sender_ids": "ops-lead"}),
        review=with_review(settings=lambda: ReviewSettings.from_config({"candidate_extraction_enabled": True})),
        consolidator=with_consolidator(
            None, settings=lambda: ConsolidationSettings(enabled=True, model_uuid="", min_age_days=0)
        ),
    )
    review, cons = svc.review, svc.consolidator
    assert review is not None and cons is not None
    carol = await scope_of(svc, "group_g1", "carol")
    ids: dict[str, str] = {}
    ids["tea"] = (await svc.remember(carol, {"content": "Carol likes green tea"}, CAROL)).episode.id
    old = (await svc.remember(carol, {"content": "Carol lives in Paris"}, CAROL)).episode
    await svc.remember(carol, {"content": "Carol lives in Berlin", "supersedes": [old.id]}, CAROL)
    diary = (await svc.remember(carol, {"content": "Carol keeps a diary"}, CAROL)).episode
    await svc.set_status(carol, diary.id, "archived", SEED_ADMIN)
    ids["archived"] = diary.id
    bike = (await svc.remember(carol, {"content": "I own a red bike"}, CAROL)).episode
    await svc.forget(carol, bike.id, SEED_ADMIN, never=True)
    ids["tombstone"] = (await review.list_tombstones(carol))[0][0].id
    cand = await review.propose(
        carol, Proposal("I play the violin", "I play the violin", "preference"), CAROL, origin="rules"
    )
    ids["candidate"] = cand.id
    scope = await scope_of(svc, "group_g1", actor.sender_id)
    return Env(svc, review, cons, scope, ids)


Call = Callable[[Env, Actor], Awaitable[Any]]

IMPORT_DOC = {"episodes": [{"content": "Dave likes jazz", "sender_id": "dave"}]}


async def _own_dm(e: Env, a: Actor) -> Scope:
    """The caller's private chat with the bot: where the people's-rights verbs are asked."""
    return await scope_of(e.svc, f"person_{a.sender_id}", a.sender_id)


async def _me(e: Env, a: Actor) -> Any:
    return await e.svc.my_memory(await _own_dm(e, a), a)


async def _forget_me_code(e: Env, a: Actor) -> Any:
    return e.svc.forget_me_code(await _own_dm(e, a), a)


async def _forget_me(e: Env, a: Actor) -> Any:
    dm = await _own_dm(e, a)
    return await e.svc.forget_me(dm, a, e.svc.forget_me_code(dm, a))


async def _opt(e: Env, a: Actor, out: bool) -> Any:
    return await e.svc.set_opt_out(e.scope, a, out) or await e.svc.set_opt_out(e.scope, a, not out)


# service verb -> (policy verb, a call of it by ``actor`` in ``env``)
ROWS: dict[str, tuple[str, Call]] = {
    "MemoryService.count_by_status": ("summary", lambda e, a: e.svc.count_by_status(e.scope)),
    "MemoryService.last_injection": ("summary", lambda e, a: e.svc.last_injection(e.scope)),
    "MemoryService.audit_count": ("summary", lambda e, a: e.svc.audit_count(e.scope)),
    "MemoryService.overview": ("summary", lambda e, a: e.svc.overview(e.scope)),
    "MemoryService.get_profile": ("profile", lambda e, a: e.svc.get_profile(e.scope, "session")),
    "MemoryService.speaker_profiles": ("profile", lambda e, a: e.svc.speaker_profiles(e.scope)),
    "MemoryService.list_episodes": ("list", lambda e, a: e.svc.list_episodes(e.scope, statuses=None)),
    "MemoryService.list_episodes(superseded)": (
        "superseded",
        lambda e, a: e.svc.list_episodes(e.scope, statuses=("superseded",)),
    ),
    "MemoryService.list_episodes(archived)": (
        "archived",
        lambda e, a: e.svc.list_episodes(e.scope, statuses=("archived",)),
    ),
    "MemoryService.recall": ("search", lambda e, a: e.svc.recall(e.scope, "tea", with_profiles=False)),
    "MemoryService.get_episode": ("show", lambda e, a: e.svc.get_episode(e.scope, e.ids["tea"])),
    "MemoryService.audit_page": ("audit", lambda e, a: e.svc.audit_page(e.scope, 1, 10)),
    "health.run_health": ("health", lambda e, a: health.run_health(e.svc, e.scope, [KB], probe=False, actor=a)),
    "health.run_health(probe)": ("health.probe", lambda e, a: health.run_health(e.svc, e.scope, [KB], actor=a)),
    "MemoryService.health": ("health", lambda e, a: e.svc.health(e.scope, [KB], probe=False, actor=a)),
    "MemoryService.health(probe)": ("health.probe", lambda e, a: e.svc.health(e.scope, [KB], actor=a)),
    "ReviewQueue.list": ("candidates", lambda e, a: e.review.list(e.scope, all_statuses=True)),
    "ReviewQueue.get": ("candidates", lambda e, a: e.review.get(e.scope, e.ids["candidate"])),
    "ReviewQueue.list_tombstones": ("tombstones", lambda e, a: e.review.list_tombstones(e.scope)),
    "MemoryService.forget": ("forget", lambda e, a: e.svc.forget(e.scope, e.ids["tea"], a)),
    "MemoryService.erase_episodes": ("forget", lambda e, a: e.svc.erase_episodes(e.scope, [e.ids["tea"]], a)),
    "MemoryService.set_status(archived)": (
        "archive",
        lambda e, a: e.svc.set_status(e.scope, e.ids["tea"], "archived", a),
    ),
    "MemoryService.set_status(active)": (
        "restore",
        lambda e, a: e.svc.set_status(e.scope, e.ids["archived"], "active", a),
    ),
    "MemoryService.confirm_episode": ("confirm", lambda e, a: e.svc.confirm_episode(e.scope, e.ids["tea"], a)),
    "ReviewQueue.accept": ("candidate", lambda e, a: e.review.accept(e.scope, e.ids["candidate"], a, "yes")),
    "ReviewQueue.reject": ("candidate", lambda e, a: e.review.reject(e.scope, e.ids["candidate"], a, "no")),
    "ReviewQueue.lift_tombstone": ("tombstone", lambda e, a: e.review.lift_tombstone(e.scope, e.ids["tombstone"], a)),
    "Consolidator.preview": ("consolidate", lambda e, a: e.cons.preview(e.scope, a)),
    "Consolidator.run": ("consolidate", lambda e, a: e.cons.run(e.scope, a)),
    "Consolidator.discard": ("consolidate", lambda e, a: e.cons.discard(e.scope, a, "cp_" + "0" * 20)),
    "MemoryService.bulk_delete": (
        "delete",
        lambda e, a: e.svc.bulk_delete(e.scope, Criteria(statuses=None, sender_id="carol"), a),
    ),
    "transfer.import_scope": ("import", lambda e, a: transfer.import_scope(e.svc, e.scope, IMPORT_DOC, a)),
    "transfer.export_scope": ("export", lambda e, a: transfer.export_scope(e.svc, e.scope, a, layer="l2")),
    "transfer.export_scope(l1)": ("export", lambda e, a: transfer.export_scope(e.svc, e.scope, a, layer="l1")),
    "MemoryService.import_scope": ("import", lambda e, a: e.svc.import_scope(e.scope, IMPORT_DOC, a)),
    "MemoryService.export_scope": ("export", lambda e, a: e.svc.export_scope(e.scope, a, layer="l2")),
    "MemoryService.export_scope(l1)": ("export", lambda e, a: e.svc.export_scope(e.scope, a, layer="l1")),
    "MemoryService.audit_export": ("audit.export", lambda e, a: e.svc.audit_export(e.scope, a)),
    "MemoryService.audit_document": ("audit.export", lambda e, a: e.svc.audit_document(e.scope, a)),
    "MemoryService.clear_scope_fences": ("fences.clear", lambda e, a: e.svc.clear_scope_fences(e.scope, a)),
    "MemoryService.why": ("why", lambda e, a: e.svc.why(e.scope, "tea", a)),
    "MemoryService.my_memory": ("me", _me),
    "MemoryService.forget_me_code": ("forget-me", _forget_me_code),
    "MemoryService.forget_me": ("forget-me", _forget_me),
    "MemoryService.set_opt_out(out)": ("optout", lambda e, a: _opt(e, a, True)),
    "MemoryService.set_opt_out(in)": ("optin", lambda e, a: _opt(e, a, False)),
    "MemoryService.opted_out": ("optout", lambda e, a: e.svc.opted_out(e.scope, a)),
    "MemoryService.person": ("people", lambda e, a: e.svc.person("bot1", "carol", a)),
    "MemoryService.erase_person": ("people.erase", lambda e, a: e.svc.erase_person("bot1", "carol", a)),
}

# Rows whose admitted call must change what is stored (the positive control of a write); the others
# read, or find nothing to do here (a preview without a model, a discard of no proposal).
WRITES = {
    "MemoryService.forget",
    "MemoryService.erase_episodes",
    "MemoryService.set_status(archived)",
    "MemoryService.set_status(active)",
    "MemoryService.confirm_episode",
    "ReviewQueue.accept",
    "ReviewQueue.reject",
    "ReviewQueue.lift_tombstone",
    "Consolidator.run",
    "MemoryService.bulk_delete",
    "transfer.import_scope",
    "transfer.export_scope",  # audited: scope.export
    "transfer.export_scope(l1)",
    "MemoryService.import_scope",
    "MemoryService.export_scope",  # audited: scope.export
    "MemoryService.export_scope(l1)",
    "MemoryService.set_opt_out(out)",  # audited: privacy.optout, then privacy.optin
    "MemoryService.set_opt_out(in)",
    "MemoryService.erase_person",  # Carol's memories go
}


def documented_matrix() -> dict[str, str]:
    """The privilege matrix of docs/commands.md, parsed as a table: {policy verb: needs admin}."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\| Policy verb \| Kind \| Needs admin \|$", line))
    rows: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, line
        verb = cells[0].strip("`")
        assert verb not in rows, f"{verb} documented twice"
        rows[verb] = cells[2]
    return rows


def public_service_verbs() -> set[str]:
    """Every public verb of the service's parts, as ``Owner.name``: the façade's (most are bound in
    its ``__init__``, so an instance is read), the review queue's, the consolidator's, and the
    module functions of export/import and health."""
    svc = MemoryService(MemoryKeyValueStore(), NumpyIndex(), lambda c, kb: HashingEmbedder())
    out: set[str] = set()
    for obj in (svc, ReviewQueue(svc), Consolidator(svc)):
        cls = type(obj)
        for name in dir(obj):
            if name.startswith("_") or isinstance(inspect.getattr_static(cls, name, None), property):
                continue
            if callable(getattr(obj, name)) and not inspect.isclass(getattr(obj, name)):
                out.add(f"{cls.__name__}.{name}")
    for module in (transfer, health):
        for name, value in vars(module).items():
            if not name.startswith("_") and inspect.iscoroutinefunction(value) and value.__module__ == module.__name__:
                out.add(f"{module.__name__.rsplit('.', 1)[1]}.{name}")
    return out


def _base(row: str) -> str:
    return row.split("(", 1)[0]


def test_every_public_service_verb_is_classified() -> None:
    verbs = public_service_verbs()
    assert "MemoryService.bulk_delete" in verbs and "ReviewQueue.accept" in verbs  # control: the scan sees verbs
    rows = {_base(r) for r in ROWS}
    missing = verbs - rows - set(OUTSIDE_MATRIX)
    assert not missing, f"service verbs with no row in the privilege walk: {sorted(missing)}"
    assert not rows & set(OUTSIDE_MATRIX)
    stale = (rows | set(OUTSIDE_MATRIX)) - verbs
    assert not stale, f"rows naming no service verb: {sorted(stale)}"


def test_every_documented_policy_verb_is_walked() -> None:
    documented = documented_matrix()
    assert set(documented) == set(POLICY)  # the table is the code's
    assert {verb: POLICY[verb].admin_column for verb in POLICY} == documented
    walked = {verb for verb, _call in ROWS.values()}
    assert walked | set(SURFACE_ONLY) == set(documented), "policy verbs no service row walks"


@pytest.mark.parametrize("who", sorted(ACTORS))
@pytest.mark.parametrize("row", sorted(ROWS))
async def test_the_service_enforces_the_documented_matrix(tmp_path: Path, row: str, who: str) -> None:
    verb, call = ROWS[row]
    actor = ACTORS[who]
    needs_admin = documented_matrix()[verb] != "no"  # "yes", or "for another's" (Carol's memory here)
    env = await env_for(tmp_path, actor)
    before = await stored_state(env.svc)
    audit_before = await env.svc.audit_count(env.scope)
    if who == "member" and needs_admin:
        with pytest.raises(PermissionDenied) as refused:
            await call(env, actor)
        text = error_text(refused.value, "en_US")
        assert text and text != refused.value.key, text  # the localized refusal, not a bare key
        assert await stored_state(env.svc) == before, "a refused verb wrote something"
        assert await env.svc.audit_count(env.scope) == audit_before
        return
    try:
        await call(env, actor)
    except PermissionDenied as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"{who} refused {row}: {exc}")
    except LtmError as exc:  # pragma: no cover
        pytest.fail(f"{row} failed for {who}: {exc.key} {exc}")
    if row in WRITES:  # positive control: the admitted call did write (and audit) something
        assert await stored_state(env.svc) != before, f"{row} by {who} changed nothing"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sender=st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12),
    privilege=st.integers(min_value=-1, max_value=3),
)
def test_only_an_admin_id_or_the_host_admin_passes_the_services_guard(
    tmp_path: Path, sender: str, privilege: int
) -> None:
    """At the boundary: any speaker id but the listed one, with any host privilege but 2, is
    refused by the service verb itself and nothing is deleted; the listed id passes (control)."""

    async def run() -> None:
        svc = await build_service(
            "numpy", tmp_path, settings=lambda: Settings.from_config({"admin_sender_ids": "ops-lead"})
        )
        scope = await scope_of(svc, "group_g1", sender)
        await svc.remember(await scope_of(svc, "group_g1", "carol"), {"content": "Carol likes tea"}, CAROL)
        actor = Actor(surface="tool", sender_id=sender, privilege=privilege)
        admin = privilege == 2 or sender == "ops-lead"
        if admin:
            assert await svc.bulk_delete(scope, Criteria(statuses=None), actor) == 1
        else:
            with pytest.raises(PermissionDenied):
                await svc.bulk_delete(scope, Criteria(statuses=None), actor)
            assert (await svc.count_by_status(scope))["active"] == 1
        listed = Actor(surface="tool", sender_id="ops-lead")
        assert await svc.bulk_delete(scope, Criteria(statuses=None), listed) == (0 if admin else 1)

    asyncio.run(run())
