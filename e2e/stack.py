"""Start a real LangBot 4.11.2 with the LongTermMemory plugin attached, for humans and for pytest.

One command (``./scripts/run-langbot``, or ``.venv/bin/python -m e2e.stack``) builds a fresh run directory
under ``.run/``, starts a stand-in OpenAI-compatible model server (``e2e/fake_openai.py``; or uses a real
provider, see below), the plugin runtime (``lbp rt``), LangBot itself, initialises the admin account,
creates a provider with an LLM model (``func_call``) and an embedding model, attaches this repository's
plugin and the test ``LocalRunner`` plugin with ``lbp run`` (debug attachment), creates a memory knowledge
base backed by our KnowledgeEngine and a pipeline that uses the LocalRunner with that knowledge base,
then prints where to click. Ctrl-C / SIGTERM stops every process it started (each runs in its own process
group; descendants are swept too).

Real provider instead of the fake one: set ``LTM_PROVIDER_BASE_URL`` and ``LTM_PROVIDER_API_KEY`` (and
optionally ``LTM_PROVIDER_MODEL``, ``LTM_PROVIDER_EMBEDDING_MODEL``). The request log
(:meth:`Stack.model_requests`) only exists with the fake provider.

From Python::

    with Stack() as stack:
        with stack.connect() as chat:           # one websocket = one LangBot session
            turn = chat.send("hello")           # Turn(text=..., requests=[bodies the model received])
        stack.command("!memory health")
        stack.page_api("/health", method="GET")

Host facts this relies on are in ``shared/reference/langbot-host-4.11.md`` §8; the ones found while
writing it are noted next to the code that depends on them.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import yaml
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from e2e import backends as lb_backends
from e2e.backends import BackendSettings

logger = logging.getLogger("e2e.stack")

REPO_ROOT = Path(__file__).resolve().parents[1]
HOST_VENV = REPO_ROOT / ".venv-host"
DEV_VENV = REPO_ROOT / ".venv"
RUNNER_PLUGIN_DIR = REPO_ROOT / "e2e" / "runner_plugin"
RUN_ROOT = REPO_ROOT / ".run"
LANGBOT_VERSION = "4.11.2"
HOST_SQLALCHEMY_PIN = "sqlalchemy[asyncio]>=2.0.40,<2.1"

ADMIN_USER = "admin@example.com"
ADMIN_PASSWORD = "Passw0rd!Passw0rd"
WEBCHAT_BOT_UUID = "websocket-proxy-bot"
RUNNER_COMPONENT = "default"
DEFAULT_SYSTEM_PROMPT = "You are the LongTermMemory e2e assistant. Use the memory tools when the user asks."
FAKE_API_KEY = "sk-fake-e2e"
LANGBOT_CONNECTED_LINE = "Connected to instance-scoped plugin runtime"


INSTALL_ENV = "LTM_E2E_INSTALL"  # "package": the plugin under test is installed from its .lbpkg


def install_mode(env: dict[str, str] | None = None) -> str:
    """``package`` when the e2e stack installs the plugin from its ``.lbpkg``, else ``""`` (debug attach)."""
    return str((os.environ if env is None else env).get(INSTALL_ENV, "")).strip().lower()


class StackError(RuntimeError):
    """The stack could not be started, or a host call failed."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ProviderSettings:
    """Where LangBot's models point: the fake server (default) or a real OpenAI-compatible provider."""

    base_url: str
    api_key: str
    model: str = "fake-llm"
    embedding_model: str = "fake-embedding"
    fake: bool = True

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> ProviderSettings | None:
        env = dict(os.environ if env is None else env)
        base_url, api_key = env.get("LTM_PROVIDER_BASE_URL", ""), env.get("LTM_PROVIDER_API_KEY", "")
        if not base_url or not api_key:
            return None
        return cls(
            base_url=base_url.rstrip("/"),
            api_key=api_key,
            model=env.get("LTM_PROVIDER_MODEL") or "gpt-4o-mini",
            embedding_model=env.get("LTM_PROVIDER_EMBEDDING_MODEL") or "text-embedding-3-small",
            fake=False,
        )


