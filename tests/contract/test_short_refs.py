"""Short references on real engines: the block names a memory by a short prefix of its id, and a
tool or command given that prefix acts on exactly that memory of the caller's own scope. A prefix
that is ambiguous in the scope (any status) or belongs to another scope names nothing; every
refusal has its positive control."""

from __future__ import annotations

import itertools

import pytest

from e2e.block_reader import read_block
from ltm.domain import models
from ltm.domain.errors import NotFoundError, PermissionDenied, ValidationError
from ltm.service import Actor, MemoryService
from ltm.service.injection import context_payload, render_block
from tests.support import ADMIN, scope_of

ALICE = Actor(surface="tool", sender_id="alice")


@pytest.fixture
def ids(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids the next memories get, in order (two of them share their first six digits)."""
    planned = ["ep_4f2a1b" + "0" * 14, "ep_4f2a1b" + "1" * 14, "ep_9c07e" + "2" * 15, "ep_77aa0" + "3" * 15]
    feed = itertools.chain(planned, (f"ep_{n:020x}" for n in itertools.count(1)))
    monkeypatch.setattr(models, "new_episode_id", lambda: next(feed))
    return planned


async def _shown(svc: MemoryService, scope, query: str) -> list[dict]:
    res = await svc.recall(scope, query, with_profiles=False)
    data = read_block(render_block(context_payload(res, {"id": scope.sender_id, "name": ""}), "en_US"))
    assert data is not None
    return data["episodes"]


async def test_the_block_shows_short_references_that_forget_acts_on(service: MemoryService, ids: list[str]) -> None:
    a = await scope_of(service, "person_alice", "alice")
    await service.remember(a, {"content": "Alice plays chess on Sundays"}, ALICE)  # ids[0]
    await service.remember(a, {"content": "Alice keeps two cats at home"}, ALICE)  # ids[1]
    await service.remember(a, {"content": "Alice drinks green tea"}, ALICE)  # ids[2]
    shown = {r["content"]: r["id"] for r in await _shown(service, a, "Alice chess cats tea")}
    assert shown["Alice drinks green tea"] == "9c07e"  # no other id shares a digit: five are shown
    assert shown["Alice plays chess on Sundays"] == "4f2a1b0"  # its neighbour shares six
    gone = await service.forget(a, shown["Alice drinks green tea"], ALICE)
    assert gone.id == ids[2]
    left = {r["content"] for r in await _shown(service, a, "Alice chess cats tea")}
    assert left == {"Alice plays chess on Sundays", "Alice keeps two cats at home"}  # exactly that one went
    audit, _ = await service.audit_page(a, 1, 10)
    assert audit[0]["operation"] == "episode.forget" and ids[2] in str(audit[0])


async def test_an_ambiguous_reference_is_refused_and_changes_nothing(service: MemoryService, ids: list[str]) -> None:
    a = await scope_of(service)
    await service.remember(a, {"content": "Alice plays chess"}, ADMIN)
    await service.remember(a, {"content": "Alice keeps cats"}, ADMIN)
    with pytest.raises(ValidationError) as err:
        await service.forget(a, "4f2a1", ADMIN)
    assert err.value.key == "error.ref_ambiguous"
    assert (await service.count_by_status(a))["active"] == 2
    assert (await service.forget(a, "ep_4f2a1b1", ADMIN)).id == ids[1]  # control: one more digit names one


async def test_a_retired_row_keeps_a_short_reference_ambiguous(service: MemoryService, ids: list[str]) -> None:
    """The block's references are unique among the active rows; resolution looks at every status,
    so a prefix an archived row shares is refused rather than read as the active one."""
    a = await scope_of(service)
    first, _ = await service.remember(a, {"content": "Alice plays chess"}, ADMIN)
    await service.remember(a, {"content": "Alice keeps cats"}, ADMIN)
    await service.set_status(a, first.id, "archived", ADMIN)
    with pytest.raises(ValidationError):
        await service.forget(a, "4f2a1", ADMIN)
    assert (await service.get_episode(a, first.id)).status == "archived"
    assert (await service.forget(a, "4f2a1b1", ADMIN)).id == ids[1]  # control


async def test_another_scopes_reference_names_nothing(service: MemoryService, ids: list[str]) -> None:
    a = await scope_of(service, "person_alice", "alice")
    b = await scope_of(service, "person_bob", "bob")
    await service.remember(b, {"content": "Bob plays chess"}, ADMIN)  # ids[0], in Bob's scope
    with pytest.raises(NotFoundError):
        await service.forget(a, "4f2a1", ADMIN)
    with pytest.raises(NotFoundError):
        await service.remember(a, {"content": "Alice plays go", "supersedes": ["4f2a1"]}, ADMIN)
    assert (await service.get_episode(b, "4f2a1")).id == ids[0]  # control: in its own scope it resolves


async def test_a_correction_by_short_reference_stores_the_whole_id(service: MemoryService, ids: list[str]) -> None:
    a = await scope_of(service)
    old, _ = await service.remember(a, {"content": "Alice prefers black tea"}, ALICE)
    new, retired = await service.remember(a, {"content": "Alice prefers green tea", "supersedes": ["4f2a1"]}, ALICE)
    assert [r.id for r in retired] == [old.id]
    assert new.supersedes == [old.id]  # never the short form
    assert (await service.get_episode(a, old.id)).superseded_by == new.id


async def test_the_privilege_policy_applies_after_resolution(service: MemoryService, ids: list[str]) -> None:
    group_bob = await scope_of(service, "group_g1", "bob")
    group_alice = await scope_of(service, "group_g1", "alice")
    await service.remember(group_bob, {"content": "Bob plays chess"}, Actor(surface="tool", sender_id="bob"))
    await service.remember(group_alice, {"content": "Alice keeps cats"}, ALICE)
    with pytest.raises(PermissionDenied):
        await service.forget(group_alice, "4f2a1b0", ALICE)  # Bob's memory, seen in the shared chat
    assert (await service.forget(group_alice, "4f2a1b1", ALICE)).id == ids[1]  # control: her own


async def test_an_index_that_does_not_hold_the_whole_scope_shows_whole_ids() -> None:
    from ltm.service.scope_index import ScopeIndex

    rows = [(f"ep_{n:05x}" + "0" * 15, f"memory {n}", {"status": "active", "timestamp": str(n)}) for n in range(3)]
    whole = ScopeIndex.of_rows(rows, max_docs=5)
    assert whole.short_refs([rows[0][0]]) == {rows[0][0]: "00000"}  # control: the whole scope is held
    part = ScopeIndex.of_rows(rows, max_docs=2)
    assert not part.complete and part.short_refs([rows[2][0]]) == {rows[2][0]: rows[2][0]}
