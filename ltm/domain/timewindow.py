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
- "N weeks ago" is the 7-day span ending N-1 weeks before ``now``.

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

# "May" and "March" are also a modal verb and a verb: as months they need a date context.
_AMBIGUOUS_MONTHS = {"may", "march"}
_MONTH_PREP = r"(?:in|during|of|since|until|till|by|early|late|mid|mid-|last|this|next|from|through|throughout)"


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
    third = timedelta(days=max(1, round((end - start).days / 3)))  # a month: days 1-10, 11-20, 21-end
    part = part.lower().rstrip("-")
    if part in ("early", "beginning", "start"):
        return start, start + third
    if part in ("mid", "middle"):
        return start + third, start + 2 * third
    return start + 2 * third, end


def _h_month_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    y = int(m["y"])
    if not _plausible_year(y):
        return None
    rng = _month_range(y, MONTHS[m["mon"].lower()], now.tzinfo)
    return _month_part(rng, m["part"]) if m["part"] else rng


def _h_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    low = m["mon"].lower()
    full = low in _FULL_MONTHS
    if not m["prep"] and (low in _AMBIGUOUS_MONTHS or not full):
        return None  # "May I ...", "march on", "mar": without a preposition these are not months
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
    if rel in ("early", "mid", "mid-", "late"):
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
    offset = {"today": 0, "tonight": 0, "yesterday": 1, "the day before yesterday": 2}.get(word)
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
    back = {"this": 0, "current": 0, "last": 1, "past": 1, "previous": 1}[which]
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
    if unit == "weekend":
        saturday = _day_start(now) - timedelta(days=(now.weekday() - 5) % 7)
        if back == 0 and now.weekday() < 5:
            saturday += timedelta(weeks=1)
        if back == 1 and now.weekday() >= 5:
            saturday -= timedelta(weeks=1)
        return saturday, saturday + timedelta(days=2)
    return None


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
    back = (now.weekday() - wd) % 7 or 7  # the latest such day strictly before today
    return _day_range(now - timedelta(days=back))


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
    days = {"今天": 0, "今日": 0, "今晚": 0, "昨天": 1, "昨日": 1, "昨晚": 1, "前天": 2, "大前天": 3}
    if w in days:
        return _day_range(now - timedelta(days=days[w]))
    monday = _day_start(now) - timedelta(days=now.weekday())
    if w in ("本周", "这周", "这个星期", "这星期", "本星期", "这个礼拜", "这礼拜"):
        return monday, now
    if w in ("上周", "上星期", "上个星期", "上礼拜", "上个礼拜"):
        return monday - timedelta(weeks=1), monday
    if w in ("本月", "这个月", "这月"):
        return _month_start(now.year, now.month, now.tzinfo), now
    if w in ("上个月", "上月"):
        y, mo = _add_months(now.year, now.month, -1)
        return _month_range(y, mo, now.tzinfo)
    if w in ("今年", "本年"):
        return _year_range(now.year, now.tzinfo)[0], now
    if w == "去年":
        return _year_range(now.year - 1, now.tzinfo)
    if w == "前年":
        return _year_range(now.year - 2, now.tzinfo)
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
    if m["which"] == "上":
        return _day_range(monday - timedelta(weeks=1) + timedelta(days=wd))
    day = monday + timedelta(days=wd)  # 这周X / 本周X: this week's; a bare 周X: the latest one
    if not m["which"] and day > now:
        day -= timedelta(weeks=1)
    return _day_range(day)


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
    (re.compile(rf"(?<![\d年])(?P<y>)(?P<m>{_ZH_NUM})月(?:(?P<d>{_ZH_NUM})[日号])?"), _h_zh_ymd),
    (re.compile(r"(?P<which>上|这|本)?(?:个)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"), _h_zh_weekday),
    (re.compile(r"(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年(?!\s*[0-9零〇一二两三四五六七八九十]+月)"), _h_zh_year),
    (
        re.compile(
            r"大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|本周|这周|这个星期|这星期|本星期|这个礼拜|这礼拜"
            r"|上个星期|上星期|上周|上个礼拜|上礼拜|本月|这个月|这月|上个月|上月|今年|本年|去年|前年"
        ),
        _h_zh_fixed,
    ),
    (re.compile(rf"(?:过去|最近|近)(?P<n>{_ZH_NUM})\s*{_ZH_UNIT}"), _h_zh_trailing),
    (re.compile(rf"(?P<n>{_ZH_NUM})\s*{_ZH_UNIT}(?:以)?前"), _h_zh_ago),
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
        re.compile(r"\b(?:the day before yesterday|yesterday|today|tonight|last night)\b", re.IGNORECASE),
        _h_relative_day,
    ),
    (
        re.compile(
            r"\b(?P<which>this|current|last|past|previous)\s+(?P<unit>week|month|year|weekend)\b(?!\s+of\b)",
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
    (re.compile(r"\b(?:last|on|this past)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
                re.IGNORECASE), _h_weekday),
    (re.compile(rf"(?:\b(?P<prep>{_MONTH_PREP})\s+)?\b(?P<mon>{_MONTH_ALT})\b", re.IGNORECASE), _h_month),
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
    while found:
        first = found[0]
        overlapping = [f for f in found if f[0] < first[1] and f[1] > first[0]]
        best = min(overlapping, key=lambda f: (-(f[1] - f[0]), f[2]))
        out.append((best[0], best[1], best[3]))
        found = [f for f in found if f[0] >= best[1]]
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
    before, after = query[:a_start], query[a_end:]
    if len(exprs) > 1:  # "between 11 and 15 August", "from May to July", "5月1日到5月8日"
        b_start, _, b_rng = exprs[1]
        join = _RANGE_JOIN.fullmatch(query[a_end:b_start])
        if (
            join
            and b_rng[1] > rng[0]
            and (_RANGE_OPEN.search(before) or join.group(0).strip() not in ("and", "和", "与"))
        ):
            return rng[0], max(rng[1], b_rng[1])
    if (m := _PART_OF.search(before)) and (rng[1] - rng[0]) >= timedelta(days=27):
        return _part_of(rng, m)
    if m := _ANCHOR_UNIT.search(before):
        direction = "before" if m["dir"].lower().split()[0] in ("before", "prior", "preceding", "leading") else "after"
        unit = m["unit"].lower()
        n = _num(m["n"]) if m["n"] else 1
        return _shift(rng, direction, _UNIT_DAYS[unit], n or 1, weekend=unit == "weekend")
    if m := _ANCHOR_OPEN.search(before):
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
    start, end = _compose(query, exprs, now)
    if end <= start:
        return None
    return start.timestamp(), end.timestamp()
