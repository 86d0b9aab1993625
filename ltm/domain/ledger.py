"""The usage ledger's record: pure rules over one memory space's ring of turns and daily roll-ups.

A record holds numbers, UTC dates and instants, query ids and tool names from :data:`TOOLS`, and
nothing else: no memory text, no query text, no speaker. Every field is clamped, and when a record
would still pass :data:`MAX_RECORD_BYTES` (every counter at its clamp: 50 such turns are about
18 KB) the oldest turns of its ring give way (:func:`fit`), so the stored record of a space never
exceeds it (a property test draws the worst cases).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TURNS_KEPT = 50  # the ring of the last turns of one memory space
DAYS_KEPT = 30  # daily roll-ups kept per memory space
TOOLS = ("remember", "recall_memory", "forget", "update_profile")
MAX_COUNT = 10**9  # a clamp on every counter: a corrupt or hostile value stays a bounded number
MAX_RECORD_BYTES = 16 * 1024  # the byte bound of one space's record (JSON, UTF-8)
DAY_FIELDS = ("turns", "memories", "tokens", "host_calls", "hook_ms", "tool_calls", "tool_turns")


def _count(value: Any) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return max(0, min(n, MAX_COUNT))


def _query_id(value: Any) -> int | None:
    """Query ids are the host's integers; anything else is not kept (it could carry text)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return max(-MAX_COUNT, min(int(value), MAX_COUNT))
    except (TypeError, ValueError, OverflowError):
        return None


def _instant(value: Any) -> str:
    """An ISO instant as the service writes it (``YYYY-MM-DDTHH:MM:SS...Z``), cut to 32 characters
    of the shape's own alphabet: a stray string cannot smuggle text into the record."""
    text = str(value or "")[:32]
    return text if text and all(ch in "0123456789-:T.Z+" for ch in text) else ""


@dataclass(frozen=True)
class TurnUsage:
    """One listener turn: what the hook injected and what it cost."""

    at: str  # ISO instant (UTC)
    query_id: int | None
    memories: int  # episodes in the block
    tokens: int  # the block's token estimate
    host_calls: int  # calls to the host made by the hook
    hook_ms: int  # wall milliseconds of the hook

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": _instant(self.at),
            "query_id": _query_id(self.query_id),
            "memories": _count(self.memories),
            "tokens": _count(self.tokens),
            "host_calls": _count(self.host_calls),
            "hook_ms": _count(self.hook_ms),
            "tools": {},
        }


def encode(record: dict[str, Any]) -> bytes:
    """The stored form of a record (compact JSON, ASCII): what :data:`MAX_RECORD_BYTES` bounds."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def fit(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` within :data:`MAX_RECORD_BYTES`: the oldest turns of the ring are dropped until it
    fits (the days, at most :data:`DAYS_KEPT` of fixed-width numbers, always do)."""
    over = len(encode(record)) - MAX_RECORD_BYTES
    turns = record["turns"]
    drop = 0
    while over > 0 and drop < len(turns):
        over -= len(encode(turns[drop])) + 1  # the turn and its comma
        drop += 1
    del turns[:drop]
    return record


def empty() -> dict[str, Any]:
    return {"v": 1, "turns": [], "days": []}


def _day(record: dict[str, Any], date: str) -> dict[str, Any]:
    for d in record["days"]:
        if d.get("date") == date:
            return d
    d = {"date": date, **dict.fromkeys(DAY_FIELDS, 0)}
    record["days"].append(d)
    record["days"].sort(key=lambda x: str(x.get("date")))
    del record["days"][:-DAYS_KEPT]
    return d


def normalise(raw: Any) -> dict[str, Any]:
    """A stored record read back, every field re-clamped (an older or damaged record stays bounded)."""
    out = empty()
    if not isinstance(raw, dict):
        return out
    for t in raw.get("turns") or []:
        if not isinstance(t, dict):
            continue
        turn = TurnUsage(
            t.get("at"), t.get("query_id"), t.get("memories"), t.get("tokens"), t.get("host_calls"), t.get("hook_ms")
        ).to_dict()
        tools = t.get("tools") if isinstance(t.get("tools"), dict) else {}
        turn["tools"] = {k: _count(v) for k, v in tools.items() if k in TOOLS and _count(v)}
        out["turns"].append(turn)
    del out["turns"][:-TURNS_KEPT]
    for d in raw.get("days") or []:
        date = _instant(d.get("date")) if isinstance(d, dict) else ""
        if len(date) == 10:
            day = _day(out, date)
            for f in DAY_FIELDS:
                day[f] = _count(d.get(f))
    return fit(out)


def add_turn(record: dict[str, Any], usage: TurnUsage) -> dict[str, Any]:
    """Append a turn to the ring (the oldest drops beyond :data:`TURNS_KEPT`) and add it to its day."""
    turn = usage.to_dict()
    record["turns"].append(turn)
    del record["turns"][:-TURNS_KEPT]
    day = _day(record, turn["at"][:10] or "unknown")
    for f in ("memories", "tokens", "host_calls", "hook_ms"):
        day[f] = _count(day[f] + turn[f])
    day["turns"] = _count(day["turns"] + 1)
    return fit(record)


def add_tool_call(record: dict[str, Any], query_id: Any, tool: str, at: str) -> dict[str, Any]:
    """A memory tool the model called: on the turn of its query (the newest one with that id), and
    in that turn's day; a call whose turn is not in the ring counts in the day of ``at`` only."""
    if tool not in TOOLS:
        return record
    qid = _query_id(query_id)
    turn = next((t for t in reversed(record["turns"]) if qid is not None and t.get("query_id") == qid), None)
    day = _day(record, (turn["at"] if turn else _instant(at))[:10] or "unknown")
    if turn is not None:
        if not turn["tools"]:
            day["tool_turns"] = _count(day["tool_turns"] + 1)
        turn["tools"][tool] = _count(turn["tools"].get(tool, 0) + 1)
    day["tool_calls"] = _count(day["tool_calls"] + 1)
    return fit(record)


def day_totals(record: dict[str, Any], date: str) -> dict[str, Any]:
    """The roll-up of one UTC date (zeros when nothing happened)."""
    for d in record.get("days") or []:
        if d.get("date") == date:
            return dict(d)
    return {"date": date, **dict.fromkeys(DAY_FIELDS, 0)}
