"""As-of recall through every surface: the ``recall_memory`` tool, ``!memory search``/``list
--as-of`` and the console's episode list and search.

"I work at Acme" (valid 2024-01-01 to 2025-06-01) and "I work at Globex" (from 2025-06-01): asked as
of 2025-01-01 the answer is Acme, asked for now it is Globex. An as-of read sees superseded rows that
were valid then; a default read never does.
"""

from __future__ import annotations

from typing import Any

import pytest
from langbot_plugin.api.entities.builtin.provider.session import Session

from components.commands.parser import ParseError, parse
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import assert_clear_message, component, load_plugin
from tests.surfaces.test_command_memory import ALICE, host_harness
from tests.surfaces.test_console_api import make_page, ok, refused, scope_body

KB = "kb-asof"
BOT = "bot-asof"
ACME = {"content": "I work at Acme", "valid_from": "2024-01-01T00:00:00Z", "valid_until": "2025-06-01T00:00:00Z"}
GLOBEX = {"content": "I work at Globex", "valid_from": "2025-06-01T00:00:00Z"}
THEN = "2025-01-01T00:00:00Z"


def _vars(text: str) -> dict[str, Any]:
    return {
        "launcher_type": "person",
        "launcher_id": "u1",
        "sender_id": "u1",
        "session_id": "person_u1",
        "sender_name": "Ursula",
        "user_message_text": text,
        "_knowledge_base_uuids": [KB],
    }


async def _plugin() -> tuple[Any, Session]:
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    ctl = await load_plugin(fake)
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
    fake.add_query(1, _vars("where do I work?"), bot_uuid=BOT, pipeline_kbs=[KB])
    return ctl, Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)


@pytest.mark.parametrize("superseded", [True, False], ids=["globex_supersedes_acme", "both_active"])
async def test_recall_tool_as_of_returns_what_was_true_then(superseded: bool) -> None:
    ctl, session = await _plugin()
    remember, recall = component(ctl, "Tool", "remember"), component(ctl, "Tool", "recall_memory")
    acme = await remember.call(ACME, session, 1)
    assert acme["ok"], acme
    globex = await remember.call({**GLOBEX, **({"supersedes": [acme["id"]]} if superseded else {})}, session, 1)
    assert globex["ok"], globex
    assert globex["superseded"] == ([acme["id"]] if superseded else [])

    now = await recall.call({"query": "where do I work"}, session, 1)
    assert [e["content"] for e in now["episodes"]] == ["I work at Globex"]
    assert "as_of" not in now
    assert now["episodes"][0]["valid_window"] == "2025-06-01T00:00:00Z .. open"
    assert now["episodes"][0]["status"] == "active"

    then = await recall.call({"query": "where do I work", "as_of": THEN}, session, 1)
    assert then["ok"] and then["as_of"] == THEN
    assert [e["content"] for e in then["episodes"]] == ["I work at Acme"]
    hit = then["episodes"][0]
    assert hit["valid_window"] == "2024-01-01T00:00:00Z .. 2025-06-01T00:00:00Z"
    assert hit["status"] == ("superseded" if superseded else "active")
    if superseded:
        assert hit["superseded_by"] == globex["id"]

    # an instant after the change: Globex again (as of is not "the oldest")
    later = await recall.call({"query": "where do I work", "as_of": "2025-09-01T00:00:00+02:00"}, session, 1)
    assert [e["content"] for e in later["episodes"]] == ["I work at Globex"]


async def test_default_recall_never_sees_a_superseded_row_even_when_still_valid() -> None:
    """A correction without validity dates: the old row is valid by its own fields, yet only an
    as-of recall shows it (the positive control); the default recall and injection do not."""
    ctl, session = await _plugin()
    remember, recall = component(ctl, "Tool", "remember"), component(ctl, "Tool", "recall_memory")
    old = await remember.call({"content": "My cat is called Tom"}, session, 1)
    await remember.call({"content": "My cat is called Tim", "supersedes": [old["id"]]}, session, 1)
    now = await recall.call({"query": "cat called"}, session, 1)
    assert [e["content"] for e in now["episodes"]] == ["My cat is called Tim"]
    then = await recall.call({"query": "cat called", "as_of": "2030-01-01T00:00:00Z"}, session, 1)
    assert sorted(e["content"] for e in then["episodes"]) == ["My cat is called Tim", "My cat is called Tom"]


