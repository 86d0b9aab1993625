"""A scripted, OpenAI-compatible stand-in model server for the end-to-end stack (stdlib only).

Routes (all under ``/v1``):

- ``POST /v1/chat/completions``: deterministic and scripted. A consolidation request (records
  between ``<SOURCES_JSON>`` markers) is answered with a summary joining the records' texts that
  cites every record. Otherwise, when the latest user message contains
  one or more ``CALLTOOL:<name>:<json object>`` directives, tools are offered and the last message
  is not a tool result, the reply is those tool calls (only for tools that are offered). A plain
  statement about the user or the group becomes a ``remember`` call, and a question is answered
  from the injected memory block first (``e2e.demo_assistant``). The reply then echoes what the
  model saw (last user text, message counts, tools offered, this turn's tool results), so a chat
  transcript shows the round trip. ``stream: true`` is answered as
  server-sent events.
- ``POST /v1/embeddings``: the real offline MiniLM embedder of this repository
  (``ltm.adapters.embedders.LocalMiniLMEmbedder``, 384-d, L2-normalised) so recall is semantic.
  ``--embedder hash`` (or ``auto`` while the module is missing) uses a 384-d hashing stand-in.
- ``GET /v1/models``, ``GET /health``.

Every request body is appended as one JSON line ``{"ts", "path", "body"}`` to ``--log``, so tests can
assert on the exact prompt the model received.

Run: ``python -m e2e.fake_openai --port 0 --log requests.jsonl --ready-file ready.json``; the ready
file receives ``{"port", "embedder", "pid"}`` once the socket listens.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import logging
import math
import os
import re
import struct
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from e2e.demo_assistant import answer_from_memory, is_question, memory_block, statement_to_remember

logger = logging.getLogger("e2e.fake_openai")

CALLTOOL_RE = re.compile(r"CALLTOOL:([A-Za-z0-9_.\-]+):")
EMBEDDING_DIM = 384
ECHO_PREFIX = "[fake-llm]"
_MAX_ECHO_FIELD = 600


# --------------------------------------------------------------------------------------------
# Pure helpers (unit-testable without a socket)
# --------------------------------------------------------------------------------------------


def message_text(message: dict[str, Any]) -> str:
    """The text of an OpenAI chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def parse_calltool_directives(text: str) -> list[tuple[str, dict[str, Any]]]:
    """All ``CALLTOOL:<name>:<json object>`` directives in ``text``, in order. Malformed JSON is skipped."""
    decoder = json.JSONDecoder()
    found: list[tuple[str, dict[str, Any]]] = []
    for match in CALLTOOL_RE.finditer(text):
        try:
            args, _ = decoder.raw_decode(text, match.end())
        except json.JSONDecodeError:
            continue
        if isinstance(args, dict):
            found.append((match.group(1), args))
    return found


def offered_tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


def _clip(text: str, limit: int = _MAX_ECHO_FIELD) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


SOURCES_RE = re.compile(r"<SOURCES_JSON>\s*(.*?)\s*</SOURCES_JSON>", re.S)


def summary_reply(user_text: str) -> str | None:
    """A consolidation request (records between ``<SOURCES_JSON>`` markers): the plugin's answer
    contract, ``{"summary", "cited_ids"}``, citing every record; the summary joins their texts."""
    match = SOURCES_RE.search(user_text)
    if not match:
        return None
    try:
        records = [r for r in json.loads(match.group(1)) if isinstance(r, dict)]
    except ValueError:
        return None
    summary = "; ".join(str(r.get("text") or "").strip().rstrip(".") for r in records)[:1000]
    return json.dumps({"summary": summary, "cited_ids": [str(r.get("id")) for r in records]}, ensure_ascii=False)


