"""A local stand-in for the LangBot host around the Memory Console page.

What the real host does (LangBot ``web/src/app/home/plugin-pages/page.tsx`` and
``api/http/controller/groups/plugins.py``), reproduced here on 127.0.0.1:

- ``GET /api/v1/plugins/_sdk/page-sdk.js`` serves the SDK's own bridge script
  (``langbot_plugin/assets/langbot-page-sdk.js``, read from the installed wheel);
- ``GET /api/v1/plugins/<author>/<name>/assets/<path>`` serves plugin files; only ``assets/**`` and
  ``components/pages/**`` resolve (the SDK's ``_resolve_asset_path``), and an HTML file gets the
  host's Content-Security-Policy (the server origin, ``'unsafe-inline'`` for scripts and styles,
  ``img-src`` origin + ``data:``, ``frame-src 'none'``, ``object-src 'none'``);
- the host page fetches the page HTML, rewrites only the page SDK's ``<script src>`` to an absolute
  URL and shows the result from a ``blob:`` URL (the dashboard's ``getAuthenticatedObjectURL``: no
  other relative URL loads) in ``<iframe sandbox="allow-scripts allow-forms">`` (an opaque origin:
  no downloads, no dialogs, no storage), posts ``langbot:context`` {theme, language}
  on load and on change, and answers ``langbot:api`` messages by POSTing
  ``{page_id, endpoint, method, body}`` to ``/api/v1/plugins/<author>/<name>/page-api``;
- ``page-api`` runs the real Page component's ``handle_api``: a PageResponse with ``error`` is an
  HTTP 400 ``{"code": -1, "msg": error}``, any other ``{"code": 0, "data": PageResponse.data}``; the
  dashboard posts that ``data`` back as the ``data`` of ``langbot:api:response``, and a refusal as
  its web client's rejection turned into a string, ``"[object Object]"`` (bridge ``host``, as
  LangBot 4.11.2 does). Bridge ``unwrapped`` is a host that passes the refusal's message on as the
  ``error`` (the SDK rejects with it).

The service lives on its own asyncio loop thread; HTTP handler threads submit coroutines to it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
import re
import threading
from collections.abc import Coroutine
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlencode, urlparse

import langbot_plugin.assets as sdk_assets
from langbot_plugin.api.definition.components.page import PageRequest, PageResponse

from components.pages.console import MemoryConsole
from ltm.service.consolidation import Consolidator
from tests.support.console.seed import consolidation_settings

log = logging.getLogger(__name__)
T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[3]
SDK_JS = Path(sdk_assets.__file__).resolve().parent / "langbot-page-sdk.js"
AUTHOR, PLUGIN, PAGE_ID = "tester", "LongTermMemory", "console"
PAGE_PATH = "components/pages/console.html"
HOST_SANDBOX = "allow-scripts allow-forms"


HOST_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>LangBot host stand-in</title>
<style>html,body{margin:0;height:100%;background:#888}iframe{display:block;width:100vw;height:100vh;border:0}</style>
</head><body>
<iframe id="plugin" sandbox="__SANDBOX__" title="plugin page"></iframe>
<script>
(function () {
  var frame = document.getElementById('plugin');
  // Like the dashboard's getAuthenticatedObjectURL: fetch the page, make only the page SDK's tag
  // absolute, and show the result from a blob: URL (so any other relative URL cannot load).
  fetch('__SRC__').then(function (r) { return r.text(); }).then(function (html) {
    html = html.split('<script src="/api/v1/plugins/_sdk/page-sdk.js">')
      .join('<script src="' + location.origin + '/api/v1/plugins/_sdk/page-sdk.js">');
    frame.src = URL.createObjectURL(new Blob([html], { type: 'text/html' }));
  });
  var ctx = { theme: '__THEME__', language: '__LANGUAGE__' };
  var loaded = false;
  var BRIDGE = '__BRIDGE__';
  window.__apiCalls = [];
  function sendContext() {
    if (!frame.contentWindow) return;
    frame.contentWindow.postMessage({ type: 'langbot:context', theme: ctx.theme, language: ctx.language }, '*');
  }
  frame.addEventListener('load', function () { loaded = true; sendContext(); });
  window.lbSetContext = function (theme, language) {
    if (theme) ctx.theme = theme;
    if (language) ctx.language = language;
    if (loaded) sendContext();
  };
  window.addEventListener('message', function (event) {
    if (event.source !== frame.contentWindow) return;
    var data = event.data;
    if (!data || typeof data !== 'object' || data.type !== 'langbot:api') return;
    var requestId = data.requestId, endpoint = data.endpoint;
    if (typeof requestId !== 'string' || typeof endpoint !== 'string') return;
    if (endpoint.charAt(0) !== '/' || endpoint.indexOf('..') !== -1) return;
    var method = typeof data.method === 'string' ? data.method.toUpperCase() : 'POST';
    if (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].indexOf(method) === -1) return;
    window.__apiCalls.push({ endpoint: endpoint, method: method, body: data.body });
    fetch('__API__', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ page_id: '__PAGE_ID__', endpoint: endpoint, method: method, body: data.body })
    }).then(function (r) {
      return r.json().then(function (reply) { return { ok: r.ok, reply: reply }; });
    }).then(function (res) {
      // 'host' (LangBot 4.11.2): the envelope's data is posted as data; a refusal (HTTP 400) is
      // posted as the web client's rejection stringified, '[object Object]': its message is lost.
      // 'unwrapped': a host that passes the refusal's message on as the error.
      var msg = { type: 'langbot:api:response', requestId: requestId };
      if (res.ok) msg.data = res.reply.data;
      else if (BRIDGE === 'unwrapped') msg.error = String(res.reply.msg);
      else msg.error = String({ code: res.reply.code, msg: res.reply.msg });
      frame.contentWindow.postMessage(msg, '*');
    }).catch(function (err) {
      frame.contentWindow.postMessage({ type: 'langbot:api:response', requestId: requestId, error: String(err) }, '*');
    });
  });
})();
</script>
</body></html>
"""


