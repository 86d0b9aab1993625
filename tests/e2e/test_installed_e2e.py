"""Issue #24 (4): background work in the plugin as users run it, installed from its ``.lbpkg``.

Runs only in the installed stack mode (``LTM_E2E_INSTALL=package``, see ``scripts/test-e2e``): the
plugin under test is built with ``scripts/build-package`` and installed through LangBot's local-install
route, so the runtime's own worker runs it and every action carries an ``InstallationBinding`` (the
SDK ends each invocation with its action). Debug attach binds none, which is why the rest of the
suite never saw background work fail there.

- a chat's recall snapshot is written during the chat's own calls, and after a restart (a config
  change starts a new worker process) the first turn's recall is answered from it;
- a journal entry left open (its close refused by the host) is settled by the next start's recovery;
- no background host call is refused for an ended invocation.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack, wait_for
from tests.e2e.test_langbot_e2e import injected_texts, needs_fake_model, remember

pytestmark = pytest.mark.e2e
REFUSED = ("invocation has ended", "recovery of half-finished operations failed")


@pytest.fixture(autouse=True)
def installed_only(stack: Stack) -> None:
    if not stack.installed:
        pytest.skip("needs the installed stack mode: LTM_E2E_INSTALL=package")


def diagnostics(stack: Stack, session_name: str) -> dict[str, Any]:
    body = {
        "scope": {"kb_id": stack.kb_uuid, "session_name": session_name, "bot_uuid": WEBCHAT_BOT_UUID, "sender_id": ""},
        "probe": False,
    }
    return dict(stack.page_api("/diagnostics", body)["background"])


def snapshot_keys(stack: Stack) -> list[str]:
    return [k for k in stack.plugin_storage_keys("recall/") if k.endswith("/snap")]


def refusals(stack: Stack) -> list[str]:
    return [line[:300] for line in stack.installed_log().splitlines() if any(r in line for r in REFUSED)]


@needs_fake_model
def test_installed_snapshot_is_written_and_used_by_the_first_turn_after_a_restart(stack: Stack) -> None:
    entries = stack.plugins_by_id().get(stack.plugin.plugin_id, [])
    assert entries and all(e.get("install_source") == "local" for e in entries), entries
    with stack.connect() as chat:
        remember(chat, "My locker number is 4711")
        turn = chat.send("What is my locker number?")
        assert any("4711" in t for t in injected_texts(turn.prompt)), json.dumps(turn.prompt, ensure_ascii=False)
        # written inside the chat's own calls (no later call needed)
        snaps = wait_for(
            "the chat's recall snapshot",
            lambda: [k for k in stack.plugin_storage_keys("recall/") if k.endswith("/snap")],
            10,
        )
        assert snaps, stack.plugin_storage_keys()
        before = diagnostics(stack, chat.session_name)
        assert before["snapshots"]["written"] >= 1 and before["snapshots"]["failed"] == 0, before

        starts, workers = stack.installed_worker_starts(), stack.plugin_worker_pids()
        stack.set_plugin_config({"recall_index_ttl_seconds": 3600})  # a config change restarts the plugin
        wait_for("a new worker process", lambda: stack.installed_worker_starts() > starts, 60)
        assert not set(workers) & set(stack.plugin_worker_pids()), (workers, stack.plugin_worker_pids())

        first = chat.send("Remind me of my locker number")
        assert any("4711" in t for t in injected_texts(first.prompt)), json.dumps(first.prompt, ensure_ascii=False)
        after = diagnostics(stack, chat.session_name)
    # a fresh process: its first recall of this chat read the stored snapshot and used it
    assert after["snapshots"]["read"] >= 1 and after["snapshots"]["used"] >= 1, after
    assert after["recovering"] is False and after["jobs"]["failed"] == 0, after
    assert not refusals(stack), refusals(stack)


def test_installed_restart_settles_a_journal_entry_left_open(stack: Stack) -> None:
    """A journal entry the host never let the plugin close (its close was refused) is settled by the
    next start's recovery, carried by the new worker's first calls (before the fix it failed at every
    start: "Plugin invocation has ended")."""
    op_id = "e2e" + secrets.token_hex(6)
    entry = {
        "op_id": op_id,
        "operation": "episode.remember",
        "started_at": "2026-01-01T00:00:00Z",
        "actor": {"surface": "tool", "sender_id": "e2e", "query_id": None},
        "parts": [],  # its writes all applied (nothing left to check), only the close is owed
    }
    with stack.connect() as chat:
        chat.command("!memory health")  # the plugin is up and has listed its storage
        stack.put_plugin_storage(f"journal/{op_id}", json.dumps(entry).encode())
        assert f"journal/{op_id}" in stack.plugin_storage_keys("journal/")
        starts = stack.installed_worker_starts()
        stack.set_plugin_config({"recall_index_ttl_seconds": 1800})  # a config change restarts the plugin
        wait_for("a new worker process", lambda: stack.installed_worker_starts() > starts, 60)
        settled = wait_for(
            "the journal entry to be settled",
            lambda: f"journal/{op_id}" not in stack.plugin_storage_keys("journal/"),
            30,
        )
        assert settled
        state = diagnostics(stack, chat.session_name)
    assert f"recovered operation {op_id} (episode.remember): applied" in stack.installed_log()
    assert state["recovering"] is False and state["jobs"]["failed"] == 0, state
    assert not refusals(stack), refusals(stack)
