"""Move all memory of a LangBot installation: the scriptable twin of the console's Backup / Restore.

It drives the same page API the Memory Console calls, with the operator's LangBot login, so the
same policy (the operator only), audit and write engine apply::

    python -m pages.move_cli backup  --url http://old-langbot:5300 --user admin@x --password ... --out memory.jsonl
    python -m pages.move_cli restore --url http://new-langbot:5300 --user admin@x --password ... --in memory.jsonl \\
        [--kb-map <old kb uuid>=<new kb uuid>] [--chunk 200]

(``--token`` instead of ``--user``/``--password`` takes a LangBot JWT; ``LANGBOT_PASSWORD`` is read
when ``--password`` is not given.) ``restore`` checks the whole file first (digest and counts:
nothing is written when it does not match), writes it chunk by chunk, then reads every record back
and compares the counts with the file's. Running it again after an interruption resumes: what is
already there is skipped. The exit status is 0 only when every record was read back.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("ltm.move")

PLUGIN = "ltm-team/LongTermMemory"
PAGE = "console"
Call = Callable[[str, dict[str, Any]], Any]
KINDS = ("episode", "kv", "audit")
# Records per page API call: LangBot gives a page API call 30 s, and a chunk's rows are embedded
# and written through the host within it (8-30 s for 50 on a busy 2-core machine with pgvector).
CHUNK = 25
RETRIES = 3


class MoveError(RuntimeError):
    """A refusal of the page API or of the checks here."""


def fetch_backup(call: Call) -> list[str]:
    """Every line of the installation's ``ltm-backup/1`` document (the page API's parts joined)."""
    first = call("/backup", {})
    lines = list(first["lines"])
    for part in range(1, int(first["parts"])):
        lines += call("/backup", {"backup_id": first["backup_id"], "part": part})["lines"]
    if len(lines) != int(first["total_lines"]) or lines[-1] != first["trailer"]:
        raise MoveError("the backup arrived incomplete")
    return lines


def _sum(into: dict[str, int], add: dict[str, int]) -> None:
    for k, v in add.items():
        into[k] = into.get(k, 0) + int(v)


def _again(call: Call, endpoint: str, body: dict[str, Any]) -> Any:
    """One chunk, sent again when the call failed on the way (a host timeout, a lost connection):
    a restore is idempotent by record id, so what the first try wrote is skipped. A refusal of the
    plugin (:class:`MoveError`) is not retried."""
    for attempt in range(RETRIES):
        try:
            return call(endpoint, body)
        except MoveError:
            raise
        except Exception as exc:  # noqa: BLE001 - the transport's errors differ by client
            if attempt == RETRIES - 1:
                raise
            log.warning("%s failed (%s); sending the chunk again", endpoint, exc)
            time.sleep(5.0 * (attempt + 1))
    raise AssertionError("unreachable")


def restore_lines(
    call: Call,
    lines: Sequence[str],
    kb_map: dict[str, str] | None = None,
    chunk: int = CHUNK,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Check, restore and verify a whole document; returns the summary (``ok`` when every record
    was read back and the counts match the file's trailer)."""
    lines = [x for x in lines if x.strip()]
    if len(lines) < 2:
        raise MoveError("not an ltm-backup/1 file")
    header, body, trailer = lines[0], lines[1:-1], lines[-1]
    recs = [json.loads(x) for x in body]
    call(
        "/restore/check",
        {
            "header": header,
            "trailer": trailer,
            "shas": [r.get("sha") for r in recs],
            "kinds": [r.get("k") for r in recs],
        },
    )
    expected = json.loads(trailer)["counts"]
    written: dict[str, int] = {}
    skipped: dict[str, int] = {}
    verified: dict[str, int] = {}
    conflicts = missing = differing = 0
    gate = dict.fromkeys(("gated", "redacted", "refused", "flagged"), 0)  # what the content gate did
    started = time.monotonic()
    for i in range(0, len(body), chunk):
        r = _again(call, "/restore", {"lines": [header, *body[i : i + chunk]], "kb_map": kb_map or {}})
        _sum(written, r["written"])
        _sum(skipped, r["skipped"])
        conflicts += int(r["conflict_count"])
        for k in gate:
            gate[k] += int(r.get(k, 0))
        if progress:
            progress("restore", min(i + chunk, len(body)), len(body))
    restore_s = time.monotonic() - started
    started = time.monotonic()
    for i in range(0, len(body), chunk):
        r = _again(call, "/restore", {"lines": [header, *body[i : i + chunk]], "kb_map": kb_map or {}, "verify": True})
        _sum(verified, r["verified"])
        missing += int(r["missing_count"])
        differing += int(r["differing_count"])
        if progress:
            progress("verify", min(i + chunk, len(body)), len(body))
    verify_s = time.monotonic() - started
    ok = not missing and not differing and all(verified.get(k, 0) == int(expected.get(k, 0)) for k in KINDS)
    return {
        "ok": ok,
        "expected": expected,
        "written": written,
        "skipped": skipped,
        "verified": verified,
        "conflicts": conflicts,
        "missing": missing,
        "differing": differing,
        **gate,
        "restore_s": round(restore_s, 3),
        "verify_s": round(verify_s, 3),
    }


