"""Issue #3: LongTermMemory on a real LangBot 4.11.2 (pipeline, Runner, tools, commands, KB, page, package).

Every test talks to the host the way a user or an operator does: the dashboard WebChat websocket, the
``!memory`` command, the knowledge-base retrieve route, the page API and the plugin install route. What the
model saw is read from the fake model server's request log (``Stack.model_requests`` / ``Turn.requests``),
i.e. the exact body LangBot sent to the OpenAI-compatible endpoint.

Conventions:

- each test opens its own WebChat connection(s); a person connection is its own LangBot session;
- memory must reach the model through a *system* message (the injected block or the runner's knowledge
  message). User/assistant history also carries earlier turns' text, so positive checks look at system
  messages only, while "must not leak" checks look at every message;
- ``CALLTOOL:<tool>:<json>`` in a user message makes the fake model call that tool (when offered).

``test_zz_lbpkg_installs_and_initializes`` detaches the debug-attached plugin, so it runs last.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from e2e.log_scan import unexpected_log_lines
from e2e.stack import DEFAULT_SYSTEM_PROMPT, WEBCHAT_BOT_UUID, ChatSession, Stack, Turn

pytestmark = pytest.mark.e2e

needs_fake_model = pytest.mark.usefixtures("fake_model_only")

DEBUG_VARS_MARKER = "LOCALRUNNER-DEBUG-VARS:"
MEMORY_TOOLS = {"remember", "recall_memory", "update_profile", "forget"}


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def system_texts(messages: list[dict[str, Any]]) -> list[str]:
    """System message texts the model saw, without the LocalRunner's debug-vars line."""
    return [
        _text(m.get("content"))
        for m in messages
        if m.get("role") == "system" and not _text(m.get("content")).startswith(DEBUG_VARS_MARKER)
    ]


def is_runner_rag(text: str) -> bool:
    """The LocalRunner's knowledge-retrieval system message (LocalAgent's ``langbot_retrieved_context``)."""
    return text.startswith('{"type": "langbot_retrieved_context"')


def injected_texts(messages: list[dict[str, Any]]) -> list[str]:
    """System messages from the effective prompt (``ctx.get_prompt()``): the listener's injection lands here.

    Excludes the runner's own knowledge-retrieval message: that one only exists because the pipeline's runner
    also retrieves from the memory KB, and must not be what makes a recall test pass.
    """
    return [t for t in system_texts(messages) if not is_runner_rag(t)]


def all_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [_text(m.get("content")) for m in messages]


def offered_tools(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or [] if isinstance(t, dict) and "function" in t}


def tool_results(turn: Turn, tool: str) -> list[Any]:
    """Parsed results of every ``tool`` call made during ``turn`` (as the model got them back)."""
    out: list[Any] = []
    seen: set[str] = set()
    for request in turn.requests:
        messages = request.get("messages") or []
        names = {
            str(call.get("id")): (call.get("function") or {}).get("name")
            for m in messages
            for call in m.get("tool_calls") or []
        }
        for m in messages:
            call_id = str(m.get("tool_call_id"))
            if m.get("role") == "tool" and names.get(call_id) == tool and call_id not in seen:
                seen.add(call_id)
                try:
                    out.append(json.loads(_text(m.get("content"))))
                except json.JSONDecodeError:
                    out.append(_text(m.get("content")))
    return out


def call_tool(chat: ChatSession, tool: str, args: dict[str, Any], preface: str = "Please do this.") -> Any:
    """Make the fake model call ``tool`` with ``args``; return the (single) tool result."""
    turn = chat.send(f"{preface} CALLTOOL:{tool}:{json.dumps(args, ensure_ascii=False)}")
    results = tool_results(turn, tool)
    assert len(results) == 1, f"expected one {tool} call, model log shows {results}; reply: {turn.reply}"
    return results[0]


def remember(chat: ChatSession, content: str, **extra: Any) -> dict[str, Any]:
    result = call_tool(chat, "remember", {"content": content, **extra})
    assert isinstance(result, dict) and result.get("ok") is True, f"remember failed: {result}"
    assert result.get("id"), f"remember returned no id: {result}"
    return result


def retrieved_texts(results: list[dict[str, Any]]) -> str:
    parts = []
    for entry in results:
        parts.append(_text(entry.get("content")))
        parts.append(json.dumps(entry.get("metadata") or {}, ensure_ascii=False))
    return "\n".join(parts)


