"""export_scope / import_scope on real engines (numpy, Chroma, Qdrant local), two scopes populated.

Every "the other scope is untouched" assertion has a positive control: the acted-on scope changed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.errors import BackendError, ScopeError, ValidationError
from ltm.domain.filters import Criteria
from ltm.domain.scope import Scope
from ltm.service import Actor, MemoryService
from ltm.service.transfer import (
    IGNORED_ON_IMPORT,
    checksum,
    episode_record,
    export_scope,
    import_scope,
    validate_batch,
)
from tests.support import build_service, scope_of

ADMIN = Actor(surface="test", sender_id="admin", query_id=7, privilege=2)
PROVENANCE = (
    "content",
    "status",
    "sender_id",
    "importance",
    "tags",
    "timestamp",
    "event_at",
    "valid_from",
    "valid_until",
    "claim_type",
    "confidence",
    "source_ref",
    "content_hash",
)


async def populate(svc: MemoryService, scope: Scope, label: str) -> dict[str, Any]:
    """Active, superseded and archived episodes with time fields, two speakers."""
    carol = scope.with_sender("carol")
    old, _ = await svc.remember(
        scope,
        {
            "content": f"{label} prefers black tea",
            "tags": ["drink"],
            "event_at": "2023-03-01T08:00:00Z",
            "source_ref": "chat:1",
        },
        ADMIN,
    )
    new, _ = await svc.remember(
        scope,
        {
            "content": f"{label} prefers green tea",
            "supersedes": [old.id],
            "valid_from": "2024-01-01T00:00:00Z",
            "valid_until": "2030-01-01T00:00:00Z",
        },
        ADMIN,
    )
    arch, _ = await svc.remember(
        carol, {"content": f"{label} had a cat", "claim_type": "inference", "importance": 0.9}, ADMIN
    )
    await svc.set_status(scope, arch.id, "archived", ADMIN)
    return {"old": old.id, "new": new.id, "arch": arch.id}


def projection(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows = []
    for e in doc["episodes"]:
        rows.append(tuple(e[k] if not isinstance(e[k], list) else tuple(e[k]) for k in PROVENANCE))
    return sorted(rows, key=repr)


def links(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """Supersede links expressed as (content, content) pairs, so ids do not matter."""
    by_id = {e["id"]: e["content"] for e in doc["episodes"]}
    out = set()
    for e in doc["episodes"]:
        for s in e["supersedes"]:
            out.add(("supersedes", e["content"], by_id.get(s, "?")))
        if e["superseded_by"]:
            out.add(("superseded_by", e["content"], by_id.get(e["superseded_by"], "?")))
    return out


async def snapshot(svc: MemoryService, scope: Scope) -> tuple[list[tuple[Any, ...]], int]:
    """Every row of the scope (all fields) and its audit length, read without writing anything."""
    rows = sorted((episode_record(e) for e in await svc.fetch(scope, Criteria(statuses=None))), key=lambda r: r["id"])
    return [tuple(repr(v) for v in sorted(r.items())) for r in rows], await svc.audit_count(scope)


class TestRoundTrip:
    async def test_export_then_import_into_empty_scope(self, service: MemoryService) -> None:
        """Same facts, statuses, provenance, time fields and links; the third scope is untouched."""
        a = await scope_of(service, "person_alice", "alice")
        b = await scope_of(service, "person_bob", "bob")
        c = await scope_of(service, "group_new", "admin")
        await populate(service, a, "Alice")
        await populate(service, b, "Bob")
        b_before = await snapshot(service, b)
        assert b_before[0]  # positive control: B has data

        doc = await export_scope(service, a, ADMIN)
        assert doc["count"] == 3 and doc["checksum"] == checksum(doc["episodes"])
        assert (await service.count_by_status(c))["active"] == 0
        report = await import_scope(service, c, doc, ADMIN)
        assert (report.imported, report.skipped) == (3, 0)

        doc_c = await export_scope(service, c, ADMIN)
        assert projection(doc_c) == projection(doc)
        assert {e["origin"] for e in doc["episodes"]} == {"tool"}  # an import is marked as one
        assert {(e["origin"], e["extra"]["imported_origin"]) for e in doc_c["episodes"]} == {("import", "tool")}
        assert links(doc_c) == links(doc) and links(doc)
        assert {e["import_original_id"] for e in doc_c["episodes"]} == {e["id"] for e in doc["episodes"]}
        assert not {e["id"] for e in doc_c["episodes"]} & {e["id"] for e in doc["episodes"]}
        assert all(e["user_key"] == c.user_key for e in doc_c["episodes"])
        assert (await service.count_by_status(c)) == {"active": 1, "superseded": 1, "archived": 1, "deleted": 0}
        assert (await snapshot(service, b))[0] == b_before[0]
        # the imported active fact is recalled in C, not the superseded one
        res = await service.recall(c, "tea", limit=5, with_profiles=False)
        assert [r.episode.content for r in res.episodes] == ["Alice prefers green tea"]

    async def test_import_twice_does_not_duplicate(self, service: MemoryService) -> None:
        a = await scope_of(service, "person_alice", "alice")
        c = await scope_of(service, "person_carl", "carl")
        await populate(service, a, "Alice")
        doc = await export_scope(service, a, ADMIN)
        first = await import_scope(service, c, doc, ADMIN)
        audit_after_first = await service.audit_count(c)
        second = await import_scope(service, c, copy.deepcopy(doc), ADMIN)
        assert (first.imported, second.imported, second.skipped) == (3, 0, 3)
        assert sum((await service.count_by_status(c)).values()) == 3
        assert await service.audit_count(c) == audit_after_first  # nothing written, nothing audited

    async def test_reimport_into_source_scope_is_a_no_op(self, service: MemoryService) -> None:
        a = await scope_of(service, "person_alice", "alice")
        await populate(service, a, "Alice")
        doc = await export_scope(service, a, ADMIN)
        report = await import_scope(service, a, doc, ADMIN)
        assert (report.imported, report.skipped) == (0, 3)
        assert sum((await service.count_by_status(a)).values()) == 3

    async def test_paged_export_reimports_with_links(self, fast_service: MemoryService) -> None:
        svc = fast_service
        a = await scope_of(svc, "person_alice", "alice")
        c = await scope_of(svc, "person_carl", "carl")
        prev = None
        for i in range(9):
            raw: dict[str, Any] = {"content": f"version {i} of the address"}
            if prev:
                raw["supersedes"] = [prev]
            prev = (await svc.remember(a, raw, ADMIN))[0].id
        full = await export_scope(svc, a, ADMIN)
        pages = [await export_scope(svc, a, ADMIN, page=p, page_size=4) for p in (1, 2, 3)]
        assert [d["count"] for d in pages] == [4, 4, 1] and pages[0]["pages"] == 3
        for d in pages:
            await import_scope(svc, c, d, ADMIN)
        assert links(await export_scope(svc, c, ADMIN)) == links(full)


class TestRefusals:
    async def _setup(self, svc: MemoryService) -> tuple[Scope, Scope, dict[str, Any]]:
        a = await scope_of(svc, "person_alice", "alice")
        c = await scope_of(svc, "person_carl", "carl")
        await populate(svc, a, "Alice")
        return a, c, await export_scope(svc, a, ADMIN)

    async def test_checksum_detects_edit_before_any_write(self, service: MemoryService) -> None:
        a, c, doc = await self._setup(service)
        tampered = copy.deepcopy(doc)
        tampered["episodes"][0]["importance"] = 0.1
        before = await snapshot(service, c)
        with pytest.raises(ValidationError) as err:
            await import_scope(service, c, tampered, ADMIN)
        assert err.value.key == "cmd.transfer.checksum"
        assert await snapshot(service, c) == before
        # positive control: the untouched document imports
        assert (await import_scope(service, c, doc, ADMIN)).imported == 3

    async def test_whole_batch_validated_first(self, service: MemoryService) -> None:
        _, c, _ = await self._setup(service)
        batch = [{"content": "fine one"}, {"content": "fine two"}, {"content": "bad", "event_at": "tomorrow"}]
        with pytest.raises(ValidationError) as err:
            await import_scope(service, c, batch, ADMIN)
        assert err.value.key == "cmd.transfer.item" and err.value.params["n"] == 3
        assert sum((await service.count_by_status(c)).values()) == 0
        assert await service.audit_count(c) == 0
        assert (await import_scope(service, c, batch[:2], ADMIN)).imported == 2

    async def test_user_key_in_file_is_ignored(self, service: MemoryService) -> None:
        a, c, doc = await self._setup(service)
        a_before = await snapshot(service, a)
        forged = [
            {
                "content": "planted",
                "user_key": a.user_key,
                "scope_key": a.scope_key,
                "session_name": a.session_name,
                "bot_uuid": a.bot_uuid,
            }
        ]
        await import_scope(service, c, forged, ADMIN)
        assert await snapshot(service, a) == a_before
        assert [e["content"] for e in (await export_scope(service, c, ADMIN))["episodes"]] == ["planted"]
        assert {"user_key", "scope_key", "session_name", "bot_uuid"} <= set(IGNORED_ON_IMPORT)

    @pytest.mark.parametrize(
        ("payload", "key"),
        [
            ({"episodes": "x"}, "cmd.transfer.shape"),
            ("text", "cmd.transfer.shape"),
            ([], "cmd.transfer.empty"),
            ({"format": "other/9", "episodes": [{"content": "x"}]}, "cmd.transfer.format"),
            ({"layer": "l1", "episodes": [{"content": "x"}]}, "cmd.transfer.layer"),
            ([{"content": "x", "status": "deleted"}], "cmd.transfer.item"),
            ([{"content": "x", "content_hash": "0" * 32}], "cmd.transfer.item"),
            ([{"id": "a", "content": "x"}, {"id": "a", "content": "y"}], "cmd.transfer.item"),
            ([{"content": "x", "confidence": "certain"}], "cmd.transfer.item"),
            ([{"content": "x", "supersedes": "abc"}], "cmd.transfer.item"),
            ([{"content": "x", "extra": []}], "cmd.transfer.item"),
            (["x"], "cmd.transfer.item"),
        ],
    )
    async def test_bad_documents(self, fast_service: MemoryService, payload: Any, key: str) -> None:
        c = await scope_of(fast_service, "person_carl", "carl")
        with pytest.raises(ValidationError) as err:
            await import_scope(fast_service, c, payload, ADMIN)
        assert err.value.key == key
        assert await fast_service.audit_count(c) == 0

    async def test_inference_confidence_is_capped(self) -> None:
        items = validate_batch([{"content": "x", "claim_type": "inference", "confidence": "confirmed"}])
        assert items[0].confidence == "inferred"

    async def test_no_kb(self, fast_service: MemoryService) -> None:
        scope = await fast_service.scope_for(kb_id="", session_name="person_x", sender_id="x")
        with pytest.raises(ScopeError):
            await import_scope(fast_service, scope, [{"content": "x"}], ADMIN)


class TestAuditAndCost:
    async def test_one_audit_entry_per_import_batch(self, service: MemoryService) -> None:
        c = await scope_of(service, "person_carl", "carl")
        report = await import_scope(service, c, [{"content": f"fact {i}"} for i in range(5)], ADMIN)
        entries, total = await service.audit_page(c, 1, 10)
        assert total == 1
        e = entries[0]
        assert e["operation"] == "episode.import" and e["targets"] == report.ids
        assert (e["scope_key"], e["user_key"], e["sender"], e["query_id"]) == (c.scope_key, c.user_key, "admin", 7)
        assert e["at"] and report.batch in e["summary"]

    async def test_export_is_audited(self, fast_service: MemoryService) -> None:
        a = await scope_of(fast_service, "person_alice", "alice")
        await export_scope(fast_service, a, ADMIN)
        entries, _ = await fast_service.audit_page(a, 1, 1)
        assert entries[0]["operation"] == "scope.export"

    async def test_export_and_import_read_only_their_scope(self, service: MemoryService) -> None:
        a = await scope_of(service, "person_alice", "alice")
        b = await scope_of(service, "person_bob", "bob")
        await populate(service, a, "Alice")
        await populate(service, b, "Bob")
        seen: list[dict[str, Any]] = []
        real_list = service.vectors.list

        async def spy(collection: str, where: dict[str, Any], limit: int, offset: int) -> Any:
            seen.append(where)
            assert limit <= 200
            return await real_list(collection, where, limit, offset)

        service.vectors.list = spy  # type: ignore[method-assign]
        doc = await export_scope(service, a, ADMIN)
        await import_scope(service, a, doc, ADMIN)
        assert seen and all(a.user_key in repr(w) and b.user_key not in repr(w) for w in seen)

    async def test_failed_write_rolls_back(self, tmp_path: Path) -> None:
        """A backend failure half-way leaves no row of the batch behind and no audit entry."""
        calls, armed = [0], [False]

        class Flaky:  # once armed, the second embedding call fails
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            async def embed(self, texts: Any) -> Any:
                if armed[0]:
                    calls[0] += 1
                    if calls[0] == 2:
                        raise RuntimeError("embedding service down")
                return await self.inner.embed(texts)

        svc = await build_service("numpy", tmp_path, embedder_for=lambda real: lambda coll, kb: Flaky(real(coll, kb)))
        c = await scope_of(svc, "person_carl", "carl")
        armed[0] = True
        with pytest.raises(BackendError):
            await import_scope(svc, c, [{"content": f"fact {i}"} for i in range(100)], ADMIN)
        assert sum((await svc.count_by_status(c)).values()) == 0
        assert await svc.audit_count(c) == 0
        assert await svc.fetch(c, Criteria(statuses=None)) == []


class TestL1Export:
    async def test_profiles_of_this_scope_only(self, fast_service: MemoryService) -> None:
        a = await scope_of(fast_service, "person_alice", "alice")
        b = await scope_of(fast_service, "person_bob", "bob")
        await fast_service.update_profile(a, {"target": "speaker", "name": "Alice"}, ADMIN)
        await fast_service.update_profile(b, {"target": "speaker", "name": "Bob"}, ADMIN)
        await fast_service.update_profile(a, {"target": "session", "add_notes": ["trip"]}, ADMIN)
        doc = await export_scope(fast_service, a, ADMIN, layer="l1")
        assert [p["name"] for p in doc["profiles"]["speakers"]] == ["Alice"]
        assert doc["profiles"]["session"]["notes"] == ["trip"] and doc["count"] == 2
        assert doc["checksum"] == checksum(doc["profiles"])
