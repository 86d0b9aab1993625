"""The console's Move routes (issue 37.3): ``/backup`` hands the installation's ``ltm-backup/1`` out in
parts, ``/restore/check`` checks the whole document, ``/restore`` writes a chunk or reads it back.
Driven the way the console and ``python -m pages.move_cli`` drive them, from a seeded installation
into another one with another knowledge base id; controls: an edited file is refused and writes
nothing, a restore twice writes nothing, a second backup id is not served a first one's parts."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.provider.session import Session

from ltm.domain.filters import Criteria
from ltm.service import backup as bk
from pages import move as move_routes
from tests.support import ADMIN, KB, build_service
from tests.support.console.seed import seeded_service
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin
from tests.surfaces.test_console_api import make_page, ok, refused
from tests.surfaces.test_plugin_smoke import BOT, query_vars
from tests.surfaces.test_plugin_smoke import KB as HOST_KB

TARGET_KB = "kb-moved-0002"


async def fetch(page: Any) -> list[str]:
    first = await ok(page, "/backup", {})
    lines = list(first["lines"])
    for part in range(1, first["parts"]):
        lines += (await ok(page, "/backup", {"backup_id": first["backup_id"], "part": part}))["lines"]
    assert len(lines) == first["total_lines"] and lines[-1] == first["trailer"]
    return lines


async def restore(page: Any, lines: list[str], chunk: int, verify: bool = False) -> dict[str, int]:
    head, body = lines[0], lines[1:-1]
    out: dict[str, int] = {"written": 0, "skipped": 0, "verified": 0, "missing": 0, "differing": 0, "conflicts": 0}
    for i in range(0, len(body), chunk):
        r = await ok(page, "/restore", {"lines": [head, *body[i : i + chunk]], "verify": verify})
        out["written"] += sum(r["written"].values())
        out["skipped"] += sum(r["skipped"].values())
        out["verified"] += sum(r["verified"].values())
        out["missing"] += r["missing_count"]
        out["differing"] += r["differing_count"]
        out["conflicts"] += r["conflict_count"]
    return out


async def test_a_whole_installation_moves_through_the_console(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(move_routes, "PART_LINES", 7)  # several parts even for a small installation
    seeded = await seeded_service(tmp_path / "src")
    src_page = make_page(seeded.service)
    lines = await fetch(src_page)
    counts = json.loads(lines[-1])["counts"]
    assert counts["episode"] > 0 and counts["audit"] > 0
    dst = await build_service("numpy", tmp_path / "dst")
    dst_page = make_page(dst)
    await dst.register_kb(TARGET_KB, {"embedding_model": "hash", "isolation": "session"})
    recs = [json.loads(x) for x in lines[1:-1]]
    check = {
        "header": lines[0],
        "trailer": lines[-1],
        "shas": [r["sha"] for r in recs],
        "kinds": [r["k"] for r in recs],
    }
    # an edited document is refused before anything is written (the check, then the chunk itself)
    assert await refused(dst_page, "/restore/check", {**check, "shas": check["shas"][1:], "kinds": check["kinds"][1:]})
    edited = json.loads(lines[1])
    edited["v"]["content"] = "something else entirely"
    assert "changed or damaged" in await refused(dst_page, "/restore", {"lines": [lines[0], json.dumps(edited)]})
    await ok(dst_page, "/restore/check", check)
    # two memory knowledge bases on the target: the map is needed
    assert "Say which memory knowledge base" in await refused(dst_page, "/restore", {"lines": lines[:3]})

    def mapped(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "kb_map": {KB: TARGET_KB}}

    head, body = lines[0], lines[1:-1]
    written = 0
    for i in range(0, len(body), 5):
        r = await ok(dst_page, "/restore", mapped({"lines": [head, *body[i : i + 5]]}))
        written += sum(r["written"].values())
    assert written == len(body)
    verified = 0
    for i in range(0, len(body), 5):
        r = await ok(dst_page, "/restore", mapped({"lines": [head, *body[i : i + 5]], "verify": True}))
        assert r["missing_count"] == 0 and r["differing_count"] == 0, r
        verified += sum(r["verified"].values())
    assert verified == sum(counts.values())
    again = await ok(dst_page, "/restore", mapped({"lines": [head, *body]}))
    assert sum(again["written"].values()) == 0 and again["conflict_count"] == 0
    # the moved memories are the source's, row for row
    src_scope = bk.operator_scope(KB, "session", seeded.alice.user_key)
    dst_scope = bk.operator_scope(TARGET_KB, "session", seeded.alice.user_key)
    before = {e.id: e for e in await seeded.service.writes.reads.fetch(src_scope, Criteria(statuses=None))}
    after = {e.id: e for e in await dst.writes.reads.fetch(dst_scope, Criteria(statuses=None))}
    assert before and before == after


async def test_an_unknown_backup_id_or_part_is_refused(tmp_path: Path) -> None:
    seeded = await seeded_service(tmp_path)
    page = make_page(seeded.service)
    assert await refused(page, "/backup", {"backup_id": "0" * 32, "part": 1})
    first = await ok(page, "/backup", {})
    assert await refused(page, "/backup", {"backup_id": first["backup_id"], "part": first["parts"]})
    assert await refused(page, "/restore", {"lines": "not a list"})
    assert await refused(page, "/restore", {"lines": ["{}"]})


async def test_a_held_backup_is_dropped_by_a_forget(tmp_path: Path, monkeypatch: Any) -> None:
    """A backup built before a forget never hands out the forgotten row: every erase drops the
    held documents (erasure.COPIES). Control: before the forget its next part is served and holds it."""
    monkeypatch.setattr(move_routes, "PART_LINES", 1)  # one line a part: the row is in a later part
    seeded = await seeded_service(tmp_path)
    page = make_page(seeded.service)
    first = await ok(page, "/backup", {})
    bid = first["backup_id"]
    parts = [(await ok(page, "/backup", {"backup_id": bid, "part": p}))["lines"][0] for p in range(1, first["parts"])]
    assert any(seeded.bob_id in line for line in parts)  # positive control: held, served, with Bob's row
    await seeded.service.forget(seeded.bob, seeded.bob_id, ADMIN)
    assert seeded.service.held_backups.get(bid) is None
    assert await refused(page, "/backup", {"backup_id": bid, "part": 1})
    again = await fetch(page)  # built again: without the forgotten row
    episodes = [json.loads(line) for line in again[1:-1] if json.loads(line)["k"] == "episode"]
    assert episodes and seeded.bob_id not in {e["id"] for e in episodes}


U1 = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
U2 = Session(launcher_type="person", launcher_id="u2", sender_id="u2", bot_uuid=BOT)
# stores that drop metadata are served by the sidecar (ADR 0008, issue 37.1) once it is in the tree
SIDECAR = importlib.util.find_spec("ltm.service.sidecar") is not None
PAIRS = [("chroma", "chroma")] + [
    pytest.param(a, b, marks=pytest.mark.skipif(not SIDECAR, reason="needs the sidecar (issue 37.1)"))
    for a, b in (("chroma", "pgvector"), ("pgvector", "milvus"), ("valkey", "chroma"))
]


async def plugin_on(vdb: str) -> tuple[FakeHostHandler, Any]:
    fake = FakeHostHandler(bots=[BOT], vdb=vdb)
    fake.add_knowledge_base(HOST_KB)
    ctl = await load_plugin(fake, {})
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(
        HOST_KB, {"embedding_model": "emb-1", "isolation": "session"}
    )
    return fake, ctl


async def remember(ctl: Any, fake: FakeHostHandler, qid: int, content: str, session: Session = U1) -> dict[str, Any]:
    who = str(session.launcher_id)
    fake.add_query(qid, query_vars("remember this", session=who, sender=who), bot_uuid=BOT, pipeline_kbs=[HOST_KB])
    return await component(ctl, "Tool", "remember").call({"content": content}, session, qid)


async def recall(ctl: Any, fake: FakeHostHandler, qid: int, query: str, session: Session = U1) -> str:
    who = str(session.launcher_id)
    fake.add_query(qid, query_vars(query, session=who, sender=who), bot_uuid=BOT, pipeline_kbs=[HOST_KB])
    return str(await component(ctl, "Tool", "recall_memory").call({"query": query}, session, qid))


async def _page(ctl: Any, endpoint: str, body: dict[str, Any]) -> Any:
    resp = await component(ctl, "Page", "console").answer(PageRequest(endpoint=endpoint, method="POST", body=body))
    assert not resp.error, (endpoint, resp.error)
    return resp.data


@pytest.mark.parametrize(("source", "target"), PAIRS)
async def test_memory_moves_between_stores_through_the_console(source: str, target: str) -> None:
    """Issue 37.3: an ltm-backup/1 of a plugin on one store, restored through the console into a
    plugin on another (the sidecar's store on either side), is read back record for record, and
    the moved memory is recalled in its own chat and not in another's."""
    fake, ctl = await plugin_on(source)
    await remember(ctl, fake, 1, "Alice drinks jasmine tea every morning")
    await remember(ctl, fake, 2, "Bob keeps rooibos in the office", session=U2)
    first = await _page(ctl, "/backup", {})
    assert first["parts"] == 1
    lines = first["lines"]
    assert json.loads(lines[-1])["counts"]["episode"] == 2
    assert "side/" not in "".join(json.loads(x)["id"] for x in lines[1:-1])  # the target keeps its own
    fake2, ctl2 = await plugin_on(target)
    recs = [json.loads(x) for x in lines[1:-1]]
    await _page(ctl2, "/restore/check", {
        "header": lines[0], "trailer": lines[-1], "shas": [r["sha"] for r in recs], "kinds": [r["k"] for r in recs],
    })  # fmt: skip
    done = await _page(ctl2, "/restore", {"lines": lines[:-1]})
    assert done["written"]["episode"] == 2 and done["conflict_count"] == 0
    check = await _page(ctl2, "/restore", {"lines": lines[:-1], "verify": True})
    assert check["missing_count"] == 0 and check["differing_count"] == 0
    assert sum(check["verified"].values()) == len(recs)
    assert "jasmine" in await recall(ctl2, fake2, 3, "what does Alice drink")
    assert "jasmine" not in await recall(ctl2, fake2, 4, "what does Alice drink", session=U2)