def debug_vars(turn: Turn) -> dict[str, Any]:
    for text in all_texts(turn.prompt):
        if text.startswith(DEBUG_VARS_MARKER):
            return json.loads(text[len(DEBUG_VARS_MARKER) :])
    raise AssertionError("the LocalRunner debug-vars line is missing (debug pipeline not used?)")


# --------------------------------------------------------------------------------------------
# the harness itself
# --------------------------------------------------------------------------------------------


@needs_fake_model
def test_runner_sends_prompt_history_and_memory_tools(stack: Stack) -> None:
    """The LocalRunner gives the model the system prompt, the history, the user input and our four tools."""
    with stack.connect() as chat:
        first = chat.send("Hello there, this is the first message.")
        assert first.requests, "the fake model received no request for this turn"
        assert first.prompt[0].get("role") == "system" and first.prompt[0].get("content") == DEFAULT_SYSTEM_PROMPT
        assert first.prompt[-1].get("role") == "user"
        assert MEMORY_TOOLS <= offered_tools(first.requests[0]), offered_tools(first.requests[0])
        assert "[fake-llm]" in first.reply

        second = chat.send("And this is the second one.")
        history = [m for m in second.prompt if m.get("role") in ("user", "assistant")]
        assert [m["role"] for m in history[:2]] == ["user", "assistant"]
        assert history[0]["content"] == "Hello there, this is the first message."
        assert history[-1]["content"] == "And this is the second one."


# --------------------------------------------------------------------------------------------
# the chat surfaces end to end: recall, corrections, forgetting, documents, profiles, health, console
# --------------------------------------------------------------------------------------------


@needs_fake_model
def test_remembered_fact_is_recalled_in_the_same_session_only(stack: Stack) -> None:
    """(1) A fact stored with ``remember`` reaches a later prompt of the same session, never another session."""
    with stack.connect() as alice:
        remember(alice, "My favourite colour is teal")
        later = alice.send("What colour do I like?")
        assert any("teal" in s.lower() for s in injected_texts(later.prompt)), (
            "positive control: the remembered fact is not injected into the later prompt:\n"
            + json.dumps(later.prompt, ensure_ascii=False, indent=1)
        )

    with stack.connect() as bob:
        other = bob.send("What colour do I like?")
        leaked = [t for t in all_texts(other.prompt) if "teal" in t.lower()]
        assert other.requests and not leaked, f"another session's memory leaked into this prompt: {leaked}"


@needs_fake_model
def test_correction_supersedes_the_old_fact(stack: Stack) -> None:
    """(2) ``remember`` with ``supersedes`` replaces the old fact in later prompts; ``!memory show`` links them."""
    with stack.connect() as chat:
        old = remember(chat, "My favourite colour is teal")
        new = remember(chat, "My favourite colour is now orange", supersedes=[old["id"]])
        assert new.get("superseded") == [old["id"]], new

        later = chat.send("What colour do I like?")
        assert any("orange" in s.lower() for s in injected_texts(later.prompt)), "the correction is not injected"
        leaked = [s for s in system_texts(later.prompt) if "teal" in s.lower()]
        assert not leaked, f"the superseded fact still reaches the model: {leaked}"

        shown_new = chat.command(f"!memory show {new['id']}")
        assert old["id"] in shown_new, (
            f"`!memory show` of the correction does not name what it supersedes:\n{shown_new}"
        )
        shown_old = chat.command(f"!memory show {old['id']}")
        assert "supersed" in shown_old.lower(), (
            f"`!memory show` of the old fact does not say it is superseded:\n{shown_old}"
        )


