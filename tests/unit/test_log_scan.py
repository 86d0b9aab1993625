"""The e2e log scan (``e2e/log_scan.py``): which records of a normal run it lets through, with the
SDK's dropped response waiter reproduced on the SDK's own ``Handler``."""

from __future__ import annotations

import asyncio
import gc
import logging
from pathlib import Path

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction
from langbot_plugin.entities.io.errors import ConnectionClosedError
from langbot_plugin.runtime.io import connection
from langbot_plugin.runtime.io.handler import Handler

from e2e.log_scan import records, unexpected_log_lines, unexpected_records

# the plugin log's layout in LangBot 4.11.2 (what `lbp run` writes)
FORMAT = logging.Formatter(
    "[%(asctime)s.%(msecs)03d] %(filename)s (%(lineno)d) - [%(levelname)s] : %(message)s", "%m-%d %H:%M:%S"
)


class _ClosingConnection(connection.Connection):
    """A transport that closes while a request is being sent: the reader sees the close first."""

    def __init__(self) -> None:
        self.sending = asyncio.Event()
        self.closed = asyncio.Event()

    async def send(self, message: str) -> None:
        self.sending.set()
        await self.closed.wait()
        raise ConnectionClosedError("Connection closed")

    async def receive(self) -> str:
        await self.sending.wait()
        asyncio.get_running_loop().call_soon(self.closed.set)  # the send fails after the reader
        raise ConnectionClosedError("Connection closed")

    async def close(self) -> None:
        return None


class _Handler(Handler):
    name = "probe"


def _logged_by_a_close_during_a_send(caplog: pytest.LogCaptureFixture) -> tuple[str, list[logging.LogRecord]]:
    async def run() -> str:
        handler = _Handler(_ClosingConnection())
        reader = asyncio.create_task(handler.run())
        try:
            await handler.call_action(PluginToRuntimeAction.SET_PLUGIN_STORAGE, {"key": "k"})
        except ConnectionClosedError as exc:
            return type(exc).__name__
        finally:
            await reader
        return "answered"

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        got = asyncio.run(run())
        gc.collect()
    return got, [r for r in caplog.records if r.name == "asyncio"]


def test_a_close_during_a_send_logs_only_known_noise(caplog: pytest.LogCaptureFixture) -> None:
    got, logged = _logged_by_a_close_during_a_send(caplog)
    assert got == "ConnectionClosedError"  # the caller itself gets the error
    text = "\n".join(FORMAT.format(r) for r in logged)
    assert unexpected_records(text) == [], text
    if logged:  # langbot-plugin 0.7.16 (the pin) drops the waiter; a later SDK may not
        assert "Future exception was never retrieved" in text and "ConnectionClosedError" in text


def test_the_pinned_sdk_drops_the_waiter(caplog: pytest.LogCaptureFixture) -> None:
    import langbot_plugin

    version = getattr(langbot_plugin, "__version__", "")
    if not version:
        from importlib.metadata import version as dist_version

        version = dist_version("langbot-plugin")
    if version != "0.7.16":
        pytest.skip(f"the reproduction is of 0.7.16; this is {version}")
    _, logged = _logged_by_a_close_during_a_send(caplog)
    assert [r.getMessage().splitlines()[0] for r in logged] == ["Future exception was never retrieved"]


def _record(level: str, message: str, *more: str) -> str:
    return "\n".join([f"[12-05 06:38:00.754] base_events.py (1771) - [{level}] : {message}", *more])


def test_another_exception_in_a_dropped_future_is_reported_with_its_traceback() -> None:
    text = "\n".join(
        [
            _record("INFO", "fine"),
            _record(
                "ERROR",
                "Future exception was never retrieved",
                "future: <Future finished exception=IndexError('list index out of range')>",
                "Traceback (most recent call last):",
                '  File "ltm/service/gist.py", line 10, in score',
                "IndexError: list index out of range",
            ),
        ]
    )
    found = unexpected_records(text, "plugin.log")
    assert (
        found[0]
        == "plugin.log:2: [12-05 06:38:00.754] base_events.py (1771) - [ERROR] : Future exception was never retrieved"
    )
    assert found[-1] == "plugin.log:6: IndexError: list index out of range"
    assert len(found) == 5


def test_known_noise_is_skipped_with_its_continuation_and_nothing_else() -> None:
    known = _record(
        "WARNING",
        "Runtime action shutdown failed with ConnectionClosedError",
        "Traceback (most recent call last):",
        "  x",
    )
    unknown = _record("WARNING", "something new")
    bare_traceback = _record("INFO", "a task ended", "Traceback (most recent call last):", "ValueError: v")
    assert unexpected_records(known) == []
    assert [line.split(": ", 1)[1] for line in unexpected_records(known + "\n" + unknown)] == [unknown]
    assert len(unexpected_records(bare_traceback)) == 3  # no level word, but a traceback: reported


def test_records_group_continuations_and_keep_a_leading_orphan() -> None:
    text = "orphan\n" + _record("INFO", "a", "b") + "\n" + _record("INFO", "c")
    assert [(n, len(lines)) for n, lines in records(text)] == [(1, 1), (2, 2), (4, 1)]


def test_the_stand_in_model_log_is_not_scanned(tmp_path: Path) -> None:
    (tmp_path / "fake-openai.log").write_text(_record("ERROR", "boom"), encoding="utf-8")
    (tmp_path / "langbot.log").write_text(_record("ERROR", "boom"), encoding="utf-8")
    assert [line.split(":")[0] for line in unexpected_log_lines(tmp_path)] == ["langbot.log"]
