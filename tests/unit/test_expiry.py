"""Facts that expire (pure): the end of validity a statement's own words give, English and Chinese,
with the negatives that must keep a memory open (events, habits, past tense, open-ended changes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.expiry import MAX_SPAN, bounds_validity, expiry_of

# Wednesday 11 March 2026, 10:00 UTC: the reference instant of most rows.
WED = datetime(2026, 3, 11, 10, 0, tzinfo=UTC)
FRI = datetime(2026, 3, 13, 9, 0, tzinfo=UTC)
SUN = datetime(2026, 3, 15, 20, 0, tzinfo=UTC)
DEC = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)
JUL = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def day(n: int, at: datetime = WED) -> datetime:
    """Start of the day ``n`` days after ``at``'s day."""
    return at.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=n)


NEXT_MON = datetime(2026, 3, 16, tzinfo=UTC)  # the end of WED's week
END_FRI = datetime(2026, 3, 14, tzinfo=UTC)  # the end of WED's Friday
APRIL = datetime(2026, 4, 1, tzinfo=UTC)  # the end of March

TABLE: list[tuple[str, datetime, datetime | None]] = [
    # ---- English, bounded
    ("I'm in Tokyo this week", WED, NEXT_MON),
    ("I am staying at my parents' place until Friday", WED, END_FRI),
    ("My mum is staying with us until Friday", WED, END_FRI),
    ("I'm working from home today", WED, day(1)),
    ("I'm busy today, no calls please", WED, day(1)),
    ("I'm at the cinema tonight", WED, day(1) + timedelta(hours=6)),
    ("I'll be in Berlin for the next three days", WED, day(4)),
    ("I'm in Osaka for 2 days", WED, day(3)),
    ("We are in Lisbon for a week", WED, day(8)),
    ("I'm off sugar till the end of the month", WED, APRIL),
    ("I'm on call until the end of the week", WED, NEXT_MON),
    ("I'm visiting my sister this weekend", WED, NEXT_MON),
    ("I'm at my parents' over the holidays", DEC, datetime(2027, 1, 7, tzinfo=UTC)),
    ("I'm in Paris until tomorrow", WED, day(2)),
    ("I'm in Madrid until next Friday", WED, datetime(2026, 3, 21, tzinfo=UTC)),
    ("The office is closed until Monday", WED, NEXT_MON + timedelta(days=1)),
    ("I'm in Rome until the 20th", WED, datetime(2026, 3, 21, tzinfo=UTC)),
    ("I'm in Rome until the 5th", WED, datetime(2026, 4, 6, tzinfo=UTC)),
    ("I'm in Seoul until March 18", WED, datetime(2026, 3, 19, tzinfo=UTC)),
    ("I'm in Seoul till 2 April", WED, datetime(2026, 4, 3, tzinfo=UTC)),
    ("I have a cold this week", WED, NEXT_MON),
    ("I'm fasting for the next few days", WED, day(4)),
    ("I'm travelling for the rest of the week", WED, NEXT_MON),
    ("I'm in the office all week", WED, NEXT_MON),
    ("My car is at the garage until Friday", FRI, datetime(2026, 3, 21, tzinfo=UTC)),  # said on a Friday
    ("I'm on holiday this weekend", SUN, day(1, SUN)),  # said on the Sunday
    ("I'm using the spare laptop until next week", WED, NEXT_MON + timedelta(days=7)),
    ("I'm vegetarian this month", WED, APRIL),
    ("I'm out of office through Thursday", WED, datetime(2026, 3, 13, tzinfo=UTC)),
    ("I am in London for two weeks", WED, day(15)),
    ("Ann is babysitting for the weekend", WED, NEXT_MON),
    # ---- English, never expiring (events, habits, past, open-ended, unknown)
    ("I live in Tokyo", WED, None),
    ("I moved to Osaka this week", WED, None),
    ("I started a new job today", WED, None),
    ("I'm moving to Osaka this month", WED, None),
    ("I'll be vegetarian from now on", WED, None),
    ("I go swimming every Friday", WED, None),
    ("This is the week I finally quit smoking", WED, None),
    ("I stayed at my parents' place until Friday", WED, None),
    ("I was in Paris for three days", WED, None),
    ("I've been sick for three days", WED, None),
    ("The meeting was postponed until Friday", WED, None),
    ("Let's wait until Friday to decide", WED, None),
    ("I'm at my parents' over the holidays", JUL, None),  # which holidays is not known in July
    ("I work Mondays to Fridays", WED, None),
    ("I got married today", WED, None),
    ("Today I learned Rust has traits", WED, None),
    ("I'm in Tokyo for work", WED, None),
    ("My favourite day is Friday", WED, None),
    ("I'm staying in Kyoto for a year", WED, None),  # longer than a stay: left to the caller
    ("I'll be 30 this month", WED, None),  # an age reached, not a state that ends
    ("I have a new phone this week", WED, None),
    ("I'm in New York this week", WED, NEXT_MON),
    ("Do you have any plans for the weekend?", WED, None),  # a question
    ("I baked a cake for the weekend", WED, None),  # a purpose, not a stay
    ("Today is my birthday", WED, None),
    ("I'm in a meeting until 3pm", WED, None),  # a time of day is not read: no guess
    ("I'm reading a book about Rome this week", WED, NEXT_MON),
    ("Don't message me until Monday", WED, NEXT_MON + timedelta(days=1)),
    # ---- Chinese, bounded
    ("我今天在家办公", WED, day(1)),
    ("我这周在东京", WED, NEXT_MON),
    ("我这几天在出差", WED, day(4)),
    ("我这两天感冒", WED, day(3)),
    ("我妈妈在我们家住到周五", WED, END_FRI),
    ("下个月之前我都吃素", WED, APRIL),
    ("这个周末我在杭州", WED, NEXT_MON),
    ("今晚我不在家", WED, day(1) + timedelta(hours=6)),
    ("接下来三天我在上海", WED, day(4)),
    ("我要出差两周", WED, day(15)),
    ("我本月在北京", WED, APRIL),
    ("我到月底都在深圳", WED, APRIL),
    ("周五之前我在休假", WED, END_FRI),
    ("我到下周五都在广州", WED, datetime(2026, 3, 21, tzinfo=UTC)),
    ("我到明天都没空", WED, day(2)),
    ("下周之前我都在值班", WED, NEXT_MON),
    # ---- Chinese, never expiring
    ("我住在东京", WED, None),
    ("我今天搬到上海了", WED, None),
    ("我这周开始学日语", WED, None),
    ("从今以后我吃素", WED, None),
    ("我每周五去游泳", WED, None),
    ("我上周在东京出差", WED, None),
    ("我周一到周五上班", WED, None),
    ("我三天没睡好", WED, None),
    ("我已经在上海待了三天", WED, None),
    ("这周我终于戒烟了", WED, None),
    ("今天是我的生日", WED, None),
    ("我这个月满30岁", WED, None),
    ("我最近在上海", WED, None),  # 最近 is vague: no end
    ("我这周买了新电脑", WED, None),
    ("我今天有空", WED, day(1)),
]


