"""The console's People routes (issue 35): ``/people`` lists what one person said in every chat of a
bot (the same listing as ``!memory me``, as the ``ltm-person/1`` JSON), ``/people/erase`` is the
same erase as ``!memory forget-me``, audited as the operator. Controls: another person's memories
are never in the listing and survive the erase; a bad request is refused and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.console.seed import seeded_service
from tests.surfaces.test_console_api import make_page, ok, refused


async def test_lists_one_person_and_erases_only_them(tmp_path: Path) -> None:
    seeded = await seeded_service(tmp_path)
    svc, page = seeded.service, make_page(seeded.service)
    bob_before = await svc.list_episodes(seeded.bob.as_operator(), statuses=None, page_size=100)
    listed = await ok(page, "/people", {"bot_uuid": "bot1", "sender_id": "alice"})
    doc = listed["document"]
    assert doc["format"] == "ltm-person/1" and doc["sender_id"] == "alice"
    assert listed["filename"] == "ltm-person-alice.json"
    assert doc["episodes"] and all(e["chat"] == "person_alice" for e in doc["episodes"])
    assert "Alice drinks jasmine tea every morning" in json.dumps(doc, ensure_ascii=False)
    assert [p["name"] for p in doc["profiles"]] == ["Alice"]
    done = await ok(page, "/people/erase", {"bot_uuid": "bot1", "sender_id": "alice"})
    assert done["episodes"] == len(doc["episodes"]) and done["profiles"] == 1
    again = await ok(page, "/people", {"bot_uuid": "bot1", "sender_id": "alice"})
    assert again["document"]["episodes"] == [] and again["document"]["profiles"] == []
    bob_after = await svc.list_episodes(seeded.bob.as_operator(), statuses=None, page_size=100)
    assert [e.id for e in bob_after.items] == [e.id for e in bob_before.items]  # control: Bob's stay
    entries, _ = await svc.audit_page(seeded.alice.as_operator(), 1, 3)
    assert entries[0]["operator"] and entries[0]["surface"] == "console"


async def test_a_request_without_a_speaker_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    seeded = await seeded_service(tmp_path)
    page = make_page(seeded.service)
    assert "sender_id" in await refused(page, "/people/erase", {"bot_uuid": "bot1"})
    assert await refused(page, "/people", {"bot_uuid": "bot1", "sender_id": "a b"})  # whitespace: no such id