class PageApi:
    """The page API of one LangBot, as its logged-in operator (stdlib HTTP only)."""

    def __init__(self, url: str, token: str, workspace: str = "", plugin: str = PLUGIN, timeout: float = 300.0) -> None:
        self.base = url.rstrip("/") + "/api/v1"
        self.token, self.plugin, self.timeout = token, plugin, timeout
        self.workspace = workspace or self._get("/workspaces", workspace=False)["workspaces"][0]["uuid"]

    @classmethod
    def login(cls, url: str, user: str, password: str, plugin: str = PLUGIN) -> PageApi:
        probe = cls.__new__(cls)
        probe.base, probe.token, probe.timeout = url.rstrip("/") + "/api/v1", "", 60.0
        token = probe._request("POST", "/user/auth", {"user": user, "password": password}, workspace=False)["token"]
        return cls(url, token, plugin=plugin)

    def _get(self, path: str, workspace: bool = True) -> Any:
        return self._request("GET", path, None, workspace=workspace)

    def _request(self, method: str, path: str, body: Any, workspace: bool = True) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if workspace:
            headers["X-Workspace-Id"] = self.workspace
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the operator's URL
            payload = json.loads(resp.read().decode("utf-8"))
        if payload.get("code") not in (0, None):
            raise MoveError(f"{path}: {payload.get('msg')}")
        return payload.get("data")

    def __call__(self, endpoint: str, body: dict[str, Any]) -> Any:
        author, name = self.plugin.split("/", 1)
        data = self._request(
            "POST",
            f"/plugins/{author}/{name}/page-api",
            {"page_id": PAGE, "endpoint": endpoint, "method": "POST", "body": body},
        )
        if isinstance(data, dict) and set(data) == {"data", "error"}:
            if data["error"]:
                raise MoveError(f"{endpoint}: {data['error']}")
            return data["data"]
        return data


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pages.move_cli", description=__doc__.split("\n\n")[0])
    ap.add_argument("verb", choices=("backup", "restore"))
    ap.add_argument("--url", required=True, help="the LangBot web address, e.g. http://127.0.0.1:5300")
    ap.add_argument("--user", default="")
    ap.add_argument("--password", default="")
    ap.add_argument("--token", default=os.environ.get("LANGBOT_TOKEN", ""))
    ap.add_argument("--plugin", default=PLUGIN, help="author/name of the plugin")
    ap.add_argument("--out", type=Path, help="backup: the file to write")
    ap.add_argument("--in", dest="src", type=Path, help="restore: the file to read")
    ap.add_argument("--kb-map", action="append", default=[], help="<source kb>=<target kb> (repeatable)")
    ap.add_argument("--chunk", type=int, default=CHUNK)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if a.token:
        api = PageApi(a.url, a.token, plugin=a.plugin)
    else:
        api = PageApi.login(a.url, a.user, a.password or os.environ.get("LANGBOT_PASSWORD", ""), a.plugin)
    if a.verb == "backup":
        if a.out is None:
            ap.error("backup needs --out")
        lines = fetch_backup(api)
        a.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        log.info("wrote %s: %s", a.out, json.loads(lines[-1])["counts"])
        return 0
    if a.src is None:
        ap.error("restore needs --in")
    kb_map = dict(m.split("=", 1) for m in a.kb_map if "=" in m)
    summary = restore_lines(
        api,
        a.src.read_text(encoding="utf-8").splitlines(),
        kb_map,
        a.chunk,
        lambda what, done, total: log.info("%s %d/%d", what, done, total),
    )
    log.info("%s", json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