@pytest.mark.parametrize(("text", "at", "want"), TABLE, ids=[r[0] for r in TABLE])
def test_table(text: str, at: datetime, want: datetime | None) -> None:
    got = expiry_of(text, at)
    assert (got.until if got else None) == want, got


def test_the_table_is_big_and_balanced() -> None:
    han = [r for r in TABLE if any("\u4e00" <= c <= "\u9fff" for c in r[0])]
    assert len(TABLE) >= 60 and len(han) >= 20
    assert sum(r[2] is None for r in TABLE) >= 25  # negatives are at least a third


def test_bounds_validity_reads_words_not_dates() -> None:
    assert bounds_validity("I am staying at my parents' place until Friday")
    assert bounds_validity("我这几天在出差")
    assert not bounds_validity("I live in Tokyo")  # control
    assert not bounds_validity("I moved to Osaka")


def test_the_phrase_is_given_as_written() -> None:
    got = expiry_of("I am staying at my parents' place  until FRIDAY", WED)
    assert got is not None and got.phrase == "until FRIDAY" and got.rule == "until_weekday"
    zh = expiry_of("下个月之前我都吃素", WED)
    assert zh is not None and zh.phrase == "下个月之前"


def test_a_naive_instant_is_utc() -> None:
    got = expiry_of("I'm in Tokyo this week", WED.replace(tzinfo=None))
    assert got is not None and got.until == NEXT_MON


INSTANTS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC))
PHRASES = st.sampled_from([r[0] for r in TABLE])
NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(text=st.one_of(PHRASES, NOISE, st.tuples(NOISE, PHRASES, NOISE).map("".join)), at=INSTANTS)
def test_never_before_the_statement_and_never_far(text: str, at: datetime) -> None:
    got = expiry_of(text, at)
    if got is not None:
        assert at < got.until <= at + MAX_SPAN
