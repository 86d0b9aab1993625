"""The scoped audit log: append is O(chunk), paging reads only the chunks it shows.

One log per memory: per knowledge base and user key (``log`` =
:func:`ltm.domain.storage_keys.audit_log_key`, ``<kb>/<user_key>``). Layout in the key-value store:
``audit/<log>/head`` -> ``{"seq": n}``; ``audit/<log>/c/<k>`` -> up to ``CHUNK`` entries with ``seq``
in ``[k*CHUNK + 1, (k+1)*CHUNK]``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..domain.audience import audience_of_key, may_read
from ..domain.scope import Scope
from ..domain.storage_keys import AUDIT_PREFIX, audit_log_key, parse_storage_key
from ..domain.text import MAX_REASON
from ..ports import KeyValueStore

CHUNK = 50
MAX_SUMMARY = 300


@dataclass
class AuditEntry:
    seq: int
    at: str
    operation: str
    targets: list[str]
    scope_key: str
    user_key: str
    sender: str
    surface: str
    query_id: int | None = None
    summary: str = ""
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    collection: str = ""  # the memory knowledge base ("" for a scope without one)
    operator: str = ""  # the console's operator who did it ("" for a chat surface)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PREFIX = AUDIT_PREFIX


def _key(log: str, part: str) -> str:
    return f"{PREFIX}{log}/{part}"


def _is_head(key: str) -> bool:
    parsed = parse_storage_key(key)
    return parsed is not None and parsed.layout == "audit" and parsed.tail == "head"


class AuditLog:
    def __init__(self, kv: KeyValueStore) -> None:
        self._kv = kv
        self._heads: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def _head(self, log: str) -> int:
        """The last sequence number. The chunk is the source of truth: an entry whose chunk was
        written but whose head update was lost (a crash between the two writes) is adopted, so it
        is neither hidden, duplicated by recovery, nor overwritten by the next append."""
        if log in self._heads:
            return self._heads[log]
        raw = await self._kv.get(_key(log, "head"))
        seq = int(json.loads(raw)["seq"]) if raw else 0
        chunk = await self._kv.get(_key(log, f"c/{seq // CHUNK}"))
        if chunk:
            seq = max([seq, *(int(e.get("seq", 0)) for e in json.loads(chunk))])
        self._heads[log] = seq
        return seq

    async def append(self, log: str, entry: AuditEntry) -> AuditEntry:
        """Assign the next ``seq`` of ``log`` and store the entry. Appends to one log are serialized
        here: L1 and L2 writers of the same scope hold different write locks but share the log."""
        lock = self._locks.setdefault(log, asyncio.Lock())
        async with lock:
            return await self._append(log, entry)

    async def _append(self, log: str, entry: AuditEntry) -> AuditEntry:
        seq = await self._head(log) + 1
        entry.seq = seq
        entry.summary = entry.summary[:MAX_SUMMARY]
        entry.reason = (entry.reason or "")[:MAX_REASON]
        chunk_no = (seq - 1) // CHUNK
        ckey = _key(log, f"c/{chunk_no}")
        try:
            raw = await self._kv.get(ckey)
            items: list[dict[str, Any]] = [e for e in (json.loads(raw) if raw else []) if int(e.get("seq", 0)) < seq]
            items.append(entry.to_dict())
            await self._kv.set(ckey, json.dumps(items, ensure_ascii=False).encode("utf-8"))
            await self._kv.set(_key(log, "head"), json.dumps({"seq": seq}).encode())
        except BaseException:
            self._heads.pop(log, None)  # re-read (and adopt what was written) next time
            raise
        self._heads[log] = seq
        return entry

    async def count(self, log: str) -> int:
        return await self._head(log)

    async def page(self, log: str, page: int = 1, page_size: int = 10) -> tuple[list[dict[str, Any]], int]:
        """Newest first. Returns (entries, total)."""
        total = await self._head(log)
        page = max(1, page)
        hi = total - (page - 1) * page_size  # highest seq on this page
        lo = max(1, hi - page_size + 1)
        if hi < 1:
            return [], total
        out: list[dict[str, Any]] = []
        for chunk_no in range((hi - 1) // CHUNK, (lo - 1) // CHUNK - 1, -1):
            raw = await self._kv.get(_key(log, f"c/{chunk_no}"))
            items = json.loads(raw) if raw else []
            out.extend(e for e in reversed(items) if lo <= e["seq"] <= hi)
        return out, total

    async def logs(self) -> list[str]:
        """The key of every log that holds an entry (its head is written with its first entry)."""
        head = "/head"
        return [k[len(PREFIX) : -len(head)] for k in await self._kv.keys(PREFIX) if _is_head(k)]

    async def export(self, log: str) -> list[dict[str, Any]]:
        total = await self._head(log)
        out: list[dict[str, Any]] = []
        for chunk_no in range(0, (total - 1) // CHUNK + 1 if total else 0):
            raw = await self._kv.get(_key(log, f"c/{chunk_no}"))
            out.extend(json.loads(raw) if raw else [])
        return out

    async def scrub_sender(self, log: str, sender: str) -> int:
        """A person's erasure: the entries they caused keep their event (number, time, operation,
        ids, counts) but lose the free text they gave (the reason). Returns how many changed."""
        if not sender:
            return 0
        lock = self._locks.setdefault(log, asyncio.Lock())
        changed = 0
        async with lock:
            total = await self._head(log)
            for chunk_no in range(0, (total - 1) // CHUNK + 1 if total else 0):
                ckey = _key(log, f"c/{chunk_no}")
                raw = await self._kv.get(ckey)
                items = json.loads(raw) if raw else []
                hit = [e for e in items if e.get("sender") == sender and e.get("reason")]
                for e in hit:
                    e["reason"] = ""
                if hit:
                    await self._kv.set(ckey, json.dumps(items, ensure_ascii=False).encode("utf-8"))
                    changed += len(hit)
        return changed

    async def drop_before(self, log: str, cutoff: str) -> int:
        """Retention (``audit_retention_days``): delete the whole chunks of ``log`` whose newest
        entry is older than ``cutoff`` (ISO-8601 UTC, compared as text like every stored time);
        the head and the newest chunk stay, so numbering goes on. Returns the entries dropped."""
        lock = self._locks.setdefault(log, asyncio.Lock())
        dropped = 0
        async with lock:
            total = await self._head(log)
            last = (total - 1) // CHUNK if total else -1
            for chunk_no in range(0, last):  # never the newest chunk
                ckey = _key(log, f"c/{chunk_no}")
                raw = await self._kv.get(ckey)
                items = json.loads(raw) if raw else []
                if items and max(str(e.get("at") or "") for e in items) < cutoff:
                    await self._kv.delete(ckey)
                    dropped += len(items)
        return dropped

    # The log of a scope: one per memory knowledge base and user key (never shared by two KBs).
    async def scope_count(self, scope: Scope) -> int:
        return await self.count(audit_log_key(scope))

    async def scope_page(self, scope: Scope, page: int = 1, page_size: int = 10) -> tuple[list[dict[str, Any]], int]:
        """Newest first: (entries, total). Entries of what was done in a chat this reader may not
        read (another person's private chat, ``bot`` isolation) keep only their number, time and
        operation (``redacted``), so paging and totals stay the log's own."""
        entries, total = await self.page(audit_log_key(scope), page, page_size)
        return [readable_entry(scope, e) for e in entries], total

    async def scope_export(self, scope: Scope) -> list[dict[str, Any]]:
        return [readable_entry(scope, e) for e in await self.export(audit_log_key(scope))]


def readable_entry(scope: Scope, entry: dict[str, Any]) -> dict[str, Any]:
    """An audit entry as the read rule lets ``scope`` see it (see :meth:`AuditLog.scope_page`)."""
    if may_read(scope, audience_of_key(str(entry.get("scope_key") or ""))):
        return entry
    keep = ("seq", "at", "operation", "user_key", "collection")
    return {**{k: entry.get(k) for k in keep}, "targets": [], "sender": "", "summary": "", "redacted": True}