@pytest.mark.parametrize(
    ("value", "needle"),
    [("2025-01-01", "timezone"), ("yesterday", "ISO-8601"), (20250101, "ISO-8601"), ("2025-13-01T00:00:00Z", "as_of")],
)
async def test_recall_tool_refuses_a_malformed_as_of_like_the_other_time_fields(value: Any, needle: str) -> None:
    ctl, session = await _plugin()
    await component(ctl, "Tool", "remember").call(ACME, session, 1)
    out = await component(ctl, "Tool", "recall_memory").call({"query": "work", "as_of": value}, session, 1)
    assert out["ok"] is False and needle in out["error"], out
    assert_clear_message(out["error"])
    same = await component(ctl, "Tool", "recall_memory").call({"query": "work", "time_from": value}, session, 1)
    assert same["ok"] is False  # the same rule as time_from


async def test_recall_tool_schema_offers_as_of() -> None:
    ctl, _ = await _plugin()
    tool = next(c for c in ctl.plugin_container.components if c.manifest.metadata.name == "recall_memory")
    props = tool.manifest.manifest["spec"]["parameters"]["properties"]
    assert props["as_of"]["type"] == "string" and "ISO-8601" in props["as_of"]["description"]


# ------------------------------------------------------------------------------------ !memory
async def test_parser_as_of_flag() -> None:
    p = parse("memory search where do I work --as-of 2025-01-01T00:00:00Z")
    assert (p.query, p.as_of) == ("where do I work", THEN)
    p = parse('memory search --as-of=2025-01-01T01:00:00+01:00 "work place"')
    assert (p.query, p.as_of) == ("work place", THEN)
    assert parse("memory search what does --verbose mean").query == "what does --verbose mean"
    lst = parse("memory list --as-of 2025-01-01T00:00:00Z")
    assert lst.statuses == ("active", "superseded") and lst.as_of_ts is not None
    assert parse("memory list --as-of 2025-01-01T00:00:00Z --status archived").statuses == ("archived",)
    assert parse("memory list").statuses == ("active",) and parse("memory list").as_of is None
    for bad in ("memory search x --as-of 2025-01-01", "memory list --as-of tomorrow", "memory search x --as-of"):
        with pytest.raises(ParseError):
            parse(bad)


async def test_memory_search_and_list_as_of() -> None:
    h = await host_harness()
    acme = await h.remember(ALICE, "alice", ACME["content"], **{k: v for k, v in ACME.items() if k != "content"})
    await h.remember(ALICE, "alice", GLOBEX["content"], valid_from=GLOBEX["valid_from"], supersedes=[acme.id])

    now = await h.one("memory search where do I work")
    assert "Globex" in now and "Acme" not in now
    then = await h.one(f"memory search where do I work --as-of {THEN}")
    assert "Acme" in then and "Globex" not in then
    assert "2025-01-01 00:00 UTC" in then and "2024-01-01 00:00 UTC → 2025-06-01 00:00 UTC" in then

    listed_now = await h.one("memory list")
    assert "Globex" in listed_now and "Acme" not in listed_now
    listed_then = await h.one(f"memory list --as-of {THEN}")
    assert "Acme" in listed_then and "Globex" not in listed_then

    bad = await h.one("memory search work --as-of 2025-01-01")
    assert "--as-of" in bad and "ISO-8601" in bad


# ------------------------------------------------------------------------------------ console
async def test_console_episodes_and_search_as_of(tmp_path: Any) -> None:
    from tests.support import ADMIN, build_service, scope_of

    svc = await build_service("numpy", tmp_path)
    s = await scope_of(svc)
    acme, _ = await svc.remember(s, ACME, ADMIN)
    await svc.remember(s, {**GLOBEX, "supersedes": [acme.id]}, ADMIN)
    page = make_page(svc)

    found = await ok(page, "/episodes/search", scope_body(s, query="where do I work", as_of=THEN))
    assert [i["content"] for i in found["items"]] == ["I work at Acme"] and found["as_of"] == THEN
    assert found["items"][0]["valid_window"] == "2024-01-01T00:00:00Z .. 2025-06-01T00:00:00Z"
    default = await ok(page, "/episodes/search", scope_body(s, query="where do I work"))
    assert [i["content"] for i in default["items"]] == ["I work at Globex"]

    listed = await ok(page, "/episodes", scope_body(s, as_of=THEN))
    assert [i["content"] for i in listed["items"]] == ["I work at Acme"]
    assert [i["content"] for i in (await ok(page, "/episodes", scope_body(s)))["items"]] == ["I work at Globex"]

    assert "as_of" in await refused(page, "/episodes/search", scope_body(s, query="work", as_of="2025-01-01"))
