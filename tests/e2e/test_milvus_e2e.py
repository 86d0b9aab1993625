"""A memory KB on Milvus Lite in the real LangBot 4.11.2 (``LTM_E2E_VDB=milvus``; skipped otherwise).

Milvus keeps only ``text``, ``file_id`` and the chunk uuid of a record and drops every other filter
field with only a WARNING, so it cannot keep chats apart (issue 25). The plugin keeps the KB (LangBot
would answer a refusal in ``on_knowledge_base_create`` with a bare HTTP 500) but marks it unusable:
members' and admins' ``!memory health``, ``remember`` and the console answer with one message naming
Chroma, Qdrant and SeekDB; the chat itself goes on without memory. Nothing is stored, the probe leaves
no row behind, and the collection never gets Milvus's default 1536 dimensions.

Run alone: ``LTM_E2E_VDB=milvus .venv/bin/pytest -m e2e tests/e2e/test_milvus_e2e.py`` (the rest of the
suite needs a KB that works).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack, StackError
from ltm.i18n import t
from tests.e2e.store_reader import milvus_state
from tests.e2e.test_langbot_e2e import call_tool

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        (os.environ.get("LTM_E2E_VDB") or "").strip().lower() != "milvus",
        reason="needs LangBot on Milvus Lite: LTM_E2E_VDB=milvus",
    ),
    pytest.mark.usefixtures("fake_model_only"),
]
MESSAGE = t("error.backend_unsupported", "en_US")
EMBEDDING_DIM = 384  # the fake model server's MiniLM (e2e/fake_openai.py)
MILVUS_DEFAULT_DIM = 1536


def test_a_kb_on_milvus_is_kept_unusable_and_every_surface_says_why(stack: Stack) -> None:
    listed = stack.page_api("/kbs", method="GET")["knowledge_bases"]
    ours = next(k for k in listed if k["kb_id"] == stack.kb_uuid)
    assert ours["backend"] == "drops_metadata", ours  # decided when LangBot created the KB

    with stack.connect() as chat:
        turn = chat.send("Hello! What do you remember about me?")  # the listener's path: chat goes on
        assert turn.reply.strip(), "the chat must go on without memory"
        member = chat.command("!memory health")
        assert MESSAGE in member, f"member health:\n{member}"
        result = call_tool(chat, "remember", {"content": "I keep bees on the roof"})
        assert isinstance(result, dict) and result.get("ok") is False, result
        assert MESSAGE in str(result.get("error")), result
        listing = chat.command("!memory list")
        assert MESSAGE in listing, listing
        previous = stack.plugin_config()
        stack.set_plugin_config({"admin_sender_ids": [chat.sender_id]})  # restarts the plugin
        try:
            admin = chat.command("!memory health")
        finally:
            stack.set_plugin_config({"admin_sender_ids": previous.get("admin_sender_ids") or []})
        assert MESSAGE in admin, f"admin health:\n{admin}"
        scope = {"kb_id": stack.kb_uuid, "session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID}

    with pytest.raises(StackError) as refused:
        stack.page_api("/diagnostics", scope)
    assert MESSAGE in str(refused.value)

    # the operator's log says it too: at creation, and once for the chat turns
    assert stack.run_dir is not None
    plugin_log = "".join(
        f.read_text(encoding="utf-8", errors="replace")
        for f in (Path(stack.run_dir) / "logs").glob("*LongTermMemory*.log")
    )
    assert "is unusable: its vector backend drops metadata" in plugin_log
    assert f"memory unavailable for this turn: {MESSAGE}" in plugin_log

    state = milvus_state(stack)
    assert len(state.get("collections") or {}) == 1, state  # the memory KB's, made by the probe
    for name, coll in state["collections"].items():
        # the probe wrote first, with the KB's own embedder: never Milvus's default 1536
        assert coll["dim"] == EMBEDDING_DIM != MILVUS_DEFAULT_DIM, (name, coll)
        assert coll["rows"] == 0, f"rows left in the unusable KB (probe or memory): {name} {coll}"
