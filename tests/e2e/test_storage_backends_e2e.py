"""LangBot on the storage an operator configured (``database.use``, ``vdb.use``; ``LTM_E2E_DB`` /
``LTM_E2E_VDB``, see e2e/README.md): the stack really runs there, and memories survive a LangBot restart.

The file sorts after ``test_langbot_e2e.py`` on purpose: the restart is not a normal run's event, so the
log scan of ``test_zy_a_normal_run_logs_no_plugin_warnings`` has run before it.
"""

from __future__ import annotations

import re

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack, wait_for
from tests.e2e.test_langbot_e2e import remember, retrieved_texts

pytestmark = pytest.mark.e2e

# what LangBot 4.11.2 logs when it opens each vector backend (pkg/vector/mgr.py)
VDB_INIT_LINES = {
    "chroma": "Initialized Chroma vector database backend.",
    "seekdb": "Initialized SeekDB vector database backend.",
    "milvus": "Initialized Milvus vector database backend.",
    # vdb.pgvector.use_business_database: true (e2e/backends.py)
    "pgvector": "Initialized pgvector on the shared business PostgreSQL database.",
}


def retrieve_until(stack: Stack, query: str, settings: dict[str, str], needle: str, timeout: float = 10.0) -> str:
    """Retrieve through the host until ``needle`` shows (SeekDB's vector search sees a write only after
    0.1-2 s; host reference section 11). Returns the last result either way, for the caller's assertion."""
    last = ""

    def found() -> bool:
        nonlocal last
        last = retrieved_texts(stack.kb_retrieve(query, settings))
        return needle in last

    try:
        wait_for(f"{needle!r} to be retrievable", found, timeout, interval=0.3)
    except Exception:  # the assertion at the call site says what was seen
        pass
    return last


def test_langbot_runs_on_the_configured_storage(stack: Stack) -> None:
    """LangBot's tables hold this stack's KB in the configured database, and LangBot opened the configured
    vector backend and no other."""
    kbs = [row[0] for row in stack.db_query("SELECT uuid FROM knowledge_bases")]
    assert stack.kb_uuid in kbs, f"the memory KB is not in LangBot's {stack.backends.db} database: {kbs}"
    if stack.backends.db == "postgresql":
        # LangBot's migration 0013 created it (the stack only checks it is available): its requirement met
        assert stack.db_query("SELECT extname FROM pg_extension WHERE extname = 'vector'") == [["vector"]]
        assert not (stack.langbot_data_dir / "langbot.db").exists(), "a SQLite database next to PostgreSQL"
    else:
        assert (stack.langbot_data_dir / "langbot.db").is_file()
    log = stack.langbot_log_text()
    opened = [name for name, line in VDB_INIT_LINES.items() if line in log]
    assert opened == [stack.backends.vdb], f"LangBot opened {opened}, configured {stack.backends.vdb}"


@pytest.mark.usefixtures("fake_model_only")
def test_memories_survive_a_langbot_restart(stack: Stack) -> None:
    """A memory written before LangBot restarts (same database, vector store and data dir) is recalled
    after it for its own session and no other; chat with memory and ``!memory health`` work again."""
    with stack.connect() as chat:
        remember(chat, "I keep the lighthouse key in the red biscuit tin")
        mine = {"session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID}
    other = {"session_name": "person_websocket_someone_else", "bot_uuid": WEBCHAT_BOT_UUID}
    query = "where is the lighthouse key"
    before = retrieve_until(stack, query, mine, "biscuit tin")
    assert "biscuit tin" in before, f"positive control: not retrievable before the restart: {before}"
    plugin_rows = stack.db_query("SELECT count(*) FROM binary_storages")
    assert int(plugin_rows[0][0]) > 0, "the plugin wrote nothing to LangBot's storage table"

    seconds = stack.restart_langbot()

    after = retrieve_until(stack, query, mine, "biscuit tin")
    assert "biscuit tin" in after, f"the memory did not survive the restart ({seconds:.0f}s): {after}"
    assert "biscuit tin" not in retrieved_texts(stack.kb_retrieve(query, other)), "another session sees it"
    with stack.connect() as chat:
        chat.send("My name is Bo")
        asked = chat.send("What is my name?")
        assert "Bo" in (asked.reply.splitlines() or [""])[0], asked.reply
        health = chat.command("!memory health")
    assert re.search(r"healthy|🟢", health, re.IGNORECASE), f"no green verdict after the restart:\n{health}"
