"""The usage ledger's record (ltm/domain/ledger.py): the ring, the roll-up, the byte bound, no text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain import ledger as L  # noqa: N812 - the rules module, short


def turn(at: str = "2026-12-01T10:00:00Z", qid: int | None = 1, **kw: int) -> L.TurnUsage:
    base = {"memories": 2, "tokens": 100, "host_calls": 7, "hook_ms": 40}
    return L.TurnUsage(at=at, query_id=qid, **{**base, **kw})


def test_a_turn_shows_up_in_the_ring_and_its_day() -> None:
    rec = L.add_turn(L.empty(), turn())
    assert rec["turns"] == [
        {
            "at": "2026-12-01T10:00:00Z",
            "query_id": 1,
            "memories": 2,
            "tokens": 100,
            "host_calls": 7,
            "hook_ms": 40,
            "tools": {},
        }
    ]
    assert L.day_totals(rec, "2026-12-01")["turns"] == 1
    assert L.day_totals(rec, "2026-12-02")["turns"] == 0  # control: another day is empty


def test_the_roll_up_sums_per_day() -> None:
    rec = L.empty()
    L.add_turn(rec, turn(qid=1, memories=1, tokens=10, host_calls=3, hook_ms=5))
    L.add_turn(rec, turn(qid=2, memories=4, tokens=30, host_calls=6, hook_ms=7))
    L.add_turn(rec, turn(at="2026-12-02T00:00:01Z", qid=3, memories=9, tokens=90, host_calls=9, hook_ms=9))
    L.add_tool_call(rec, 2, "remember", "2026-12-01T10:00:05Z")
    L.add_tool_call(rec, 2, "recall_memory", "2026-12-01T10:00:06Z")
    d1 = L.day_totals(rec, "2026-12-01")
    assert (d1["turns"], d1["memories"], d1["tokens"], d1["host_calls"], d1["hook_ms"]) == (2, 5, 40, 9, 12)
    assert (d1["tool_calls"], d1["tool_turns"]) == (2, 1)  # two calls, one turn followed by a tool
    d2 = L.day_totals(rec, "2026-12-02")
    assert (d2["turns"], d2["memories"], d2["tool_calls"]) == (1, 9, 0)
    assert rec["turns"][1]["tools"] == {"remember": 1, "recall_memory": 1}
    assert rec["turns"][0]["tools"] == {} and rec["turns"][2]["tools"] == {}


def test_a_tool_call_without_its_turn_counts_in_its_day_only() -> None:
    rec = L.add_turn(L.empty(), turn(qid=1))
    L.add_tool_call(rec, 99, "forget", "2026-12-01T11:00:00Z")
    L.add_tool_call(rec, 1, "not_a_memory_tool", "2026-12-01T11:00:00Z")
    assert rec["turns"][0]["tools"] == {}
    day = L.day_totals(rec, "2026-12-01")
    assert (day["tool_calls"], day["tool_turns"]) == (1, 0)


def test_the_ring_and_the_days_are_bounded() -> None:
    rec = L.empty()
    for i in range(L.TURNS_KEPT + 25):
        L.add_turn(rec, turn(qid=i))
    assert len(rec["turns"]) == L.TURNS_KEPT
    assert rec["turns"][0]["query_id"] == 25 and rec["turns"][-1]["query_id"] == L.TURNS_KEPT + 24
    for day in range(1, L.DAYS_KEPT + 20):
        L.add_turn(rec, turn(at=f"2027-{1 + day // 28:02d}-{1 + day % 28:02d}T00:00:00Z", qid=day))
    assert len(rec["days"]) == L.DAYS_KEPT
    assert rec["days"] == sorted(rec["days"], key=lambda d: d["date"])  # the oldest went


def test_the_largest_record_stays_within_the_byte_bound() -> None:
    rec = L.empty()
    big = L.MAX_COUNT * 10
    for i in range(L.TURNS_KEPT):
        L.add_turn(
            rec,
            turn(
                at=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T23:59:59.999999Z",
                qid=-big + i,
                memories=big,
                tokens=big,
                host_calls=big,
                hook_ms=big,
            ),
        )
        for tool in L.TOOLS:
            for _ in range(3):
                L.add_tool_call(rec, -big + i, tool, "2026-12-01T00:00:00Z")
    for day in range(L.DAYS_KEPT + 5):
        L.add_turn(
            rec, turn(at=f"2031-{1 + day // 28:02d}-{1 + day % 28:02d}T00:00:00Z", qid=big, memories=big, tokens=big)
        )
    size = len(json.dumps(rec, separators=(",", ":")).encode())
    assert size <= L.MAX_RECORD_BYTES, size
    assert size > L.MAX_RECORD_BYTES // 2  # control: the record is really the large one


def test_a_damaged_record_reads_back_bounded() -> None:
    raw = {
        "turns": [{"at": "<script>", "query_id": "drop table", "memories": "x", "tools": {"remember": 2, "evil": 5}}]
        * 80,
        "days": [{"date": "I live in Lisbon", "turns": 3}, {"date": "2026-12-01", "turns": -4, "tokens": 10**20}],
    }
    rec = L.normalise(raw)
    assert len(rec["turns"]) == L.TURNS_KEPT
    assert rec["turns"][0] == {
        "at": "",
        "query_id": None,
        "memories": 0,
        "tokens": 0,
        "host_calls": 0,
        "hook_ms": 0,
        "tools": {"remember": 2},
    }
    assert rec["days"] == [{**L.day_totals(L.empty(), "2026-12-01"), "turns": 0, "tokens": L.MAX_COUNT}]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.text(min_size=4, max_size=60).filter(lambda s: s.strip() and not s.strip().isdigit()), min_size=1, max_size=5
    )
)
def test_no_memory_text_reaches_the_record(texts: list[str]) -> None:
    """Whatever text flows past (in every field a caller could misuse), the stored bytes hold none of it."""
    rec = L.empty()
    for i, text in enumerate(texts):
        L.add_turn(rec, L.TurnUsage(at=text, query_id=text, memories=text, tokens=len(text), host_calls=i, hook_ms=1))  # type: ignore[arg-type]
        L.add_tool_call(rec, text, text, text)
        L.add_tool_call(rec, None, "remember", text)
    stored = json.dumps(L.normalise(json.loads(json.dumps(rec))), ensure_ascii=False)
    # the record's own words (field names, tool names, digits) are not memory text
    sample = L.add_tool_call(L.add_turn(L.empty(), turn()), 1, "remember", "")
    schema = json.dumps(sample) + " ".join(L.TOOLS) + " unknown null"  # null: an id that is not kept
    for text in texts:
        if text not in schema and not all(ch in '0123456789-:T.Z+{}[]",: ' for ch in text):
            assert text not in stored
    assert len(rec["turns"]) == len(texts)  # control: every turn was recorded
