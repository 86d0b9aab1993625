"""Time-phrase parsing does work linear in the message (issue 34, finding 4): 60,000 characters of
"last week " took 1.4 s in one hook, a 10,000-digit number 4 s. The work is counted, not timed:
the characters handed to every regular expression of the module (each compiled pattern is
replaced by a counting proxy) and the Python lines the module runs (a trace function), on
100,000-character messages, with the 10,000-character message as control for the scaling.
Wall time is a benchmark: ``python -m benchmarks.timewindow_scaling``."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from ltm.domain import timematch, timewindow
from ltm.domain.timewindow import parse_time_window

NOW = datetime(2024, 5, 10, 12, tzinfo=UTC)  # a Friday
# what a message repeats; each is read as (or next to) a time expression many times over
UNITS = {
    "last week": "last week ",
    "holiday": "over the christmas ",
    "month": "in May ",
    "bare month": "May ",
    "digits": "1",
    "zh digits": "一",
    "zh": "12月 3天前 过国庆节 ",
    "anchors": "the week before 3 May and ",
    "words": "hello there ",
}


class _Counter:
    def __init__(self) -> None:
        self.chars = 0  # characters handed to regular expressions
        self.lines = 0  # lines of the module run


class _CountingPattern:
    """A compiled pattern that counts the characters each call may examine."""

    def __init__(self, rx: re.Pattern[str], counter: _Counter) -> None:
        self._rx, self._counter = rx, counter

    def _span(self, string: str, pos: int = 0, endpos: int | None = None) -> None:
        end = len(string) if endpos is None else min(endpos, len(string))
        self._counter.chars += max(0, end - pos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        self._span(string, pos, endpos)
        return self._rx.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        self._span(string, pos, endpos)
        return self._rx.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        self._span(string, pos, endpos)
        return self._rx.fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        self._span(string, pos, endpos)
        return self._rx.finditer(string, pos, endpos)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rx, name)


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counter]:
    counter = _Counter()
    for name, value in list(vars(timewindow).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(timewindow, name, _CountingPattern(value, counter))
    monkeypatch.setattr(timewindow, "_RULES", [(_CountingPattern(rx, counter), h) for rx, h in timewindow._RULES])
    source = timewindow.__file__

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            counter.lines += 1
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == source else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield counter
    finally:
        sys.settrace(previous)
        monkeypatch.undo()


def message(kind: str, n: int) -> str:
    unit = UNITS[kind]
    return (unit * (n // len(unit) + 1))[:n]


def work(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[int, int, Any]:
    with counted(monkeypatch) as c:
        got = parse_time_window(text, NOW)
    return c.chars, c.lines, got


@pytest.mark.parametrize("kind", list(UNITS))
def test_parsing_a_100k_message_does_linear_work(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    n = 100_000
    chars, lines, got = work(monkeypatch, message(kind, n))
    rules = len(timewindow._RULES)
    # every rule scans the message once, and the words around each match are read within a fixed
    # reach (a quadratic reading of them would be hundreds of times this)
    assert chars <= (rules + 10) * n, (kind, chars)
    assert lines <= 12 * n, (kind, lines)  # a bounded number of lines per character (per match)
    # control for the scaling: ten times the message, about ten times the work
    small_chars, small_lines, small_got = work(monkeypatch, message(kind, n // 10))
    assert chars <= 11 * small_chars + 1000 and lines <= 11 * small_lines + 1000, (kind, small_chars, small_lines)
    assert got == small_got  # the first expression is the same however long the message goes on


def test_control_the_counters_see_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Positive control: the counters are not blind (a short query is read, and its window found)."""
    chars, lines, got = work(monkeypatch, "what did I do last week?")
    assert chars >= len(timewindow._RULES) * len("what did I do last week?") and lines > 20
    assert got is not None


@pytest.mark.parametrize("digit", ["1", "一", "十"])
def test_a_number_is_read_from_where_it_starts(digit: str) -> None:
    """A rule tried inside a run of digits does not start there (it would scan the rest of the run
    again at every digit: quadratic in the run). From the run's start it still reads the number."""
    run = digit * 30
    for tail in ("月3日到5日", "月", "天前", "月到5月"):
        text = run + tail
        for rx, _ in timewindow._RULES:
            for pos in range(1, len(run)):
                m = rx.match(text, pos)
                assert m is None, (rx.pattern[:60], text, pos)
        for pos in range(1, len(run)):  # the cheap pre-check of stored texts too
            assert timematch._ZH_TIME_RE.match(text, pos) is None, (text, pos)
        assert timematch.mentions_time("x" + text)  # control: from the run's start it is a time
    # control: the rules that read numbers still read them where they start
    assert parse_time_window("12月3日到5日", NOW) is not None
    assert parse_time_window("十二月", NOW) is not None
    assert parse_time_window("3天前", NOW) is not None
