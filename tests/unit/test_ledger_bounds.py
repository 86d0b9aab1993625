"""The usage ledger's bounds (issue 34 finding 4, issue 36 finding 4): the record stays within its
stated 16 KiB in every case (every counter at its clamp made it 18.3 KB), drawn by a property over
the worst values each field can take; the newest day and the newest turns are the ones kept."""

from __future__ import annotations

import json

from hypothesis import given, settings, target
from hypothesis import strategies as st

from ltm.domain import ledger as L  # noqa: N812 - the rules module, short

BIG = L.MAX_COUNT * 10
LONGEST_AT = "2026-12-01T23:59:59.999999+00:00"[:32]  # 32 characters of the instant's alphabet


def size(rec: dict) -> int:
    """The stored bytes (the service's encoding: compact JSON, ASCII)."""
    return len(json.dumps(rec, separators=(",", ":"), ensure_ascii=True).encode("ascii"))


def qid(i: int) -> int:
    """A query id as wide as the clamp allows, and distinct per turn (so which turns stay is seen)."""
    return -(10**8) - i


def largest_turn(i: int, at: str = LONGEST_AT) -> L.TurnUsage:
    return L.TurnUsage(at=at, query_id=qid(i), memories=BIG, tokens=BIG, host_calls=BIG, hook_ms=BIG)


