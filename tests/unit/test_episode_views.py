"""One shape per purpose (ltm.domain.episode_views): the export record has exactly its field list;
a recalled memory carries no scope key, which the operator's console view does (the control)."""

from __future__ import annotations

from ltm.domain.episode_views import EXPORT_FIELDS, console_view, export_record, recall_view
from ltm.domain.models import build_episode, validate_episode_input
from ltm.domain.scope import derive_scope

SCOPE_KEYS = {"user_key", "scope_key", "session_name", "bot_uuid", "audience"}


def episode(**fields: object):  # type: ignore[no-untyped-def]
    scope = derive_scope(session_name="person_alice", bot_uuid="bot1", collection="kb", sender_id="alice")
    data = validate_episode_input({"content": "Alice lives in Berlin", **fields})
    return build_episode(data, scope, origin="tool", timestamp="2024-05-01T00:00:00+00:00")


def test_the_export_record_is_its_field_list() -> None:
    e = episode(tags=["home"])
    assert tuple(export_record(e)) == EXPORT_FIELDS
    e.extra = {"sources": ["ep_1"]}
    assert tuple(export_record(e)) == (*EXPORT_FIELDS, "extra")


def test_a_recalled_memory_names_no_scope_key_and_the_console_view_does() -> None:
    e = episode()
    assert not SCOPE_KEYS & set(recall_view(e, 0.5))
    assert SCOPE_KEYS <= set(console_view(e))
    assert recall_view(e, 0.123456)["score"] == 0.1235 and recall_view(e, 1)["trust"] == console_view(e)["trust"]
