"""The recall trace's pure rules: the filter's reason and the budget step's reasons."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.budget import fit_budget
from ltm.domain.trace import MAX_ROWS, PREVIEW_CHARS, TraceRow, bound_rows, budget_reasons, filter_reason, preview

NOW = 1_700_000_000.0


def _why(md: dict, *, history: bool = False, audience: tuple[str, ...] | None = ("shared",)) -> str | None:
    return filter_reason(md, statuses=("active",), audience=audience, as_of_ts=NOW, history=history)


def test_filter_reason_each_condition_and_its_control() -> None:
    ok = {"status": "active", "audience": "shared", "valid_from_ts": NOW - 10, "valid_until_ts": NOW + 10}
    assert _why(ok) is None  # control: a row the filter lets through has no reason
    assert _why({**ok, "status": "archived"}) == "status"
    assert _why({**ok, "audience": "person_bob"}) == "audience"
    assert _why({**ok, "audience": "person_bob"}, audience=None) is None  # no read rule: no audience reason
    assert _why({**ok, "valid_until_ts": NOW}) == "expired"
    assert _why({**ok, "valid_until_ts": NOW}, history=True) == "as_of"
    assert _why({**ok, "valid_from_ts": NOW + 1}) == "as_of"
    assert _why({"status": "active", "audience": "shared"}) is None  # open validity


words = st.lists(st.sampled_from(["tea", "green", "morning", "alice", "bob", "drinks", "every", "x" * 30]), max_size=8)


@given(st.lists(st.tuples(words, st.floats(0, 1, allow_nan=False)), max_size=12), st.integers(0, 60))
def test_budget_reasons_name_exactly_the_dropped(rows: list, budget: int) -> None:
    items = [(f"ep{i}", " ".join(w) or "empty", v) for i, (w, v) in enumerate(rows)]
    kept = fit_budget(items, budget)
    why = budget_reasons(items, kept)
    assert set(why) == {i for i, _, _ in items} - set(kept)
    assert set(why.values()) <= {"repeat", "budget"}


def test_budget_reasons_repeat_vs_budget() -> None:
    items = [("a", "Alice drinks green tea every morning", 0.9), ("b", "Alice drinks green tea every morning", 0.5)]
    assert budget_reasons(items, ["a"]) == {"b": "repeat"}
    assert budget_reasons(items, []) == {"a": "budget", "b": "budget"}  # control: nothing kept to repeat


def test_preview_and_bound() -> None:
    assert len(preview("word " * 100)) == PREVIEW_CHARS and preview("a\n b") == "a b"
    rows = [TraceRow(id=f"e{i}", preview="", rank=i, injected=i % 10 == 0, reason=None) for i in range(40)]
    kept, omitted = bound_rows(rows)
    assert len(kept) == MAX_ROWS and omitted == 40 - MAX_ROWS
    assert [r.injected for r in kept[:4]] == [True] * 4 and not kept[4].injected
    assert TraceRow(id="x", preview="", score=math.inf).to_public()["score"] is None
