"""Deleting a memory knowledge base in the real host's dashboard API: LangBot calls the plugin's
``on_knowledge_base_delete``, and the installation's cascade removes the knowledge base's record and
what the plugin kept beside it (review candidates, tombstones) while the pipeline's own memory
knowledge base keeps its records (the positive control)."""

from __future__ import annotations

import json

import pytest

from e2e.stack import Stack, wait_for

pytestmark = pytest.mark.e2e
OWNER = "e2e-del-bot:person_e2e_deleted"  # a user key of the deleted knowledge base's chat


def test_deleting_a_memory_kb_takes_its_candidates_and_tombstones(stack: Stack) -> None:
    if stack.backends.vdb == "milvus":
        pytest.skip("a KB on Milvus is unusable: tests/e2e/test_milvus_e2e.py")
    kb = stack.api(
        "POST",
        "/knowledge/bases",
        {
            "name": "Memory to delete (e2e)",
            "description": "created and deleted by test_kb_deletion_e2e.py",
            "knowledge_engine_plugin_id": stack.plugin.plugin_id,
            "creation_settings": {"embedding_model": stack.embedding_uuid, "isolation": "session"},
            "retrieval_settings": {},
        },
    )["uuid"]
    wait_for("the plugin to register the new knowledge base", lambda: stack.plugin_storage_keys(f"kb/{kb}"), 60)
    kept = {  # the same layouts under the pipeline's memory knowledge base: they must stay
        f"tomb/{stack.kb_uuid}/{OWNER}/tb_00000000000000aa": b"{}",
        f"cand/{stack.kb_uuid}/{OWNER}/open": b"[]",
    }
    gone = {
        f"tomb/{kb}/{OWNER}/tb_00000000000000bb": json.dumps({"content": "a forgotten value"}).encode(),
        f"cand/{kb}/{OWNER}/open": b"[]",
        f"cand/{kb}/{OWNER}/head": json.dumps({"seq": 0}).encode(),
    }
    for key, value in {**kept, **gone}.items():
        stack.put_plugin_storage(key, value)
    assert set(gone) <= set(stack.plugin_storage_keys(f"cand/{kb}") + stack.plugin_storage_keys(f"tomb/{kb}"))

    stack.api("DELETE", f"/knowledge/bases/{kb}")

    def cascaded() -> bool:
        return not any(stack.plugin_storage_keys(p) for p in (f"kb/{kb}", f"cand/{kb}", f"tomb/{kb}"))

    wait_for("the knowledge base's candidates, tombstones and record to go", cascaded, 60)
    left = set(stack.plugin_storage_keys(f"tomb/{stack.kb_uuid}") + stack.plugin_storage_keys(f"cand/{stack.kb_uuid}"))
    assert set(kept) <= left  # positive control: the other knowledge base's records stay