@dataclasses.dataclass(frozen=True)
class PluginRef:
    author: str
    name: str
    path: Path

    @property
    def plugin_id(self) -> str:
        return f"{self.author}/{self.name}"

    @classmethod
    def from_dir(cls, path: Path) -> PluginRef:
        manifest = path / "manifest.yaml"
        if not manifest.is_file():
            raise StackError(f"no manifest.yaml in {path}")
        meta = (yaml.safe_load(manifest.read_text(encoding="utf-8")) or {}).get("metadata") or {}
        if not meta.get("author") or not meta.get("name"):
            raise StackError(f"{manifest}: metadata.author and metadata.name are required")
        return cls(str(meta["author"]), str(meta["name"]), path)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (bound together, then released)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for(
    what: str, check: Callable[[], Any], timeout: float, interval: float = 0.25, alive: Callable[[], None] | None = None
) -> Any:
    """Poll ``check`` until it returns something truthy; ``alive`` raises if a process died meanwhile."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        if alive is not None:
            alive()
        try:
            result = check()
        except Exception as exc:  # keep polling; report the last failure on timeout
            last_exc = exc
            result = None
        if result:
            return result
        time.sleep(interval)
    raise StackError(
        f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else "")
    )


def _proc_children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid ..." -- comm may contain spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` (Linux /proc; empty elsewhere)."""
    if not os.path.isdir("/proc"):
        return []
    tree, out, todo = _proc_children_map(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """preexec_fn: the kernel SIGTERMs the child if the process that started it dies (a crashed test run)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ManagedProcess:
    """A child in its own process group, logging to a file; stop() leaves nothing behind."""

    def __init__(self, name: str, argv: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> None:
        self.name, self.argv, self.cwd, self.env, self.log_path = name, argv, cwd, env, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._seen: set[int] = set()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            logger.debug("starting %s: %s (cwd %s)", self.name, " ".join(self.argv), self.cwd)
            self.proc = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if _PRCTL is not None else None,
            )
        finally:
            log.close()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise StackError(f"{self.name} exited with code {self.proc.returncode}; log tail:\n{self.log_tail()}")

    def remember_descendants(self) -> None:
        if self.alive() and self.pid:
            self._seen.update(descendants(self.pid))

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        t0 = time.monotonic()
        self.remember_descendants()
        pgid = self.proc.pid
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                logger.warning("%s did not stop in %.0fs; killing", self.name, timeout)
        # the group leader may be gone while members (or setsid'd descendants) linger
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        survivors = [pid for pid in self._seen if _pid_alive(pid)]
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if survivors:
            logger.info("%s: killed %d leftover descendant(s): %s", self.name, len(survivors), survivors)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        logger.info("%s stopped in %.1fs (code %s)", self.name, time.monotonic() - t0, self.proc.returncode)


# --------------------------------------------------------------------------------------------
# WebChat
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Turn:
    """One message sent over the WebChat websocket and what came back."""

    text: str
    replies: list[str]
    requests: list[dict[str, Any]]
    elapsed: float

    @property
    def reply(self) -> str:
        return "\n".join(self.replies)

    @property
    def prompt(self) -> list[dict[str, Any]]:
        """Messages of the first model request of this turn (what the model was shown)."""
        return list(self.requests[0].get("messages") or []) if self.requests else []

    def __str__(self) -> str:
        return self.reply


class ChatSession:
    """One dashboard WebChat websocket. For person chats each connection is its own LangBot session."""

    def __init__(self, stack: Stack, pipeline_uuid: str, session_type: str = "person") -> None:
        if session_type not in ("person", "group"):
            raise ValueError("session_type must be person or group")
        self.stack, self.pipeline_uuid, self.session_type = stack, pipeline_uuid, session_type
        url = f"ws://127.0.0.1:{stack.api_port}/api/v1/pipelines/{pipeline_uuid}/ws/connect?session_type={session_type}"
        # Host fact: without an Origin header the handshake is refused with HTTP 400 (quart_cors).
        # entered as the context manager it is (websockets 17.1 deprecates a bare connect()); closed by close()
        self.ws: ClientConnection = ws_connect(url, origin=stack.base_url, open_timeout=15, max_size=None).__enter__()
        self.ws.send(json.dumps({"type": "authenticate", "token": stack.token, "workspace_uuid": stack.workspace_uuid}))
        hello = self._recv(15)
        if hello.get("type") != "connected":
            raise StackError(f"websocket authentication failed: {hello}")
        self.connection_id: str = hello["connection_id"]

    # identity as the plugin sees it (reference §8: launcher_id = sender_id = websocket_<connection id>)
    @property
    def sender_id(self) -> str:
        return f"websocket_{self.connection_id}"

    @property
    def launcher_id(self) -> str:
        return self.sender_id if self.session_type == "person" else "websocketgroup"

    @property
    def session_name(self) -> str:
        return f"{self.session_type}_{self.launcher_id}"

    def _recv(self, timeout: float) -> dict[str, Any]:
        raw = self.ws.recv(timeout=timeout)
        return json.loads(raw)

    def send(self, text: str, timeout: float = 90.0, quiet: float = 0.0, expect_reply: bool = True) -> Turn:
        """Send ``text``; return the reply frames after our own echoed message.

        The dashboard broadcasts every frame to all connections of the pipeline and session type and replies
        carry no connection id, so we wait for *our* ``user_message`` echo first, then take the following
        ``response`` frames. ``quiet`` > 0 keeps collecting until no frame arrived for that long (commands may
        reply several times).
        """
        mark = self.stack._request_mark()
        started = time.monotonic()
        self.ws.send(json.dumps({"type": "message", "stream": False, "message": [{"type": "Plain", "text": text}]}))
        deadline = started + timeout
        echoed = False
        replies: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if replies:
                remaining = min(remaining, quiet)
            if remaining <= 0:
                if replies:
                    break
                if not expect_reply and echoed:
                    break
                raise StackError(
                    f"no reply to {text!r} within {timeout:.0f}s "
                    f"(echoed={echoed}); LangBot log tail:\n{self.stack.log_tail('langbot')}"
                )
            try:
                frame = self._recv(remaining)
            except TimeoutError:
                if replies or (echoed and not expect_reply):
                    break
                continue
            kind = frame.get("type")
            data = frame.get("data") or {}
            if kind == "error":
                raise StackError(f"websocket error frame: {frame.get('message')}")
            if kind == "user_message" and data.get("connection_id") == self.connection_id:
                echoed = True
            elif kind == "response" and echoed:
                if data.get("is_final", True):
                    replies.append(str(data.get("content") or ""))
                    if quiet <= 0:
                        break
        elapsed = time.monotonic() - started
        self.stack.turn_times.append((text[:60], elapsed))
        return Turn(text=text, replies=replies, requests=self.stack._requests_since(mark, text), elapsed=elapsed)

    def command(self, text: str, timeout: float = 60.0, quiet: float = 0.8) -> str:
        """Send a command (e.g. ``!memory list``) and return all reply lines joined with newlines."""
        return self.send(text, timeout=timeout, quiet=quiet).reply

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()

    def __enter__(self) -> ChatSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# The stack
# --------------------------------------------------------------------------------------------


class Stack:
    """A running LangBot + plugin runtime + model server + attached plugins, on free local ports."""

    def __init__(
        self,
        plugin_dir: Path | str = REPO_ROOT,
        runner_plugin_dir: Path | str = RUNNER_PLUGIN_DIR,
        run_root: Path | str = RUN_ROOT,
        host_venv: Path | str = HOST_VENV,
        plugin_python_bin: Path | str | None = None,
        provider: ProviderSettings | None = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        isolation: str = "session",
        install_host: bool = True,
        embedder: str = "minilm",
        startup_timeout: float = 180.0,
        hot_reload: bool = False,
        backends: BackendSettings | None = None,
    ) -> None:
        self.plugin = PluginRef.from_dir(Path(plugin_dir))
        self.runner_plugin = PluginRef.from_dir(Path(runner_plugin_dir))
        self.run_root = Path(run_root)
        self.host_venv = Path(host_venv)
        # `lbp run` for the plugins under test uses the dev venv (same SDK pin as the host, plus the
        # plugin's own dependencies); the host venv is the fallback.
        default_bin = DEV_VENV / "bin" if (DEV_VENV / "bin" / "lbp").exists() else self.host_venv / "bin"
        self.plugin_bin = Path(plugin_python_bin) if plugin_python_bin else default_bin
        self.provider_override = provider if provider is not None else ProviderSettings.from_env()
        self.system_prompt = system_prompt
        self.isolation = isolation
        self.install_host = install_host
        self.embedder = embedder
        self.startup_timeout = startup_timeout
        self.hot_reload = hot_reload
        # LangBot's database.use / vdb.use (LTM_E2E_DB, LTM_E2E_VDB); see e2e/backends.py
        self.backends = backends if backends is not None else BackendSettings.from_env()
        self.pg_port: int | None = None
        self.pg_root: Path | None = None
        self.pg_version_info = ""

        self.run_dir: Path | None = None
        self.processes: dict[str, ManagedProcess] = {}
        self.timings: dict[str, float] = {}
        self.turn_times: list[tuple[str, float]] = []
        self.provider: ProviderSettings | None = None
        self.fake_port: int | None = None
        self.fake_embedder: str | None = None
        self.api_port = 0
        self.rt_control_port = 0
        self.rt_debug_port = 0
        self.token = ""
        self.workspace_uuid = ""
        self.debug_key = ""
        self.provider_uuid = ""
        self.llm_uuid = ""
        self.embedding_uuid = ""
        self.kb_uuid = ""
        self.pipeline_uuid = ""
        self.debug_pipeline_uuid = ""
        self._http: httpx.Client | None = None
        self._default_chats: dict[tuple[str, str], ChatSession] = {}
        self._open_chats: list[ChatSession] = []
        self._lock = threading.Lock()
        self._started = False

    # -- properties ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/v1"

    @property
    def debug_ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.rt_debug_port}/plugin/debug/ws"

    @property
    def runner_id(self) -> str:
        return f"plugin:{self.runner_plugin.plugin_id}/{RUNNER_COMPONENT}"

    @property
    def console_url(self) -> str:
        page_id = f"{self.plugin.plugin_id}/console".replace("/", "%2F")
        return f"{self.base_url}/home/plugin-pages?id={page_id}"

    @property
    def request_log(self) -> Path | None:
        return self.run_dir / "model-requests.jsonl" if self.run_dir and self.provider and self.provider.fake else None

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> Stack:
        if self._started:
            return self
        self._started = True
        t0 = time.monotonic()
        try:
            self._prepare()
            self._start_model_server()
            self._start_runtime()
            self._start_backends()
            self._start_langbot()
            self._bootstrap_account()
            self._create_models()
            self.start_plugin_under_test()
            self.attach_plugin(self.runner_plugin)
            self.wait_plugins_initialized([self.plugin, self.runner_plugin])
            self._create_memory_kb()
            self._create_pipelines()
        except BaseException:
            logger.error("stack start failed; stopping what was started (logs in %s)", self.run_dir)
            self.stop()
            raise
        self.timings["cold_start_total"] = time.monotonic() - t0
        self._write_state()
        logger.info("stack ready in %.1fs: %s", self.timings["cold_start_total"], self.base_url)
        return self

    def stop(self) -> None:
        """Stop every process this stack started (plugins, LangBot, runtime, model server). Idempotent."""
        for chat in self._open_chats:
            chat.close()
        self._open_chats.clear()
        self._default_chats.clear()
        if self._http is not None:
            self._http.close()
            self._http = None
        t0 = time.monotonic()
        # PostgreSQL last: LangBot closes its connections on the way down
        plugins = [n for n in self.processes if n.startswith("plugin:")]
        order = [*plugins, "langbot", "runtime", "fake-openai", "postgres"]
        for name in order:
            proc = self.processes.get(name)
            if proc is not None:
                proc.stop(timeout=20.0 if name == "langbot" else 10.0)  # LangBot's graceful exit takes ~9 s
        self.processes.clear()
        self._stop_backends()
        if self._started:
            self.timings["shutdown"] = time.monotonic() - t0
            logger.info("stack stopped in %.1fs", self.timings["shutdown"])
            self._write_state()
        self._started = False

    # -- start steps ----------------------------------------------------------------------------

    def _prepare(self) -> None:
        if self.install_host:
            ensure_host_venv(self.host_venv)
            lb_backends.ensure_backend_packages(self.host_venv, self.backends, keep=(HOST_SQLALCHEMY_PIN,))
        for exe in ("langbot", "lbp"):
            if not (self.host_venv / "bin" / exe).exists():
                raise StackError(f"{self.host_venv}/bin/{exe} missing: run ./scripts/run-langbot once (installs it)")
        if not (self.plugin_bin / "python").exists():
            raise StackError(f"{self.plugin_bin}/python missing")
        prune_run_dirs(self.run_root)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.run_dir = self.run_root / f"{stamp}-{secrets.token_hex(3)}"
        for sub in ("langbot", "runtime", "logs"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        self.api_port, self.rt_control_port, self.rt_debug_port = free_ports(3)
        self._http = httpx.Client(base_url=self.api_url, timeout=30.0, trust_env=False)
        logger.info(
            "run dir %s; ports: api %d, runtime control %d, runtime debug %d",
            self.run_dir,
            self.api_port,
            self.rt_control_port,
            self.rt_debug_port,
        )

    def _child_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        # keep any proxy (the runtime pip-installs a package's requirements) but never for local traffic
        no_proxy = ",".join(x for x in (env.get("NO_PROXY") or env.get("no_proxy"), "127.0.0.1,localhost") if x)
        env.update({"NO_PROXY": no_proxy, "no_proxy": no_proxy, "PYTHONUNBUFFERED": "1"})
        for key in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
            env.pop(key, None)
        env.update(extra or {})
        return env

    def _spawn(self, name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> ManagedProcess:
        assert self.run_dir is not None
        safe = name.replace(":", "_").replace("/", "_")
        proc = ManagedProcess(name, argv, cwd, env, self.run_dir / "logs" / f"{safe}.log").start()
        self.processes[name] = proc
        pids = {n: p.pid for n, p in self.processes.items()}
        (self.run_dir / "pids.json").write_text(json.dumps(pids), encoding="utf-8")
        return proc

    def _start_model_server(self) -> None:
        assert self.run_dir is not None
        if self.provider_override is not None:
            self.provider = self.provider_override
            logger.info(
                "using real provider %s (model %s, embedding %s)",
                self.provider.base_url,
                self.provider.model,
                self.provider.embedding_model,
            )
            return
        t0 = time.monotonic()
        ready = self.run_dir / "fake-openai.json"
        log = self.run_dir / "model-requests.jsonl"
        log.touch()
        proc = self._spawn(
            "fake-openai",
            [
                sys.executable,
                "-m",
                "e2e.fake_openai",
                "--port",
                "0",
                "--log",
                str(log),
                "--ready-file",
                str(ready),
                "--embedder",
                self.embedder,
            ],
            REPO_ROOT,
            self._child_env({"PYTHONPATH": str(REPO_ROOT)}),
        )
        info = wait_for(
            "the fake model server",
            lambda: ready.exists() and json.loads(ready.read_text()),
            180,
            alive=proc.check_alive,
        )
        self.fake_port, self.fake_embedder = int(info["port"]), str(info["embedder"])
        self.provider = ProviderSettings(base_url=f"http://127.0.0.1:{self.fake_port}/v1", api_key=FAKE_API_KEY)
        self.timings["model_server_ready"] = time.monotonic() - t0
        logger.info(
            "fake model server on %s (embedder %s) in %.1fs",
            self.provider.base_url,
            self.fake_embedder,
            self.timings["model_server_ready"],
        )

    def _start_runtime(self) -> None:
        assert self.run_dir is not None
        t0 = time.monotonic()
        lbp = str(self.host_venv / "bin" / "lbp")
        proc = self._spawn(
            "runtime",
            [lbp, "rt", "--ws-control-port", str(self.rt_control_port), "--ws-debug-port", str(self.rt_debug_port)],
            self.run_dir / "runtime",
            self._child_env(),
        )
        # GET /healthz instead of a bare TCP probe: the runtime logs a handshake error for the latter.
        wait_for(
            "the plugin runtime",
            lambda: self._healthz(self.rt_control_port) and self._healthz(self.rt_debug_port),
            60,
            alive=proc.check_alive,
        )
        self.timings["runtime_ready"] = time.monotonic() - t0

    @staticmethod
    def _healthz(port: int) -> bool:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2.0, trust_env=False).status_code < 500

    # -- LangBot's storage backends (database.use, vdb.use; e2e/backends.py) ---------------------

    @property
    def langbot_data_dir(self) -> Path:
        assert self.run_dir is not None
        return self.run_dir / "langbot" / "data"

    def _start_backends(self) -> None:
        """Start what LangBot's configured backends need before LangBot: a PostgreSQL server for
        ``database.use: postgresql`` (embedded vector stores need nothing running)."""
        if self.backends.db != "postgresql":
            return
        assert self.run_dir is not None
        t0 = time.monotonic()
        bin_dir = lb_backends.postgres_bin_dir(self.host_venv, self.backends.pg_version)
        if bin_dir is None:
            raise StackError(
                f"no PostgreSQL {self.backends.pg_version} in {self.host_venv} ({lb_backends.PG_SERVER_REQUIREMENT}): "
                "run `.venv/bin/python -m e2e.stack --install-host-only` with LTM_E2E_DB=postgresql"
            )
        prefix, owner = lb_backends.run_as_prefix()
        # a temp dir outside the repo: the server runs as nobody when we are root, and every parent must be
        # traversable by it; removed in _stop_backends
        self.pg_root = Path(tempfile.mkdtemp(prefix="ltm-e2e-pg-"))
        try:
            server_bin = lb_backends.runnable_bin_dir(bin_dir, self.pg_root, prefix, owner)
            data_dir = lb_backends.init_cluster(server_bin, self.pg_root, prefix, owner)
        except lb_backends.BackendError as exc:
            raise StackError(str(exc)) from exc
        (self.pg_port,) = free_ports(1)
        proc = self._spawn(
            "postgres",
            [*prefix, *lb_backends.postgres_argv(server_bin, data_dir, self.pg_port)],
            self.pg_root,
            self._child_env({"LC_ALL": "C"}),
        )
        try:
            lb_backends.wait_postgres(bin_dir, self.pg_port, 60, alive=proc.check_alive)
            self.pg_version_info = lb_backends.prepare_database(bin_dir, self.pg_port)
        except lb_backends.BackendError as exc:
            raise StackError(f"{exc}; log tail:\n{proc.log_tail()}") from exc
        self.timings["postgres_ready"] = time.monotonic() - t0
        logger.info(
            "%s on 127.0.0.1:%d (data %s) in %.1fs",
            self.pg_version_info,
            self.pg_port,
            data_dir,
            self.timings["postgres_ready"],
        )

    def _stop_backends(self) -> None:
        """After every process is stopped (PostgreSQL last, in stop()): remove the server's temp data dir."""
        lb_backends.remove_tree(self.pg_root)
        self.pg_root = None

    def restart_langbot(self, timeout: float = 120.0) -> float:
        """Stop LangBot and start it again on the same data (database, vector store, ``data/``), as an operator's
        upgrade or reboot does; the plugin runtime and the plugins keep running. Open chats are closed (their
        websockets die with LangBot). Returns the seconds until the plugins are initialized again."""
        t0 = time.monotonic()
        for chat in self._open_chats:
            chat.close()
        self._open_chats.clear()
        self._default_chats.clear()
        proc = self.processes.pop("langbot", None)
        if proc is not None:
            proc.stop(timeout=20.0)
        first_start = {k: v for k, v in self.timings.items() if k.startswith("langbot_")}
        self._start_langbot()
        self.timings.update(first_start)  # keep the cold-start figures; the restart has its own
        self._bootstrap_account()
        self.wait_plugins_initialized([self.plugin, self.runner_plugin], timeout=timeout)
        self.timings["langbot_restart"] = time.monotonic() - t0
        logger.info("LangBot restarted on the same data in %.1fs", self.timings["langbot_restart"])
        self._write_state()
        return self.timings["langbot_restart"]

    def db_query(self, sql: str) -> list[list[str]]:
        """Rows of ``sql`` run on LangBot's own database (SQLite file or the stack's PostgreSQL), as strings."""
        assert self.run_dir is not None
        if self.backends.db == "postgresql":
            bin_dir = lb_backends.postgres_bin_dir(self.host_venv, self.backends.pg_version)
            if bin_dir is None or self.pg_port is None:
                raise StackError("no PostgreSQL running for this stack")
            out = lb_backends.psql(bin_dir, self.pg_port, sql, database=lb_backends.PG_DATABASE)
            return [line.split("|") for line in out.splitlines() if line]
        with contextlib.closing(sqlite3.connect(self.langbot_data_dir / "langbot.db")) as conn:
            return [[str(v) for v in row] for row in conn.execute(sql).fetchall()]

    def _backend_env(self) -> dict[str, str]:
        return lb_backends.langbot_env(self.backends, self.langbot_data_dir, self.pg_port)

    def langbot_log_text(self) -> str:
        """LangBot's console log plus its ``data/logs`` files. Host fact: with ``vdb.use: milvus`` pymilvus's
        logging setup silences LangBot's console log; the files under ``data/logs/`` keep logging."""
        parts = []
        proc = self.processes.get("langbot")
        paths = [proc.log_path] if proc else []
        if self.run_dir is not None:
            paths += sorted(self.langbot_data_dir.glob("logs/*.log"))
        for path in paths:
            with contextlib.suppress(OSError):
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(parts)

    def _start_langbot(self) -> None:
        assert self.run_dir is not None
        t0 = time.monotonic()
        # counted, not searched: after restart_langbot() the log files already hold the first start's line
        connected_before = self.langbot_log_text().count(LANGBOT_CONNECTED_LINE)
        env = self._child_env(
            {
                "API__HOST": "127.0.0.1",
                "API__PORT": str(self.api_port),
                "API__WEBHOOK_PREFIX": self.base_url,
                "PLUGIN__RUNTIME_WS_URL": f"ws://127.0.0.1:{self.rt_control_port}/control/ws",
                "PLUGIN__DISPLAY_PLUGIN_DEBUG_URL": self.debug_ws_url,
                "PLUGIN__ENABLE_MARKETPLACE": "false",
                "BOX__ENABLED": "false",
                "SPACE__DISABLE_TELEMETRY": "true",
                "SPACE__DISABLE_MODELS_SERVICE": "true",
            }
        )
        env.update(self._backend_env())
        # --standalone-runtime: always talk to our `lbp rt` over WebSocket. Without it LangBot spawns its own
        # runtime over stdio unless it detects Docker (/.dockerenv), so behaviour would differ per machine.
        proc = self._spawn(
            "langbot", [str(self.host_venv / "bin" / "langbot"), "--standalone-runtime"], self.run_dir / "langbot", env
        )

        def http_ready() -> bool:
            assert self._http is not None
            return self._http.get("/user/init").status_code == 200

        wait_for("LangBot HTTP", http_ready, self.startup_timeout, interval=0.3, alive=proc.check_alive)
        self.timings["langbot_http_ready"] = time.monotonic() - t0
        wait_for(
            "LangBot to connect to the plugin runtime",
            lambda: self.langbot_log_text().count(LANGBOT_CONNECTED_LINE) > connected_before,
            60,
            alive=proc.check_alive,
        )
        self.timings["langbot_runtime_connected"] = time.monotonic() - t0
        logger.info(
            "LangBot up in %.1fs (runtime connected at %.1fs)",
            self.timings["langbot_http_ready"],
            self.timings["langbot_runtime_connected"],
        )

    def _bootstrap_account(self) -> None:
        assert self._http is not None
        initialized = self.api("GET", "/user/init", auth=False).get("initialized")
        if not initialized:
            self.api("POST", "/user/init", {"user": ADMIN_USER, "password": ADMIN_PASSWORD}, auth=False)
        self.token = self.api("POST", "/user/auth", {"user": ADMIN_USER, "password": ADMIN_PASSWORD}, auth=False)[
            "token"
        ]
        self.workspace_uuid = self.api("GET", "/workspaces", workspace=False)["workspaces"][0]["uuid"]
        # the web UI would open its first-run "Quick Start" wizard; a human using the banner wants the app
        with contextlib.suppress(StackError):
            self.api("POST", "/system/wizard/completed", {"status": "skipped"})
        self.refresh_debug_key()

    def refresh_debug_key(self) -> str:
        """The plugin debug key rotates (``expires_at``); fetch it before every attachment."""
        info = self.api("GET", "/plugins/debug-info")
        self.debug_key = str(info["plugin_debug_key"])
        return self.debug_key

    def _create_models(self) -> None:
        assert self.provider is not None
        self.provider_uuid = self.api(
            "POST",
            "/provider/providers",
            {
                "name": "e2e-fake" if self.provider.fake else "e2e-provider",
                "requester": "openai-chat-completions",
                "base_url": self.provider.base_url,
                "api_keys": [self.provider.api_key],
            },
        )["uuid"]
        self.llm_uuid = self.api(
            "POST",
            "/provider/models/llm",
            {
                "name": self.provider.model,
                "provider_uuid": self.provider_uuid,
                "abilities": ["func_call"],
                "extra_args": {},
            },
        )["uuid"]
        self.embedding_uuid = self.api(
            "POST",
            "/provider/models/embedding",
            {"name": self.provider.embedding_model, "provider_uuid": self.provider_uuid, "extra_args": {}},
        )["uuid"]

    def attach_plugin(self, plugin: PluginRef) -> ManagedProcess:
        """Debug-attach ``plugin`` with ``lbp run`` (cwd = the plugin directory; hot reload off, see e2e/lbp_run.py)."""
        t0 = time.monotonic()
        key = self.refresh_debug_key()
        # PYTHONPATH lets `-m e2e.lbp_run` import; `-m` puts the cwd (the plugin dir) first on sys.path, so the
        # plugin's own `components` package still wins over this repository's.
        env = self._child_env(
            {"DEBUG_RUNTIME_WS_URL": self.debug_ws_url, "PLUGIN_DEBUG_KEY": key, "PYTHONPATH": str(REPO_ROOT)}
        )
        argv = [str(self.plugin_bin / "python"), "-m", "e2e.lbp_run", *(["--hot-reload"] if self.hot_reload else [])]
        proc = self._spawn(f"plugin:{plugin.plugin_id}", argv, plugin.path, env)
        self.timings[f"attach_spawned:{plugin.name}"] = time.monotonic() - t0
        return proc

    # -- installed mode (LTM_E2E_INSTALL=package) ------------------------------------------------

    @property
    def installed(self) -> bool:
        """Whether the plugin under test runs from its ``.lbpkg`` (the runtime's own worker process)."""
        return install_mode() == "package"

    def start_plugin_under_test(self) -> None:
        """Debug-attach the plugin (``lbp run``), or with ``LTM_E2E_INSTALL=package`` build its ``.lbpkg``
        and install it through LangBot's local-install route, the way users run it. Measured on 4.11.2:
        an installed plugin's actions carry an ``InstallationBinding`` and run inside the SDK's invocation
        scope; a debug-attached one's carry none (docs/host-facts.md)."""
        if not self.installed:
            self.attach_plugin(self.plugin)
            return
        assert self.run_dir is not None
        t0 = time.monotonic()
        self.install_lbpkg(self.build_lbpkg(self.run_dir / "dist"))
        self.timings["plugin_installed"] = time.monotonic() - t0

    def plugin_worker_pids(self, plugin: PluginRef | None = None) -> list[int]:
        """Pids of the runtime's worker processes that run ``plugin`` from its installed package."""
        plugin = plugin or self.plugin
        runtime = self.processes.get("runtime")
        if runtime is None or runtime.pid is None:
            return []
        out = []
        for pid in descendants(runtime.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                env = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "python" in cmd and (plugin.plugin_id in cmd or plugin.plugin_id in env or plugin.name in env):
                out.append(pid)
        return out

    def installed_worker_starts(self, plugin: PluginRef | None = None) -> int:
        """How many worker processes the runtime has started for ``plugin`` (each logs its label)."""
        plugin = plugin or self.plugin
        return self.installed_log().count(f"Plugin worker process label: {plugin.plugin_id}")

    def plugin_storage_keys(self, prefix: str = "") -> list[str]:
        """The plugin-storage keys LangBot holds for the plugin under test (read from its database, SQLite or
        PostgreSQL)."""
        import sqlite3

        assert self.run_dir is not None
        if self.backends.db == "postgresql":

            def literal(text: str) -> str:
                return "'" + text.replace("'", "''") + "'"

            rows = self.db_query(
                "SELECT key FROM binary_storages WHERE owner_type = 'plugin' "
                f"AND owner LIKE {literal('%' + self.plugin.name + '%')} "
                f"AND key LIKE {literal(prefix.replace('%', '') + '%')}"
            )
            return sorted(r[0] for r in rows if r)
        db = self.run_dir / "langbot" / "data" / "langbot.db"
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            rows = con.execute(
                "SELECT key FROM binary_storages WHERE owner_type = 'plugin' AND owner LIKE ? AND key LIKE ?",
                (f"%{self.plugin.name}%", prefix.replace("%", "") + "%"),
            ).fetchall()
        finally:
            con.close()
        return sorted(str(r[0]) for r in rows)

    def put_plugin_storage(self, key: str, value: bytes) -> None:
        """Write one plugin-storage value of the plugin under test straight into LangBot's database, under
        the key the host itself would use (``StorageMgr.canonical_binary_storage_key`` of 4.11.2, checked
        against a row the host wrote): a state the host's answers left behind, e.g. a journal entry whose
        close the host refused."""
        import hashlib
        import sqlite3

        assert self.run_dir is not None
        con = sqlite3.connect(self.run_dir / "langbot" / "data" / "langbot.db", timeout=30)
        try:
            ws, instance = con.execute("SELECT uuid, instance_uuid FROM workspaces").fetchone()
            owner = self.plugin.plugin_id

            def unique(k: str) -> str:
                canonical = json.dumps([instance, ws, "plugin", owner, k], ensure_ascii=False, separators=(",", ":"))
                prefix = hashlib.sha256(instance.encode()).hexdigest()[:24]
                return f"v1:{prefix}:{ws}:plugin:{hashlib.sha256(canonical.encode()).hexdigest()}"

            sample = con.execute(
                "SELECT key, unique_key FROM binary_storages WHERE owner_type = 'plugin' AND owner = ? LIMIT 1",
                (owner,),
            ).fetchone()
            if sample is None or unique(sample[0]) != sample[1]:
                raise StackError(f"LangBot's plugin-storage key scheme is not the one this helper knows: {sample}")
            with con:
                con.execute(
                    "INSERT INTO binary_storages (workspace_uuid, unique_key, key, owner_type, owner, value) "
                    "VALUES (?, ?, ?, 'plugin', ?, ?)",
                    (ws, unique(key), key, owner, value),
                )
        finally:
            con.close()

    def installed_log(self) -> str:
        """What the installed worker logged: the runtime relays its output into the runtime's log."""
        proc = self.processes.get("runtime")
        return proc.log_path.read_text(encoding="utf-8", errors="replace") if proc else ""

    def detach_plugin(self, plugin: PluginRef | None = None, timeout: float = 30.0) -> None:
        """Stop the ``lbp run`` of ``plugin`` (default: the plugin under test) and wait until the host drops it."""
        plugin = plugin or self.plugin
        proc = self.processes.pop(f"plugin:{plugin.plugin_id}", None)
        if proc is not None:
            proc.stop()

        def gone() -> bool:
            return all(not p.get("debug") for p in self.plugins_by_id().get(plugin.plugin_id, []))

        wait_for(f"{plugin.plugin_id} to be detached", gone, timeout, interval=0.5)

    def plugins(self) -> list[dict[str, Any]]:
        return list(self.api("GET", "/plugins").get("plugins") or [])

    def plugins_by_id(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for p in self.plugins():
            meta = ((p.get("manifest") or {}).get("manifest") or {}).get("metadata") or {}
            out.setdefault(f"{meta.get('author')}/{meta.get('name')}", []).append(p)
        return out

    def plugin_config(self, plugin: PluginRef | None = None) -> dict[str, Any]:
        plugin = plugin or self.plugin
        return dict(self.api("GET", f"/plugins/{plugin.author}/{plugin.name}/config").get("config") or {})

    def set_plugin_config(self, updates: dict[str, Any], plugin: PluginRef | None = None) -> dict[str, Any]:
        """Merge ``updates`` into the plugin's stored config (applies live to a debug-attached plugin)."""
        plugin = plugin or self.plugin
        config = self.plugin_config(plugin)
        config.update(updates)
        inits = self._plugin_inits(plugin)
        self.api("PUT", f"/plugins/{plugin.author}/{plugin.name}/config", config)
        if plugin is self.plugin:
            self._wait_plugin_back(plugin, inits)
        return config

    def _plugin_inits(self, plugin: PluginRef) -> int | None:
        """How often the debug-attached ``plugin`` has logged its end of initialization (None: no log)."""
        proc = self.processes.get(f"plugin:{plugin.plugin_id}")
        if proc is None and plugin is self.plugin and self.installed:
            proc = self.processes.get("runtime")  # the installed worker logs through the runtime
        if proc is None:
            return None
        try:
            return proc.log_path.read_text(encoding="utf-8", errors="replace").count(
                f"Plugin {plugin.plugin_id} initialized"
            )
        except OSError:
            return None

    def _wait_plugin_back(self, plugin: PluginRef, inits: int | None = None, timeout: float = 60.0) -> None:
        """Measured on 4.11.2: a config PUT makes the runtime shut the debug-attached plugin down and
        re-initialize it about a second later (not "live without a restart"). A page request that arrives
        while it initializes fails inside the plugin (its host connection is closed: an ERROR in the
        plugin log), so wait for the plugin's own "initialized" line first (``inits`` counted before the
        PUT), then until it has answered its page API twice in a row."""
        if inits is None:
            time.sleep(1.5)
        else:
            wait_for(
                f"{plugin.plugin_id} to initialize again after a config change",
                lambda: (self._plugin_inits(plugin) or 0) > inits,
                timeout,
                interval=0.2,
            )
        streak = 0

        def settled() -> bool:
            nonlocal streak
            try:
                self.page_api("/health", None, method="GET", plugin=plugin)
                streak += 1
            except StackError:
                streak = 0
            return streak >= 2

        wait_for(f"{plugin.plugin_id} to come back after a config change", settled, timeout, interval=0.5)

    def wait_plugins_initialized(
        self, plugins: list[PluginRef], timeout: float = 90.0, install_source: str | None = None
    ) -> None:
        t0 = time.monotonic()
        pending = {p.plugin_id for p in plugins}

        def alive() -> None:
            for p in plugins:
                proc = self.processes.get(f"plugin:{p.plugin_id}")
                if proc is not None:
                    proc.check_alive()
            self.processes["langbot"].check_alive()

        def ready() -> bool:
            by_id = self.plugins_by_id()
            for pid in list(pending):
                entries = by_id.get(pid, [])
                if any(
                    e.get("status") == "initialized"
                    and (install_source is None or e.get("install_source") == install_source)
                    for e in entries
                ):
                    pending.discard(pid)
                    self.timings[f"plugin_initialized:{pid}"] = time.monotonic() - t0
            return not pending

        wait_for(f"plugins {sorted(pending)} to initialize", ready, timeout, interval=0.3, alive=alive)
        logger.info("plugins initialized in %.1fs: %s", time.monotonic() - t0, ", ".join(p.plugin_id for p in plugins))

    def _create_memory_kb(self) -> None:
        engines = self.api("GET", "/knowledge/engines").get("engines") or []
        if not any(e.get("plugin_id") == self.plugin.plugin_id for e in engines):
            raise StackError(
                f"no KnowledgeEngine from {self.plugin.plugin_id} is registered "
                f"(engines: {[e.get('plugin_id') for e in engines]})"
            )
        self.kb_uuid = self.api(
            "POST",
            "/knowledge/bases",
            {
                "name": "Long-term memory (e2e)",
                "description": "Memory knowledge base created by e2e/stack.py",
                "knowledge_engine_plugin_id": self.plugin.plugin_id,
                "creation_settings": {"embedding_model": self.embedding_uuid, "isolation": self.isolation},
                "retrieval_settings": {},
            },
        )["uuid"]

    def runner_config(self, **overrides: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "model": self.llm_uuid,
            "prompt": [{"role": "system", "content": self.system_prompt}],
            "knowledge-bases": [self.kb_uuid] if self.kb_uuid else [],
            "retrieval-top-k": 5,
            "history-limit": 20,
            "max-tool-rounds": 5,
            "debug_echo_vars": False,
        }
        config.update(overrides)
        return config

    def create_pipeline(self, name: str, is_default: bool = False, **runner_overrides: Any) -> str:
        """A pipeline that runs the LocalRunner with our model, system prompt and memory KB.

        The KB goes into the runner's ``knowledge-bases`` selector; the host derives the query variable
        ``_knowledge_base_uuids`` (seen by listeners) from that selector (``preproc.py``).
        """
        uuid = self.api("POST", "/pipelines", {"name": name, "description": "e2e", "is_default": is_default})["uuid"]
        cfg = self.api("GET", f"/pipelines/{uuid}")["pipeline"]["config"]
        cfg["ai"] = {
            "runner": {"id": self.runner_id, "expire-time": 0},
            "runner_config": {self.runner_id: self.runner_config(**runner_overrides)},
        }
        self.api("PUT", f"/pipelines/{uuid}", {"name": name, "description": "e2e", "config": cfg})
        return uuid

    def _create_pipelines(self) -> None:
        self.pipeline_uuid = self.create_pipeline("LTM e2e", is_default=True)
        self.debug_pipeline_uuid = self.create_pipeline("LTM e2e (debug vars)", debug_echo_vars=True)

    def _write_state(self) -> None:
        if self.run_dir is None:
            return
        state = {
            "base_url": self.base_url,
            "console_url": self.console_url,
            "admin": {"user": ADMIN_USER, "password": ADMIN_PASSWORD},
            "ports": {
                "api": self.api_port,
                "runtime_control": self.rt_control_port,
                "runtime_debug": self.rt_debug_port,
                "fake_openai": self.fake_port,
            },
            "workspace_uuid": self.workspace_uuid,
            "provider": {
                "base_url": self.provider.base_url if self.provider else None,
                "fake": bool(self.provider and self.provider.fake),
                "embedder": self.fake_embedder,
            },
            "llm_uuid": self.llm_uuid,
            "embedding_uuid": self.embedding_uuid,
            "kb_uuid": self.kb_uuid,
            "pipeline_uuid": self.pipeline_uuid,
            "debug_pipeline_uuid": self.debug_pipeline_uuid,
            "runner_id": self.runner_id,
            "backends": {
                "database": self.backends.db,
                "vdb": self.backends.vdb,
                "postgres_port": self.pg_port,
                "postgres": self.pg_version_info or None,
            },
            "pids": {name: p.pid for name, p in self.processes.items()},
            "timings": self.timings,
            "turns": [{"text": text, "seconds": round(sec, 3)} for text, sec in self.turn_times],
        }
        (self.run_dir / "stack.json").write_text(json.dumps(state, indent=2), encoding="utf-8")

    # -- HTTP API -------------------------------------------------------------------------------

    def api(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        auth: bool = True,
        workspace: bool = True,
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        expect_ok: bool = True,
        timeout: float = 60.0,
    ) -> Any:
        """Call ``/api/v1<path>``; return ``data`` of the ``{"code":0,"data":…}`` envelope."""
        if self._http is None:
            raise StackError("stack is not running")
        headers = {}
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if workspace and self.workspace_uuid:
            headers["X-Workspace-Id"] = self.workspace_uuid
        resp = self._http.request(
            method, path, json=body if files is None else None, files=files, data=data, headers=headers, timeout=timeout
        )
        try:
            payload = resp.json()
        except ValueError as exc:
            raise StackError(f"{method} {path}: HTTP {resp.status_code}, not JSON: {resp.text[:300]}") from exc
        if expect_ok and (resp.status_code >= 400 or payload.get("code") not in (0, None)):
            raise StackError(f"{method} {path}: HTTP {resp.status_code} {json.dumps(payload)[:800]}")
        return payload.get("data") if expect_ok else payload

    def get_raw(self, path: str, auth: bool = False) -> httpx.Response:
        """A plain GET under the base URL (e.g. plugin assets, which need no auth)."""
        if self._http is None:
            raise StackError("stack is not running")
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        return httpx.get(self.base_url + path, headers=headers, timeout=30.0, trust_env=False)

    # -- helpers for tests ----------------------------------------------------------------------

    def connect(self, session_type: str = "person", pipeline_uuid: str | None = None) -> ChatSession:
        """Open a new WebChat connection (for person chats: a brand-new LangBot session)."""
        chat = ChatSession(self, pipeline_uuid or self.pipeline_uuid, session_type)
        self._open_chats.append(chat)
        return chat

    def _default_chat(self, session_type: str, pipeline_uuid: str | None) -> ChatSession:
        key = (pipeline_uuid or self.pipeline_uuid, session_type)
        if key not in self._default_chats:
            self._default_chats[key] = self.connect(session_type, key[0])
        return self._default_chats[key]

    def chat(
        self,
        text: str,
        session_type: str = "person",
        conn: ChatSession | None = None,
        pipeline_uuid: str | None = None,
        timeout: float = 90.0,
    ) -> Turn:
        """Send one chat message (on ``conn``, or on a default connection kept per pipeline/session type)."""
        return (conn or self._default_chat(session_type, pipeline_uuid)).send(text, timeout=timeout)

    def command(
        self,
        text: str,
        session_type: str = "person",
        conn: ChatSession | None = None,
        pipeline_uuid: str | None = None,
        timeout: float = 60.0,
        quiet: float = 0.8,
    ) -> str:
        """Send a command such as ``!memory list`` and return every reply (joined with newlines)."""
        return (conn or self._default_chat(session_type, pipeline_uuid)).command(text, timeout=timeout, quiet=quiet)

    def page_api(
        self,
        endpoint: str,
        body: Any = None,
        method: str = "POST",
        page_id: str = "console",
        plugin: PluginRef | None = None,
    ) -> Any:
        plugin = plugin or self.plugin
        data = self.api(
            "POST",
            f"/plugins/{plugin.author}/{plugin.name}/page-api",
            {"page_id": page_id, "endpoint": endpoint, "method": method, "body": body},
        )
        # the console answers a refusal as data (the dashboard would lose an HTTP 400's message)
        if isinstance(data, dict) and set(data) == {"data", "error"} and data["error"]:
            refusal = json.dumps({"code": -1, "msg": data["error"]}, ensure_ascii=False)
            raise StackError(f"page-api {endpoint} refused: {refusal}")
        return data

    def kb_add_document(
        self, content: bytes, filename: str = "memories.json", timeout: float = 120.0, kb_uuid: str | None = None
    ) -> dict[str, Any]:
        """Upload a file and add it to the memory KB the way the dashboard does (4.11.2: upload,
        add - a background task that calls the engine's ``ingest`` -, then poll the KB's file list
        until the row is final). Returns the file row (``uuid``, ``status``, ``engine_document_id``)."""
        upload = {"file": (filename, content, "application/json")}
        kb = kb_uuid or self.kb_uuid
        file_id = self.api("POST", "/files/documents", files=upload)["file_id"]
        self.api("POST", f"/knowledge/bases/{kb}/files", {"file_id": file_id})
        row: dict[str, Any] = {}

        def final() -> bool:
            nonlocal row
            files = self.api("GET", f"/knowledge/bases/{kb}/files").get("files") or []
            row = next((f for f in files if f.get("file_name") == file_id), {})
            return row.get("status") in ("completed", "failed", "interrupted")

        wait_for(f"document {filename} to be ingested", final, timeout, interval=0.5)
        return row

    def kb_delete_document(self, file_uuid: str) -> None:
        """Delete a KB document: the host calls the engine's ``delete_document`` and needs ``True``."""
        self.api("DELETE", f"/knowledge/bases/{self.kb_uuid}/files/{file_uuid}")

    def kb_retrieve(
        self, query: str, retrieval_settings: dict[str, Any] | None = None, kb_uuid: str | None = None
    ) -> list[dict[str, Any]]:
        data = self.api(
            "POST",
            f"/knowledge/bases/{kb_uuid or self.kb_uuid}/retrieve",
            {"query": query, "retrieval_settings": retrieval_settings or {}},
        )
        if isinstance(data, dict):
            for key in ("results", "entries", "items"):
                if isinstance(data.get(key), list):
                    return data[key]
        return data if isinstance(data, list) else []

    def model_requests(self, path: str = "/chat/completions") -> list[dict[str, Any]]:
        """Every request body the fake model server received on ``path`` (oldest first)."""
        if self.request_log is None:
            raise StackError("model requests are only recorded with the fake provider")
        out = []
        with open(self.request_log, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    if path is None or rec.get("path") == path:
                        out.append(rec["body"])
        return out

    def _request_mark(self) -> int:
        if self.request_log is None:
            return 0
        with open(self.request_log, encoding="utf-8") as fh:
            return sum(1 for _ in fh)

    def _requests_since(self, mark: int, text: str) -> list[dict[str, Any]]:
        """Chat requests logged after ``mark`` whose last user message is ``text`` (this turn's runner calls)."""
        if self.request_log is None:
            return []
        # group messages reach the runner without the trigger prefix ("ai hello" -> "hello")
        wanted = {text, text[2:].strip()} if text.startswith("ai") and len(text) > 2 else {text}
        out = []
        with open(self.request_log, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i < mark or not line.strip():
                    continue
                rec = json.loads(line)
                if rec.get("path") != "/chat/completions":
                    continue
                users = [m for m in rec["body"].get("messages") or [] if m.get("role") == "user"]
                if users and any(w in _content_text(users[-1].get("content")) for w in wanted):
                    out.append(rec["body"])
        return out

    def build_lbpkg(self, out_dir: Path, plugin: PluginRef | None = None) -> Path:
        """Build the plugin's ``.lbpkg`` into ``out_dir`` and return it.

        Uses the project's ``scripts/build-package`` when the plugin has one (it runs ``lbp build`` in a staging
        copy of the runtime files), else ``lbp build`` in the plugin directory. Host fact: ``lbp build``'s
        .gitignore matcher takes ``.venv-*/`` and ``/.run/`` literally, so in this repository a plain
        ``lbp build`` packs the host venv and every run dir (over 1 GB, rejected by the install route with 413).
        """
        plugin = plugin or self.plugin
        out_dir.mkdir(parents=True, exist_ok=True)
        script = plugin.path / "scripts" / "build-package"
        if script.is_file() and os.access(script, os.X_OK):
            argv = [str(script), str(out_dir)]
            env = self._child_env({"LBP": str(self.plugin_bin / "lbp")})
        else:
            argv = [str(self.host_venv / "bin" / "lbp"), "build", "-o", str(out_dir)]
            env = self._child_env()
        result = subprocess.run(argv, cwd=plugin.path, env=env, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise StackError(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        pkgs = sorted(out_dir.glob("*.lbpkg"), key=lambda p: p.stat().st_mtime)
        if not pkgs:
            raise StackError(f"no .lbpkg in {out_dir} after {' '.join(argv)}:\n{result.stdout}\n{result.stderr}")
        return pkgs[-1]

    def install_lbpkg(self, path: Path | str, timeout: float = 600.0) -> dict[str, Any]:
        """POST /plugins/install/local and poll the task until it finishes; return the task's runtime info."""
        path = Path(path)
        with open(path, "rb") as fh:
            task = self.api(
                "POST",
                "/plugins/install/local",
                files={"file": (path.name, fh, "application/octet-stream")},
                timeout=120,
            )
        task_id = task["task_id"]

        def done() -> dict[str, Any] | None:
            info = self.api("GET", f"/system/tasks/{task_id}")
            runtime = (info or {}).get("runtime") or {}
            return info if runtime.get("done") else None

        info = wait_for(
            f"install task {task_id}", done, timeout, interval=0.5, alive=self.processes["langbot"].check_alive
        )
        runtime = info.get("runtime") or {}
        if runtime.get("exception"):
            raise StackError(f"install of {path.name} failed: {runtime.get('exception')}")
        return info

    def uninstall_plugin(self, plugin: PluginRef | None = None, timeout: float = 120.0) -> None:
        plugin = plugin or self.plugin
        task_id = self.api("DELETE", f"/plugins/{plugin.author}/{plugin.name}")["task_id"]
        wait_for(
            f"uninstall task {task_id}",
            lambda: ((self.api("GET", f"/system/tasks/{task_id}") or {}).get("runtime") or {}).get("done"),
            timeout,
            interval=0.5,
        )

    def log_tail(self, name: str, lines: int = 40) -> str:
        proc = self.processes.get(name)
        return proc.log_tail(lines) if proc else f"({name} not running)"

    def pids(self) -> list[int]:
        """Pids of every process (and known descendant) this stack runs."""
        out = []
        for proc in self.processes.values():
            if proc.alive() and proc.pid:
                out.append(proc.pid)
                out.extend(descendants(proc.pid))
        return out


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _run_dir_in_use(run_dir: Path) -> bool:
    try:
        pids = json.loads((run_dir / "pids.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(isinstance(pid, int) and _pid_alive(pid) for pid in pids.values())


def prune_run_dirs(run_root: Path, keep: int = 8) -> None:
    """Keep the newest ``keep`` run directories (LangBot data + logs); never remove one still in use."""
    if not run_root.is_dir():
        return
    runs = sorted((p for p in run_root.iterdir() if p.is_dir()), key=lambda p: p.name)
    for old in runs[: max(0, len(runs) - keep)]:
        if not _run_dir_in_use(old):
            shutil.rmtree(old, ignore_errors=True)


def _installed_version(venv: Path, dist: str) -> tuple[int, ...] | None:
    """Version of distribution ``dist`` installed in ``venv`` (from its ``*.dist-info`` folder name)."""
    for info in venv.glob("lib/python*/site-packages/*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].rpartition("-")
        if name.lower().replace("_", "-") == dist:
            return tuple(int(x) for x in re.findall(r"\d+", version)[:3])
    return None


def ensure_host_venv(path: Path = HOST_VENV, version: str = LANGBOT_VERSION) -> Path:
    """Create ``path`` with LangBot from PyPI if needed, and keep SQLAlchemy below 2.1.

    Host fact: ``langbot==4.11.2`` asks for ``sqlalchemy>=2.0.40`` with no upper bound, and with SQLAlchemy
    2.1 (``update_values_to_set`` became a dict) its ``TenantUnitOfWork`` rejects every ``ON CONFLICT``
    upsert ("unknown ON CONFLICT update shape"): plugin storage writes, KB creation hooks that write storage,
    and query monitoring all fail. SQLAlchemy 2.0.x works.
    """
    pip = [str(path / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    if not ((path / "bin" / "langbot").exists() and (path / "bin" / "lbp").exists()):
        python = shutil.which("python3.11") or sys.executable
        logger.info("creating the host venv %s with langbot==%s (one-off, a few minutes)", path, version)
        subprocess.run([python, "-m", "venv", str(path)], check=True)
        subprocess.run([*pip, f"langbot=={version}", HOST_SQLALCHEMY_PIN], check=True)
        return path
    installed = _installed_version(path, "sqlalchemy")
    if installed is not None and installed >= (2, 1):
        logger.warning(
            "host venv has SQLAlchemy %s, which breaks LangBot 4.11.2 upserts: installing %s",
            ".".join(map(str, installed)),
            HOST_SQLALCHEMY_PIN,
        )
        subprocess.run([*pip, HOST_SQLALCHEMY_PIN], check=True)
    return path


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def backends_line(stack: Stack) -> str:
    db = (
        f"database postgresql ({stack.pg_version_info} on 127.0.0.1:{stack.pg_port}, stopped with the stack)"
        if stack.backends.db == "postgresql"
        else "database sqlite"
    )
    return f"{db}; vdb {stack.backends.vdb}"


def banner(stack: Stack) -> str:
    provider = stack.provider
    model_line = (
        f"fake model server {provider.base_url} (embeddings: {stack.fake_embedder}; request log {stack.request_log})"
        if provider and provider.fake
        else f"real provider {provider.base_url if provider else '?'}"
    )
    lines = [
        "",
        "LangBot 4.11.2 with LongTermMemory is running.",
        "",
        f"  Web UI          {stack.base_url}/",
        f"  Login           {ADMIN_USER}  /  {ADMIN_PASSWORD}",
        "  Chat            Processors -> 'LTM e2e' -> Configure & debug -> Debug Chat (Private Chat)",
        f"                  {stack.base_url}/home/pipelines?id={stack.pipeline_uuid}",
        "                  tell it something ('My name is Ada'), then ask in a later turn ('What is my name?');",
        "                  try `!memory help`. The stand-in model remembers plain statements and answers from",
        "                  memory; a real model decides itself when to call the memory tools.",
        '                  make the stand-in call any tool: CALLTOOL:remember:{"content": "I like teal"}',
        "  Memory admin    send `!memory` in the chat: it shows your speaker id (websocket_<connection>);",
        "                  put it in Plugins -> LongTermMemory -> Memory admins, save, keep the chat open",
        f"  Memory Console  {stack.console_url}",
        "                  (sidebar: Plugin Pages -> Memory Console)",
        f"  Models          {model_line}",
        f"  Memory KB       {stack.kb_uuid}  (engine {stack.plugin.plugin_id})",
        f"  LangBot storage {backends_line(stack)}",
        f"  Run dir         {stack.run_dir}  (logs/ holds every process log; stack.json the ids)",
        f"  Cold start      {stack.timings.get('cold_start_total', 0):.1f}s",
        "",
        "Press Ctrl-C to stop everything.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a real LangBot 4.11.2 with the LongTermMemory plugin attached.")
    parser.add_argument("--plugin-dir", default=str(REPO_ROOT), help="plugin under test (default: this repository)")
    parser.add_argument("--isolation", default="session", choices=["session", "bot"], help="memory KB isolation")
    parser.add_argument(
        "--embedder",
        default="minilm",
        choices=["minilm", "auto", "hash"],
        help="fake server embeddings (minilm = real offline MiniLM; required by default)",
    )
    parser.add_argument(
        "--hot-reload",
        action="store_true",
        help="let `lbp run` reload the plugin on .py changes (off by default: see e2e/lbp_run.py)",
    )
    parser.add_argument(
        "--install-host-only", action="store_true", help="only create/repair .venv-host (LangBot from PyPI) and exit"
    )
    env_backends = BackendSettings.from_env()
    parser.add_argument(
        "--db",
        default=env_backends.db,
        choices=list(lb_backends.DATABASES),
        help="LangBot's database.use (default: $LTM_E2E_DB or sqlite); postgresql starts a local server",
    )
    parser.add_argument(
        "--vdb",
        default=env_backends.vdb,
        choices=list(lb_backends.VECTOR_DBS),
        help=(
            "LangBot's vdb.use (default: $LTM_E2E_VDB or chroma); seekdb and milvus run embedded, "
            "pgvector in LangBot's own PostgreSQL (needs --db postgresql)"
        ),
    )
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    backend_settings = BackendSettings(db=args.db, vdb=args.vdb, pg_version=env_backends.pg_version)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )

    def _terminate(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    # explicit: a shell that starts us in the background may have left SIGINT ignored
    signal.signal(signal.SIGINT, _terminate)
    signal.signal(signal.SIGTERM, _terminate)
    if not args.verbose:
        logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.install_host_only:
        ensure_host_venv()
        lb_backends.ensure_backend_packages(HOST_VENV, backend_settings, keep=(HOST_SQLALCHEMY_PIN,))
        return 0
    stack = Stack(
        plugin_dir=args.plugin_dir,
        isolation=args.isolation,
        embedder=args.embedder,
        hot_reload=args.hot_reload,
        backends=backend_settings,
    )
    try:
        stack.start()
        sys.stdout.write(banner(stack) + "\n")
        sys.stdout.flush()
        while True:
            for name, proc in list(stack.processes.items()):
                if not proc.alive():
                    logger.error(
                        "%s exited (code %s); log tail:\n%s",
                        name,
                        proc.proc.returncode if proc.proc else "?",
                        proc.log_tail(),
                    )
                    return 1
            time.sleep(1.0)
    except KeyboardInterrupt:
        logger.info("stopping")
        return 0
    except StackError as exc:
        logger.error("%s", exc)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not abandon half the processes
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stack.stop()


@contextlib.contextmanager
def running_stack(**kwargs: Any) -> Iterator[Stack]:
    """``with running_stack() as stack:`` -- same as ``with Stack(**kwargs) as stack``."""
    stack = Stack(**kwargs)
    try:
        yield stack.start()
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
