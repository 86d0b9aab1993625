"""Load through the real host (issue 38): many chats at once through LangBot 4.11.2.

    python -m benchmarks.load [--sizes 1,10,50] [--turns 6] [--db sqlite|postgresql] [--installed] [--out r.json]

Starts the e2e stack (``e2e/stack.py``: LangBot, the plugin runtime, the stand-in model with MiniLM
embeddings; SQLite + Chroma, or ``--db postgresql``), attaches the do-nothing plugin
(``e2e/noop_plugin``: a ``PromptPreProcessing`` listener and a knowledge engine that do nothing) and
builds three pipelines that differ only in the memory plugin bound to them (LangBot's pipeline
extensions: ``bound_plugins``):

- ``without``: the LocalRunner alone, no knowledge base (the baseline);
- ``with``: LongTermMemory bound, its memory knowledge base in the runner's selector;
- ``floor``: the do-nothing plugin bound the same way (its knowledge base in the selector).

For each N it drives N chats at once through the dashboard websocket (private chats, and from N >= 3
one group with three speakers), each a seeded mix: a ``remember`` statement, questions the memory
answers, small talk, a second statement; every chat ends on a question. The three pipelines run the
same plans (fresh secrets each), back to back. Then commands (``!memory`` summary, ``list``,
``why``) run one at a time in the ``with`` pipeline (replies carry no connection id, so a command's
reply is only attributable when nothing else runs).

Reported per N and pipeline: p50/p95 of the whole turn (question turns apart), messages per second;
the plugin's share (``with`` - ``without``) and the floor's (``floor`` - ``without``); the plugin
process's RSS and CPU seconds; the hook's host calls and milliseconds per turn (the usage ledger,
read through the console API). Afterwards, from the host's own stores and logs: every acknowledged
``remember`` is in LangBot's Chroma (0 lost), no chat's secret reached another chat's model request
while each chat's own question saw its secret in a system message (the memory block; the positive
control), and no WARNING/ERROR line in LangBot's or the plugin's log during the run.

A benchmark, not a test: absolute figures depend on the machine; the ratios within one run count.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import logging
import os
import random
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from e2e.stack import WEBCHAT_BOT_UUID, PluginRef, Stack, descendants
from ltm.service.sealing import is_sealed, unseal

log = logging.getLogger("benchmarks.load")

NOOP_PLUGIN_DIR = Path(__file__).resolve().parent.parent / "e2e" / "noop_plugin"
PIPELINES = ("without", "with", "floor")
PHASE_FIELDS = ("p50_ms", "p95_ms", "question_p50_ms", "question_p95_ms", "msgs_per_s", "failed", "turns")
GROUP_SPEAKERS = 3
SYLLABLES = "ka lo mi ru te vo za pe ni su ga bo di fe hu ja ke lu mo ra".split()
ACK = "Noted: I will remember that."
# LangBot's own fan-out limits, raised for a load run (an operator's data/config.yaml keys, set as
# LangBot's env overrides): the dashboard websocket sends every frame to every connection of the
# pipeline (N x N frames), each serialised on the workspace's blocking executor (4 in flight by
# default; over it the frame is dropped with "Workspace blocking executor capacity reached" and the
# socket closed), and a workspace may hold 32 sockets. The same for all three pipelines.
HOST_LIMITS = {
    "SYSTEM__WEBSOCKET_RETENTION__MAX_CONNECTIONS_PER_WORKSPACE": "512",
    "SYSTEM__WEBSOCKET_RETENTION__SEND_QUEUE_SIZE": "5000",
    "SYSTEM__BLOCKING_EXECUTOR__MAX_WORKERS": "64",
    "SYSTEM__BLOCKING_EXECUTOR__MAX_PENDING": "4096",
    "SYSTEM__BLOCKING_EXECUTOR__MAX_INFLIGHT_PER_SCOPE": "32",
}
LOG_ALARM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|\[(W|E)\]|Traceback")


# ------------------------------------------------------------------ the plans (pure)


@dataclass
class Turn:
    speaker: int
    kind: str  # remember | question | chat
    text: str
    secret: str = ""  # the fact a remember turn states / a question asks for


@dataclass
class ChatPlan:
    index: int
    group: bool
    speakers: int
    tag: str  # every message of the chat carries ``<tag><turn>z`` (replies echo it)
    secrets: list[str]
    turns: list[Turn]


def secret_word(rng: random.Random, used: set[str]) -> str:
    while True:
        word = "".join(rng.choice(SYLLABLES) for _ in range(4))
        if word not in used:
            used.add(word)
            return word


def plan_chats(n: int, turns: int, rng: random.Random, label: str) -> list[ChatPlan]:
    """N chats; chat 1 is a group of three speakers when N >= 3 (the dashboard has one group per
    pipeline). Each: a statement first, a seeded mix, a question last."""
    used: set[str] = set()
    plans = []
    for i in range(n):
        group = n >= 3 and i == 1
        speakers = GROUP_SPEAKERS if group else 1
        tag = f"ref{label}c{i}t"  # unique in the run: the model's request log is one file
        fruit, colour = secret_word(rng, used), secret_word(rng, used)
        if group:
            say1, ask1 = f"Our mascot is {fruit}", "What is our mascot?"
            say2 = f"Our motto is {colour}"
        else:
            say1, ask1 = f"My favourite fruit is {fruit}", "What is my favourite fruit?"
            say2 = f"My favourite colour is {colour}"
        seq: list[Turn] = [Turn(0, "remember", say1, fruit)]
        said2 = False
        for _ in range(max(0, turns - 2)):
            roll = rng.random()
            if roll < 0.15 and not said2:
                seq.append(Turn(rng.randrange(speakers), "remember", say2, colour))
                said2 = True
            elif roll < 0.4:
                seq.append(Turn(rng.randrange(speakers), "chat", "Tell me something nice about trains"))
            else:
                seq.append(Turn(rng.randrange(speakers), "question", ask1, fruit))
        if turns > 1:
            seq.append(Turn(speakers - 1, "question", ask1, fruit))
        plans.append(ChatPlan(i, group, speakers, tag, [fruit, colour] if said2 else [fruit], seq))
    return plans


def message_text(plan: ChatPlan, j: int) -> str:
    turn = plan.turns[j]
    text = f"{turn.text} {plan.tag}{j}z" if turn.kind != "question" else f"{turn.text[:-1]} {plan.tag}{j}z?"
    return f"ai {text}" if plan.group else text


def pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return round((ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)) * 1000, 1)


def load_avg() -> list[float]:
    """The machine's 1/5/15-minute load averages (the figures of a shared machine depend on them)."""
    with contextlib.suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return []


def diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 1)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def frame_of(text: str) -> dict[str, Any]:
    return {"type": "message", "stream": False, "message": [{"type": "Plain", "text": text}]}


# ------------------------------------------------------------------ the websocket driver


class Chat:
    """One chat's connections (one per speaker) on one pipeline."""

    def __init__(self, stack: Stack, pipeline_uuid: str, plan: ChatPlan) -> None:
        self.stack, self.pipeline_uuid, self.plan = stack, pipeline_uuid, plan
        self.conns: list[ClientConnection] = []
        self.connection_ids: list[str] = []
        self.results: list[dict[str, Any]] = []
        self.inboxes: list[asyncio.Queue[dict[str, Any]]] = []
        self.readers: list[asyncio.Task[None]] = []

    async def open(self) -> None:
        kind = "group" if self.plan.group else "person"
        url = (
            f"ws://127.0.0.1:{self.stack.api_port}/api/v1/pipelines/{self.pipeline_uuid}/ws/connect?session_type={kind}"
        )
        for _ in range(self.plan.speakers):
            ws = await connect(url, origin=self.stack.base_url, open_timeout=30, max_size=None)  # type: ignore[arg-type]
            await ws.send(
                json.dumps(
                    {"type": "authenticate", "token": self.stack.token, "workspace_uuid": self.stack.workspace_uuid}
                )
            )
            hello = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if hello.get("type") != "connected":
                raise RuntimeError(f"websocket authentication failed: {hello}")
            self.conns.append(ws)
            self.connection_ids.append(hello["connection_id"])
            inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            self.inboxes.append(inbox)
            # every connection of the pipeline receives every chat's frames: read them all the time,
            # or the host's send queue for this connection fills and it is closed
            self.readers.append(asyncio.create_task(self._read(ws, inbox)))

    @staticmethod
    async def _read(ws: ClientConnection, inbox: asyncio.Queue[dict[str, Any]]) -> None:
        with contextlib.suppress(Exception):
            async for raw in ws:
                frame = json.loads(raw)
                if frame.get("type") in ("response", "error"):
                    inbox.put_nowait(frame)

    async def close(self) -> None:
        for task in self.readers:
            task.cancel()
        for ws in self.conns:
            with contextlib.suppress(Exception):
                await ws.close()

    @property
    def session_name(self) -> str:
        return "group_websocketgroup" if self.plan.group else f"person_websocket_{self.connection_ids[0]}"

    async def send(self, speaker: int, text: str, marker: str, timeout: float) -> tuple[float, str]:
        """Send ``text`` as ``speaker``; the reply is the first final response frame carrying ``marker``
        (every connection of the pipeline receives every chat's replies)."""
        ws, inbox = self.conns[speaker], self.inboxes[speaker]
        started = time.monotonic()
        await ws.send(json.dumps(frame_of(text)))
        deadline = started + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no reply to {text!r} within {timeout:.0f}s")
            frame = await asyncio.wait_for(inbox.get(), remaining)
            data = frame.get("data") or {}
            if frame.get("type") == "error":
                raise RuntimeError(f"websocket error frame: {frame.get('message')}")
            if frame.get("type") == "response" and data.get("is_final", True):
                content = str(data.get("content") or "")
                if marker in content:
                    return time.monotonic() - started, content

    def drain(self) -> None:
        """Forget the frames received so far."""
        for inbox in self.inboxes:
            while not inbox.empty():
                inbox.get_nowait()

    async def run(self, timeout: float) -> None:
        for j in range(len(self.plan.turns)):
            await self.run_turn(j, timeout)

    async def run_turn(self, j: int, timeout: float) -> None:
        turn = self.plan.turns[j]
        marker = f"{self.plan.tag}{j}z"
        try:
            elapsed, reply = await self.send(turn.speaker, message_text(self.plan, j), marker, timeout)
            self.results.append({"kind": turn.kind, "s": elapsed, "ok": True, "ack": ACK in reply, "j": j})
        except (TimeoutError, RuntimeError, ConnectionClosed) as exc:
            log.warning("chat %d turn %d failed: %r", self.plan.index, j, exc)
            self.results.append({"kind": turn.kind, "s": None, "ok": False, "ack": False, "j": j})


