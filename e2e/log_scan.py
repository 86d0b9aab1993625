"""What a normal run of the end-to-end stack may log at WARNING or above, and a scan for anything else.

The scan reads whole log records: a record is a line that starts with LangBot's timestamp
(``[12-05 06:38:00.754] …``) plus the lines after it that do not (a traceback, asyncio's
``future: <Future …>`` line). A known record is skipped with its continuation; an unknown one is
reported with it, so a failing run shows the traceback, not only its first line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

# The host's own noise in a normal run, each with its reason; a pattern is matched against a whole
# record (its lines joined by newlines).
KNOWN_HOST_NOISE = {
    # a plugin config PUT restarts the debug-attached plugin: its old connection is already closed
    "plugin restart": re.compile(
        r"Runtime action shutdown failed with ConnectionClosedError|"
        # ...and a write the plugin had in flight then (a last-turn snapshot or usage-ledger write,
        # written after the turn: caches, which the plugin logs as not written, at info)
        r"Runtime action set_plugin_storage failed with ConnectionClosedError|"
        r"Failed to send shutdown notification: Connection closed"
    ),
    # ...and when that write was still being encoded or sent as the connection closed, the SDK's
    # call_action (langbot-plugin 0.7.16) fails its response waiter, then raises the send's own
    # error to the caller and drops the waiter: asyncio logs the waiter's copy when it is collected.
    # The caller did get (and handle) the error; reproduced in tests/unit/test_log_scan.py.
    "plugin restart, the SDK's dropped waiter": re.compile(
        r"Future exception was never retrieved\nfuture: <Future finished exception=ConnectionClosedError\("
    ),
    # LangBot 4.11.2 asks its release server at start; this machine has no network
    "release check": re.compile(r"Failed to fetch release list"),
    # debug-attached plugins have no .lbpkg in LangBot's data folder
    "debug attach": re.compile(r"Keeping legacy OSS plugin installation .* no durable lbpkg is available"),
    # LangBot's optional sandbox tools need Docker/nsjail/E2B, none of which this stack starts
    "sandbox tools": re.compile(r"Native sandbox tools .* are NOT available"),
    # a plugin's invoke_llm during a command (the consolidation model): LangBot 4.11.2's monitoring
    # reads launcher_type from a Query that has none and logs this; the call itself answers
    "plugin llm call": re.compile(r"Failed to record LLM call: 'Query' object has no attribute 'launcher_type'"),
}
LOG_LEVEL = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback \(most recent call last\)")
RECORD_START = re.compile(r"^\[\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\]")
SHOWN_LINES = 12  # of an unknown record: enough for a short traceback


def records(text: str) -> Iterator[tuple[int, list[str]]]:
    """``(first line number, lines)`` of each record of a log's text."""
    start, lines = 0, []
    for n, line in enumerate(text.splitlines(), 1):
        if RECORD_START.match(line) or not lines:
            if lines:
                yield start, lines
            start, lines = n, [line]
        else:
            lines.append(line)
    if lines:
        yield start, lines


def unexpected_records(text: str, name: str = "log") -> list[str]:
    """The records of ``text`` at WARNING or above (or with a traceback) that no known noise explains,
    each as ``name:line: …`` lines."""
    found = []
    for start, lines in records(text):
        if not any(LOG_LEVEL.search(line) for line in lines):
            continue
        whole = "\n".join(lines)
        if any(p.search(whole) for p in KNOWN_HOST_NOISE.values()):
            continue
        found.extend(f"{name}:{start + i}: {line[:300]}" for i, line in enumerate(lines[:SHOWN_LINES]))
    return found


def unexpected_log_lines(log_dir: Path) -> list[str]:
    """:func:`unexpected_records` of every log of a run, but the stand-in model's."""
    found = []
    for log in sorted(log_dir.glob("*.log")):
        if log.name.startswith("fake-openai"):
            continue  # the stand-in model is test scaffolding, not the product
        found.extend(unexpected_records(log.read_text(encoding="utf-8", errors="replace"), log.name))
    return found
