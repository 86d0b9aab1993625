"""Bulk delete, export and import through ``!memory`` on real Chroma and Qdrant, two scopes populated.

Each test asserts both sides: the acted-on scope changed (positive control) and the other scope is
exactly as before (every row, every field, and its audit log).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.filters import Criteria
from ltm.service.transfer import episode_record
from tests.surfaces.test_command_memory import ADMIN_ID, Harness, engine_harness, joined_document

ALICE = ("group", "team")
BOB = ("person", "bob")


@pytest.fixture(params=["chroma", "qdrant"])
async def eh(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    harness = await engine_harness(request.param, tmp_path)
    yield harness
    close = getattr(harness.service.vectors, "close", None)
    if close:
        close()


async def rows(h: Harness, chat: tuple[str, str]) -> list[dict[str, Any]]:
    scope = await h.scope(chat)
    return sorted(
        (episode_record(e) for e in await h.service.fetch(scope, Criteria(statuses=None))), key=lambda r: r["id"]
    )


async def frozen(h: Harness, chat: tuple[str, str]) -> tuple[str, int]:
    scope = await h.scope(chat)
    return json.dumps(await rows(h, chat), sort_keys=True), await h.service.audit_count(scope)


async def populate(h: Harness) -> None:
    for chat, who in ((ALICE, "alice"), (ALICE, "carol"), (BOB, "bob")):
        for i in range(3):
            await h.remember(chat, who, f"{who} fact {i}", tags=["t1"] if i == 0 else [])


class TestBulkDelete:
    @pytest.mark.parametrize(
        ("line", "gone"),
        [
            ("memory delete --speaker carol", 3),
            ("memory delete --tag t1", 2),
            ("memory delete --status active", 6),
            ("memory delete --status all --before 2999-01-01T00:00:00Z", 6),
        ],
    )
    async def test_scoped(self, eh: Harness, line: str, gone: int) -> None:
        await populate(eh)
        other = await frozen(eh, BOB)
        assert len(await rows(eh, BOB)) == 3 and len(await rows(eh, ALICE)) == 6
        text = await eh.one(line, chat=ALICE, speaker=ADMIN_ID)
        assert f"Deleted {gone} memories" in text
        assert len(await rows(eh, ALICE)) == 6 - gone  # positive control: this scope changed
        assert await frozen(eh, BOB) == other  # the other scope did not
        listed = await eh.one("memory list --status all", chat=ALICE, speaker="alice")
        if gone == 6:
            assert "No memories" in listed
        scope = await eh.scope(ALICE)
        entry = (await eh.service.audit_page(scope, 1, 1))[0][0]
        assert entry["operation"] == "episode.bulk_delete" and entry["sender"] == ADMIN_ID

    async def test_refused_changes_nothing(self, eh: Harness) -> None:
        await populate(eh)
        before = await frozen(eh, ALICE)
        assert (await eh.one("memory delete --status all", chat=ALICE, speaker="alice")).startswith("Refused")
        assert await frozen(eh, ALICE) == before


class TestExportImport:
    async def test_export_reads_only_this_scope(self, eh: Harness) -> None:
        await populate(eh)
        doc = joined_document(await eh.run("memory export l2", chat=BOB, speaker=ADMIN_ID))
        assert sorted(e["content"] for e in doc["episodes"]) == ["bob fact 0", "bob fact 1", "bob fact 2"]

    async def test_import_lands_in_current_scope_only(self, eh: Harness) -> None:
        await populate(eh)
        doc = joined_document(await eh.run("memory export l2", chat=ALICE, speaker=ADMIN_ID))
        other = await frozen(eh, ALICE)
        fresh = ("person", "newcomer")
        assert await rows(eh, fresh) == []
        text = await eh.one("memory import l2 " + json.dumps(doc), chat=fresh, speaker=ADMIN_ID)
        assert "Imported 6 memories" in text
        got = await rows(eh, fresh)
        assert sorted(r["content"] for r in got) == sorted(e["content"] for e in doc["episodes"])  # changed
        assert {r["sender_id"] for r in got} == {"alice", "carol"}  # provenance kept
        assert await frozen(eh, ALICE) == other  # the source scope is untouched
        assert "already in this scope" in await eh.one(
            "memory import l2 " + json.dumps(doc), chat=fresh, speaker=ADMIN_ID
        )
        assert len(await rows(eh, fresh)) == 6

    async def test_tampered_import_writes_nothing(self, eh: Harness) -> None:
        await populate(eh)
        doc = joined_document(await eh.run("memory export l2", chat=ALICE, speaker=ADMIN_ID))
        doc["episodes"][0]["sender_id"] = "mallory"
        before = await frozen(eh, BOB)
        assert "checksum does not match" in await eh.one(
            "memory import l2 " + json.dumps(doc), chat=BOB, speaker=ADMIN_ID
        )
        assert await frozen(eh, BOB) == before
