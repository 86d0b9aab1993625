"""``!memory forget`` in the real LangBot on its default storage (SQLite + embedded Chroma): the
forgotten text is in no file of Chroma's (``data/chroma/``, ``chroma.sqlite3`` and its write-ahead
log table ``embeddings_queue`` read as raw bytes) and in no plugin-storage row of LangBot's
database, while a memory that was not forgotten is still there in plugin storage (the positive
control) and, before the forget, the text was (issue 35, findings 1 and 5; docs/privacy.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.stack import Stack
from tests.e2e.store_reader import plugin_rows, stored_until
from tests.e2e.test_langbot_e2e import needs_fake_model, remember

pytestmark = pytest.mark.e2e
SECRET = "Zephyrine hides the garage remote inside the green teapot"
CONTROL = "Zephyrine waters the ferns every Tuesday morning"


def chroma_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((data_dir / "chroma").rglob("*")) if p.is_file())


@needs_fake_model
def test_forget_leaves_the_text_in_no_file_of_chroma_and_no_plugin_row(stack: Stack) -> None:
    if stack.backends.vdb != "chroma" or stack.backends.db != "sqlite":
        pytest.skip("reads LangBot's default SQLite database and embedded Chroma")
    with stack.connect() as chat:
        secret = remember(chat, SECRET)
        remember(chat, CONTROL)
        chat.send("Where is the garage remote, in the green teapot? And the ferns?")  # a last-turn snapshot
        # the recall snapshot is flushed in the background, 2 s after the last change
        assert stored_until(stack, SECRET), "positive control: the turn's snapshot shows the memory"
        assert SECRET.encode() not in chroma_bytes(stack.langbot_data_dir), "the vector store got the plain text"

        reply = chat.command(f"!memory forget {secret['id']}")
        assert secret["id"][:8] in reply or "forg" in reply.lower(), reply

    assert SECRET.encode() not in chroma_bytes(stack.langbot_data_dir)
    assert SECRET not in plugin_rows(stack), "the forgotten text is still in plugin storage"
    assert stored_until(stack, CONTROL), (
        "positive control: a kept memory is still in plugin storage (its recall snapshot)"
    )
    assert SECRET not in plugin_rows(stack), "a background rewrite brought the forgotten text back"
