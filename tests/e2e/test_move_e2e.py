"""Issue 37.3 in the real LangBot 4.11.2: 2,000 memories over two chats move from one LangBot
(SQLite + Chroma) to another (``LTM_E2E_MOVE_DB`` / ``LTM_E2E_MOVE_VDB``, default PostgreSQL +
pgvector, where the plugin keeps its metadata in its sidecar) through the console's page API, driven by
``pages.move_cli`` exactly as an operator's script; the restore is checked (digest and counts),
verified (every record read back), restored again (nothing changes), and both chats recall the same
facts after the move. The time per 1,000 memories goes to ``test-output/move.json``.

Host fact: the WebChat gives every websocket connection its own person session
(``person_websocket_<connection id>``), which no second LangBot can reopen; the seeded chats are a
person session of a fixed id and the dashboard's group (``group_websocketgroup``), and their recall is
asked through the host's retrieval of the memory knowledge base for each chat (the engine's own
recall path, with the chat's identity), the group's also in a chat turn.

Seeding is a restore of a generated ``ltm-backup/1`` document into the source (the write engine and
the content gate's import path, one mutation per 200 records), not 2,000 chat turns."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.move import CHATS, fact, pier, seed_document
from e2e.backends import VECTOR_DBS, BackendSettings
from e2e.stack import ADMIN_PASSWORD, ADMIN_USER, WEBCHAT_BOT_UUID, Stack
from pages.move_cli import PageApi, fetch_backup, restore_lines
from tests.e2e.test_langbot_e2e import retrieved_texts

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]
ROOT = Path(__file__).resolve().parents[2]
MEMORIES = int(os.environ.get("LTM_E2E_MOVE_MEMORIES") or 2000)
CHUNK = 25


@pytest.fixture(scope="module")
def target() -> Iterator[Stack]:
    default_vdb = "pgvector" if "pgvector" in VECTOR_DBS else "chroma"
    backends = BackendSettings(
        db=os.environ.get("LTM_E2E_MOVE_DB", "postgresql"), vdb=os.environ.get("LTM_E2E_MOVE_VDB", default_vdb)
    )
    s = Stack(backends=backends)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def call_of(stack: Stack):  # noqa: ANN201 - the page API as pages.move_cli calls it
    def call(endpoint: str, body: dict) -> object:
        return stack.page_api(endpoint, body)

    return call


def recalls(stack: Stack, chat: int, n: int, asked_in: int | None = None) -> bool:
    """Whether the chat ``asked_in`` (default: its own) recalls the n-th fact of ``chat``."""
    settings = {"session_name": CHATS[chat if asked_in is None else asked_in], "bot_uuid": WEBCHAT_BOT_UUID}
    return fact(chat, n) in retrieved_texts(
        stack.kb_retrieve(f"which ferry leaves from pier {pier(chat, n)}", settings)
    )


def test_two_thousand_memories_move_to_another_deployment(stack: Stack, target: Stack) -> None:
    call = call_of(stack)
    started = time.monotonic()
    seeded = restore_lines(call, seed_document(stack.kb_uuid, MEMORIES, WEBCHAT_BOT_UUID), chunk=CHUNK)
    seed_s = time.monotonic() - started
    assert seeded["ok"] and seeded["written"]["episode"] == MEMORIES, seeded
    probes = [(c, n) for c in (0, 1) for n in (0, MEMORIES // 4 - 1, MEMORIES // 2 - 1)]
    assert all(recalls(stack, c, n) for c, n in probes), "positive control: the source recalls the seeded facts"

    started = time.monotonic()
    lines = fetch_backup(call)
    backup_s = time.monotonic() - started
    counts = json.loads(lines[-1])["counts"]
    # the whole installation: the seeded memories and whatever the suite's earlier tests left in this stack
    assert counts["episode"] >= MEMORIES and counts["audit"] > 0, counts

    # nothing there yet on the target (negative control of the recall check)
    assert not recalls(target, 0, 0)
    moved = restore_lines(call_of(target), lines, chunk=CHUNK)
    assert moved["ok"] and moved["verified"] == counts, moved
    # a chunk whose page call timed out in the host (30 s) but was written by the plugin is skipped
    # when the script sends it again: written + skipped is every memory, once
    assert moved["written"]["episode"] + moved["skipped"]["episode"] == counts["episode"], moved
    # again, as the operator's script does it: its own HTTP client, logged in with the operator's password
    script = PageApi.login(target.base_url, ADMIN_USER, ADMIN_PASSWORD, plugin=target.plugin.plugin_id)
    again = restore_lines(script, lines, chunk=CHUNK)
    assert again["ok"] and sum(again["written"].values()) == 0 and again["conflicts"] == 0, again

    assert all(recalls(target, c, n) for c, n in probes), "a moved fact is not recalled in its chat"
    assert not recalls(target, 0, 0, asked_in=1), "the group recalls the private chat's memory"
    assert not recalls(target, 1, 0, asked_in=0), "the private chat recalls the group's memory"
    with target.connect("group") as chat:
        turn = chat.send(f"ai which ferry leaves from pier {pier(1, 3)}?")
    shown = json.dumps(turn.prompt, ensure_ascii=False)
    assert fact(1, 3) in shown, "the group chat's turn was not given its moved memory"

    per_k = 1000 / MEMORIES
    result = {
        "memories": MEMORIES,
        "records": counts,
        "source": stack.backends.label,
        "target": target.backends.label,
        "seed_s": round(seed_s, 2),
        "backup_s": round(backup_s, 2),
        "restore_s": moved["restore_s"],
        "verify_s": moved["verify_s"],
        "resent_skipped": moved["skipped"],
        "restore_again_s": again["restore_s"],
        "per_1000": {
            "backup_s": round(backup_s * per_k, 2),
            "restore_s": round(moved["restore_s"] * per_k, 2),
            "verify_s": round(moved["verify_s"] * per_k, 2),
        },
    }
    out = ROOT / "test-output"
    out.mkdir(exist_ok=True)
    (out / "move.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
