"""Key-value stores for running without the host: SQLite (persistent) and a dict (tests)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path


def _check(key: str, value: bytes | None = None) -> None:
    if not isinstance(key, str):
        raise TypeError(f"key must be str, got {type(key).__name__}")
    if value is not None and not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"value for {key!r} must be bytes, got {type(value).__name__}")


class MemoryKeyValueStore:
    """A dict. Values are copied in and out."""

    name = "memory"

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}

    async def get(self, key: str) -> bytes | None:
        _check(key)
        return self._data.get(key)

    async def set(self, key: str, value: bytes) -> None:
        _check(key, value)
        self._data[key] = bytes(value)

    async def delete(self, key: str) -> None:
        _check(key)
        self._data.pop(key, None)

    async def keys(self, prefix: str = "") -> list[str]:
        return sorted(k for k in self._data if k.startswith(prefix))


class SqliteKeyValueStore:
    """One table ``kv(key TEXT PRIMARY KEY, value BLOB)`` in WAL mode.

    A single connection serialised by a lock; blocking calls run in a worker thread.
    ``path=":memory:"`` works too (one private in-memory database).
    """

    name = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _run(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    async def get(self, key: str) -> bytes | None:
        _check(key)
        rows = await asyncio.to_thread(self._run, "SELECT value FROM kv WHERE key = ?", (key,))
        return bytes(rows[0][0]) if rows else None

    async def set(self, key: str, value: bytes) -> None:
        _check(key, value)
        await asyncio.to_thread(
            self._run,
            "INSERT INTO kv(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, sqlite3.Binary(bytes(value))),
        )

    async def delete(self, key: str) -> None:
        _check(key)
        await asyncio.to_thread(self._run, "DELETE FROM kv WHERE key = ?", (key,))

    async def keys(self, prefix: str = "") -> list[str]:
        rows = await asyncio.to_thread(
            self._run, "SELECT key FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
        )
        return sorted(r[0] for r in rows)
