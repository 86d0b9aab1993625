"""A memory KB on Milvus Lite in the real LangBot 4.11.2 (``LTM_E2E_VDB=milvus``; skipped otherwise).

Milvus keeps only ``text``, ``file_id`` and the chunk uuid of a record and drops every other filter
field with only a WARNING. The probe at creation finds that out (verdict ``drops_metadata``) and the
plugin keeps the KB's scopes in ``file_id`` and the rest of a memory in plugin storage (ADR 0008), so
the KB works like one on Chroma: ``remember``, ``!memory list`` and ``health``, the console. What the
collection itself holds is read through the Milvus Lite server in LangBot's process: the vector size
of the KB's own embedder (the probe wrote first, so never Milvus's default 1536), no probe row left,
every memory row's ``file_id`` carrying a scope, and no memory's plain text.

Runs in the SQLite + Milvus Lite leg of ``scripts/test-e2e-legs`` (where the rest of the named subset
checks recall, isolation, forget, the console and a restart on it), or alone:
``LTM_E2E_VDB=milvus .venv/bin/pytest -m e2e tests/e2e/test_milvus_e2e.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack
from ltm.domain.backends import PROBE_TEXT, scope_tag_of
from ltm.i18n import t
from tests.e2e.store_reader import milvus_state
from tests.e2e.test_langbot_e2e import call_tool, remember

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        (os.environ.get("LTM_E2E_VDB") or "").strip().lower() != "milvus",
        reason="needs LangBot on Milvus Lite: LTM_E2E_VDB=milvus",
    ),
    pytest.mark.usefixtures("fake_model_only"),
]
UNSUPPORTED = t("error.backend_unsupported", "en_US")
EMBEDDING_DIM = 384  # the fake model server's MiniLM (e2e/fake_openai.py)
MILVUS_DEFAULT_DIM = 1536
FACT = "I keep the beehives behind the old water tower"


def test_a_kb_on_milvus_works_and_its_collection_holds_scopes_not_text(stack: Stack) -> None:
    listed = stack.page_api("/kbs", method="GET")["knowledge_bases"]
    ours = next(k for k in listed if k["kb_id"] == stack.kb_uuid)
    assert ours["backend"] == "drops_metadata", ours  # decided when LangBot created the KB

    with stack.connect() as chat:
        kept = remember(chat, FACT)
        listing = chat.command("!memory list")
        assert "beehives" in listing, f"the memory is not listed:\n{listing}"
        member = chat.command("!memory health")
        assert UNSUPPORTED not in member and re.search(r"healthy|🟢", member, re.IGNORECASE), member
        recalled = call_tool(chat, "recall_memory", {"query": "where are the beehives"})
        assert "water tower" in str(recalled), recalled
        scope = {"kb_id": stack.kb_uuid, "session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID}
    diagnostics = stack.page_api("/diagnostics", scope)  # the console answers (it refused before ADR 0008)
    assert diagnostics.get("health"), diagnostics

    assert stack.run_dir is not None
    plugin_log = "".join(
        f.read_text(encoding="utf-8", errors="replace")
        for f in (Path(stack.run_dir) / "logs").glob("*LongTermMemory*.log")
    )
    assert "is unusable" not in plugin_log and UNSUPPORTED not in plugin_log

    state = milvus_state(stack)
    collections = state.get("collections") or {}
    records = [r for coll in collections.values() for r in coll["records"]]
    mine = [r for r in records if r["id"] == kept["id"]]
    assert len(mine) == 1, f"positive control: the memory is not a row of Milvus: {kept['id']} in {state}"
    for name, coll in collections.items():
        # the probe wrote first, with the KB's own embedder: never Milvus's default 1536
        assert coll["dim"] == EMBEDDING_DIM != MILVUS_DEFAULT_DIM, (name, coll["dim"])
    assert not [r for r in records if r["text"] == PROBE_TEXT], "a probe row was left behind"
    assert not [r for r in records if "beehives" in (r["text"] or "")], "Milvus holds a memory's plain text"
    unscoped = [r for r in records if scope_tag_of(r["file_id"] or "") is None]
    assert not unscoped, f"rows whose file_id carries no scope (Milvus filters on file_id alone): {unscoped}"
    assert scope_tag_of(mine[0]["file_id"]) is not None  # positive control: the checks above looked at rows