def plan_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message (OpenAI shape) for a chat-completions request body."""
    messages: list[dict[str, Any]] = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    offered = offered_tool_names(body)
    last_user_idx = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_text = message_text(messages[last_user_idx]) if last_user_idx >= 0 else ""
    last_is_tool = bool(messages) and messages[-1].get("role") == "tool"
    summary = summary_reply(user_text)
    if summary is not None:
        return {"role": "assistant", "content": summary}

    directives = parse_calltool_directives(user_text)
    not_offered = [name for name, _ in directives if name not in offered]
    calls = [(name, args) for name, args in directives if name in offered]
    statement = statement_to_remember(user_text)
    if not directives and statement and "remember" in offered:
        calls = [("remember", {"content": statement})]
    if calls and not last_is_tool:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                }
                for name, args in calls
            ],
        }

    counts: dict[str, int] = {}
    for m in messages:
        role = str(m.get("role"))
        counts[role] = counts.get(role, 0) + 1
    lines = []
    answer = answer_from_memory(user_text, memory_block(messages)) if is_question(user_text) else None
    if answer:
        lines.append(answer)
    elif last_is_tool and statement:
        lines.append("好的，我记住了。" if re.search(r"[\u3400-\u9fff]", user_text) else "Noted: I will remember that.")
    lines.append(f"{ECHO_PREFIX} user: {_clip(user_text)}")
    lines.append(
        f"{ECHO_PREFIX} saw {len(messages)} messages ("
        + ", ".join(f"{role} {n}" for role, n in sorted(counts.items()))
        + f"); tools offered: {', '.join(sorted(offered)) or 'none'}"
    )
    names_by_id: dict[str, str] = {}
    for m in messages[last_user_idx + 1 :]:
        for call in m.get("tool_calls") or []:
            names_by_id[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
    for m in messages[last_user_idx + 1 :]:
        if m.get("role") == "tool":
            name = names_by_id.get(str(m.get("tool_call_id")), "?")
            lines.append(f"{ECHO_PREFIX} tool result {name}: {_clip(message_text(m))}")
    if not_offered:
        lines.append(f"{ECHO_PREFIX} not offered, not called: {', '.join(not_offered)}")
    return {"role": "assistant", "content": "\n".join(lines)}


def hash_embed(texts: Sequence[str], dim: int = EMBEDDING_DIM) -> list[list[float]]:
    """Deterministic bag-of-words hashing vectors (L2-normalised). Lexical only: a stand-in."""
    out = []
    for text in texts:
        vec = [0.0] * dim
        for token in re.findall(r"\w+", text.lower()):
            digest = hashlib.sha256(token.encode()).digest()
            idx = int.from_bytes(digest[:4], "little") % dim
            vec[idx] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------


class Embedding:
    """Runs the (async) embedder on a private event loop so the threaded HTTP server can call it."""

    def __init__(self, mode: str) -> None:
        self.name = "hash"
        self._embedder: Any = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="embedder-loop", daemon=True)
        self._thread.start()
        if mode in ("auto", "minilm"):
            try:
                from ltm.adapters.embedders import LocalMiniLMEmbedder
            except ImportError as exc:
                if mode == "minilm":
                    raise
                logger.warning("LocalMiniLMEmbedder unavailable (%s): using the hashing stand-in", exc)
            else:
                self._embedder = LocalMiniLMEmbedder()
                self.name = "minilm"
                self.embed(["warm up"])  # load the model before we report ready

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._embedder is None:
            return hash_embed(texts)
        future = asyncio.run_coroutine_threadsafe(self._embedder.embed(list(texts)), self._loop)
        return [list(map(float, v)) for v in future.result(timeout=120)]


class RequestLog:
    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def write(self, path: str, body: Any) -> None:
        if not self._path:
            return
        line = json.dumps({"ts": time.time(), "path": path, "body": body}, ensure_ascii=False)
        with self._lock, open(self._path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def _usage(prompt: Any, completion: Any) -> dict[str, int]:
    p = max(1, len(json.dumps(prompt, ensure_ascii=False)) // 4)
    c = max(1, len(json.dumps(completion, ensure_ascii=False)) // 4)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def make_handler(embedding: Embedding, log: RequestLog) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "fake-openai/1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            logger.debug("%s " + format, self.address_string(), *args)

        # -- plumbing ------------------------------------------------------------------------
        def _send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw or b"{}")
            except json.JSONDecodeError:
                return {"_unparsed": raw.decode(errors="replace")}

        def _route(self) -> str:
            path = self.path.split("?", 1)[0].rstrip("/")
            return path[3:] if path.startswith("/v1") else path

        # -- verbs ---------------------------------------------------------------------------
        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            route = self._route()
            if route == "/models":
                created = int(time.time())
                self._send_json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": mid, "object": "model", "created": created, "owned_by": "fake"}
                            for mid in ("fake-llm", "fake-embedding")
                        ],
                    },
                )
            elif route == "/health":
                self._send_json(200, {"ok": True, "embedder": embedding.name, "dim": EMBEDDING_DIM})
            else:
                self._send_json(404, {"error": {"message": f"unknown route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            route = self._route()
            body = self._read_body()
            log.write(route, body)
            try:
                if route == "/chat/completions":
                    self._chat(body)
                elif route == "/embeddings":
                    self._embeddings(body)
                else:
                    self._send_json(404, {"error": {"message": f"unknown route {self.path}"}})
            except Exception as exc:  # a broken request must not kill the server
                logger.exception("request %s failed", route)
                self._send_json(500, {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}})

        def _chat(self, body: dict[str, Any]) -> None:
            message = plan_reply(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            model = body.get("model") or "fake-llm"
            cid = f"chatcmpl-{uuid.uuid4().hex[:16]}"
            created = int(time.time())
            usage = _usage(body.get("messages"), message)
            if not body.get("stream"):
                self._send_json(
                    200,
                    {
                        "id": cid,
                        "object": "chat.completion",
                        "created": created,
                        "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage,
                    },
                )
                return
            delta: dict[str, Any] = {"role": "assistant"}
            if message.get("tool_calls"):
                delta["content"] = None
                delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
            else:
                delta["content"] = message["content"]
            chunks: list[dict[str, Any]] = [
                {"index": 0, "delta": delta, "finish_reason": None},
                {"index": 0, "delta": {}, "finish_reason": finish},
            ]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
            for choice in chunks:
                self.wfile.write(f"data: {json.dumps(dict(base, choices=[choice]))}\n\n".encode())
            if (body.get("stream_options") or {}).get("include_usage"):
                self.wfile.write(f"data: {json.dumps(dict(base, choices=[], usage=usage))}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _embeddings(self, body: dict[str, Any]) -> None:
            raw = body.get("input")
            texts = [raw] if isinstance(raw, str) else [str(t) for t in raw or []]
            vectors = embedding.embed(texts)
            as_base64 = body.get("encoding_format") == "base64"
            data = []
            for i, vec in enumerate(vectors):
                value: Any = vec
                if as_base64:
                    value = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
                data.append({"object": "embedding", "index": i, "embedding": value})
            tokens = sum(max(1, len(t) // 4) for t in texts)
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model") or "fake-embedding",
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

    return Handler


def serve(
    host: str,
    port: int,
    log_path: str | None,
    embedder: str,
    on_ready: Callable[[int, str], None] | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT."""
    embedding = Embedding(embedder)
    server = ThreadingHTTPServer((host, port), make_handler(embedding, RequestLog(log_path)))
    server.daemon_threads = True
    actual_port = server.server_address[1]
    logger.info("fake OpenAI listening on http://%s:%d/v1 (embedder=%s)", host, actual_port, embedding.name)
    if on_ready:
        on_ready(actual_port, embedding.name)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = any free port (see --ready-file)")
    parser.add_argument("--log", default=None, help="append every request body here as JSONL")
    parser.add_argument("--ready-file", default=None, help='write {"port", "embedder", "pid"} here when listening')
    parser.add_argument("--embedder", choices=["auto", "minilm", "hash"], default="auto")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s fake-openai %(levelname)s %(message)s")

    import signal

    def _stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)

    def on_ready(port: int, embedder_name: str) -> None:
        if args.ready_file:
            tmp = args.ready_file + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"port": port, "embedder": embedder_name, "pid": os.getpid()}, fh)
            os.replace(tmp, args.ready_file)

    try:
        serve(args.host, args.port, args.log, args.embedder, on_ready)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
