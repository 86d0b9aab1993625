"""The memory service on real engines: every exclusion has a positive control in the same test."""

from __future__ import annotations

import pytest

from ltm.domain.errors import ConflictError, NotFoundError, ScopeError, ValidationError
from ltm.domain.filters import Criteria
from ltm.service import Actor, MemoryService
from tests.support import ADMIN, scope_of


async def _contents(svc: MemoryService, scope, query: str = "tea") -> list[str]:
    res = await svc.recall(scope, query, limit=10, with_profiles=False)
    return [r.episode.content for r in res.episodes]


class TestRememberRecall:
    async def test_recall_stays_in_scope(self, service: MemoryService) -> None:
        """Scope A recalls its memory (positive control); scope B recalls nothing of it."""
        a = await scope_of(service, "person_alice", "alice")
        b = await scope_of(service, "person_bob", "bob")
        await service.remember(a, {"content": "Alice drinks green tea every morning"}, ADMIN)
        assert "Alice drinks green tea every morning" in await _contents(service, a)
        assert await _contents(service, b) == []

    async def test_speaker_recorded(self, service: MemoryService) -> None:
        a = await scope_of(service, "group_g1", "carol")
        ep, _ = await service.remember(a, {"content": "Carol likes tea"}, ADMIN)
        assert (await service.get_episode(a, ep.id)).sender_id == "carol"

    async def test_bot_isolation_shares_between_sessions(self, tmp_path) -> None:
        from tests.support import build_service

        svc = await build_service("numpy", tmp_path, isolation="bot")
        a = await scope_of(svc, "person_alice", "alice")
        g = await scope_of(svc, "group_g1", "alice")
        other_bot = await scope_of(svc, "person_alice", "alice", bot="bot2")
        await svc.remember(a, {"content": "Alice drinks green tea"}, ADMIN)
        assert await _contents(svc, g) == ["Alice drinks green tea"]
        assert await _contents(svc, other_bot) == []

    async def test_no_kb_means_no_l2(self, fast_service: MemoryService) -> None:
        scope = await fast_service.scope_for(kb_id="", session_name="person_x", sender_id="x")
        with pytest.raises(ScopeError):
            await fast_service.remember(scope, {"content": "x"}, ADMIN)
        res = await fast_service.recall(scope, "x")
        assert res.episodes == []

    async def test_invalid_input_writes_nothing(self, service: MemoryService) -> None:
        a = await scope_of(service)
        await service.remember(a, {"content": "baseline tea"}, ADMIN)
        with pytest.raises(ValidationError):
            await service.remember(a, {"content": "x", "event_at": "tomorrow"}, ADMIN)
        counts = await service.count_by_status(a)
        assert counts["active"] == 1
        assert await service.audit_count(a) == 1


class TestSupersede:
    async def test_correction_supersedes(self, service: MemoryService) -> None:
        a = await scope_of(service)
        old, _ = await service.remember(a, {"content": "Alice prefers black tea"}, ADMIN)
        new, retired = await service.remember(a, {"content": "Alice prefers green tea", "supersedes": [old.id]}, ADMIN)
        assert [r.id for r in retired] == [old.id]
        got = await _contents(service, a)
        assert "Alice prefers green tea" in got and "Alice prefers black tea" not in got
        old_now = await service.get_episode(a, old.id)
        assert old_now.status == "superseded" and old_now.superseded_by == new.id
        assert old_now.user_key == a.user_key  # the rewrite kept the row's own keys

    async def test_invalid_targets_fail_before_write(self, service: MemoryService) -> None:
        a = await scope_of(service, "person_alice", "alice")
        b = await scope_of(service, "person_bob", "bob")
        other, _ = await service.remember(b, {"content": "Bob likes tea"}, ADMIN)
        mine, _ = await service.remember(a, {"content": "Alice likes tea"}, ADMIN)
        assert (await service.get_episode(b, other.id)).id == other.id  # positive control
        with pytest.raises(NotFoundError):
            await service.remember(a, {"content": "x tea", "supersedes": [other.id]}, ADMIN)
        same_scope_other_speaker = a.with_sender("mallory")
        with pytest.raises(ConflictError):
            await service.remember(same_scope_other_speaker, {"content": "y tea", "supersedes": [mine.id]}, ADMIN)
        assert (await service.count_by_status(a))["active"] == 1
        assert (await service.get_episode(b, other.id)).status == "active"


