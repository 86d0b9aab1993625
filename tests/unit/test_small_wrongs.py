"""Small wrongs that injected bugs showed no test would catch (issue 36, finding 4): each test
here fails on the bug it names (an off-by-one, a boundary day, a label, an order) and has its
positive control. The ledger's "each new day deleted after thirty" is in test_ledger_bounds.py and
the restatements' evidence in tests/contract/test_restatement_evidence.py."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ltm.domain.expiry import expiry_of
from ltm.domain.timewindow import parse_time_window
from ltm.domain.trace import MAX_ROWS, TraceRow, bound_rows, budget_reasons

# --- "What did I eat on Friday?" asked on a Friday: last Friday, not today -----------------------

FRIDAY = datetime(2024, 5, 10, 13, 0, tzinfo=UTC)  # Friday 10 May 2024


def _day(window: tuple[float, float] | None, tz: timezone = UTC) -> tuple[str, float]:
    assert window is not None
    start, end = window
    return datetime.fromtimestamp(start, tz).date().isoformat(), (end - start) / 86400


@pytest.mark.parametrize("query", ["What did I eat on Friday?", "what did I eat last Friday", "on friday"])
def test_friday_asked_on_a_friday_is_last_friday(query: str) -> None:
    assert _day(parse_time_window(query, FRIDAY)) == ("2024-05-03", 1.0)


def test_controls_other_weekdays_and_this_friday() -> None:
    assert _day(parse_time_window("What did I eat on Thursday?", FRIDAY)) == ("2024-05-09", 1.0)  # yesterday
    assert _day(parse_time_window("What did I eat on Saturday?", FRIDAY)) == ("2024-05-04", 1.0)  # six days back
    assert _day(parse_time_window("this Friday", FRIDAY)) == ("2024-05-10", 1.0)  # today, when asked for
    assert _day(parse_time_window("next Friday", FRIDAY)) == ("2024-05-17", 1.0)


def test_friday_in_the_askers_calendar() -> None:
    """Friday 00:30 in UTC+8 is still Thursday in UTC: the Friday before is the local one."""
    tz = timezone(timedelta(hours=8))
    now = datetime(2024, 5, 10, 0, 30, tzinfo=tz)
    assert _day(parse_time_window("What did I eat on Friday?", now), tz) == ("2024-05-03", 1.0)


# --- "over the holidays" said on 6 January still expires ---------------------------------------


@pytest.mark.parametrize("said", [datetime(2027, 1, 6, 9, 0, tzinfo=UTC), datetime(2027, 1, 6, 23, 59, tzinfo=UTC)])
def test_over_the_holidays_said_on_6_january_expires_on_the_7th(said: datetime) -> None:
    got = expiry_of("I'm at my parents' over the holidays", said)
    assert got is not None and got.until == datetime(2027, 1, 7, tzinfo=UTC)


def test_controls_holidays_on_the_days_around() -> None:
    assert expiry_of("I'm at my parents' over the holidays", datetime(2027, 1, 5, 12, tzinfo=UTC)) is not None
    assert expiry_of("I'm at my parents' over the holidays", datetime(2026, 12, 1, 0, 5, tzinfo=UTC)) is not None
    # the 7th is after them: which holidays are meant is not known, so no expiry
    assert expiry_of("I'm at my parents' over the holidays", datetime(2027, 1, 7, 9, tzinfo=UTC)) is None
    assert expiry_of("I'm at my parents' over the holidays", datetime(2026, 11, 30, 23, tzinfo=UTC)) is None


# --- the trace: another speaker's identical words are not a repeat -----------------------------

SAME = "I drink green tea every morning"


def test_another_speakers_identical_words_are_not_a_repeat() -> None:
    items = [("a", SAME, 0.9), ("b", SAME, 0.5)]
    assert budget_reasons(items, ["a"], speakers={"a": "alice", "b": "bob"}) == {"b": "budget"}
    # control: the same speaker's identical words are folded as a repeat
    assert budget_reasons(items, ["a"], speakers={"a": "alice", "b": "alice"}) == {"b": "repeat"}


# --- the trace's bound keeps the best near misses before rows the filter kept out --------------


def _rows(filtered: int, near: int, injected: int) -> list[TraceRow]:
    rows = [TraceRow(id=f"in{i}", preview="", rank=i + 1, injected=True) for i in range(injected)]
    rows += [
        TraceRow(id=f"near{i}", preview="", rank=injected + i + 1, reason="rank_cut" if i % 2 else "budget")
        for i in range(near)
    ]
    rows += [
        TraceRow(id=f"f{i:02d}", preview="", reason=("status", "expired", "audience")[i % 3]) for i in range(filtered)
    ]
    return rows


@pytest.mark.parametrize("seed", range(5))
def test_near_misses_rank_before_filtered_rows_past_the_bound(seed: int) -> None:
    rows = _rows(filtered=30, near=6, injected=3)
    random.Random(seed).shuffle(rows)  # the order the steps reported them in does not matter
    kept, omitted = bound_rows(rows)
    ids = [r.id for r in kept]
    assert ids[:9] == ["in0", "in1", "in2"] + [f"near{i}" for i in range(6)]  # by rank, none cut
    assert all(r.rank is None for r in kept[9:]) and len(kept) == MAX_ROWS and omitted == 39 - MAX_ROWS


def test_controls_more_near_misses_than_the_bound_keep_the_best() -> None:
    rows = _rows(filtered=5, near=40, injected=2)
    kept, omitted = bound_rows(list(reversed(rows)))
    assert [r.id for r in kept] == ["in0", "in1"] + [f"near{i}" for i in range(MAX_ROWS - 2)]
    assert omitted == 47 - MAX_ROWS
    few, none_left = bound_rows(_rows(filtered=2, near=1, injected=1))  # under the bound: every row
    assert [r.id for r in few] == ["in0", "near0", "f00", "f01"] and none_left == 0