# ------------------------------------------------------------------ processes


def proc_stats(pids: Sequence[int]) -> dict[str, float]:
    """RSS (MB) and CPU seconds of ``pids`` and their descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    rss = cpu = 0.0
    seen: set[int] = set()
    for pid in pids:
        for p in [pid, *descendants(pid)]:
            if p in seen:
                continue
            seen.add(p)
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
                cpu += (int(stat[11]) + int(stat[12])) / tick
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1]) / 1024
    return {"rss_mb": round(rss, 1), "cpu_s": round(cpu, 2)}


def plugin_pids(stack: Stack) -> list[int]:
    if stack.installed:
        return stack.plugin_worker_pids()
    proc = stack.processes.get(f"plugin:{stack.plugin.plugin_id}")
    return [proc.pid] if proc is not None and proc.pid else []


# ------------------------------------------------------------------ setting up the stack


def bind(stack: Stack, pipeline_uuid: str, plugins: Sequence[PluginRef]) -> None:
    stack.api(
        "PUT",
        f"/pipelines/{pipeline_uuid}/extensions",
        {
            "enable_all_plugins": False,
            "bound_plugins": [{"author": p.author, "name": p.name} for p in plugins],
            "enable_all_mcp_servers": False,
            "bound_mcp_servers": [],
        },
    )


def setup(stack: Stack, floor: bool = True) -> dict[str, str]:
    """The do-nothing plugin, its knowledge base, and the three pipelines (``floor=False``: no
    do-nothing plugin, two pipelines - the e2e suite's shared stack keeps its plugin list)."""
    short = {"history-limit": 1}  # history off (as far as the runner allows): every turn costs the same
    uuids = {
        "without": stack.create_pipeline("load: without memory", **{"knowledge-bases": [], **short}),
        "with": stack.create_pipeline("load: with memory", **{"knowledge-bases": [stack.kb_uuid], **short}),
    }
    bind(stack, uuids["without"], [stack.runner_plugin])
    bind(stack, uuids["with"], [stack.plugin, stack.runner_plugin])
    if not floor:
        return uuids
    noop = PluginRef.from_dir(NOOP_PLUGIN_DIR)
    stack.attach_plugin(noop)
    stack.wait_plugins_initialized([noop])
    noop_kb = stack.api(
        "POST",
        "/knowledge/bases",
        {
            "name": "Do-nothing (load floor)",
            "description": "benchmarks.load",
            "knowledge_engine_plugin_id": noop.plugin_id,
            "creation_settings": {},
            "retrieval_settings": {},
        },
    )["uuid"]
    uuids["floor"] = stack.create_pipeline("load: do-nothing plugin", **{"knowledge-bases": [noop_kb], **short})
    bind(stack, uuids["floor"], [noop, stack.runner_plugin])
    return uuids


# ------------------------------------------------------------------ one phase


async def run_phase(
    stack: Stack, pipeline: str, pipeline_uuid: str, plans: list[ChatPlan], timeout: float
) -> dict[str, Any]:
    chats = [Chat(stack, pipeline_uuid, plan) for plan in plans]
    await asyncio.gather(*(c.open() for c in chats))
    pids = plugin_pids(stack)
    before = proc_stats(pids)
    started = time.monotonic()
    try:
        await asyncio.gather(*(c.run(timeout) for c in chats))
    finally:
        wall = time.monotonic() - started
        after = proc_stats(pids)
        await asyncio.gather(*(c.close() for c in chats))
    return phase_figures(pipeline, chats, wall, after["rss_mb"], after["cpu_s"] - before["cpu_s"])


async def run_interleaved(
    stack: Stack, uuids: dict[str, str], plans: dict[str, ChatPlan], timeout: float
) -> dict[str, dict[str, Any]]:
    """One chat per pipeline, turn by turn in rotating order: the machine's drift (other processes on
    shared cores) falls on every pipeline alike. A pipeline's wall time is the sum of its turns; the
    plugin's CPU is counted during the memory pipeline's turns only."""
    chats = {name: Chat(stack, uuids[name], plan) for name, plan in plans.items()}
    await asyncio.gather(*(c.open() for c in chats.values()))
    pids = plugin_pids(stack)
    names = list(chats)
    walls = dict.fromkeys(names, 0.0)
    cpu = 0.0
    try:
        for j in range(min(len(p.turns) for p in plans.values())):
            for name in names[j % len(names) :] + names[: j % len(names)]:
                before = proc_stats(pids)["cpu_s"] if name == "with" else 0.0
                t0 = time.monotonic()
                await chats[name].run_turn(j, timeout)
                walls[name] += time.monotonic() - t0
                if name == "with":
                    cpu += proc_stats(pids)["cpu_s"] - before
    finally:
        rss = proc_stats(pids)["rss_mb"]
        await asyncio.gather(*(c.close() for c in chats.values()))
    return {
        name: phase_figures(name, [chats[name]], walls[name], rss, cpu if name == "with" else 0.0) for name in names
    }


def phase_figures(pipeline: str, chats: list[Chat], wall: float, rss_mb: float, cpu_s: float) -> dict[str, Any]:
    results = [r for c in chats for r in c.results]
    ok = [r for r in results if r["ok"]]
    question = [r["s"] for r in ok if r["kind"] == "question"]
    every = [r["s"] for r in ok]
    return {
        "pipeline": pipeline,
        "chats": len(chats),
        "turns": len(results),
        "failed": len(results) - len(ok),
        "wall_s": round(wall, 2),
        "msgs_per_s": round(len(ok) / wall, 3) if wall > 0 else None,
        "p50_ms": pct(every, 0.5),
        "p95_ms": pct(every, 0.95),
        "question_p50_ms": pct(question, 0.5),
        "question_p95_ms": pct(question, 0.95),
        "remember_p50_ms": pct([r["s"] for r in ok if r["kind"] == "remember"], 0.5),
        "plugin_rss_mb": rss_mb,
        "plugin_cpu_s": round(cpu_s, 2),
        "_chats": chats,
    }


def ledger_turns(stack: Stack, chats: list[Chat]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for chat in chats:
        if chat.plan.group:
            continue
        scope = {"session_name": chat.session_name, "bot_uuid": WEBCHAT_BOT_UUID, "kb_id": stack.kb_uuid}
        with contextlib.suppress(Exception):
            turns += stack.page_api("/usage", {"scope": scope}).get("turns") or []
    return turns


async def run_commands(stack: Stack, pipeline_uuid: str, count: int, timeout: float) -> dict[str, Any]:
    """Commands one at a time in a private chat of the memory pipeline (see the module docstring)."""
    plan = ChatPlan(9999, False, 1, "refcmdt", [], [])
    chat = Chat(stack, pipeline_uuid, plan)
    await chat.open()
    times: list[float] = []
    try:
        await chat.send(0, "My favourite tree is the oak refcmdt0z", "refcmdt0z", timeout)
        ws, inbox = chat.conns[0], chat.inboxes[0]
        for i in range(count):
            text = ("!memory", "!memory list", "!memory why")[i % 3]
            chat.drain()
            started = time.monotonic()
            await ws.send(json.dumps(frame_of(text)))
            frame = await asyncio.wait_for(inbox.get(), timeout)
            if frame.get("type") == "response":
                times.append(time.monotonic() - started)
            await asyncio.sleep(0.8)  # a command may answer in several frames: let them pass
    finally:
        await chat.close()
    return {"commands": len(times), "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95)}


# ------------------------------------------------------------------ checks afterwards


def seal_keys(stack: Stack) -> dict[str, bytes]:
    """Every seal key the plugin holds in LangBot's database: memory id -> key (``ltm/service/sealing.py``)."""
    # SQLite spells it hex(value); PostgreSQL keeps bytea and spells it encode(value, 'hex')
    value = "encode(value, 'hex')" if stack.backends.db == "postgresql" else "hex(value)"
    rows = stack.db_query(f"SELECT {value} FROM binary_storages WHERE owner_type = 'plugin' AND key LIKE 'seal/%'")
    keys: dict[str, bytes] = {}
    for row in rows:
        if row and row[0]:
            for rid, b64 in json.loads(bytes.fromhex(row[0]).decode("utf-8") or "{}").items():
                keys[rid] = base64.b64decode(b64)
    return keys


def chroma_texts(stack: Stack) -> str:
    """Every string LangBot's Chroma holds (documents and metadata), read from its own SQLite file;
    a memory's sealed fields opened with its key from LangBot's database, as the plugin reads them."""
    assert stack.run_dir is not None
    keys = seal_keys(stack)
    out = []
    for path in stack.run_dir.rglob("chroma.sqlite3"):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            rows = db.execute(
                "SELECT e.embedding_id, m.key, m.string_value FROM embedding_metadata m "
                "JOIN embeddings e ON e.id = m.id WHERE m.string_value IS NOT NULL"
            ).fetchall()
        finally:
            db.close()
        by_row: dict[str, dict[str, Any]] = {}
        for rid, key, value in rows:
            by_row.setdefault(str(rid), {})[str(key)] = value
            out.append(str(value))
        for chroma_id, md in by_row.items():
            if is_sealed(md):
                rid = str(md.get("episode_id") or chroma_id)
                out += [str(v) for v in unseal(md, rid, keys.get(rid)).values()]
    return "\n".join(out)


def lost_writes(stack: Stack, phases: list[dict[str, Any]]) -> dict[str, Any]:
    stored = chroma_texts(stack)
    acked = lost = 0
    missing: list[str] = []
    for phase in phases:
        if phase["pipeline"] != "with":
            continue
        for chat in phase["_chats"]:
            for r in chat.results:
                turn = chat.plan.turns[r["j"]]
                if turn.kind == "remember" and r["ack"]:
                    acked += 1
                    if turn.secret not in stored:
                        lost += 1
                        missing.append(turn.secret)
    return {"acknowledged": acked, "lost": lost, "missing": missing[:10]}


def request_bodies(stack: Stack) -> list[dict[str, Any]]:
    return stack.model_requests()


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return json.dumps(content, ensure_ascii=False) if not isinstance(content, str) else content


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        json.dumps(m.get("content"), ensure_ascii=False)
        for m in body.get("messages") or []
        if m.get("role") == "system"
    )


def leaks(stack: Stack, phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Each chat's secrets in no other chat's model request; each chat's own last question saw its
    first secret in a system message (the memory block)."""
    bodies = request_bodies(stack)
    leaked: list[str] = []
    controls = control_ok = 0
    for phase in phases:
        if phase["pipeline"] != "with":
            continue
        chats = phase["_chats"]
        by_chat: dict[int, list[dict[str, Any]]] = {c.plan.index: [] for c in chats}
        tags = {c.plan.index: c.plan.tag for c in chats}
        for body in bodies:
            user = last_user_text(body)
            for idx, tag in tags.items():
                if tag in user:
                    by_chat[idx].append(body)
        for chat in chats:
            others = [b for idx, bs in by_chat.items() if idx != chat.plan.index for b in bs]
            for secret in chat.plan.secrets:
                if any(secret in json.dumps(b, ensure_ascii=False) for b in others):
                    leaked.append(f"N={len(chats)} chat {chat.plan.index}: {secret}")
            last_q = max((r["j"] for r in chat.results if r["kind"] == "question" and r["ok"]), default=None)
            if last_q is None:
                continue
            controls += 1
            marker = f"{chat.plan.tag}{last_q}z"
            own = [b for b in by_chat[chat.plan.index] if marker in last_user_text(b)]
            if any(chat.plan.secrets[0] in system_text(b) for b in own):
                control_ok += 1
    return {"leaks": len(leaked), "leaked": leaked[:10], "controls": controls, "controls_ok": control_ok}


def log_alarms(text: str) -> list[str]:
    return [line for line in text.splitlines() if LOG_ALARM.search(line)]


def log_texts(stack: Stack) -> dict[str, str]:
    """LangBot's console log and the plugin's (the runtime's for an installed plugin), as they grow."""
    names = {"langbot": "langbot", "plugin": "runtime" if stack.installed else f"plugin:{stack.plugin.plugin_id}"}
    out = {}
    for key, name in names.items():
        proc = stack.processes.get(name)
        out[key] = proc.log_path.read_text(encoding="utf-8", errors="replace") if proc else ""
    return out


TURN_LINE = re.compile(r"^\[(\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\].*injection ready: .*turn ms: (.*)$")
SERVED_LINE = re.compile(r"^\[(\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\].*engine retrieve for (\S+): served")
SCOPE_LINE = re.compile(r"^\[(\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\].*memory scope resolved: \S+?:(\S+) ")


def _stamp(text: str) -> float:
    return time.mktime(time.strptime("2000-" + text[:14], "%Y-%m-%d %H:%M:%S")) + float("0" + text[14:])


def turn_breakdown(log_text: str) -> dict[str, Any]:
    """Where a turn's milliseconds went, from the plugin's own log lines of the hook (``turn ms:
    total=.. vars=.. scope=.. recall=.. embed=.. render=.. writes=.. calls=N early=0|1``) and, for
    each hook, the gap until the runner's call into the memory knowledge base reached the plugin
    (LangBot's stages after the hook, the runner's start; log timestamps, millisecond resolution)."""
    phases: dict[str, list[float]] = {}
    gaps: list[float] = []
    ends: dict[str, float] = {}
    session = ""
    for line in log_text.splitlines():
        if m := SCOPE_LINE.match(line):
            session = m.group(2)
        elif m := TURN_LINE.match(line):
            for part in m.group(2).split():
                key, _, value = part.partition("=")
                with contextlib.suppress(ValueError):
                    phases.setdefault(key, []).append(float(value))
            ends[session] = _stamp(m.group(1))
        elif (m := SERVED_LINE.match(line)) and m.group(2) in ends:
            gaps.append((_stamp(m.group(1)) - ends.pop(m.group(2))) * 1000)
    out: dict[str, Any] = {"turns": len(phases.get("total", []))}
    for key, values in phases.items():
        out[f"{key}_p50"] = round(statistics.median(values), 1)
        if key not in ("calls", "early"):
            out[f"{key}_p95"] = pct([v / 1000 for v in values], 0.95)
    if "early" in phases:
        out["early_share"] = round(statistics.mean(phases["early"]), 2)
    if gaps:
        out["hook_to_kb_call_p50"] = round(statistics.median(gaps), 1)
        out["hook_to_kb_call_p95"] = pct([g / 1000 for g in gaps], 0.95)
    return out


# ------------------------------------------------------------------ the run


def summarise(n: int, phases: dict[str, dict[str, Any]], ledger: list[dict[str, Any]]) -> dict[str, Any]:
    w, wo = phases["with"], phases["without"]
    fl = phases.get("floor") or dict.fromkeys(PHASE_FIELDS)
    row = {
        "n": n,
        **{f"{k}_{p}": phases[p][k] for p in phases for k in PHASE_FIELDS},
        "remember_p50_ms_with": w["remember_p50_ms"],
        "remember_p50_ms_without": wo["remember_p50_ms"],
        "share_p50_ms": diff(w["p50_ms"], wo["p50_ms"]),
        "share_p95_ms": diff(w["p95_ms"], wo["p95_ms"]),
        "question_share_p50_ms": diff(w["question_p50_ms"], wo["question_p50_ms"]),
        "question_share_p95_ms": diff(w["question_p95_ms"], wo["question_p95_ms"]),
        "floor_question_share_p50_ms": diff(fl["question_p50_ms"], wo["question_p50_ms"]),
        "floor_question_share_p95_ms": diff(fl["question_p95_ms"], wo["question_p95_ms"]),
        "above_floor_question_p95_ms": diff(w["question_p95_ms"], fl["question_p95_ms"]),
        "throughput_ratio": ratio(w["msgs_per_s"], wo["msgs_per_s"]),
        "floor_throughput_ratio": ratio(fl["msgs_per_s"], wo["msgs_per_s"]),
        "plugin_rss_mb": w["plugin_rss_mb"],
        "plugin_cpu_s": w["plugin_cpu_s"],
        "plugin_cpu_ms_per_turn": round(w["plugin_cpu_s"] * 1000 / max(1, w["turns"]), 1),
    }
    hook_turns = [t for t in ledger if isinstance(t.get("host_calls"), int)]
    row["hook_host_calls_per_turn"] = (
        round(statistics.mean(t["host_calls"] for t in hook_turns), 2) if hook_turns else None
    )
    row["hook_ms_p50"] = statistics.median(t["hook_ms"] for t in hook_turns) if hook_turns else None
    row["ledger_turns"] = len(hook_turns)
    return row


async def measure(stack: Stack, args: argparse.Namespace, uuids: dict[str, str]) -> dict[str, Any]:
    rng = random.Random(args.seed)
    marks = {k: len(v) for k, v in log_texts(stack).items()}
    rows = []
    all_phases: list[dict[str, Any]] = []
    # warm-up: one turn per pipeline (first embedding, first KB call, first model call)
    names = [p for p in PIPELINES if p in uuids]
    for name in names:
        await run_phase(stack, name, uuids[name], plan_chats(1, 2, random.Random(0), "wu" + name[:2]), args.timeout)
    for n in args.sizes:
        turns = args.turns if n == 1 else min(args.turns, args.turns_10 if n < 50 else args.turns_50)
        phases: dict[str, dict[str, Any]] = {}
        step_mark = len(log_texts(stack)["plugin"])
        order = names if (n % 2) else names[::-1]  # alternate, against drift
        if n == 1 and getattr(args, "interleave", True):
            plans = {name: plan_chats(1, turns, random.Random(rng.random()), f"{name[:2]}1")[0] for name in names}
            phases = await run_interleaved(stack, uuids, plans, args.timeout)
            order = []
        for name in order:
            plans = plan_chats(n, turns, random.Random(rng.random()), f"{name[:2]}{n}")
            phases[name] = await run_phase(stack, name, uuids[name], plans, args.timeout)
            log.info(
                "N=%d %-7s p50 %s p95 %s q-p95 %s msgs/s %s failed %d",
                n, name, phases[name]["p50_ms"], phases[name]["p95_ms"], phases[name]["question_p95_ms"],
                phases[name]["msgs_per_s"], phases[name]["failed"],
            )  # fmt: skip
        await asyncio.sleep(1.5)  # the ledger writes its queue a moment after the turns
        rows.append(summarise(n, phases, ledger_turns(stack, phases["with"]["_chats"])))
        plugin_log = log_texts(stack)["plugin"]
        rows[-1]["breakdown"] = turn_breakdown(plugin_log[step_mark:])
        rows[-1]["load_avg"] = load_avg()
        all_phases += list(phases.values())
        if args.out:  # what was measured so far survives a later failure
            Path(args.out + ".partial").write_text(json.dumps(rows, indent=2, default=str) + "\n", encoding="utf-8")
    commands = await run_commands(stack, uuids["with"], args.commands, args.timeout) if args.commands else {}
    await asyncio.sleep(2.0)
    texts = log_texts(stack)
    alarms = {k: log_alarms(v[marks.get(k, 0) :]) for k, v in texts.items()}
    lost = lost_writes(stack, all_phases)
    leak = leaks(stack, all_phases)
    by_n = {r["n"]: r for r in rows}
    # the keys name their N: a run without N = 1 or N = 50 leaves that key empty
    first, fifty = by_n.get(1), by_n.get(50)
    return {
        "load_question_share_ms_1": first["question_share_p95_ms"] if first else None,
        "load_throughput_ratio_50": fifty["throughput_ratio"] if fifty else None,
        "load_lost_writes": lost["lost"],
        "load_leaks": leak["leaks"],
        "load_floor_share_ms_1": first["floor_question_share_p95_ms"] if first else None,
        "load_log_alarms": sum(len(v) for v in alarms.values()),
        "sizes": rows,
        "commands": commands,
        "writes": lost,
        "isolation": leak,
        "log_alarms": {k: v[:20] for k, v in alarms.items()},
    }


def print_table(result: dict[str, Any]) -> None:
    cols = [
        ("n", "N"),
        ("question_p95_ms_without", "q-p95 w/o"),
        ("question_p95_ms_with", "q-p95 with"),
        ("question_p95_ms_floor", "q-p95 floor"),
        ("question_share_p95_ms", "share p95"),
        ("floor_question_share_p95_ms", "floor p95"),
        ("p50_ms_without", "p50 w/o"),
        ("p50_ms_with", "p50 with"),
        ("msgs_per_s_without", "msg/s w/o"),
        ("msgs_per_s_with", "msg/s with"),
        ("throughput_ratio", "ratio"),
        ("floor_throughput_ratio", "floor ratio"),
        ("plugin_rss_mb", "RSS MB"),
        ("plugin_cpu_ms_per_turn", "CPU ms/turn"),
        ("hook_host_calls_per_turn", "host calls"),
        ("hook_ms_p50", "hook ms"),
    ]
    print(" | ".join(label for _, label in cols))
    for row in result["sizes"]:
        print(" | ".join(str(row.get(k)) for k, _ in cols))
    for row in result["sizes"]:
        print(f"N={row['n']} load {row.get('load_avg')} hook breakdown (ms): {row.get('breakdown')}")
    keys = [k for k in result if k.startswith("load_")]
    print(", ".join(f"{k}={result[k]}" for k in keys))
    print(f"commands: {result['commands']}; writes: {result['writes']}; isolation: {result['isolation']}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,10,50", help="concurrent chats per step (default 1,10,50)")
    ap.add_argument("--turns", type=int, default=16, help="turns of the single chat (default 16)")
    ap.add_argument("--turns-10", type=int, default=5, help="turns per chat below N=50 (default 5)")
    ap.add_argument("--turns-50", type=int, default=2, help="turns per chat from N=50 up (bounded; default 2)")
    ap.add_argument("--sequential-1", dest="interleave", action="store_false", help="N=1: one pipeline after the other")
    ap.add_argument("--commands", type=int, default=6, help="commands afterwards, one at a time (default 6)")
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default=None, help="LangBot's database (default sqlite)")
    ap.add_argument("--installed", action="store_true", help="install the .lbpkg instead of debug-attaching")
    ap.add_argument("--plugin-dir", default=None, help="the plugin to measure (default: this repository)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one reply")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.db:
        os.environ["LTM_E2E_DB"] = args.db
    os.environ["LTM_E2E_INSTALL"] = "package" if args.installed else ""
    for key, value in HOST_LIMITS.items():
        os.environ.setdefault(key, value)
    kwargs: dict[str, Any] = {"plugin_dir": args.plugin_dir} if args.plugin_dir else {}
    with Stack(**kwargs) as stack:
        uuids = setup(stack)
        result = asyncio.run(measure(stack, args, uuids))
        result["stack"] = {
            "run_dir": str(stack.run_dir),
            "installed": stack.installed,
            "db": stack.backends.db,
            "vdb": stack.backends.vdb,
            "plugin_dir": str(stack.plugin.path),
            "host_limits": {k: os.environ.get(k) for k in HOST_LIMITS},
        }
        result["args"] = {k: v for k, v in vars(args).items() if k != "out"}
    print_table(result)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
