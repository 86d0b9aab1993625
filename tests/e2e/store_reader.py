"""Read what LangBot's own stores hold, beside the host's API, for the e2e tests that must see a record
really gone (or really kept apart) on every storage leg (``LTM_E2E_DB`` / ``LTM_E2E_VDB``, e2e/README.md).

- :func:`vector_rows`: every record of LangBot's vector store as ``StoredVector(id, file_id, uuid, text)``,
  read raw: pgvector from its table ``langbot_vectors`` in LangBot's PostgreSQL, Milvus Lite through the
  gRPC server LangBot's process runs on the ``*.db`` (the directory is locked by it), Chroma from its
  ``chroma.sqlite3``. ``None`` for SeekDB (no reader here; those tests fall back to the host's API).
- :func:`plugin_rows`: every plugin-storage value of LangBot's database as text, on SQLite or PostgreSQL.

The record id is the vector id the plugin upserts (the memory's id) on every backend; ``file_id`` and the
chunk ``uuid`` are what the metadata-dropping stores keep beside the text (host reference section 12).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

from e2e.stack import Stack, descendants, wait_for


@dataclasses.dataclass(frozen=True)
class StoredVector:
    id: str
    file_id: str
    uuid: str
    text: str


# Reads every collection of the Milvus Lite server inside LangBot's process: rows, dimension and records.
_MILVUS_PROBE = """
import json, sys
from pymilvus import MilvusClient
for port in sys.argv[1:]:
    try:
        c = MilvusClient(uri=f"http://127.0.0.1:{port}", timeout=3)
        names = c.list_collections()
    except Exception:
        continue
    out = {}
    for name in names:
        c.load_collection(name)
        rows = c.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"]
        dim = next(f["params"]["dim"] for f in c.describe_collection(name)["fields"] if f["name"] == "vector")
        records = c.query(name, filter='id != ""', output_fields=["id", "text", "file_id", "chunk_uuid"], limit=16384)
        out[name] = {
            "rows": rows,
            "dim": dim,
            "texts": [r.get("text") for r in records],
            "records": [
                {"id": r.get("id"), "file_id": r.get("file_id"), "uuid": r.get("chunk_uuid"), "text": r.get("text")}
                for r in records
            ],
        }
    print(json.dumps({"port": port, "collections": out}))
    break
else:
    print(json.dumps({"error": "no Milvus Lite server among " + ",".join(sys.argv[1:])}))
"""


def _listening_ports(pids: list[int]) -> list[str]:
    inodes: set[str] = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        try:
            for fd in fd_dir.iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                ports.append(str(int(cols[1].rsplit(":", 1)[1], 16)))
    return ports


def milvus_state(stack: Stack) -> dict:
    """Rows, dimension, texts and records of every collection in LangBot's own Milvus Lite (a KB's
    physical collection is ``lb_<uuid5>``, vector/mgr.py)."""
    proc = stack.processes["langbot"]
    assert proc.pid
    pids = [proc.pid, *descendants(proc.pid)]
    ports = [p for p in _listening_ports(pids) if p != str(stack.api_port)]
    out = subprocess.run(
        [str(stack.host_venv / "bin" / "python"), "-c", _MILVUS_PROBE, *ports],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no answer from the Milvus probe: {out.stdout[-500:]} {out.stderr[-1500:]}"
    return json.loads(lines[-1])


def _hex_text(value: str) -> str:
    return bytes.fromhex(value).decode("utf-8", "replace") if value else ""


def _pgvector_rows(stack: Stack) -> list[StoredVector]:
    # hex-encoded columns: psql's unaligned output splits on "|" and lines
    sql = (
        "SELECT encode(convert_to(coalesce(vector_id, ''), 'UTF8'), 'hex'), "
        "encode(convert_to(coalesce(file_id, ''), 'UTF8'), 'hex'), "
        "encode(convert_to(coalesce(chunk_uuid, ''), 'UTF8'), 'hex'), "
        "encode(convert_to(coalesce(text, ''), 'UTF8'), 'hex') FROM langbot_vectors"
    )
    return [StoredVector(*(_hex_text(c) for c in row)) for row in stack.db_query(sql) if len(row) == 4]


def _chroma_rows(stack: Stack) -> list[StoredVector]:
    out: list[StoredVector] = []
    for path in sorted(stack.langbot_data_dir.rglob("chroma.sqlite3")):
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            found: dict[int, dict[str, str]] = {}
            for row_id, embedding_id, key, value in conn.execute(
                "SELECT e.id, e.embedding_id, m.key, m.string_value FROM embeddings e "
                "LEFT JOIN embedding_metadata m ON m.id = e.id"
            ):
                entry = found.setdefault(row_id, {"id": embedding_id})
                if key is not None and value is not None:
                    entry[key] = value
        for entry in found.values():
            text = entry.get("text") or entry.get("chroma:document") or ""
            out.append(StoredVector(entry["id"], entry.get("file_id", ""), entry.get("uuid", ""), text))
    return out


def vector_rows(stack: Stack) -> list[StoredVector] | None:
    """Every record in LangBot's vector store, read raw (``None``: no raw reader for this backend)."""
    vdb = stack.backends.vdb
    if vdb == "pgvector":
        return _pgvector_rows(stack)
    if vdb == "milvus":
        state = milvus_state(stack)
        assert "error" not in state, state
        return [StoredVector(**rec) for coll in state["collections"].values() for rec in coll["records"]]
    if vdb == "chroma":
        return _chroma_rows(stack)
    return None


def plugin_rows(stack: Stack) -> str:
    """Every plugin-storage value of LangBot's database (SQLite or PostgreSQL), as text, JSON escapes undone."""
    if stack.backends.db == "postgresql":
        sql = "SELECT encode(value, 'hex') FROM binary_storages WHERE owner_type = 'plugin'"
    else:
        sql = "SELECT hex(value) FROM binary_storages WHERE owner_type = 'plugin'"
    text = "\n".join(_hex_text(r[0]) for r in stack.db_query(sql) if r and r[0])
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)


def stored_until(stack: Stack, needle: str, timeout: float = 15.0) -> bool:
    """Whether ``needle`` shows in LangBot's plugin storage within ``timeout`` seconds (the recall
    snapshot is flushed in the background, 2 s after the last change)."""
    try:
        wait_for(f"{needle!r} in plugin storage", lambda: needle in plugin_rows(stack), timeout, interval=0.5)
    except Exception:  # the caller's assertion says what was expected
        return False
    return True