def resolve_asset(rel: str) -> Path | None:
    """The SDK's ``_resolve_asset_path``: only ``assets/**`` and ``components/pages/**``."""
    requested = Path(rel)
    if requested.is_absolute() or not requested.parts:
        return None
    candidate = ROOT / requested if requested.parts[0] in {"assets", "components"} else ROOT / "assets" / requested
    resolved = candidate.resolve()
    if not resolved.is_file():
        return None
    try:
        relative = resolved.relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[:1] == ("assets",) or relative.parts[:2] == ("components", "pages"):
        return resolved
    return None


class ConsoleServer:
    """``with ConsoleServer(make_service) as srv: srv.url(...)``; ``srv.run(coro)`` runs on the service loop."""

    def __init__(self, service_factory: Any) -> None:
        self._factory = service_factory
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="console-service", daemon=True)
        self.seeded: Any = None
        self.service: Any = None
        self.page: MemoryConsole | None = None
        self.requests: list[str] = []  # every path the browser asked for
        self.api_log: list[dict[str, Any]] = []
        self.httpd: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> ConsoleServer:
        self._loop_thread.start()
        self.seeded = self.run(self._factory())
        self.service = getattr(self.seeded, "service", self.seeded)
        page = MemoryConsole()
        review = getattr(self.seeded, "review", None)
        consolidator = getattr(self.seeded, "consolidator", None)
        if consolidator is None:  # the plugin's has one (main.py); archive-only (no model), enabled, unjoined
            consolidator = Consolidator(self.service, None, settings=consolidation_settings)
        page.plugin = SimpleNamespace(  # type: ignore[assignment]
            service=self.service, review=review, consolidator=consolidator
        )
        self.page = page
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.httpd.daemon_threads = True
        self._http_thread = threading.Thread(target=self.httpd.serve_forever, name="console-http", daemon=True)
        self._http_thread.start()
        log.info("console stand-in host on %s", self.origin)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(timeout=5)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    # -- URLs -------------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        assert self.httpd is not None
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def host_url(
        self, *, theme: str = "light", language: str = "en-US", sandbox: str = HOST_SANDBOX, bridge: str = "host"
    ) -> str:
        query = {"theme": theme, "language": language, "sandbox": sandbox, "bridge": bridge}
        return f"{self.origin}/host.html?" + urlencode(query)

    @property
    def page_url(self) -> str:
        return f"{self.origin}/api/v1/plugins/{AUTHOR}/{PLUGIN}/assets/{PAGE_PATH}"

    # -- HTTP -------------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug("http: " + fmt, *args)

            def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Access-Control-Allow-Origin", "*")  # the sandboxed page has a null origin
                self.send_header("Cache-Control", "no-store")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                url = urlparse(self.path)
                path = unquote(url.path)
                server.requests.append(path)
                if path == "/host.html":
                    q = {k: v[0] for k, v in parse_qs(url.query).items()}
                    html = (
                        HOST_HTML.replace("__SANDBOX__", q.get("sandbox", HOST_SANDBOX).replace('"', ""))
                        .replace("__SRC__", f"/api/v1/plugins/{AUTHOR}/{PLUGIN}/assets/{PAGE_PATH}")
                        .replace("__THEME__", "dark" if q.get("theme") == "dark" else "light")
                        .replace("__LANGUAGE__", _language_tag(q.get("language", "")))
                        .replace("__API__", f"/api/v1/plugins/{AUTHOR}/{PLUGIN}/page-api")
                        .replace("__PAGE_ID__", PAGE_ID)
                        .replace("__BRIDGE__", "unwrapped" if q.get("bridge") == "unwrapped" else "host")
                    )
                    self._send(200, html.encode(), "text/html; charset=utf-8")
                    return
                if path == "/favicon.ico":
                    self._send(204, b"", "image/x-icon")
                    return
                if path == "/api/v1/plugins/_sdk/page-sdk.js":
                    self._send(200, SDK_JS.read_bytes(), "application/javascript")
                    return
                prefix = f"/api/v1/plugins/{AUTHOR}/{PLUGIN}/assets/"
                if path.startswith(prefix):
                    file = resolve_asset(path[len(prefix) :])
                    if file is None:
                        self._send(404, b"Asset not found", "text/plain")
                        return
                    mime = mimetypes.guess_type(str(file))[0] or "application/octet-stream"
                    headers = {}
                    if mime.startswith("text/html"):
                        o = server.origin
                        headers["Content-Security-Policy"] = (
                            f"default-src {o}; script-src {o} 'unsafe-inline'; style-src {o} 'unsafe-inline'; "
                            f"img-src {o} data:; connect-src {o}; frame-src 'none'; object-src 'none'"
                        )
                    self._send(200, file.read_bytes(), mime, headers)
                    return
                self._send(404, b"not found", "text/plain")

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                path = urlparse(self.path).path
                server.requests.append(path)
                if path != f"/api/v1/plugins/{AUTHOR}/{PLUGIN}/page-api":
                    self._send(404, b"not found", "text/plain")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    data = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, b'{"code":-1,"msg":"bad json"}', "application/json")
                    return
                server.api_log.append(data)
                if data.get("page_id") != PAGE_ID:
                    resp = PageResponse.fail(f"Page '{data.get('page_id')}' not found")
                else:
                    request = PageRequest(
                        endpoint=data.get("endpoint", ""), method=data.get("method", "POST"), body=data.get("body")
                    )
                    assert server.page is not None
                    resp = server.run(server.page.handle_api(request))
                    if not isinstance(resp, PageResponse):
                        resp = PageResponse.ok(resp)
                if resp.error:  # LangBot 4.11.2: a failed PageResponse is an HTTP 400 with the message
                    body = json.dumps({"code": -1, "msg": resp.error}, ensure_ascii=False).encode("utf-8")
                    self._send(400, body, "application/json")
                    return
                body = json.dumps({"code": 0, "data": resp.data, "msg": "ok"}, ensure_ascii=False).encode("utf-8")
                self._send(200, body, "application/json")

        return Handler


def _language_tag(value: str) -> str:
    """A BCP-47-looking tag as the dashboard sends it (``ja-JP``, ``zh-Hant``); anything else is en-US."""
    return value if re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}", value) else "en-US"
