"""The time-expression suite: English and Chinese phrasings generated from the grammar of time
expressions, each with a reference instant and the window it names (or none).

Written from the grammar (numbers x units x directions, weekday x modifiers, month x part of the
month, season x year, holiday x modifier, range joins), not from any benchmark's questions. The
expected windows are computed here, by calendar arithmetic of its own, never by the parser under
test. ``python -m benchmarks.timephrases --write-suite`` rewrites ``tests/data/time_phrases.tsv``
from this module (a fixed seed picks the carrier sentences); a unit test keeps the two equal.

Conventions of the expected windows (all ``[start, end)`` in the reference instant's timezone):

- a day is 00:00 to the next 00:00; "this morning", "tonight", "今天早上" are today;
- "this week/month/year" runs from its start up to the reference instant; "last"/"next" are the
  whole previous/next calendar week (Monday first), month or year; "the week before last"/上上周
  the calendar week before the last one; "N weeks ago" the 7 days ending N-1 weeks before now;
  "N months/years ago" the calendar month/year; "in the past N days/weeks" the trailing span;
- a weekend is Saturday and Sunday; "this weekend"/这周末 the one of this week, "last"/上周末 the
  one before, "next"/下周末 the one after;
- "last Tuesday", "on Tuesday" the latest Tuesday strictly before today; "Tuesday before last" and
  "two Tuesdays ago" the one a week before that; "next Tuesday" the first one after today;
  "this Tuesday", 这周二 this week's; 上周二 / 下周二 / 上上周二 last / next / the week before
  last's; a bare 周二 this week's when it has begun, else last week's;
- "in May" the latest May that has begun; "last May" the latest one before this month; early /
  mid / late (上旬/初, 中旬, 下旬/底) are days 1-10, 11-20 and 21 to the end;
- seasons are meteorological, northern: spring March-May, summer June-August, autumn September-
  November, winter December-February; "last summer" the latest summer that has ended, "this
  summer"/今年夏天 the one of this year, 去年夏天 the one of last year;
- a holiday is its day (Christmas 25 December, Christmas Eve 24, New Year's Day / 元旦 1 January,
  Valentine's Day 14 February, Halloween 31 October, the Fourth of July, Thanksgiving the fourth
  Thursday of November, Easter Sunday, 中秋 the 15th of the 8th lunar month), except the Chinese
  week-long breaks: 春节 the seven days from the lunar new year, 五一 1-5 May, 国庆 1-7 October;
  bare, the latest one that has begun; "last Christmas" the latest one before today;
- a range "between A and B" / "from A to B" / "A到B" runs from A's start to B's end, B read as
  the latest one that has begun and A the latest one not after B.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone

__all__ = ["Phrase", "REFERENCES", "generate"]

_TZ8 = timezone(timedelta(hours=8))
_TZM5 = timezone(timedelta(hours=-5))

# Reference instants: a Wednesday in March (UTC), a Saturday in July (UTC+8), a Monday in
# November (UTC-5), a Thursday early in January (UTC+8).
REFERENCES: tuple[datetime, ...] = (
    datetime(2024, 3, 13, 15, 0, tzinfo=UTC),
    datetime(2023, 7, 15, 10, 30, tzinfo=_TZ8),
    datetime(2025, 11, 3, 9, 0, tzinfo=_TZM5),
    datetime(2026, 1, 8, 20, 0, tzinfo=_TZ8),
)

# Lunar dates (Gregorian) of the Chinese new year and the mid-autumn festival.
_SPRING_FESTIVAL = {
    2021: date(2021, 2, 12), 2022: date(2022, 2, 1), 2023: date(2023, 1, 22), 2024: date(2024, 2, 10),
    2025: date(2025, 1, 29), 2026: date(2026, 2, 17),
}  # fmt: skip
_MID_AUTUMN = {
    2021: date(2021, 9, 21), 2022: date(2022, 9, 10), 2023: date(2023, 9, 29), 2024: date(2024, 9, 17),
    2025: date(2025, 10, 6), 2026: date(2026, 9, 25),
}  # fmt: skip

_EN_NUM = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 10: "ten"}
_ZH_NUM = {1: "一", 2: "两", 3: "三", 4: "四", 5: "五", 6: "六", 7: "七", 8: "八", 10: "十", 12: "十二"}
_EN_WD = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_ZH_WD = ("一", "二", "三", "四", "五", "六", "日")
_EN_MON = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip
_ORD = {1: "1st", 2: "2nd", 3: "3rd"}

_EN_CARRIERS = ("{}", "what did I do {}?", "what happened {}", "did we talk about it {}?", "{} I met Ann")
_ZH_CARRIERS = ("{}", "{}我做了什么", "{}发生了什么", "我们{}聊过吗", "{}见了小王")


@dataclass(frozen=True)
class Phrase:
    """One suite row: a text, its language and group, the reference instant and the window (or none)."""

    text: str
    lang: str
    group: str
    ref: datetime
    start: datetime | None
    end: datetime | None


_Win = tuple[datetime, datetime]


def _d(ref: datetime, day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=ref.tzinfo)


def _day(ref: datetime, day: date, n: int = 1) -> _Win:
    s = _d(ref, day)
    return s, s + timedelta(days=n)


def _month(ref: datetime, y: int, m: int) -> _Win:
    ny, nm = (y + 1, 1) if m == 12 else (y, m + 1)
    return _d(ref, date(y, m, 1)), _d(ref, date(ny, nm, 1))


def _shift_month(y: int, m: int, k: int) -> tuple[int, int]:
    i = y * 12 + m - 1 + k
    return i // 12, i % 12 + 1


def _year(ref: datetime, y: int) -> _Win:
    return _d(ref, date(y, 1, 1)), _d(ref, date(y + 1, 1, 1))


def _monday(ref: datetime) -> date:
    return ref.date() - timedelta(days=ref.weekday())


def _week(ref: datetime, k: int) -> _Win:
    """The calendar week ``k`` weeks from this one (0 this whole week, -1 last, 1 next)."""
    s = _d(ref, _monday(ref) + timedelta(weeks=k))
    return s, s + timedelta(weeks=1)


def _latest_month_year(ref: datetime, m: int) -> int:
    return ref.year if m <= ref.month else ref.year - 1


def _thirds(win: _Win, part: str) -> _Win:
    s, e = win
    if part == "early":
        return s, s + timedelta(days=10)
    if part == "mid":
        return s + timedelta(days=10), s + timedelta(days=20)
    return s + timedelta(days=20), e


_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


def _season(ref: datetime, name: str, year: int) -> _Win:
    m = _SEASON_START[name]
    ey, em = _shift_month(year, m, 3)
    return _d(ref, date(year, m, 1)), _d(ref, date(ey, em, 1))


def _latest_ended_season(ref: datetime, name: str) -> _Win:
    y = ref.year
    while _season(ref, name, y)[1] > ref:
        y -= 1
    return _season(ref, name, y)


def _latest_begun_season(ref: datetime, name: str) -> _Win:
    y = ref.year
    while _season(ref, name, y)[0] > ref:
        y -= 1
    return _season(ref, name, y)


def _thanksgiving(y: int) -> date:
    first = date(y, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)


def _easter(y: int) -> date:
    """Anonymous Gregorian computus."""
    a, b, c = y % 19, y // 100, y % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l = (32 + 2 * e + 2 * i - h - k) % 7  # noqa: E741 - the algorithm's own name
    m = (a + 11 * h + 22 * l) // 451
    month = (h + l - 7 * m + 114) // 31
    return date(y, month, (h + l - 7 * m + 114) % 31 + 1)


# Holiday name -> (date of that year, length in days).
_HOLIDAYS_EN = {
    "Christmas": (lambda y: date(y, 12, 25), 1),
    "Christmas Day": (lambda y: date(y, 12, 25), 1),
    "Christmas Eve": (lambda y: date(y, 12, 24), 1),
    "New Year's Day": (lambda y: date(y, 1, 1), 1),
    "New Year's Eve": (lambda y: date(y, 12, 31), 1),
    "Valentine's Day": (lambda y: date(y, 2, 14), 1),
    "Halloween": (lambda y: date(y, 10, 31), 1),
    "the Fourth of July": (lambda y: date(y, 7, 4), 1),
    "Thanksgiving": (_thanksgiving, 1),
    "Easter": (_easter, 1),
}
_HOLIDAYS_ZH = {
    "圣诞节": (lambda y: date(y, 12, 25), 1),
    "元旦": (lambda y: date(y, 1, 1), 1),
    "情人节": (lambda y: date(y, 2, 14), 1),
    "春节": (lambda y: _SPRING_FESTIVAL[y], 7),
    "五一": (lambda y: date(y, 5, 1), 5),
    "国庆": (lambda y: date(y, 10, 1), 7),
    "国庆节": (lambda y: date(y, 10, 1), 7),
    "中秋节": (lambda y: _MID_AUTUMN[y], 1),
}


def _holiday(ref: datetime, rule: tuple, *, strictly_before: bool = False, year: int | None = None) -> _Win:
    fn, n = rule
    if year is not None:
        return _day(ref, fn(year), n)
    y = ref.year
    while True:
        win = _day(ref, fn(y), n)
        if (win[1] <= _d(ref, ref.date())) if strictly_before else (win[0] <= ref):
            return win
        y -= 1


def _positives(ref: datetime) -> list[tuple[str, str, str, _Win]]:  # noqa: C901 - one grammar, one place
    """(text, lang, group, window) for the grammar's productions at ``ref``."""
    out: list[tuple[str, str, str, _Win]] = []
    today = ref.date()

    def en(group: str, text: str, win: _Win) -> None:
        out.append((text, "en", group, win))

    def zh(group: str, text: str, win: _Win) -> None:
        out.append((text, "zh", group, win))

    # Relative days.
    for text, k in (("today", 0), ("yesterday", -1), ("the day before yesterday", -2), ("tomorrow", 1),
                    ("the day after tomorrow", 2), ("this morning", 0), ("this afternoon", 0),
                    ("this evening", 0), ("yesterday evening", -1)):  # fmt: skip
        en("relative_day", text, _day(ref, today + timedelta(days=k)))
    for text, k in (("今天", 0), ("昨天", -1), ("前天", -2), ("大前天", -3), ("明天", 1), ("后天", 2),
                    ("大后天", 3), ("今天早上", 0), ("昨天晚上", -1)):  # fmt: skip
        zh("relative_day", text, _day(ref, today + timedelta(days=k)))
    # Numbers x units x "ago".
    for n in (1, 2, 3, 5, 10):
        for word in (str(n), _EN_NUM.get(n)) if n > 1 else ("a", "one"):
            if word is None:
                continue
            en("n_ago", f"{word} day{'s' if n > 1 else ''} ago", _day(ref, today - timedelta(days=n)))
            end = ref - timedelta(weeks=n - 1)
            en("n_ago", f"{word} week{'s' if n > 1 else ''} ago", (end - timedelta(weeks=1), end))
            y, m = _shift_month(ref.year, ref.month, -n)
            en("n_ago", f"{word} month{'s' if n > 1 else ''} ago", _month(ref, y, m))
            en("n_ago", f"{word} year{'s' if n > 1 else ''} ago", _year(ref, ref.year - n))
        z = _ZH_NUM.get(n, str(n))
        zh("n_ago", f"{z}天前", _day(ref, today - timedelta(days=n)))
        end = ref - timedelta(weeks=n - 1)
        zh("n_ago", f"{z}周前", (end - timedelta(weeks=1), end))
        y, m = _shift_month(ref.year, ref.month, -n)
        zh("n_ago", f"{z}个月前", _month(ref, y, m))
        zh("n_ago", f"{z}年前", _year(ref, ref.year - n))
    # Trailing spans.
    for n in (2, 3, 7):
        for lead in ("in the past", "over the last"):
            en("trailing", f"{lead} {_EN_NUM[n]} days", (ref - timedelta(days=n), ref))
            en("trailing", f"{lead} {n} weeks", (ref - timedelta(weeks=n), ref))
        zh("trailing", f"过去{_ZH_NUM[n]}天", (ref - timedelta(days=n), ref))
        zh("trailing", f"最近{_ZH_NUM[n]}周", (ref - timedelta(weeks=n), ref))
    # Calendar weeks, months, years: this / last / next / before last.
    this_week = (_week(ref, 0)[0], ref)
    this_month = (_month(ref, ref.year, ref.month)[0], ref)
    this_year = (_year(ref, ref.year)[0], ref)
    ly, lm = _shift_month(ref.year, ref.month, -1)
    ny, nm = _shift_month(ref.year, ref.month, 1)
    by, bm = _shift_month(ref.year, ref.month, -2)
    for text, win in (("this week", this_week), ("last week", _week(ref, -1)), ("next week", _week(ref, 1)),
                      ("the week before last", _week(ref, -2)), ("this month", this_month),
                      ("last month", _month(ref, ly, lm)), ("next month", _month(ref, ny, nm)),
                      ("the month before last", _month(ref, by, bm)), ("this year", this_year),
                      ("last year", _year(ref, ref.year - 1)), ("next year", _year(ref, ref.year + 1)),
                      ("the year before last", _year(ref, ref.year - 2)),
                      ("earlier this week", this_week), ("earlier this month", this_month)):  # fmt: skip
        en("calendar", text, win)
    for text, win in (("这周", this_week), ("本周", this_week), ("上周", _week(ref, -1)), ("下周", _week(ref, 1)),
                      ("上上周", _week(ref, -2)), ("下个星期", _week(ref, 1)), ("这个月", this_month),
                      ("上个月", _month(ref, ly, lm)), ("下个月", _month(ref, ny, nm)),
                      ("上上个月", _month(ref, by, bm)), ("今年", this_year), ("去年", _year(ref, ref.year - 1)),
                      ("明年", _year(ref, ref.year + 1)), ("前年", _year(ref, ref.year - 2))):  # fmt: skip
        zh("calendar", text, win)
    # Weekends.
    sat = _d(ref, _monday(ref) + timedelta(days=5))
    for k, en_t, zh_t in ((0, "this weekend", "这周末"), (-1, "last weekend", "上周末"), (1, "next weekend", "下周末")):
        s = sat + timedelta(weeks=k)
        en("weekend", en_t, (s, s + timedelta(days=2)))
        zh("weekend", zh_t, (s, s + timedelta(days=2)))
    # Weekdays x modifiers.
    for wd in range(7):
        name = _EN_WD[wd]
        back = (ref.weekday() - wd) % 7 or 7
        last = today - timedelta(days=back)
        ahead = (wd - ref.weekday()) % 7 or 7
        this = _monday(ref) + timedelta(days=wd)
        en("weekday", f"last {name}", _day(ref, last))
        if wd % 2 == 0:
            en("weekday", f"on {name}", _day(ref, last))
            en("weekday", f"{name} before last", _day(ref, last - timedelta(weeks=1)))
            en("weekday", f"next {name}", _day(ref, today + timedelta(days=ahead)))
        else:
            en("weekday", f"two {name}s ago", _day(ref, last - timedelta(weeks=1)))
            en("weekday", f"this {name}", _day(ref, this))
        z = _ZH_WD[wd]
        zh("weekday", f"上周{z}", _day(ref, this - timedelta(weeks=1)))
        zh("weekday", f"下周{z}", _day(ref, this + timedelta(weeks=1)))
        if wd % 2 == 0:
            zh("weekday", f"上上周{z}", _day(ref, this - timedelta(weeks=2)))
            zh("weekday", f"这周{z}", _day(ref, this))
        else:
            bare = this if _d(ref, this) <= ref else this - timedelta(weeks=1)
            zh("weekday", f"星期{z}", _day(ref, bare))
            zh("weekday", f"上星期{z}", _day(ref, this - timedelta(weeks=1)))
    # Months x parts; months with years.
    for m in (1, 5, 7, 10) if ref.month != 5 else (1, 6, 7, 10):
        name = _EN_MON[m - 1]
        y = _latest_month_year(ref, m)
        win = _month(ref, y, m)
        en("month", f"in {name}", win)
        last_y = ref.year - 1 if m >= ref.month else ref.year
        en("month", f"last {name}", _month(ref, last_y, m))
        en("month", f"early {name}", _thirds(win, "early"))
        en("month", f"mid-{name}", _thirds(win, "mid"))
        en("month", f"late {name}", _thirds(win, "late"))
        en("month", f"at the end of {name}", _thirds(win, "late"))
        en("month", f"{name} 2022", _month(ref, 2022, m))
        en("month", f"early {name} 2021", _thirds(_month(ref, 2021, m), "early"))
        zh("month", f"{m}月", win)
        zh("month", f"{m}月初", _thirds(win, "early"))
        zh("month", f"{m}月中旬", _thirds(win, "mid"))
        zh("month", f"{m}月下旬", _thirds(win, "late"))
        zh("month", f"{m}月底", _thirds(win, "late"))
        zh("month", f"去年{m}月", _month(ref, ref.year - 1, m))
        zh("month", f"2022年{m}月上旬", _thirds(_month(ref, 2022, m), "early"))
    zh("month", "上个月底", _thirds(_month(ref, ly, lm), "late"))
    en("month", "at the end of last month", _thirds(_month(ref, ly, lm), "late"))
    # Seasons x modifiers and years.
    for name, zname in (("spring", "春天"), ("summer", "夏天"), ("autumn", "秋天"), ("fall", None)):
        en("season", f"last {name}", _latest_ended_season(ref, name))
        en("season", f"in the {name}", _latest_begun_season(ref, name))
        en("season", f"the {name} of 2022", _season(ref, name, 2022))
        en("season", f"{name} 2021", _season(ref, name, 2021))
        en("season", f"this {name}", _season(ref, name, ref.year))
        if zname:
            zh("season", f"去年{zname}", _season(ref, name, ref.year - 1))
            zh("season", f"今年{zname}", _season(ref, name, ref.year))
            zh("season", f"2022年{zname}", _season(ref, name, 2022))
    en("season", "last winter", _latest_ended_season(ref, "winter"))
    # Holidays x modifiers.
    for name, rule in _HOLIDAYS_EN.items():
        prep = "on" if any(w in name for w in ("Day", "Eve", "Fourth")) else "at"
        en("holiday", f"{prep} {name}", _holiday(ref, rule))
        en("holiday", f"last {name.removeprefix('the ')}", _holiday(ref, rule, strictly_before=True))
        en("holiday", f"{name} 2022", _holiday(ref, rule, year=2022))
    for name, rule in _HOLIDAYS_ZH.items():
        zh("holiday", f"{name}的时候", _holiday(ref, rule))
        zh("holiday", f"去年{name}", _holiday(ref, rule, year=ref.year - 1))
        zh("holiday", f"2022年{name}", _holiday(ref, rule, year=2022))
    # Ranges.
    for a, b in ((3, 5), (6, 8), (9, 11)):
        y = _latest_month_year(ref, b)
        win = (_month(ref, y, a)[0], _month(ref, y, b)[1])
        en("range", f"between {_EN_MON[a - 1]} and {_EN_MON[b - 1]}", win)
        en(
            "range",
            f"from {_EN_MON[a - 1]} to {_EN_MON[b - 1]} 2022",
            (_month(ref, 2022, a)[0], _month(ref, 2022, b)[1]),
        )
        zh("range", f"从{a}月到{b}月", win)
        zh("range", f"{a}月至{b}月", win)
    for m in (6, 9):
        y = _latest_month_year(ref, m)
        if date(y, m, 5) > today:
            y -= 1
        win = _day(ref, date(y, m, 3), 3)
        mon = _EN_MON[m - 1]
        en("range", f"from 3 to 5 {mon}", win)
        en("range", f"between {mon} 3 and {mon} 5", win)
        en("range", f"from {mon} 3rd to 5th", win)
        zh("range", f"{m}月3日到5日", win)
        zh("range", f"{m}月3号至5号", win)
        en("range", f"from 3 to 5 {mon} 2022", _day(ref, date(2022, m, 3), 3))
        zh("range", f"2022年{m}月3日到{m}月5日", _day(ref, date(2022, m, 3), 3))
    # Dates and years.
    for m, d in ((2, 1), (8, 23)):
        y = ref.year if date(ref.year, m, d) <= today else ref.year - 1
        mon = _EN_MON[m - 1]
        en("date", f"on {d} {mon}", _day(ref, date(y, m, d)))
        en("date", f"on {mon} {_ORD.get(d, f'{d}rd' if d % 10 == 3 else f'{d}th')}", _day(ref, date(y, m, d)))
        en("date", f"the {_ORD.get(d, f'{d}rd')} of {mon}", _day(ref, date(y, m, d)))
        en("date", f"on {mon} {d}, 2022", _day(ref, date(2022, m, d)))
        zh("date", f"{m}月{d}日", _day(ref, date(y, m, d)))
        zh("date", f"{m}月{d}号", _day(ref, date(y, m, d)))
        zh("date", f"2022年{m}月{d}日", _day(ref, date(2022, m, d)))
    for y in (2021, 2022):
        en("year", f"in {y}", _year(ref, y))
        zh("year", f"{y}年", _year(ref, y))
    en("year", "early 2022", (_d(ref, date(2022, 1, 1)), _d(ref, date(2022, 5, 1))))
    en("year", "late 2021", (_d(ref, date(2021, 9, 1)), _d(ref, date(2022, 1, 1))))
    return out


