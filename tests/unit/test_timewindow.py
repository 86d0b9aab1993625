"""Explicit time windows in queries, English and Chinese, against a fixed ``now``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.timewindow import parse_time_window

# Wednesday 13 March 2024, 15:00 UTC.
NOW = datetime(2024, 3, 13, 15, 0, tzinfo=UTC)


def window(query: str, now: datetime = NOW) -> tuple[str, str] | None:
    got = parse_time_window(query, now)
    if got is None:
        return None
    tz = now.tzinfo
    return (
        datetime.fromtimestamp(got[0], tz).strftime("%Y-%m-%d %H:%M"),
        datetime.fromtimestamp(got[1], tz).strftime("%Y-%m-%d %H:%M"),
    )


class TestEnglish:
    @pytest.mark.parametrize(
        ("query", "start", "end"),
        [
            ("what did I say yesterday?", "2024-03-12 00:00", "2024-03-13 00:00"),
            ("anything today", "2024-03-13 00:00", "2024-03-14 00:00"),
            ("the day before yesterday", "2024-03-11 00:00", "2024-03-12 00:00"),
            ("what happened last week", "2024-03-04 00:00", "2024-03-11 00:00"),
            ("this week so far", "2024-03-11 00:00", "2024-03-13 15:00"),
            ("last month", "2024-02-01 00:00", "2024-03-01 00:00"),
            ("last year", "2023-01-01 00:00", "2024-01-01 00:00"),
            ("where did we go in May", "2023-05-01 00:00", "2023-06-01 00:00"),
            ("in March", "2024-03-01 00:00", "2024-04-01 00:00"),
            ("in May 2023", "2023-05-01 00:00", "2023-06-01 00:00"),
            ("What did Gina find on 1 February, 2023?", "2023-02-01 00:00", "2023-02-02 00:00"),
            ("on May 23, 2023", "2023-05-23 00:00", "2023-05-24 00:00"),
            ("on 2023-05-08", "2023-05-08 00:00", "2023-05-09 00:00"),
            ("2023-05", "2023-05-01 00:00", "2023-06-01 00:00"),
            ("in 2022", "2022-01-01 00:00", "2023-01-01 00:00"),
            ("3 days ago", "2024-03-10 00:00", "2024-03-11 00:00"),
            ("two weeks ago", "2024-02-28 15:00", "2024-03-06 15:00"),
            ("in the past 3 days", "2024-03-10 15:00", "2024-03-13 15:00"),
            ("the past week", "2024-03-06 15:00", "2024-03-13 15:00"),
            ("last Monday", "2024-03-11 00:00", "2024-03-12 00:00"),
            ("last weekend", "2024-03-09 00:00", "2024-03-11 00:00"),
        ],
    )
    def test_windows(self, query: str, start: str, end: str) -> None:
        assert window(query) == (start, end)

    @pytest.mark.parametrize(
        "query",
        ["May I ask you something?", "we march on", "what's new", "recently", "I have 2023 dollars", ""],
    )
    def test_no_explicit_window(self, query: str) -> None:
        """Modal 'May', the verb 'march', vague words and bare numbers name no window."""
        assert parse_time_window(query, NOW) is None

    def test_first_expression_wins_and_longest_at_a_place(self) -> None:
        """'in May 2023' is the month of 2023 (not the latest May); the earliest expression wins."""
        assert window("in May 2023, or yesterday") == ("2023-05-01 00:00", "2023-06-01 00:00")


class TestChinese:
    @pytest.mark.parametrize(
        ("query", "start", "end"),
        [
            ("昨天我说了什么", "2024-03-12 00:00", "2024-03-13 00:00"),
            ("前天", "2024-03-11 00:00", "2024-03-12 00:00"),
            ("今天", "2024-03-13 00:00", "2024-03-14 00:00"),
            ("上周聊了什么", "2024-03-04 00:00", "2024-03-11 00:00"),
            ("上个星期", "2024-03-04 00:00", "2024-03-11 00:00"),
            ("上周三吃了啥", "2024-03-06 00:00", "2024-03-07 00:00"),
            ("上个月", "2024-02-01 00:00", "2024-03-01 00:00"),
            ("去年", "2023-01-01 00:00", "2024-01-01 00:00"),
            ("2023年5月", "2023-05-01 00:00", "2023-06-01 00:00"),
            ("2023年5月8日", "2023-05-08 00:00", "2023-05-09 00:00"),
            ("5月8号", "2023-05-08 00:00", "2023-05-09 00:00"),
            ("五月", "2023-05-01 00:00", "2023-06-01 00:00"),
            ("三天前", "2024-03-10 00:00", "2024-03-11 00:00"),
            ("过去两周", "2024-02-28 15:00", "2024-03-13 15:00"),
            ("2023年", "2023-01-01 00:00", "2024-01-01 00:00"),
        ],
    )
    def test_windows(self, query: str, start: str, end: str) -> None:
        assert window(query) == (start, end)

    def test_no_window(self) -> None:
        assert parse_time_window("最近怎么样", NOW) is None
        assert parse_time_window("三个苹果", NOW) is None


class TestAnchoredAndRanges:
    """How questions ask about time around a named date: before/after it, between two, parts of a month."""

    @pytest.mark.parametrize(
        ("query", "start", "end"),
        [
            ("Where was Tim in the week before 16 November 2023?", "2023-11-09 00:00", "2023-11-16 00:00"),
            ("the day before 8 May 2023", "2023-05-07 00:00", "2023-05-08 00:00"),
            ("the weekend before 16 November 2023", "2023-11-11 00:00", "2023-11-13 00:00"),
            ("the week after May 8, 2023", "2023-05-09 00:00", "2023-05-16 00:00"),
            ("2 days after 3 May 2023", "2023-05-05 00:00", "2023-05-06 00:00"),
            ("three weeks before 1 June 2023", "2023-05-11 00:00", "2023-05-18 00:00"),
            ("between August 11 and August 15 2023", "2023-08-11 00:00", "2023-08-16 00:00"),
            ("from May to July 2023", "2023-05-01 00:00", "2023-08-01 00:00"),
            ("May 1, 2023 - May 3, 2023", "2023-05-01 00:00", "2023-05-04 00:00"),
            ("before June 2023", "1900-01-01 00:00", "2023-06-01 00:00"),
            ("after 3 May 2023", "2023-05-04 00:00", "2024-03-13 15:00"),
            ("since May 2023", "2023-05-01 00:00", "2024-03-13 15:00"),
            ("in the second week of November", "2023-11-08 00:00", "2023-11-15 00:00"),
            ("the last week of February", "2024-02-23 00:00", "2024-03-01 00:00"),
            ("at the beginning of November 2022", "2022-11-01 00:00", "2022-11-11 00:00"),
            ("early May 2023", "2023-05-01 00:00", "2023-05-11 00:00"),
            ("mid-May 2022", "2022-05-11 00:00", "2022-05-21 00:00"),
            ("the end of May", "2023-05-21 00:00", "2023-06-01 00:00"),
        ],
    )
    def test_english(self, query: str, start: str, end: str) -> None:
        assert window(query) == (start, end)

    @pytest.mark.parametrize(
        ("query", "start", "end"),
        [
            ("2023年5月8日前一周", "2023-05-01 00:00", "2023-05-08 00:00"),
            ("5月8日的前一天", "2023-05-07 00:00", "2023-05-08 00:00"),
            ("5月8日后三天", "2023-05-11 00:00", "2023-05-12 00:00"),
            ("5月8日之前", "1900-01-01 00:00", "2023-05-08 00:00"),
            ("2023年5月以来", "2023-05-01 00:00", "2024-03-13 15:00"),
            ("从5月1日到5月8日", "2023-05-01 00:00", "2023-05-09 00:00"),
            ("5月1日至5月8日", "2023-05-01 00:00", "2023-05-09 00:00"),
        ],
    )
    def test_chinese(self, query: str, start: str, end: str) -> None:
        assert window(query) == (start, end)

    def test_two_dates_joined_by_and_are_not_a_range(self) -> None:
        """'on May 1 and May 3' asks about two days: the first one (a range needs 'between'/'from')."""
        assert window("What did I do on May 1 and May 3?") == ("2023-05-01 00:00", "2023-05-02 00:00")
        assert window("between May 1 and May 3") == ("2023-05-01 00:00", "2023-05-04 00:00")  # positive control

    def test_asking_when_names_no_window(self) -> None:
        """'When did', 'how long ago' ask for a time; they do not name one."""
        for q in ["When did Caroline go to the support group?", "How long ago was her birthday?", "什么时候去的"]:
            assert parse_time_window(q, NOW) is None


class TestCalendar:
    def test_days_follow_the_timezone_of_now(self) -> None:
        """'Yesterday' at 01:00 in UTC+8 is the previous local day, not the previous UTC day."""
        tz8 = timezone(timedelta(hours=8))
        now = datetime(2024, 3, 13, 1, 0, tzinfo=tz8)
        start, end = parse_time_window("昨天", now)  # type: ignore[misc]
        assert start == datetime(2024, 3, 12, tzinfo=tz8).timestamp()
        assert end == datetime(2024, 3, 13, tzinfo=tz8).timestamp()

    def test_naive_now_is_utc(self) -> None:
        assert parse_time_window("yesterday", NOW.replace(tzinfo=None)) == parse_time_window("yesterday", NOW)

    def test_month_not_yet_started_is_last_year(self) -> None:
        """'In December' asked in March means the December that has passed."""
        assert window("in December") == ("2023-12-01 00:00", "2024-01-01 00:00")

    def test_windows_are_half_open_and_ordered(self) -> None:
        for q in ["yesterday", "last week", "in May", "去年", "2023-05-08", "3 days ago"]:
            start, end = parse_time_window(q, NOW)  # type: ignore[misc]
            assert start < end


_pieces = st.sampled_from(
    ["in", "May", "last", "week", "2023", "-", "05", "昨天", "上周", "三", "天前", "月", "年", "8", "ago", "days",
     "on", "the", "31", "February", ",", "十二", "号", "past", "two", "Monday", "since", "0000", "9999",
     "before", "after", "between", "and", "from", "to", "之前", "以后", "前一周", "到", "weekend", "of", "early"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(_pieces, max_size=8).map(" ".join), st.lists(_pieces).map("".join)))
def test_never_raises_and_ranges_are_ordered(query: str) -> None:
    """Any text: either no window or a non-empty half-open range."""
    got = parse_time_window(query, NOW)
    assert got is None or got[0] < got[1]


@pytest.mark.parametrize("query", ["昨天前2030年", "3000 years before yesterday"])
def test_a_shift_off_the_calendar_names_no_window(query: str) -> None:
    """Found by the property above: 2030 years before yesterday leaves the calendar. Control: a
    shift that stays in it is a window."""
    assert parse_time_window(query, NOW) is None
    assert parse_time_window("昨天前2年", NOW) is not None


class TestGeneralised:
    """Phrasings beyond the development conversations: the future, "before last", weekday modifiers,
    seasons, holidays, parts of months in Chinese, day and month ranges (NOW is Wednesday 13 March 2024)."""

    @pytest.mark.parametrize(
        ("query", "start", "end"),
        [
            ("tomorrow", "2024-03-14 00:00", "2024-03-15 00:00"),
            ("this morning", "2024-03-13 00:00", "2024-03-14 00:00"),
            ("next week", "2024-03-18 00:00", "2024-03-25 00:00"),
            ("the week before last", "2024-02-26 00:00", "2024-03-04 00:00"),
            ("the month before last", "2024-01-01 00:00", "2024-02-01 00:00"),
            ("next weekend", "2024-03-23 00:00", "2024-03-25 00:00"),
            ("this Tuesday", "2024-03-12 00:00", "2024-03-13 00:00"),
            ("next Friday", "2024-03-15 00:00", "2024-03-16 00:00"),
            ("Monday before last", "2024-03-04 00:00", "2024-03-05 00:00"),
            ("two Saturdays ago", "2024-03-02 00:00", "2024-03-03 00:00"),
            ("mid-May", "2023-05-11 00:00", "2023-05-21 00:00"),
            ("the end of February", "2024-02-21 00:00", "2024-03-01 00:00"),
            ("last summer", "2023-06-01 00:00", "2023-09-01 00:00"),
            ("the summer of 2022", "2022-06-01 00:00", "2022-09-01 00:00"),
            ("last winter", "2023-12-01 00:00", "2024-03-01 00:00"),
            ("at Christmas", "2023-12-25 00:00", "2023-12-26 00:00"),
            ("Thanksgiving 2022", "2022-11-24 00:00", "2022-11-25 00:00"),
            ("at Easter", "2023-04-09 00:00", "2023-04-10 00:00"),
            ("between March and May", "2023-03-01 00:00", "2023-06-01 00:00"),
            ("from June to August 2022", "2022-06-01 00:00", "2022-09-01 00:00"),
            ("from 3 to 5 June", "2023-06-03 00:00", "2023-06-06 00:00"),
            ("early 2022", "2022-01-01 00:00", "2022-05-01 00:00"),
        ],
    )
    def test_english(self, query: str, start: str, end: str) -> None:
        assert window(query) == (start, end)

    @pytest.mark.parametrize(
        ("query", "start", "end"),
        [
            ("明天", "2024-03-14 00:00", "2024-03-15 00:00"),
            ("大后天", "2024-03-16 00:00", "2024-03-17 00:00"),
            ("上上周", "2024-02-26 00:00", "2024-03-04 00:00"),
            ("下周三", "2024-03-20 00:00", "2024-03-21 00:00"),
            ("上上周五", "2024-03-01 00:00", "2024-03-02 00:00"),
            ("这周末", "2024-03-16 00:00", "2024-03-18 00:00"),
            ("上周末", "2024-03-09 00:00", "2024-03-11 00:00"),
            ("上上个月", "2024-01-01 00:00", "2024-02-01 00:00"),
            ("去年5月", "2023-05-01 00:00", "2023-06-01 00:00"),
            ("5月中旬", "2023-05-11 00:00", "2023-05-21 00:00"),
            ("上个月底", "2024-02-21 00:00", "2024-03-01 00:00"),
            ("去年夏天", "2023-06-01 00:00", "2023-09-01 00:00"),
            ("去年国庆", "2023-10-01 00:00", "2023-10-08 00:00"),
            ("五一的时候", "2023-05-01 00:00", "2023-05-06 00:00"),
            ("今年春节", "2024-02-10 00:00", "2024-02-17 00:00"),
            ("2022年中秋节", "2022-09-10 00:00", "2022-09-11 00:00"),
            ("从3月到5月", "2023-03-01 00:00", "2023-06-01 00:00"),
            ("6月3日到5日", "2023-06-03 00:00", "2023-06-06 00:00"),
            ("2022年6月3日到6月5日", "2022-06-03 00:00", "2022-06-06 00:00"),
        ],
    )
    def test_chinese(self, query: str, start: str, end: str) -> None:
        assert window(query) == (start, end)

    @pytest.mark.parametrize(
        "query",
        ["I'm in May's class", "June is my best friend", "April loves hiking", "the Christmas tree is up",
         "my summer job", "the fall of Rome", "每周三健身", "一周三次", "五一班的同学", "我的同事王国庆"],
    )  # fmt: skip
    def test_no_time_meant(self, query: str) -> None:
        assert parse_time_window(query, NOW) is None

    @pytest.mark.parametrize(
        ("query", "control"),
        [("I'm in May's class", "in May"), ("June is my best friend", "in June"),
         ("the Christmas tree is up", "at Christmas"), ("my summer job", "last summer"), ("每周三健身", "周三"),
         ("五一班的同学", "五一假期"), ("我的同事王国庆", "国庆节"), ("圣诞树很漂亮", "圣诞节")],
    )  # fmt: skip
    def test_negatives_have_a_parsed_control(self, query: str, control: str) -> None:
        """The same word in a time context is read: the exclusions are not a parser that reads nothing."""
        assert parse_time_window(query, NOW) is None
        assert parse_time_window(control, NOW) is not None

    def test_holidays_follow_the_timezone_of_now(self) -> None:
        """Christmas asked in UTC+8 is the local 25 December."""
        tz8 = timezone(timedelta(hours=8))
        start, end = parse_time_window("at Christmas", datetime(2024, 1, 2, 1, 0, tzinfo=tz8))  # type: ignore[misc]
        assert (start, end) == (
            datetime(2023, 12, 25, tzinfo=tz8).timestamp(),
            datetime(2023, 12, 26, tzinfo=tz8).timestamp(),
        )

    def test_easter_matches_dateutil(self) -> None:
        """The computus against python-dateutil's, over a century of years."""
        from dateutil.easter import easter

        for y in range(1990, 2091):
            got = parse_time_window(f"Easter {y}", NOW)
            assert got is not None
            assert datetime.fromtimestamp(got[0], UTC).date() == easter(y), y


_new_pieces = st.sampled_from(
    ["next", "this", "last", "before", "last", "two", "Saturdays", "ago", "Tuesday", "summer", "winter", "of", "2022",
     "Christmas", "Eve", "Easter", "Thanksgiving", "at", "between", "March", "and", "May", "from", "3", "to", "5th",
     "June", "early", "mid-", "29", "February", "下周", "上上", "周三", "周末", "去年", "夏天", "冬天", "春节", "五一",
     "国庆", "中秋", "的时候", "假期", "月", "初", "中旬", "底", "到", "日", "号", "2099年", "1899", "每", "一"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_new_pieces, max_size=8).map(" ".join),
    st.lists(_new_pieces, max_size=8).map("".join),
    st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2150, 12, 31)),
    st.sampled_from([UTC, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5))]),
)
def test_new_rules_never_raise_and_ranges_are_ordered(spaced: str, joined: str, now: datetime, tz: timezone) -> None:
    """The season, holiday, weekday and range rules at any instant: no window or an ordered one."""
    for query in (spaced, joined):
        got = parse_time_window(query, now.replace(tzinfo=tz))
        assert got is None or got[0] < got[1]