class TestForgetAndLifecycle:
    async def test_forget_removes_from_search_and_list(self, service: MemoryService) -> None:
        a = await scope_of(service)
        b = await scope_of(service, "person_bob", "bob")
        ep, _ = await service.remember(a, {"content": "Alice hates tea"}, ADMIN)
        keep_b, _ = await service.remember(b, {"content": "Bob hates tea"}, ADMIN)
        assert "Alice hates tea" in await _contents(service, a)
        page = await service.list_episodes(a)
        assert [e.id for e in page.items] == [ep.id]
        await service.forget(a, ep.id, ADMIN, reason="asked")
        assert await _contents(service, a) == []
        assert (await service.list_episodes(a, statuses=None)).items == []
        with pytest.raises(NotFoundError):
            await service.get_episode(a, ep.id)
        assert (await service.get_episode(b, keep_b.id)).id == keep_b.id

    async def test_forget_other_scope_is_not_found(self, service: MemoryService) -> None:
        a = await scope_of(service)
        b = await scope_of(service, "person_bob", "bob")
        ep, _ = await service.remember(b, {"content": "Bob tea"}, ADMIN)
        with pytest.raises(NotFoundError):
            await service.forget(a, ep.id, ADMIN)
        assert (await service.get_episode(b, ep.id)).status == "active"

    async def test_archive_hides_restore_returns(self, service: MemoryService) -> None:
        a = await scope_of(service)
        ep, _ = await service.remember(a, {"content": "Alice sips oolong tea"}, ADMIN)
        await service.set_status(a, ep.id, "archived", ADMIN)
        assert await _contents(service, a) == []
        assert [e.id for e in (await service.list_episodes(a, statuses=("archived",))).items] == [ep.id]
        await service.set_status(a, ep.id, "active", ADMIN)
        assert await _contents(service, a) == ["Alice sips oolong tea"]

    async def test_bulk_delete_counts_and_stays_in_scope(self, service: MemoryService) -> None:
        a = await scope_of(service)
        b = await scope_of(service, "person_bob", "bob")
        for i in range(3):
            await service.remember(a, {"content": f"tea fact {i}", "tags": ["t"] if i else []}, ADMIN)
        await service.remember(b, {"content": "bob tea fact", "tags": ["t"]}, ADMIN)
        n = await service.bulk_delete(a, Criteria(statuses=None), ADMIN, tag="t")
        assert n == 2
        assert [e.content for e in (await service.list_episodes(a)).items] == ["tea fact 0"]
        assert [e.content for e in (await service.list_episodes(b)).items] == ["bob tea fact"]


class TestAuditAndProfiles:
    async def test_every_mutation_audited_once(self, fast_service: MemoryService) -> None:
        a = await scope_of(fast_service)
        ep, _ = await fast_service.remember(a, {"content": "tea"}, ADMIN)
        await fast_service.set_status(a, ep.id, "archived", ADMIN)
        await fast_service.forget(a, ep.id, ADMIN, reason="r")
        entries, total = await fast_service.audit_page(a, 1, 10)
        assert total == 3
        assert [e["operation"] for e in entries] == ["episode.forget", "episode.archive", "episode.remember"]
        assert entries[0]["reason"] == "r"

    async def test_audit_paging_over_chunks(self, fast_service: MemoryService) -> None:
        a = await scope_of(fast_service)
        for i in range(120):
            await fast_service.writes.audit(a, ADMIN, "x", [str(i)], "s")
        page2, total = await fast_service.audit_page(a, 2, 50)
        assert total == 120 and [e["seq"] for e in page2] == list(range(70, 20, -1))

    async def test_profiles_are_scoped(self, fast_service: MemoryService) -> None:
        a = await scope_of(fast_service)
        b = await scope_of(fast_service, "person_bob", "alice")
        await fast_service.update_profile(
            a, {"name": "Alice", "set_preferences": {"drink": "tea"}}, Actor("tool", "alice")
        )
        assert (await fast_service.get_profile(a, "speaker", "alice")).name == "Alice"
        assert (await fast_service.get_profile(b, "speaker", "alice")).name == ""
        res = await fast_service.recall(a, "anything")
        assert res.speaker_profile is not None and res.speaker_profile.preferences == {"drink": "tea"}


class TestRestoreUndoesArchive:
    async def test_restoring_an_archived_superseded_record_keeps_it_superseded(
        self, fast_service: MemoryService
    ) -> None:
        """Consolidation archives superseded records; restoring one must not bring an outdated fact back."""
        a = await scope_of(fast_service)
        old, _ = await fast_service.remember(a, {"content": "Alice lives in Paris"}, ADMIN)
        await fast_service.remember(a, {"content": "Alice lives in Berlin", "supersedes": [old.id]}, ADMIN)
        plain, _ = await fast_service.remember(a, {"content": "Alice likes tea"}, ADMIN)
        await fast_service.set_status(a, plain.id, "archived", ADMIN)
        assert (await fast_service.set_status(a, plain.id, "active", ADMIN)).status == "active"  # positive control
        archived = (await fast_service.get_episode(a, old.id)).retagged(status="archived")
        await fast_service.writes.upsert(a, [archived])  # what consolidation's cleanup does
        restored = await fast_service.set_status(a, old.id, "active", ADMIN)
        assert restored.status == "superseded"
        assert "Alice lives in Paris" not in [
            r.episode.content for r in (await fast_service.recall(a, "where")).episodes
        ]
