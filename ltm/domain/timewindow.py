"""Explicit time windows in a query ("yesterday", "last week", "in May", "2023-05", "昨天", "上周").

:func:`parse_time_window` turns the first explicit time expression of a query into a half-open
range ``[start_ts, end_ts)`` of epoch seconds, computed in the calendar of the given ``now``
(its timezone decides where a day starts). Nothing is guessed from vague words ("recently",
"before", "最近"): no explicit expression means ``None``.

Conventions (all ranges end at most at the end of the named period, never in the future of it):
- a day ("yesterday", "2023-05-08", "8 May 2023", "5月8日", "3 days ago", "last Monday") is that
  calendar day;
- "this week"/"本周" is Monday 00:00 up to ``now``; "last week"/"上周" is the previous Monday-Sunday;
- "this month"/"last month"/"2 months ago", "in May" (the latest May that has started),
  "May 2023", "2023-05", "2023年5月" are calendar months;
- "this year"/"last year"/"去年"/"in 2023"/"2023年" are calendar years;
- "past/last N days|weeks|months", "过去N天", "最近N天" are the trailing span up to ``now``;
- "N weeks ago" is the 7-day span ending N-1 weeks before ``now``;
- "next week/month/year", "tomorrow", 下周, 明年 are the next calendar period; "the week before
  last"/上上周 the one before last; a weekend (this/last/next, 这周末/上周末/下周末) is that week's
  Saturday and Sunday;
- "last/on Tuesday" is the latest Tuesday before today, "this Tuesday" this week's, "next
  Tuesday" the first one after today, "Tuesday before last"/"two Tuesdays ago" a week before
  "last Tuesday"; 上周二/下周二/上上周二 that week's;
- seasons are meteorological and northern (spring = March-May, winter = December-February):
  "last summer" the latest that has ended, "in the summer" the latest that has begun;
- a holiday is its day (春节 seven days, 五一 1-5 May, 国庆 1-7 October), bare the latest that has
  begun, "last Christmas" the latest before today; English names need a preposition, a modifier
  or a year, 五一/国庆/中秋 a holiday word after them;
- early/mid/late or 上旬/中旬/下旬 (初, 底) of a month are days 1-10, 11-20, 21-end; of a year
  January-April, May-August, September-December.

The suite in ``tests/data/time_phrases.tsv`` (``python -m benchmarks.timephrases``) measures all
of it.

Pure: no I/O; ``now`` is always passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ["parse_time_window", "MONTHS"]

MONTHS: dict[str, int] = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
}  # fmt: skip
_NUM_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_ZH_DIGITS: dict[str, int] = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_ZH_WEEKDAYS: dict[str, int] = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_FULL_MONTHS = frozenset(list(MONTHS)[:12])
_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))
_FUZZY = frozenset({"a couple of", "couple of", "a few", "few", "several"})
_NUM_ALT = "|".join(sorted((re.escape(k) for k in _NUM_WORDS), key=len, reverse=True))
_UNIT = r"(?P<unit>day|week|month|year)s?"
_ZH_NUM = r"[0-9零〇一二两三四五六七八九十]+"
# A number is read from where it starts: without this a rule tried at every digit of a long run of
# digits would scan the rest of the run each time (quadratic in the run's length).
_ZH_NUM_START = r"(?<![\d零〇一二两三四五六七八九十])"
# The words before or after an expression that qualify it ("over the", 节) are read within this
# many characters of it, so each match costs the same however long the message is.
_CONTEXT_CHARS = 80

# "May" and "March" are also a modal verb and a verb: as months they need a date context.
_WD_ALT = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_AMBIGUOUS_MONTHS = {"may", "march"}
_NAME_MONTHS = {"april", "june", "august"}  # also given names: bare, they need a preposition
_MONTH_PREP = r"(?:in|during|of|since|until|till|by|early|late|mid|last|this|next|from|through|throughout)"


def _zh_int(s: str) -> int | None:
    """Parse ``12``, ``十二``, ``二十三``, ``两`` (up to 99)."""
    if s.isdigit():
        return int(s)
    if not s or any(c not in _ZH_DIGITS and c != "十" for c in s):
        return None
    if "十" in s:
        tens, _, ones = s.partition("十")
        t = _ZH_DIGITS.get(tens, 0) if tens else 1
        o = _ZH_DIGITS.get(ones, 0) if ones else 0
        return t * 10 + o
    if len(s) == 1:
        return _ZH_DIGITS[s]
    # "二〇二三" style digit-by-digit years.
    return int("".join(str(_ZH_DIGITS[c]) for c in s))


def _day_start(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, tz: object) -> datetime:
    return datetime(year, month, 1, tzinfo=tz)  # type: ignore[arg-type]


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    idx = year * 12 + (month - 1) + delta
    return idx // 12, idx % 12 + 1


def _month_range(year: int, month: int, tz: object) -> tuple[datetime, datetime]:
    ny, nm = _add_months(year, month, 1)
    return _month_start(year, month, tz), _month_start(ny, nm, tz)


def _year_range(year: int, tz: object) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)  # type: ignore[arg-type]


def _day_range(d: datetime) -> tuple[datetime, datetime]:
    s = _day_start(d)
    return s, s + timedelta(days=1)


def _safe_date(year: int, month: int, day: int, tz: object) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=tz)  # type: ignore[arg-type]
    except ValueError:
        return None


def _latest_month(now: datetime, month: int) -> int:
    """The year of the latest ``month`` that has started by ``now``."""
    return now.year if month <= now.month else now.year - 1


def _num(token: str) -> int | None:
    token = token.strip().lower()
    if token.isdigit():
        return int(token)
    return _NUM_WORDS.get(token)


def _plausible_year(y: int) -> bool:
    return 1900 <= y <= 2200


# Each rule is (compiled regex, handler(match, now) -> (start, end) | None); see _RULES below.


def _h_iso_day(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    d = _safe_date(int(m["y"]), int(m["m"]), int(m["d"]), now.tzinfo)
    return _day_range(d) if d and _plausible_year(d.year) else None


def _h_iso_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y, mo = int(m["y"]), int(m["m"])
    return _month_range(y, mo, now.tzinfo) if 1 <= mo <= 12 and _plausible_year(y) else None


def _h_day_month_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    month = MONTHS[m["mon"].lower()]
    year = int(m["y"]) if m["y"] else _latest_month(now, month)
    d = _safe_date(year, month, int(m["d"]), now.tzinfo)
    if d is None:
        return None
    if not m["y"] and d > now:
        d = _safe_date(year - 1, month, int(m["d"]), now.tzinfo)
    return _day_range(d) if d else None


def _month_part(rng: tuple[datetime, datetime], part: str) -> tuple[datetime, datetime]:
    """ "early" / "mid" / "late" (or "beginning" / "middle" / "end") of a span: its thirds."""
    start, end = rng
    part = part.lower().rstrip("-")
    i = 0 if part in ("early", "beginning", "start") else 1 if part in ("mid", "middle") else 2
    if (end - start).days > 31:  # a year: January-April, May-August, September-December
        cuts = [start, start.replace(month=5), start.replace(month=9), end]
        return cuts[i], cuts[i + 1]
    cuts = [start, start + timedelta(days=10), start + timedelta(days=20), end]  # a month: 1-10, 11-20, 21-end
    return cuts[i], cuts[i + 1]


def _h_month_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y = int(m["y"])
    if not _plausible_year(y):
        return None
    rng = _month_range(y, MONTHS[m["mon"].lower()], now.tzinfo)
    return _month_part(rng, m["part"]) if m["part"] else rng


def _h_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    low = m["mon"].lower()
    full = low in _FULL_MONTHS
    if not m["prep"] and (low in _AMBIGUOUS_MONTHS or low in _NAME_MONTHS or not full):
        return None  # "May I ...", "march on", "mar", "June is my friend": bare, these are not months
    if m.string[m.end() : m.end() + 2] in ("'s", "\u2019s"):
        return None  # "May's class", "in June's flat": a person's name
    month = MONTHS[low]
    rel = (m["prep"] or "").lower()
    if rel == "last":
        year = now.year - 1 if month >= now.month else now.year
    elif rel == "next":
        year = now.year if month > now.month else now.year + 1
    elif rel == "this":
        year = now.year
    else:
        year = _latest_month(now, month)
    rng = _month_range(year, month, now.tzinfo)
    if rel in ("early", "mid", "late"):
        return _month_part(rng, rel)
    if rel == "since":
        return rng[0], max(now, rng[1])
    if rel in ("until", "till"):
        return _OPEN_START.astimezone(now.tzinfo), rng[0]
    return rng


def _h_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y = int(m["y"])
    if not _plausible_year(y):
        return None
    start, end = _year_range(y, now.tzinfo)
    return (start, max(now, end)) if m["prep"].lower() == "since" else (start, end)


def _h_relative_day(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    word = m[0].lower()
    offset = {
        "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0, "yesterday": 1,
        "the day before yesterday": 2, "tomorrow": -1, "the day after tomorrow": -2,
    }.get(word)  # fmt: skip
    if word == "last night":
        start = _day_start(now) - timedelta(hours=6)
        return start, _day_start(now) + timedelta(hours=6)
    if offset is None:
        return None
    return _day_range(now - timedelta(days=offset))


def _h_this_last(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    which, unit = m["which"].lower(), m["unit"].lower()
    if which == "past" and unit in ("week", "month", "year"):  # "the past week": trailing span
        return _h_trailing(m, now)
    back = {"this": 0, "current": 0, "last": 1, "past": 1, "previous": 1, "next": -1}[which]
    return _calendar_unit(unit, back, now)


def _calendar_unit(unit: str, back: int, now: datetime) -> tuple[datetime, datetime] | None:
    """The calendar week / month / year / weekend ``back`` units before this one (this one up to
    ``now`` for 0; -1 is the next one)."""
    if unit == "week":
        monday = _day_start(now) - timedelta(days=now.weekday())
        start = monday - timedelta(weeks=back)
        return (start, now) if back == 0 else (start, start + timedelta(weeks=1))
    if unit == "month":
        y, mo = _add_months(now.year, now.month, -back)
        s, e = _month_range(y, mo, now.tzinfo)
        return (s, now) if back == 0 else (s, e)
    if unit == "year":
        s, e = _year_range(now.year - back, now.tzinfo)
        return (s, now) if back == 0 else (s, e)
    if unit == "weekend":  # this week's Saturday and Sunday (Monday first), or the one ``back`` before
        saturday = _day_start(now) - timedelta(days=now.weekday() - 5) - timedelta(weeks=back)
        return saturday, saturday + timedelta(days=2)
    return None


def _h_before_last(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    return _calendar_unit(m["unit"].lower(), 2, now)  # "the week before last"


def _h_trailing(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    n = _num(m["n"]) if "n" in m.re.groupindex else 1
    if not n:
        return None
    return _h_trailing_n(n, m["unit"].lower(), now)


def _h_trailing_n(n: int, unit: str, now: datetime) -> tuple[datetime, datetime]:
    if unit == "month":
        y, mo = _add_months(now.year, now.month, -n)
        day = min(now.day, 28)
        return now.replace(year=y, month=mo, day=day), now
    if unit == "year":
        return now.replace(year=now.year - n, day=min(now.day, 28)), now
    return now - timedelta(days=n * (7 if unit == "week" else 1)), now


def _h_ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    n = _num(m["n"])
    if n is None:
        return None
    unit = m["unit"].lower()
    if m["n"].strip().lower() in _FUZZY:  # "a few days ago": from 2n units back up to now
        return _h_trailing_n(2 * n, unit, now)
    if unit == "day":
        return _day_range(now - timedelta(days=n))
    if unit == "week":
        end = now - timedelta(weeks=max(n - 1, 0))
        return end - timedelta(weeks=1), end
    if unit == "month":
        y, mo = _add_months(now.year, now.month, -n)
        return _month_range(y, mo, now.tzinfo)
    return _year_range(now.year - n, now.tzinfo)


def _h_weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    wd = WEEKDAYS[m["wd"].lower()]
    mod = " ".join((m["mod"] or "").lower().split())
    if mod == "this":  # this week's (Monday first)
        return _day_range(_day_start(now) + timedelta(days=wd - now.weekday()))
    if mod == "next":  # the first one after today
        return _day_range(now + timedelta(days=(wd - now.weekday()) % 7 or 7))
    back = (now.weekday() - wd) % 7 or 7  # the latest such day strictly before today
    return _day_range(now - timedelta(days=back))


def _h_weekday_back(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    """ "Tuesday before last" (n = 2), "two Saturdays ago": the n-th latest one before today."""
    n = _num(m["n"]) if m["n"] else 2
    if not n or n > 52 or m["n"] and m["n"].strip().lower() in _FUZZY:
        return None
    back = (now.weekday() - WEEKDAYS[m["wd"].lower()]) % 7 or 7
    return _day_range(now - timedelta(days=back + 7 * (n - 1)))


# ---- Seasons and holidays (meteorological northern seasons; a holiday is its day) ----

_SEASONS: dict[str, int] = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_ZH_SEASONS: dict[str, int] = {"春": 3, "夏": 6, "秋": 9, "冬": 12}


def _season_range(year: int, first_month: int, tz: object) -> tuple[datetime, datetime]:
    """The three months from ``first_month`` of ``year`` (winter 2023 is December 2023 - February 2024)."""
    ey, em = _add_months(year, first_month, 3)
    return _month_start(year, first_month, tz), _month_start(ey, em, tz)


def _h_season(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    first = _SEASONS[m["s"].lower()]
    if m["y"]:
        y = int(m["y"])
        return _season_range(y, first, now.tzinfo) if _plausible_year(y) else None
    mod = (m["mod"] or "").lower().split()
    if not mod or mod == ["the"]:
        return None  # "my summer job", "the fall of Rome": a season needs a modifier or a year
    if mod[0] == "this":
        return _season_range(now.year, first, now.tzinfo)
    if mod[0] == "next":
        y = now.year
        while _season_range(y, first, now.tzinfo)[0] <= now:
            y += 1
        return _season_range(y, first, now.tzinfo)
    ended = mod[0] in ("last", "past") or mod[:2] == ["this", "past"]
    y = now.year
    while (_season_range(y, first, now.tzinfo)[1] if ended else _season_range(y, first, now.tzinfo)[0]) > now:
        y -= 1  # "last summer": the latest that has ended; "in the summer": the latest that has begun
    return _season_range(y, first, now.tzinfo)


# Lunar new year and mid-autumn days (Gregorian); years outside the table name no window.
_SPRING_FESTIVAL: dict[int, tuple[int, int]] = {
    2000: (2, 5), 2001: (1, 24), 2002: (2, 12), 2003: (2, 1), 2004: (1, 22), 2005: (2, 9), 2006: (1, 29),
    2007: (2, 18), 2008: (2, 7), 2009: (1, 26), 2010: (2, 14), 2011: (2, 3), 2012: (1, 23), 2013: (2, 10),
    2014: (1, 31), 2015: (2, 19), 2016: (2, 8), 2017: (1, 28), 2018: (2, 16), 2019: (2, 5), 2020: (1, 25),
    2021: (2, 12), 2022: (2, 1), 2023: (1, 22), 2024: (2, 10), 2025: (1, 29), 2026: (2, 17), 2027: (2, 6),
    2028: (1, 26), 2029: (2, 13), 2030: (2, 3),
}  # fmt: skip
_MID_AUTUMN: dict[int, tuple[int, int]] = {
    2015: (9, 27), 2016: (9, 15), 2017: (10, 4), 2018: (9, 24), 2019: (9, 13), 2020: (10, 1), 2021: (9, 21),
    2022: (9, 10), 2023: (9, 29), 2024: (9, 17), 2025: (10, 6), 2026: (9, 25), 2027: (9, 15), 2028: (10, 3),
    2029: (9, 22), 2030: (9, 12),
}  # fmt: skip


def _easter(y: int) -> tuple[int, int]:
    """Easter Sunday (anonymous Gregorian computus)."""
    a, b, c = y % 19, y // 100, y % 100
    h = (19 * a + b - b // 4 - (b - (b + 8) // 25 + 1) // 3 + 15) % 30
    k = (32 + 2 * (b % 4) + 2 * (c // 4) - h - c % 4) % 7
    q = (a + 11 * h + 22 * k) // 451
    return (h + k - 7 * q + 114) // 31, (h + k - 7 * q + 114) % 31 + 1


def _thanksgiving(y: int) -> tuple[int, int]:
    first = datetime(y, 11, 1).weekday()
    return 11, 1 + (3 - first) % 7 + 21  # the fourth Thursday of November


def _lunar(table: dict[int, tuple[int, int]], shift: int = 0) -> Callable[[int], tuple[int, int] | None]:
    def day(y: int) -> tuple[int, int] | None:
        if y not in table:
            return None
        d = datetime(y, *table[y]) + timedelta(days=shift)
        return (d.month, d.day) if d.year == y else None

    return day


# Holiday -> (its (month, day) in a year, or None; how many days it lasts).
_Holiday = tuple[Callable[[int], tuple[int, int] | None], int]
_HOLIDAYS: dict[str, _Holiday] = {
    "christmas": (lambda y: (12, 25), 1), "christmas day": (lambda y: (12, 25), 1),
    "christmas eve": (lambda y: (12, 24), 1), "new year's day": (lambda y: (1, 1), 1),
    "new year's eve": (lambda y: (12, 31), 1), "valentine's day": (lambda y: (2, 14), 1),
    "valentine's": (lambda y: (2, 14), 1), "halloween": (lambda y: (10, 31), 1),
    "fourth of july": (lambda y: (7, 4), 1), "independence day": (lambda y: (7, 4), 1),
    "thanksgiving": (_thanksgiving, 1), "easter": (_easter, 1), "easter sunday": (_easter, 1),
    "圣诞节": (lambda y: (12, 25), 1), "圣诞": (lambda y: (12, 25), 1), "平安夜": (lambda y: (12, 24), 1),
    "元旦": (lambda y: (1, 1), 1), "情人节": (lambda y: (2, 14), 1), "春节": (_lunar(_SPRING_FESTIVAL), 7),
    "除夕": (_lunar(_SPRING_FESTIVAL, -1), 1), "五一": (lambda y: (5, 1), 5), "劳动节": (lambda y: (5, 1), 5),
    "国庆": (lambda y: (10, 1), 7), "国庆节": (lambda y: (10, 1), 7), "中秋": (_lunar(_MID_AUTUMN), 1),
    "中秋节": (_lunar(_MID_AUTUMN), 1), "万圣节": (lambda y: (10, 31), 1), "new year's": (lambda y: (1, 1), 1),
}  # fmt: skip
_HOLIDAY_PREP = re.compile(
    r"\b(?:at|on|over|during|for|around|since|before|after|until|till|by|of|from|through|throughout|this|last|next)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
# 五一 / 国庆 / 中秋 / 圣诞 are also a class name, a given name, a tree: they need a holiday context.
_ZH_NAMELIKE = {"五一", "国庆", "中秋", "圣诞"}
_ZH_HOLIDAY_AFTER = re.compile(
    r"^(?:节|假期|长假|小长假|期间|的时候|那天|那几天|黄金周|放假|前|后|以来|之前|之后|以后|以前)"
)


def _holiday_range(name: str, year: int, tz: object) -> tuple[datetime, datetime] | None:
    rule, days = _HOLIDAYS[name]
    md = rule(year) if _plausible_year(year) else None
    if md is None:
        return None
    start = datetime(year, md[0], md[1], tzinfo=tz)  # type: ignore[arg-type]
    return start, start + timedelta(days=days)


def _h_holiday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    name = " ".join(m["h"].lower().replace("\u2019", "'").split())
    name = name.removeprefix("the ")
    if name not in _HOLIDAYS:
        return None
    rel = (m["rel"] or "").lower()
    if m["y"] or rel in ("去", "今", "明", "前"):
        if m["y"]:
            y = _zh_int(m["y"]) if not m["y"].isdigit() else int(m["y"])
        else:
            y = now.year + {"去": -1, "今": 0, "明": 1, "前": -2}[rel]
        return _holiday_range(name, y, now.tzinfo) if y is not None else None
    text = m.string
    after = text[m.end() : m.end() + _CONTEXT_CHARS]
    if name.isascii():
        if not rel and not _HOLIDAY_PREP.search(text, max(0, m.start() - _CONTEXT_CHARS), m.start()):
            return None  # "the Christmas tree": a holiday name needs a preposition, a modifier or a year
    elif name in _ZH_NAMELIKE and not _ZH_HOLIDAY_AFTER.match(after):
        return None
    today = _day_start(now)
    if rel in ("this",):
        return _holiday_range(name, now.year, now.tzinfo)
    for y in range(now.year, now.year + 2) if rel == "next" else range(now.year, now.year - 3, -1):
        got = _holiday_range(name, y, now.tzinfo)
        if got is None:
            continue
        if rel == "next" and got[0] > now:
            return got
        if rel == "last" and got[1] <= today:
            return got
        if not rel and got[0] <= now:  # bare: the latest that has begun
            return got
    return None


# ---- Chinese ----


def _h_zh_ymd(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y = _zh_int(m["y"]) if m["y"] else None
    mo = _zh_int(m["m"])
    d = _zh_int(m["d"]) if m["d"] else None
    if mo is None or not 1 <= mo <= 12:
        return None
    if y is not None and not _plausible_year(y):
        return None
    if d is None:
        year = y if y is not None else _latest_month(now, mo)
        return _month_range(year, mo, now.tzinfo)
    year = y if y is not None else now.year
    day = _safe_date(year, mo, d, now.tzinfo)
    if day is None:
        return None
    if y is None and day > now:
        day = _safe_date(year - 1, mo, d, now.tzinfo)
    return _day_range(day) if day else None


def _h_zh_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y = _zh_int(m["y"])
    return _year_range(y, now.tzinfo) if y is not None and _plausible_year(y) else None


def _h_zh_fixed(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    w = m[0]
    days = {
        "今天": 0, "今日": 0, "今晚": 0, "昨天": 1, "昨日": 1, "昨晚": 1, "前天": 2, "大前天": 3, "明天": -1,
        "明日": -1, "后天": -2, "大后天": -3,
    }  # fmt: skip
    if w in days:
        return _day_range(now - timedelta(days=days[w]))
    monday = _day_start(now) - timedelta(days=now.weekday())
    if w in ("本周", "这周", "这个星期", "这星期", "本星期", "这个礼拜", "这礼拜"):
        return monday, now
    if w in ("上周", "上星期", "上个星期", "上礼拜", "上个礼拜"):
        return monday - timedelta(weeks=1), monday
    if w in ("上上周", "上上星期", "上上个星期", "上上个礼拜"):
        return monday - timedelta(weeks=2), monday - timedelta(weeks=1)
    if w in ("下周", "下星期", "下个星期", "下礼拜", "下个礼拜"):
        return monday + timedelta(weeks=1), monday + timedelta(weeks=2)
    if w in ("本月", "这个月", "这月"):
        return _month_start(now.year, now.month, now.tzinfo), now
    if w in ("上个月", "上月", "上上个月", "下个月", "下月"):
        y, mo = _add_months(now.year, now.month, {"上上个月": -2, "下个月": 1, "下月": 1}.get(w, -1))
        return _month_range(y, mo, now.tzinfo)
    if w in ("今年", "本年"):
        return _year_range(now.year, now.tzinfo)[0], now
    if w == "去年":
        return _year_range(now.year - 1, now.tzinfo)
    if w == "前年":
        return _year_range(now.year - 2, now.tzinfo)
    if w == "明年":
        return _year_range(now.year + 1, now.tzinfo)
    return None


def _h_zh_ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    n = _zh_int(m["n"])
    if n is None:
        return None
    unit = m["unit"]
    if unit == "天":
        return _day_range(now - timedelta(days=n))
    if unit in ("周", "星期", "个星期", "礼拜", "个礼拜"):
        end = now - timedelta(weeks=max(n - 1, 0))
        return end - timedelta(weeks=1), end
    if unit in ("个月", "月"):
        y, mo = _add_months(now.year, now.month, -n)
        return _month_range(y, mo, now.tzinfo)
    return _year_range(now.year - n, now.tzinfo)


def _h_zh_trailing(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    n = _zh_int(m["n"])
    if not n:
        return None
    unit = m["unit"]
    if unit == "天":
        return now - timedelta(days=n), now
    if unit in ("周", "星期", "个星期", "礼拜", "个礼拜"):
        return now - timedelta(weeks=n), now
    if unit in ("个月", "月"):
        y, mo = _add_months(now.year, now.month, -n)
        return now.replace(year=y, month=mo, day=min(now.day, 28)), now
    return now.replace(year=now.year - n, day=min(now.day, 28)), now


def _h_zh_weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    wd = _ZH_WEEKDAYS[m["wd"]]
    monday = _day_start(now) - timedelta(days=now.weekday())
    which = m["which"] or ""
    if not which and m.start() and m.string[m.start() - 1] in "每一二两三四五六七八九十几0123456789":
        return None  # 每周三 (every Wednesday), 一周三次 (three times a week): no day named
    if which in ("上", "上上", "下"):
        return _day_range(monday + timedelta(weeks={"上": -1, "上上": -2, "下": 1}[which], days=wd))
    day = monday + timedelta(days=wd)  # 这周X / 本周X: this week's; a bare 周X: the latest one
    if not which and day > now:
        day -= timedelta(weeks=1)
    return _day_range(day)


def _h_zh_weekend(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    return _calendar_unit("weekend", {"这": 0, "本": 0, "上": 1, "上上": 2, "下": -1}[m["which"]], now)


def _h_zh_rel_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    """去年5月, 今年三月, 明年5月8日: a month (or a day) of a year named relative to ``now``."""
    y = now.year + {"去": -1, "今": 0, "本": 0, "明": 1, "前": -2}[m["rel"]]
    mo = _zh_int(m["m"])
    if mo is None or not 1 <= mo <= 12:
        return None
    if not m["d"]:
        return _month_range(y, mo, now.tzinfo)
    d, day = _zh_int(m["d"]), None
    if d is not None:
        day = _safe_date(y, mo, d, now.tzinfo)
    return _day_range(day) if day else None


def _h_zh_season(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    first = _ZH_SEASONS[m["s"]]
    if m["y"]:
        y = _zh_int(m["y"])
    else:
        y = now.year + {"去": -1, "今": 0, "明": 1, "前": -2}[m["rel"]]
    return _season_range(y, first, now.tzinfo) if y is not None and _plausible_year(y) else None


def _h_day_span(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    """ "from 3 to 5 June", "June 3rd to 5th", "6月3日到5日": days d1 to d2 of one month."""
    mon = m["mon"]
    month = MONTHS.get(mon.lower()) if not mon[0].isdigit() and mon.lower() in MONTHS else _zh_int(mon)
    d1, d2 = _zh_int(m["d1"]), _zh_int(m["d2"])
    if not month or not 1 <= month <= 12 or d1 is None or d2 is None or d2 < d1:
        return None
    if m["y"]:
        year = int(m["y"])
        if not _plausible_year(year):
            return None
    else:  # the latest such span whose last day has begun
        year = now.year
        last = _safe_date(year, month, d2, now.tzinfo)
        if last is None:
            return None
        if last > now:
            year -= 1
    first, last = _safe_date(year, month, d1, now.tzinfo), _safe_date(year, month, d2, now.tzinfo)
    if first is None or last is None:
        return None
    return first, last + timedelta(days=1)


def _h_month_span(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    """ "between March and May", "从3月到5月": the first month's start to the last one's end."""
    m1, m2 = (MONTHS.get(x.lower()) or _zh_int(x) for x in (m["m1"], m["m2"]))
    if not m1 or not m2 or not (1 <= m1 <= 12 and 1 <= m2 <= 12):
        return None
    y2 = int(m["y"]) if m["y"] else _latest_month(now, m2)  # the latest last month that has begun
    if not _plausible_year(y2):
        return None
    y1 = y2 if m1 <= m2 else y2 - 1
    return _month_start(y1, m1, now.tzinfo), _month_range(y2, m2, now.tzinfo)[1]


def _h_year_part(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y = int(m["y"])
    return _month_part(_year_range(y, now.tzinfo), m["part"]) if _plausible_year(y) else None


_ZH_UNIT = r"(?P<unit>天|个星期|星期|个礼拜|礼拜|周|个月|月|年)"

_Range = tuple[datetime, datetime]
_Handler = Callable[[re.Match[str], datetime], _Range | None]

# The earliest expression in the query wins; among matches overlapping it, the longest, then the
# one listed first.
_RULES: list[tuple[re.Pattern[str], _Handler]] = [
    (re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)"), _h_iso_day),
    (re.compile(r"(?<![\d-])(?P<y>\d{4})-(?P<m>\d{1,2})(?![\d-])"), _h_iso_month),
    (
        re.compile(
            rf"(?P<y>(?:\d{{4}}|[零〇一二三四五六七八九]{{4}}))年\s*(?P<m>{_ZH_NUM})月(?:\s*(?P<d>{_ZH_NUM})[日号])?"
        ),
        _h_zh_ymd,
    ),
    (re.compile(rf"(?<!年){_ZH_NUM_START}(?P<y>)(?P<m>{_ZH_NUM})月(?:(?P<d>{_ZH_NUM})[日号])?"), _h_zh_ymd),
    (re.compile(r"(?P<which>上上|上|下|这|本)?(?:个)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"), _h_zh_weekday),
    (re.compile(r"(?P<which>上上|上|下|这|本)(?:个)?周末"), _h_zh_weekend),
    (re.compile(rf"(?P<rel>去|今|本|明|前)年\s*(?P<m>{_ZH_NUM})月(?:\s*(?P<d>{_ZH_NUM})[日号])?"), _h_zh_rel_month),
    (re.compile(r"(?:(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年|(?P<rel>去|今|明|前)年)(?P<s>[春夏秋冬])(?:天|季)"),
     _h_zh_season),
    (re.compile(r"(?:(?P<y>\d{4})年|(?P<rel>去|今|明|前)年)?"
                r"(?P<h>圣诞节|圣诞|平安夜|元旦|情人节|春节|除夕|五一|劳动节|国庆节|国庆|中秋节|中秋|万圣节)"),
     _h_holiday),
    (re.compile(rf"(?:(?P<y>\d{{4}})年)?{_ZH_NUM_START}(?P<mon>{_ZH_NUM})月(?P<d1>{_ZH_NUM})[日号]?\s*(?:到|至|-|~|—|–)\s*"
                rf"(?P<d2>{_ZH_NUM})[日号]"), _h_day_span),
    (re.compile(rf"(?:(?P<y>\d{{4}})年)?从?{_ZH_NUM_START}(?P<m1>{_ZH_NUM})月份?\s*(?:到|至|-|~|—|–)\s*(?P<m2>{_ZH_NUM})月份?"
                rf"(?!\s*{_ZH_NUM}\s*[日号])"), _h_month_span),
    (re.compile(r"(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年(?!\s*[0-9零〇一二两三四五六七八九十]+月)"), _h_zh_year),
    (
        re.compile(
            r"大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|本周|这周|这个星期|这星期|本星期|这个礼拜|这礼拜"
            r"|上个星期|上星期|上周|上个礼拜|上礼拜|本月|这个月|这月|上个月|上月|今年|本年|去年|前年"
            r"|大后天|后天|明天|明日|上上周|上上星期|上上个星期|上上个礼拜|下周|下星期|下个星期|下礼拜|下个礼拜"
            r"|上上个月|下个月|下月|明年"
        ),
        _h_zh_fixed,
    ),
    (re.compile(rf"(?:过去|最近|近)(?P<n>{_ZH_NUM})\s*{_ZH_UNIT}"), _h_zh_trailing),
    (re.compile(rf"{_ZH_NUM_START}(?P<n>{_ZH_NUM})\s*{_ZH_UNIT}(?:以)?前"), _h_zh_ago),
    # ---- English ----
    (
        re.compile(
            rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_ALT})\.?,?\s*(?P<y>\d{{4}})?\b",
            re.IGNORECASE,
        ),
        _h_day_month_year,
    ),
    (
        re.compile(
            rf"\b(?P<mon>{_MONTH_ALT})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(?P<y>\d{{4}}))?",
            re.IGNORECASE,
        ),
        _h_day_month_year,
    ),
    (re.compile(rf"(?:\b(?P<part>early|mid|late)[\s-]+)?\b(?P<mon>{_MONTH_ALT})\.?,?\s+(?:of\s+)?(?P<y>\d{{4}})\b",
                re.IGNORECASE), _h_month_year),
    (
        re.compile(r"\b(?:the day before yesterday|the day after tomorrow|yesterday|today|tonight|tomorrow"
                   r"|last night|this morning|this afternoon|this evening)\b", re.IGNORECASE),
        _h_relative_day,
    ),
    (
        re.compile(
            r"\b(?P<which>this|current|last|past|previous|next)\s+(?P<unit>week|month|year|weekend)\b(?!\s+of\b)",
            re.IGNORECASE,
        ),
        _h_this_last,
    ),
    (
        re.compile(rf"\b(?:in\s+the\s+|over\s+the\s+|during\s+the\s+|within\s+the\s+)?(?:past|last)\s+"
                   rf"(?P<n>\d+|{_NUM_ALT})\s+{_UNIT}\b", re.IGNORECASE),
        _h_trailing,
    ),
    (re.compile(rf"\b(?P<n>\d+|{_NUM_ALT})\s+{_UNIT}\s+ago\b", re.IGNORECASE), _h_ago),
    (re.compile(rf"\b(?P<mod>last|on|this\s+past|this|next)\s+(?P<wd>{_WD_ALT})\b", re.IGNORECASE), _h_weekday),
    (re.compile(rf"\b(?P<n>)(?P<wd>{_WD_ALT})\s+before\s+last\b", re.IGNORECASE), _h_weekday_back),
    (re.compile(rf"\b(?P<n>\d+|{_NUM_ALT})\s+(?P<wd>{_WD_ALT})s\s+ago\b", re.IGNORECASE), _h_weekday_back),
    (re.compile(r"\b(?:the\s+)?(?P<unit>week|month|year|weekend)\s+before\s+last\b(?!\s+(?:week|month|year|weekend)\b)",
                re.IGNORECASE), _h_before_last),
    (re.compile(r"(?:\b(?P<mod>this\s+past|last|this|next|in\s+the|during\s+the|over\s+the|throughout\s+the|in|during"
                r"|the)\s+)?\b(?P<s>spring|summer|autumn|fall|winter)\b(?:,?\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2})\b)?",
                re.IGNORECASE), _h_season),
    (re.compile(r"\b(?:(?P<rel>last|this|next)\s+)?(?P<h>(?:the\s+)?fourth\s+of\s+july|independence\s+day"
                r"|christmas(?:\s+(?:day|eve))?|new\s+year['\u2019]s(?:\s+(?:day|eve))?|valentine['\u2019]s(?:\s+day)?"
                r"|halloween|thanksgiving|easter(?:\s+sunday)?)\b(?:,?\s+(?P<y>(?:19|20|21)\d{2})\b)?",
                re.IGNORECASE), _h_holiday),
    (re.compile(rf"\b(?:from|between)\s+(?:the\s+)?(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:to|and|until|till|through|-|–)"
                rf"\s+(?:the\s+)?(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_ALT})\b"
                rf"(?:,?\s*(?P<y>\d{{4}})\b)?", re.IGNORECASE), _h_day_span),
    (re.compile(rf"\b(?P<mon>{_MONTH_ALT})\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s*(?:to|until|till|through|-|–)\s*"
                rf"(?:the\s+)?(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*(?:{_MONTH_ALT}|:|\d))(?:,?\s*(?P<y>\d{{4}})\b)?",
                re.IGNORECASE), _h_day_span),
    (re.compile(rf"\b(?:between|from)\s+(?P<m1>{_MONTH_ALT})\s+(?:and|to|until|till|through|-|–)\s+(?P<m2>{_MONTH_ALT})\b"
                rf"(?!\s+\d{{1,2}}\b(?!\d))(?:,?\s*(?:of\s+)?(?P<y>\d{{4}})\b)?", re.IGNORECASE), _h_month_span),
    (re.compile(r"\b(?P<part>early|mid|late)[\s-]+(?P<y>(?:19|20|21)\d{2})\b", re.IGNORECASE), _h_year_part),
    (re.compile(rf"(?:\b(?P<prep>{_MONTH_PREP})(?:\s+|-))?\b(?P<mon>{_MONTH_ALT})\b", re.IGNORECASE), _h_month),
    (re.compile(r"\b(?P<prep>in|during|throughout|of|for|since)\s+(?P<y>(?:19|20|21)\d{2})\b", re.IGNORECASE), _h_year),
]  # fmt: skip


def _expressions(query: str, now: datetime) -> list[tuple[int, int, _Range]]:
    """Every time expression of ``query`` as non-overlapping ``(start, end, range)``, in order.

    Where matches overlap, the earliest one starts a group and the longest of the group (then the
    more specific rule) wins: "in May 2023" is May 2023, "上周三" is a day, "2023-05-08" is a day.
    """
    found: list[tuple[int, int, int, _Range]] = []
    for order, (rx, handler) in enumerate(_RULES):
        for m in rx.finditer(query):
            try:
                rng = handler(m, now)
            except (OverflowError, ValueError):  # "1000000 days ago" leaves the calendar
                rng = None
            if rng is not None and rng[1] > rng[0]:
                found.append((m.start(), m.end(), order, rng))
    found.sort(key=lambda f: (f[0], f[2]))
    out: list[tuple[int, int, _Range]] = []
    # One pass: sorted by start, the matches overlapping a group's first one are the run that starts
    # before it ends, and the next group starts after the winner's end (the winner, the longest,
    # ends no earlier than the first): every match is looked at a bounded number of times.
    i = 0
    while i < len(found):
        first = best = found[i]
        j = i + 1
        while j < len(found) and found[j][0] < first[1]:
            f = found[j]
            if f[1] > first[0] and (-(f[1] - f[0]), f[2]) < (-(best[1] - best[0]), best[2]):
                best = f
            j += 1
        out.append((best[0], best[1], best[3]))
        while i < len(found) and found[i][0] < best[1]:
            i += 1
    return out


# ---- Composition: ranges ("between A and B") and anchors ("the week before A", "A之前") ----

_RANGE_JOIN = re.compile(r"\s*(?:,\s*)?(?:and|to|until|till|through|thru|-|–|—|~|至|到|和|与)\s*", re.IGNORECASE)
_RANGE_OPEN = re.compile(r"(?:\b(?:between|from)|从|在)\s*(?:the\s+)?$", re.IGNORECASE)
_UNIT_DAYS = {"day": 1, "night": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}
_ANCHOR_UNIT = re.compile(
    r"(?:\b(?P<n>\d+|" + _NUM_ALT + r")\s+|\b(?:the\s+)?)(?P<unit>day|night|week|weekend|month|year)s?\s+"
    r"(?P<dir>before|prior\s+to|preceding|leading\s+up\s+to|after|following|later\s+than)\s+(?:the\s+|on\s+)?$",
    re.IGNORECASE,
)
_ANCHOR_OPEN = re.compile(
    r"\b(?P<dir>before|prior\s+to|until|till|up\s+to|after|since)\s+(?:the\s+|on\s+)?$", re.IGNORECASE
)
_PART_OF = re.compile(
    r"\b(?:(?:the\s+)?(?P<part>beginning|start|middle|end)|(?P<early>early|mid|late)\s+part"
    r"|(?:the\s+)?(?P<ord>first|second|third|fourth|last)\s+week)\s+(?:of\s+)?(?:the\s+)?$",
    re.IGNORECASE,
)
_ZH_ANCHOR_UNIT = re.compile(
    rf"^\s*(?:的)?(?P<dir>之前|以前|前|之后|以后|后)(?P<n>{_ZH_NUM})?(?:个)?(?P<unit>天|周|星期|礼拜|月|年)"
)
_ZH_ANCHOR_OPEN = re.compile(r"^\s*(?:的)?(?P<dir>之前|以前|前|之后|以后|后|以来|起)")
_ZH_UNIT_DAYS = {"天": 1, "周": 7, "星期": 7, "礼拜": 7, "月": 30, "年": 365}
_OPEN_START = datetime(1900, 1, 1, tzinfo=UTC)


_YEAR_NAMED = re.compile(r"\d{4}|[零〇一二三四五六七八九]{4}年|[去今明前]年")
_ZH_PART_AFTER = re.compile(r"上旬|中旬|下旬|初|底|末")
_ZH_PARTS = {"上旬": "early", "初": "early", "中旬": "mid", "下旬": "late", "底": "late", "末": "late"}


def _in_year_of(b: _Range, a: _Range) -> _Range:
    """``b`` moved back whole years to the earliest place that still ends after ``a`` starts (a bare
    end of a range is read in the year its start names)."""
    for _ in range(10):
        try:
            moved = (b[0].replace(year=b[0].year - 1), b[1].replace(year=b[1].year - 1))
        except ValueError:  # 29 February
            return b
        if moved[1] <= a[0]:
            return b
        b = moved
    return b


def _shift(rng: _Range, direction: str, unit_days: int, n: int, weekend: bool = False) -> _Range:
    """The ``n``-th span of ``unit_days`` before (ending at the anchor's start) or after (starting at
    its end) the anchor: "the week before 16 May" is 9-16 May, "2 days after 3 May" is 5 May."""
    start, end = rng
    if weekend:  # the Saturday-Sunday before / after the anchor
        if direction == "before":
            sat = _day_start(start) - timedelta(days=(start.weekday() - 5) % 7 or 7)
        else:
            sat = _day_start(end) + timedelta(days=(5 - end.weekday()) % 7)
        return sat, sat + timedelta(days=2)
    span = timedelta(days=unit_days)
    if direction == "before":
        return start - n * span, start - (n - 1) * span
    return end + (n - 1) * span, end + n * span


def _part_of(rng: _Range, m: re.Match[str]) -> _Range:
    start, end = rng
    if m["ord"]:
        i = {"first": 0, "second": 1, "third": 2, "fourth": 3}.get(m["ord"].lower())
        s = start + timedelta(days=7 * i) if i is not None else end - timedelta(days=7)
        return s, min(end, s + timedelta(days=7))
    return _month_part(rng, m["part"] or m["early"])


def _compose(query: str, exprs: list[tuple[int, int, _Range]], now: datetime) -> _Range:
    a_start, a_end, rng = exprs[0]
    after = query[a_end : a_end + _CONTEXT_CHARS]
    lead = max(0, a_start - _CONTEXT_CHARS)  # the words that qualify it are read this far back

    def before(rx: re.Pattern[str]) -> re.Match[str] | None:
        return rx.search(query, lead, a_start)

    if len(exprs) > 1:  # "between 11 and 15 August", "from May to July", "5月1日到5月8日"
        b_start, b_end, b_rng = exprs[1]
        join = _RANGE_JOIN.fullmatch(query[a_end:b_start])
        if join and (before(_RANGE_OPEN) or join.group(0).strip() not in ("and", "和", "与")):
            if _YEAR_NAMED.search(query[a_start:a_end]) and not _YEAR_NAMED.search(query[b_start:b_end]):
                b_rng = _in_year_of(b_rng, rng)  # "2022年6月3日到6月5日": the end is in the start's year
            if b_rng[1] > rng[0]:
                return rng[0], max(rng[1], b_rng[1])
    if (m := before(_PART_OF)) and (rng[1] - rng[0]) >= timedelta(days=27):
        return _part_of(rng, m)
    if (m := _ZH_PART_AFTER.match(after)) and timedelta(days=27) <= rng[1] - rng[0] <= timedelta(days=31):
        return _month_part(rng, _ZH_PARTS[m[0]])  # 5月初, 5月中旬, 上个月底
    if m := before(_ANCHOR_UNIT):
        direction = "before" if m["dir"].lower().split()[0] in ("before", "prior", "preceding", "leading") else "after"
        unit = m["unit"].lower()
        n = _num(m["n"]) if m["n"] else 1
        return _shift(rng, direction, _UNIT_DAYS[unit], n or 1, weekend=unit == "weekend")
    if m := before(_ANCHOR_OPEN):
        if m["dir"].lower().split()[0] in ("before", "prior", "until", "till", "up"):
            return _OPEN_START.astimezone(now.tzinfo), rng[0]
        return (rng[0] if m["dir"].lower() == "since" else rng[1]), max(now, rng[1])
    if m := _ZH_ANCHOR_UNIT.match(after):
        n = _zh_int(m["n"]) if m["n"] else 1
        direction = "before" if "前" in m["dir"] else "after"
        return _shift(rng, direction, _ZH_UNIT_DAYS[m["unit"]], n or 1)
    if m := _ZH_ANCHOR_OPEN.match(after):
        if "前" in m["dir"]:
            return _OPEN_START.astimezone(now.tzinfo), rng[0]
        return (rng[0] if m["dir"] in ("以来", "起") else rng[1]), max(now, rng[1])
    return rng


def parse_time_window(query: str, now: datetime) -> tuple[float, float] | None:
    """The first explicit time window named in ``query`` as ``[start_ts, end_ts)``, or ``None``.

    ``now`` should be timezone-aware (a naive ``now`` is read as UTC); calendar days, weeks and
    months are those of ``now``'s timezone.
    """
    if not query:
        return None
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    exprs = _expressions(query, now)
    if not exprs:
        return None
    try:
        start, end = _compose(query, exprs, now)
    except (OverflowError, ValueError):  # a shift off the calendar: "昨天前2030年" (2030 years before)
        return None
    if end <= start:
        return None
    return start.timestamp(), end.timestamp()
