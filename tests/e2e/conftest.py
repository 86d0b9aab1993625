"""Session fixture: one real LangBot 4.11.2 stack (``e2e/stack.py``) shared by every e2e test.

Run with ``.venv/bin/pytest -m e2e tests/e2e`` (the default ``addopts`` deselect e2e). The stack is
started once, on free ports, with the fake model server (real MiniLM embeddings) unless
``LTM_PROVIDER_BASE_URL``/``LTM_PROVIDER_API_KEY`` are set, and stopped at the end of the session;
teardown fails if any process it started is still alive.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from e2e.backends import BackendSettings
from e2e.stack import HOST_VENV, Stack, _pid_alive

logger = logging.getLogger("tests.e2e")

# Failures known on one storage leg (LTM_E2E_VDB) and not yet fixed, each with its precise cause: the
# test runs and is reported xfail there (XPASS once fixed: then remove the entry), and stays strict on
# every other leg. scripts/test-e2e-legs runs the legs; the lead's report names each entry.
KNOWN_LEG_FAILURES: dict[tuple[str, str], str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        vdb = BackendSettings.from_env().vdb
    except Exception:  # a bad LTM_E2E_* value: the stack fixture says so
        return
    for item in items:
        reason = KNOWN_LEG_FAILURES.get((vdb, item.nodeid))
        if reason:
            item.add_marker(pytest.mark.xfail(reason=f"known on {vdb}: {reason}", strict=False))


_STACKS: list[Stack] = []


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    if not (HOST_VENV / "bin" / "langbot").exists() or not (HOST_VENV / "bin" / "lbp").exists():
        pytest.skip(f"{HOST_VENV} is absent (no langbot/lbp): run ./scripts/run-langbot once to install LangBot 4.11.2")
    s = Stack()  # also repairs a known-bad SQLAlchemy in an existing host venv (see ensure_host_venv)
    _STACKS.append(s)
    s.start()
    try:
        yield s
    finally:
        pids = s.pids()
        s.stop()
        deadline = time.monotonic() + 5
        leftover = [p for p in pids if _pid_alive(p)]
        while leftover and time.monotonic() < deadline:
            time.sleep(0.2)
            leftover = [p for p in leftover if _pid_alive(p)]
        assert not leftover, f"processes left behind by the e2e stack: {leftover}"


@pytest.fixture
def fake_model_only(stack: Stack) -> None:
    """Skip tests that script the model (``CALLTOOL``) or read its request log when a real provider is used."""
    if stack.request_log is None:
        pytest.skip("needs the fake model server: LTM_PROVIDER_* selects a real provider (no CALLTOOL, no request log)")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for s in _STACKS:
        if not s.timings:
            continue
        t = s.timings
        terminalreporter.section("LangBot e2e timings")
        terminalreporter.write_line(
            f"cold start {t.get('cold_start_total', 0):.1f}s (LangBot HTTP {t.get('langbot_http_ready', 0):.1f}s, "
            f"model server {t.get('model_server_ready', 0):.1f}s), shutdown {t.get('shutdown', 0):.1f}s"
        )
        if s.turn_times:
            times = sorted(x for _, x in s.turn_times)
            terminalreporter.write_line(
                f"{len(times)} websocket turns: median {times[len(times) // 2]:.2f}s, max {times[-1]:.2f}s"
            )
        terminalreporter.write_line(f"run dir: {s.run_dir}")