def test_every_counter_at_its_clamp_stays_within_the_bound() -> None:
    """Through the reports: every counter at its clamp, the longest instants, every tool called."""
    rec = L.empty()
    for day in range(L.DAYS_KEPT):
        L.add_turn(rec, largest_turn(0, at=f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T00:00:00.999999+00:00"))
    for i in range(L.TURNS_KEPT):
        L.add_turn(rec, largest_turn(i))
        for tool in L.TOOLS:
            L.add_tool_call(rec, qid(i), tool, LONGEST_AT)
        assert size(rec) <= L.MAX_RECORD_BYTES, (i, size(rec))
    assert size(rec) > L.MAX_RECORD_BYTES * 0.9  # control: the record is really near its bound
    assert rec["turns"][-1]["query_id"] == qid(L.TURNS_KEPT - 1)
    assert rec["turns"][-1]["tools"] == dict.fromkeys(L.TOOLS, 1)


def test_a_stored_record_with_every_field_at_its_clamp_reads_back_within_the_bound() -> None:
    """A record stored by an older version or damaged, every field at its clamp (tool counts too):
    18.3 KB as it was; the oldest turns give way and the newest are kept."""
    turn = {"at": LONGEST_AT, "memories": BIG, "tokens": BIG, "host_calls": BIG, "hook_ms": BIG,
            "tools": dict.fromkeys(L.TOOLS, BIG)}  # fmt: skip
    days = [{"date": f"2026-{1 + d // 28:02d}-{1 + d % 28:02d}", **dict.fromkeys(L.DAY_FIELDS, BIG)} for d in range(40)]
    raw = {"turns": [{**turn, "query_id": qid(i)} for i in range(L.TURNS_KEPT)], "days": days}
    assert len(json.dumps(raw, separators=(",", ":"))) > L.MAX_RECORD_BYTES  # control: over as stored
    rec = L.normalise(raw)
    assert size(rec) <= L.MAX_RECORD_BYTES, size(rec)
    assert size(rec) > L.MAX_RECORD_BYTES - 300  # only as many turns went as had to
    assert len(rec["turns"]) < L.TURNS_KEPT and len(rec["days"]) == L.DAYS_KEPT
    ids = [t["query_id"] for t in rec["turns"]]
    assert ids == [qid(i) for i in range(L.TURNS_KEPT - len(ids), L.TURNS_KEPT)]  # the newest, in order
    assert rec["days"][-1]["date"] == days[-1]["date"]
    # a report added to it keeps it within the bound, and is kept
    L.add_tool_call(rec, qid(L.TURNS_KEPT - 1), "forget", LONGEST_AT)
    L.add_turn(rec, largest_turn(7))
    assert size(rec) <= L.MAX_RECORD_BYTES and rec["turns"][-1]["at"] == LONGEST_AT


def test_control_ordinary_turns_keep_the_whole_ring() -> None:
    rec = L.empty()
    for i in range(L.TURNS_KEPT + 5):
        L.add_turn(rec, L.TurnUsage("2026-12-01T10:00:00Z", i, 3, 400, 6, 25))
        L.add_tool_call(rec, i, "remember", "2026-12-01T10:00:01Z")
    assert len(rec["turns"]) == L.TURNS_KEPT and rec["turns"][-1]["query_id"] == L.TURNS_KEPT + 4


def test_after_thirty_days_each_new_day_is_kept_and_counted() -> None:
    """A bug that deletes each new day once the thirty are full (keeping the oldest) must fail."""
    rec = L.empty()
    dates = [f"2026-{m:02d}-{d:02d}" for m in (10, 11) for d in range(1, 29)][:40]
    for i, date in enumerate(dates):
        L.add_turn(rec, L.TurnUsage(f"{date}T09:00:00Z", i, 1, 10, 2, 3))
        L.add_tool_call(rec, i, "recall_memory", f"{date}T09:00:01Z")
        today = L.day_totals(rec, date)
        assert (today["turns"], today["tool_calls"]) == (1, 1), (date, today)
        kept = [d["date"] for d in rec["days"]]
        assert kept == dates[max(0, i + 1 - L.DAYS_KEPT) : i + 1], date  # the newest thirty, in order
    assert L.day_totals(rec, dates[0])["turns"] == 0  # control: the oldest went


def test_a_tool_call_on_a_new_day_after_thirty_days_is_kept() -> None:
    rec = L.empty()
    for d in range(1, L.DAYS_KEPT + 1):
        L.add_turn(rec, L.TurnUsage(f"2026-11-{d:02d}T09:00:00Z", d, 1, 10, 2, 3))
    L.add_tool_call(rec, None, "forget", "2026-12-01T08:00:00Z")
    assert L.day_totals(rec, "2026-12-01")["tool_calls"] == 1
    assert L.day_totals(rec, "2026-11-01")["turns"] == 0 and L.day_totals(rec, "2026-11-30")["turns"] == 1


# --- property: the worst a caller or a damaged record can do -----------------------------------

# the worst values are drawn most often: each counter at its clamp, the longest instants, every tool
extremes = st.sampled_from([BIG, BIG, BIG, -BIG, L.MAX_COUNT, 0])
counters = st.one_of(extremes, st.integers(-BIG, BIG), st.text(max_size=12))
instants = st.one_of(
    st.just(LONGEST_AT),
    st.text(alphabet="0123456789-:T.Z+", min_size=0, max_size=40),
    st.dates().map(lambda d: f"{d.isoformat()}T23:59:59.999999+00:00"),
)
ops = st.one_of(
    st.tuples(st.just("turn"), instants, counters, counters, counters, counters, counters),
    st.tuples(st.just("tool"), counters, st.sampled_from([*L.TOOLS, "other"]), instants),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(ops, min_size=1, max_size=160))
def test_any_sequence_of_reports_stays_within_the_bound(drawn: list[tuple]) -> None:
    rec = L.empty()
    for op in drawn:
        if op[0] == "turn":
            L.add_turn(rec, L.TurnUsage(*op[1:]))  # type: ignore[arg-type]
        else:
            L.add_tool_call(rec, *op[1:])
        assert size(rec) <= L.MAX_RECORD_BYTES
        assert len(rec["turns"]) <= L.TURNS_KEPT and len(rec["days"]) <= L.DAYS_KEPT


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.fixed_dictionaries({"at": instants, "query_id": counters, "memories": counters, "tokens": counters,
                                    "host_calls": counters, "hook_ms": counters,
                                    "tools": st.one_of(st.just(dict.fromkeys(L.TOOLS, BIG)),
                                                       st.dictionaries(st.sampled_from(L.TOOLS), counters))}),
             min_size=50, max_size=80),
    st.lists(st.fixed_dictionaries({"date": st.dates().map(str) | instants,
                                    **{f: counters for f in L.DAY_FIELDS}}), min_size=30, max_size=60),
)  # fmt: skip
def test_any_stored_record_reads_back_within_the_bound(turns: list[dict], days: list[dict]) -> None:
    raw = {"turns": turns, "days": days}
    target(float(len(json.dumps(raw, default=str))))  # search toward the largest records
    rec = L.normalise(raw)
    assert size(rec) <= L.MAX_RECORD_BYTES