# No time meant: names that are months, modal and verb homographs, ordinals, habits, durations.
NEGATIVES: tuple[tuple[str, str], ...] = (
    ("I'm in May's class", "en"), ("Will is here", "en"), ("we march on", "en"), ("a second opinion", "en"),
    ("May I ask you something?", "en"), ("wait a second", "en"), ("April loves hiking", "en"),
    ("June is my best friend", "en"), ("I told August about the plan", "en"), ("Ask Summer about it", "en"),
    ("he will mar the finish", "en"), ("what's new", "en"), ("recently I started running", "en"),
    ("I have 2023 dollars", "en"), ("room 1204 is free", "en"), ("the first time we met", "en"),
    ("second to none", "en"), ("one day I will travel", "en"), ("some day", "en"), ("every Monday I swim", "en"),
    ("the days are long", "en"), ("she is a weekday person", "en"), ("the Christmas tree is up", "en"),
    ("a week is a long time in politics", "en"), ("I work two days a week", "en"), ("the year of the dragon", "en"),
    ("what time is it", "en"), ("for the time being", "en"), ("my summer job", "en"), ("a spring in his step", "en"),
    ("the fall of Rome", "en"), ("in the long run", "en"), ("he is a Mayer", "en"), ("Sunday roast recipe", "en"),
    ("how long did it take", "en"), ("when did she move", "en"),
    ("最近怎么样", "zh"), ("三个苹果", "zh"), ("服务很周到", "zh"), ("每周三健身", "zh"), ("他是三年级的学生", "zh"),
    ("天天开心", "zh"), ("我的同事王国庆", "zh"), ("月光族", "zh"), ("年纪大了", "zh"), ("一周三次", "zh"),
    ("以前的事", "zh"), ("什么时候去的", "zh"), ("五一班的同学", "zh"), ("春天般的笑容", "zh"), ("前面那家店", "zh"),
    ("今后多联系", "zh"),
)  # fmt: skip


def generate(seed: int = 27) -> list[Phrase]:
    """Every suite row, in a fixed order; ``seed`` picks each positive's carrier sentence."""
    rng = random.Random(seed)
    rows: list[Phrase] = []
    for ref in REFERENCES:
        for text, lang, group, (start, end) in _positives(ref):
            carrier = rng.choice(_EN_CARRIERS if lang == "en" else _ZH_CARRIERS)
            rows.append(Phrase(carrier.format(text), lang, group, ref, start, end))
    for text, lang in NEGATIVES:
        for ref in REFERENCES[:2]:
            rows.append(Phrase(text, lang, "negative", ref, None, None))
    return rows
