"""One ``ltm-audit/1`` document: ``!memory audit export`` and the console's Export audit log give the
same document for the same scope (the service's ``audit_document``)."""

from __future__ import annotations

from typing import Any

from tests.surfaces.test_command_memory import ADMIN_ID, host_harness, joined_document
from tests.surfaces.test_policy_surfaces import ALICE, console

# What only says how the document was read: when, which page, in which order.
READING = ("exported_at", "order", "page", "pages")


def _same_part(doc: dict[str, Any]) -> dict[str, Any]:
    rest = {k: v for k, v in doc.items() if k not in (*READING, "entries")}
    return {**rest, "entries": sorted(doc["entries"], key=lambda e: e["seq"])}


async def test_the_command_and_the_console_export_the_same_audit_document() -> None:
    h = await host_harness()
    for text in ("Alice likes tea", "Alice lives in Lisbon", "Alice plays chess"):
        await h.remember(ALICE, "alice", text)
    command = joined_document(await h.run("memory audit export", chat=ALICE, speaker=ADMIN_ID))
    page = await console(h, "/audit/export", ALICE)
    assert command["total"] == 3 and len(command["entries"]) == 3  # positive control: the entries are there
    assert set(command) == set(page)  # one shape
    assert _same_part(command) == _same_part(page)
    assert command["format"] == page["format"] == "ltm-audit/1"
    assert page["source"] == {
        "knowledge_base": h.kb,
        "scope_key": (await h.scope(ALICE)).scope_key,
        "user_key": (await h.scope(ALICE)).user_key,
    }
    # the whole log reads oldest first, the command's page newest first (as the audit log's pages)
    assert [e["seq"] for e in page["entries"]] == [1, 2, 3] and page["order"] == "oldest_first"
    assert [e["seq"] for e in command["entries"]] == [3, 2, 1] and command["order"] == "newest_first"
    assert (command["page"], command["pages"], page["page"], page["pages"]) == (1, 1, 1, 1)