@needs_fake_model
def test_forget_and_bulk_delete_remove_records_everywhere(stack: Stack) -> None:
    """(3) ``forget`` and ``!memory delete --status active`` remove records from retrieve and list; true count."""
    with stack.connect() as chat:
        key = remember(chat, "I keep my spare key under the blue flowerpot")
        remember(chat, "My sister is called Mina")
        remember(chat, "I play the cello on Sundays")
        settings = {"session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID}

        before = retrieved_texts(stack.kb_retrieve("where is my spare key", settings))
        assert "flowerpot" in before, f"positive control: retrieve does not find the stored fact: {before}"

        forgot = call_tool(chat, "forget", {"episode_id": key["id"], "reason": "user asked"})
        assert isinstance(forgot, dict) and forgot.get("ok") is True, forgot

        after = retrieved_texts(stack.kb_retrieve("where is my spare key", settings))
        assert "flowerpot" not in after, f"forgotten record still retrieved: {after}"
        listing = chat.command("!memory list")
        assert "Mina" in listing, f"positive control: `!memory list` does not show an active record:\n{listing}"
        assert "flowerpot" not in listing, f"forgotten record still listed:\n{listing}"

        previous = stack.plugin_config()
        stack.set_plugin_config({"admin_sender_ids": [chat.sender_id]})  # bulk delete is admin-only
        try:
            deleted = chat.command("!memory delete --status active")
        finally:
            stack.set_plugin_config({"admin_sender_ids": previous.get("admin_sender_ids") or []})
        assert re.search(r"(?<![\d.])2(?![\d.])", deleted), f"bulk delete should report 2 records:\n{deleted}"

        gone = retrieved_texts(stack.kb_retrieve("sister cello Sundays", settings))
        assert "Mina" not in gone and "cello" not in gone, f"bulk-deleted records still retrieved: {gone}"
        listing = chat.command("!memory list")
        assert "Mina" not in listing and "cello" not in listing, f"bulk-deleted records still listed:\n{listing}"


@needs_fake_model
def test_a_document_reaches_each_session_it_names_and_leaves_with_it(stack: Stack) -> None:
    """(#6) A memory document naming two sessions, added through the host's KB file flow (upload, add,
    ingest task): each session retrieves its own row only; deleting the document in the host removes the
    rows of both sessions (one all-or-nothing delete over two scopes) and audits it in each."""
    with stack.connect() as alice, stack.connect() as bob:
        doc = {
            "bot_uuid": WEBCHAT_BOT_UUID,
            "episodes": [
                {"session_name": alice.session_name, "sender_id": alice.sender_id, "content": "Alice owns a red kayak"},
                {"session_name": bob.session_name, "sender_id": bob.sender_id, "content": "Bob owns a green canoe"},
            ],
        }
        row = stack.kb_add_document(json.dumps(doc).encode("utf-8"))
        assert row.get("status") == "completed", f"the host did not complete the ingest: {row}"
        settings = {"a": {"session_name": alice.session_name, "bot_uuid": WEBCHAT_BOT_UUID}}
        settings["b"] = {"session_name": bob.session_name, "bot_uuid": WEBCHAT_BOT_UUID}
        got_a = retrieved_texts(stack.kb_retrieve("who owns a boat kayak canoe", settings["a"]))
        got_b = retrieved_texts(stack.kb_retrieve("who owns a boat kayak canoe", settings["b"]))
        assert "kayak" in got_a and "canoe" in got_b, f"positive control: {got_a!r} / {got_b!r}"
        assert "canoe" not in got_a and "kayak" not in got_b, f"a document row leaked: {got_a!r} / {got_b!r}"
        assert "kayak" in alice.command("!memory list"), "the ingested row is not listed in its session"

        stack.kb_delete_document(str(row["uuid"]))
        for who in ("a", "b"):
            gone = retrieved_texts(stack.kb_retrieve("who owns a boat kayak canoe", settings[who]))
            assert "kayak" not in gone and "canoe" not in gone, f"deleted document still retrieved: {gone}"
        for chat in (alice, bob):
            audit = chat.command("!memory audit")
            assert "document.ingest" in audit and "bulk_delete" in audit, f"audit of {chat.session_name}:\n{audit}"


@needs_fake_model
def test_profile_reaches_the_system_prompt_and_ltm_context_is_set(stack: Stack) -> None:
    """(4) ``update_profile`` lands in the system prompt of later turns and ``_ltm_context`` is set.

    The host never passes underscore query variables to a Runner, so the LocalRunner plugin's listener
    copies ``_ltm_context`` (read on ``*NormalMessageReceived``, after PromptPreProcessing) into the
    public variable ``localrunner_ltm_context``; the debug pipeline's runner echoes ``ctx.variables`` in
    one system line, which the fake model logs. Positive checks ignore that line.
    """
    with stack.connect(pipeline_uuid=stack.debug_pipeline_uuid) as chat:
        before = chat.send("Hi, nice to meet you.")
        assert "localrunner_ltm_context" in debug_vars(before), "the debug bridge did not run"

        result = call_tool(chat, "update_profile", {"name": "Ada", "set_preferences": {"drink": "green tea"}})
        assert isinstance(result, dict) and result.get("ok", True) is not False and "error" not in result, result

        later = chat.send("What should I drink this afternoon?")
        assert any("green tea" in s.lower() for s in injected_texts(later.prompt)), (
            "the profile is not in the system prompt:\n" + json.dumps(later.prompt, ensure_ascii=False, indent=1)
        )
        raw = debug_vars(later).get("localrunner_ltm_context")
        context = json.loads(raw) if isinstance(raw, str) else raw
        assert isinstance(context, dict) and context, f"_ltm_context is not set: {raw!r}"
        assert "green tea" in json.dumps(context, ensure_ascii=False).lower(), context


def test_memory_health_is_green(stack: Stack) -> None:
    """(5) ``!memory health`` on the e2e pipeline (memory KB attached, Chroma) gives a green verdict."""
    with stack.connect() as chat:
        reply = chat.command("!memory health")
    assert re.search(r"healthy|\bgreen\b|🟢|健康", reply, re.IGNORECASE), f"no green verdict:\n{reply}"
    assert not re.search(r"\bbroken\b|needs attention", reply, re.IGNORECASE), reply


def test_console_page_is_served_and_derive_answers(stack: Stack) -> None:
    """(6) The Memory Console HTML is served by the host and the page API's ``/derive`` answers."""
    author, name = stack.plugin.author, stack.plugin.name
    page = stack.get_raw(f"/api/v1/plugins/{author}/{name}/assets/components/pages/console.html")
    assert page.status_code == 200, page.text[:300]
    assert "<html" in page.text.lower() or "<!doctype" in page.text.lower()

    derived = stack.page_api(
        "/derive", {"bot_uuid": WEBCHAT_BOT_UUID, "session_name": "person_websocket_probe", "isolation": "session"}
    )
    assert isinstance(derived, dict) and derived, f"/derive returned {derived!r}"
    health = stack.page_api("/health", None, method="GET")
    assert health is not None, "the console's /health endpoint answered nothing"


# --------------------------------------------------------------------------------------------
# as-of recall, consolidation that replaces what it summarises
# --------------------------------------------------------------------------------------------


@needs_fake_model
def test_recall_as_of_answers_what_was_true_then(stack: Stack) -> None:
    """``recall_memory`` with ``as_of`` returns what was valid then (a superseded record included);
    without it, only the current record; ``!memory search --as-of`` agrees."""
    with stack.connect() as chat:
        acme = remember(chat, "I work at Acme", valid_from="2024-01-01T00:00:00Z", valid_until="2025-06-01T00:00:00Z")
        remember(chat, "I work at Globex", valid_from="2025-06-01T00:00:00Z", supersedes=[acme["id"]])
        then = call_tool(chat, "recall_memory", {"query": "where do I work", "as_of": "2025-01-01T00:00:00Z"})
        assert [e["content"] for e in then["episodes"]] == ["I work at Acme"], then
        assert then["episodes"][0]["valid_window"] == "2024-01-01T00:00:00Z .. 2025-06-01T00:00:00Z", then
        assert then["episodes"][0]["status"] == "superseded", then
        now = call_tool(chat, "recall_memory", {"query": "where do I work"})
        assert [e["content"] for e in now["episodes"]] == ["I work at Globex"], now
        searched = chat.command("!memory search where do I work --as-of 2025-01-01T00:00:00Z")
        assert "Acme" in searched and "Globex" not in searched, searched


COFFEE_FACTS = (
    ("I drink my coffee black", "black"),
    ("I have my first coffee every morning at 7", "at 7"),
    ("My favourite coffee shop is Blue Bottle on Main Street", "Blue Bottle"),
    ("I buy Ethiopian coffee beans", "Ethiopian"),
    ("I grind my coffee beans by hand", "by hand"),
    ("I stopped putting sugar in my coffee in 2023", "sugar"),
)


@needs_fake_model
def named_in_block(ids: list[str], texts: list[str]) -> list[str]:
    """Those of ``ids`` a row of the injected block names (by its whole id or the short id it shows)."""
    from e2e.block_reader import read_block
    from ltm.service.injection import BEGIN

    shown = [r["id"] for t in texts if BEGIN in t for r in ((read_block(t) or {}).get("episodes") or [])]
    return [i for i in ids if any(i == r or i.startswith(f"ep_{r}") for r in shown)]


def test_an_approved_summary_replaces_its_sources_in_the_injected_block(stack: Stack) -> None:
    """An admin's ``!memory consolidate run`` of a summary: the next prompt's injected block is smaller,
    carries every fact, and names the summary instead of its sources."""
    from ltm.domain.budget import estimate_tokens

    question = "How do I take my coffee?"
    with stack.connect() as chat:
        ids = [remember(chat, text)["id"] for text, _ in COFFEE_FACTS]
        before_texts = injected_texts(chat.send(question).prompt)
        before = "\n".join(before_texts)
        assert len(named_in_block(ids, before_texts)) >= 4, f"positive control: the sources are not injected:\n{before}"

        keys = ("admin_sender_ids", "consolidation_enabled", "consolidation_min_age_days", "consolidation_model_uuid")
        previous = stack.plugin_config()
        stack.set_plugin_config(
            {
                "admin_sender_ids": [chat.sender_id],
                "consolidation_enabled": True,
                "consolidation_min_age_days": 0,
                "consolidation_model_uuid": stack.llm_uuid,
            }
        )
        try:
            preview = chat.command("!memory consolidate preview")
            proposals = sorted(set(re.findall(r"cp_[0-9a-f]{20}", preview)))
            assert len(proposals) == 1, f"no summary proposal:\n{preview}"
            ran = chat.command(f"!memory consolidate run {proposals[0]}")
        finally:
            defaults = {"admin_sender_ids": [], "consolidation_enabled": False, "consolidation_model_uuid": ""}
            stack.set_plugin_config({k: previous.get(k, defaults.get(k, 7)) for k in keys})
        new_ids = [i for i in re.findall(r"ep_[0-9a-f]{20}", ran) if i not in ids]
        assert new_ids, f"the run wrote no summary:\n{ran}"

        after_texts = injected_texts(chat.send(question).prompt)
        after = "\n".join(after_texts)
        assert named_in_block(new_ids[:1], after_texts) and not named_in_block(ids, after_texts), after
        for _, fact in COFFEE_FACTS:
            assert fact in after, f"the summary block lost {fact!r}:\n{after}"
        tokens_before, tokens_after = estimate_tokens(before), estimate_tokens(after)
        assert tokens_after < tokens_before, f"injected block {tokens_before} -> {tokens_after} tokens"
        history = chat.command("!memory list --include-superseded")
        assert all(i in history for i in ids), f"the replaced sources left the history:\n{history}"


def test_zy_a_normal_run_logs_no_plugin_warnings(stack: Stack) -> None:
    """Runs after every other test of the session that talks to the stack (it sorts last but one)."""
    assert stack.run_dir is not None
    log_dir = Path(stack.run_dir) / "logs"
    logs = sorted(p.name for p in log_dir.glob("*.log"))
    assert "langbot.log" in logs and "runtime.log" in logs and any("LongTermMemory" in n for n in logs), logs
    probe = log_dir / "zz-probe.log"  # control: the scan does see a warning line
    probe.write_text("[12-01 00:00:00] x.py (1) - [WARNING] : probe\n", encoding="utf-8")
    try:
        assert [line.split(":")[0] for line in unexpected_log_lines(log_dir)][-1:] == ["zz-probe.log"]
    finally:
        probe.unlink()
    unexpected = unexpected_log_lines(log_dir)
    assert not unexpected, "warnings or errors in a normal run:\n" + "\n".join(unexpected[:60])


def test_zz_lbpkg_installs_and_initializes(stack: Stack, tmp_path: Path) -> None:
    """(7) The ``lbp build`` package installs through /plugins/install/local and initializes.

    Runs last: it first detaches the debug-attached copy. (Measured on 4.11.2: the host does not refuse a
    local install of a plugin that is debug-attached; the installed copy takes over the calls while the
    ``lbp run`` process stays connected but unused and unlisted. Detaching first makes the test say that
    the package alone works.)
    """
    package = stack.build_lbpkg(tmp_path / "dist")
    assert package.suffix == ".lbpkg" and package.stat().st_size > 0

    stack.detach_plugin()
    assert all(not p.get("debug") for p in stack.plugins_by_id().get(stack.plugin.plugin_id, []))

    stack.install_lbpkg(package)
    stack.wait_plugins_initialized([stack.plugin], install_source="local", timeout=120)
    entries = stack.plugins_by_id().get(stack.plugin.plugin_id, [])
    assert len(entries) == 1 and entries[0].get("install_source") == "local", entries
    assert entries[0].get("status") == "initialized", entries

    engines = stack.api("GET", "/knowledge/engines").get("engines") or []
    assert any(e.get("plugin_id") == stack.plugin.plugin_id for e in engines), "installed copy has no engine"
    with stack.connect() as chat:
        reply = chat.command("!memory health")
    assert re.search(r"healthy|\bgreen\b|🟢|健康", reply, re.IGNORECASE), f"installed copy, !memory health:\n{reply}"
    derived = stack.page_api(
        "/derive", {"bot_uuid": WEBCHAT_BOT_UUID, "session_name": "person_websocket_probe", "isolation": "session"}
    )
    assert isinstance(derived, dict) and derived, f"installed copy, /derive returned {derived!r}"
