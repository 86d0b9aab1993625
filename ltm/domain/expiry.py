"""Facts that expire: the end of validity a statement's own words give ("this week", "until Friday",
"for the next three days", 今天, 这几天, 到周五, 下个月之前). Pure.

:func:`expiry_of` reads one statement said at ``at`` and returns the instant it stops being true, or
``None``. Days, weeks and months are calendar periods of ``at``'s timezone (the plugin passes UTC,
the calendar recall's time windows use). Conservative by design, because a memory that expires too
early is lost from every prompt while one that lingers is only stale:

- only a phrase that bounds a *state* counts: "I'm in Osaka this week" expires, "I moved to Osaka
  this week" does not (the move is an event; "this week" says when it happened);
- a deictic period ("today", "tonight", "this week", "this weekend", "this month", 今天, 这周) needs a
  state word in the statement (a form of *be*, a progressive, 在/住/出差/休假 ...); "until", "for the
  next N days", 到周五, 下个月之前 bound the statement themselves;
- past tense, habits and open-ended changes never expire ("I stayed there until Friday", "every
  Friday", "from now on", "finally", 以后, 每周);
- a fuzzy end is read late: "until Friday" is the end of Friday (the next Friday after today when
  said on a Friday), "a few days"/这几天 three days, "until next week" the end of next week;
- "over the holidays" is the year-end holidays, and only when said between 1 December and 6
  January (ends 7 January); otherwise it is not known which holidays are meant, so no expiry.

The result is always strictly after ``at``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["Expiry", "expiry_of", "bounds_validity"]

_WEEKDAYS: dict[str, int] = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2, "thursday": 3,
    "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip
_ZH_WEEKDAYS: dict[str, int] = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 6}
_MONTHS: dict[str, int] = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3,
    "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_NUMS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_ZH_NUMS: dict[str, int] = {
    "一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10, "几": 3,
}  # fmt: skip

# The longest span one phrase may bound: longer is a plan, not a stay, and is left to the caller.
MAX_SPAN = timedelta(days=92)


@dataclass(frozen=True)
class Expiry:
    until: datetime  # in ``at``'s timezone
    phrase: str  # the words that bound it, as written (normalised)
    rule: str  # which rule read them (for tests and logs)


def _norm(text: str) -> str:
    s = unicodedata.normalize("NFKC", text or "").casefold()
    s = s.replace("’", "'").replace("‘", "'")
    return " ".join(s.split())


# ------------------------------------------------------------------ what keeps a statement open
_EN_PAST = re.compile(
    r"\b(?:was|were|had|did|been|went|spent|stayed|visited|lived|used to|yesterday|"
    r"last (?:week|month|year|night)|ago)\b"
)
_EN_OPEN = re.compile(
    r"\b(?:from now on|for good|forever|permanently|every|each|always|usually|never again|anymore|any more|"
    r"finally|for the rest of (?:my|our|his|her|their) lives?|from today on|"
    r"starting (?:today|this week|tomorrow)|weekdays|weekends|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days|(?:monday|friday) (?:to|through|thru) (?:friday|sunday))\b"
)
# Event verbs: with a deictic period the period says when the event happened, not how long a state holds.
_EN_EVENT = re.compile(
    r"\b(?:mov(?:e|ed|ing)|start(?:s|ed|ing)?|began|begin(?:ning)?|quit(?:ting)?|join(?:ed|ing)?|got|get(?:ting)?|"
    r"bought|buy(?:ing)?|married|marry(?:ing)?|born|finish(?:ed|ing)?|graduat(?:e|ed|ing)|switch(?:ed|ing)?|"
    r"adopt(?:ed|ing)?|became|become|chang(?:e|ed|ing)|lost|won|sign(?:ed|ing)|book(?:ed|ing)|order(?:ed|ing)|"
    r"met|learn(?:ed|t|ing)|decid(?:e|ed|ing)|turn(?:ed|ing)? \d+|launch(?:ed|ing)?|releas(?:e|ed|ing)|"
    r"retir(?:e|ed|ing)|resign(?:ed|ing)?|hired|fired|promoted|engaged|divorc(?:e|ed|ing)|birthday|"
    r"(?:a|my|our|the) new|be \d+|(?:i'm|i am|he's|she's) \d+)\b"
)
# "until" that sets a new date rather than an end: "postponed until Friday", "wait until Friday".
_EN_UNTIL_BLOCK = re.compile(r"\b(?:postpon\w*|delay\w*|push\w* back|pushed|reschedul\w*|defer\w*|wait\w*|put off)\b")
_EN_STATE = re.compile(
    r"\b(?:i'm|i am|we're|we are|he's|she's|they're|it's|is|are|am|will be|i'll be|we'll be|'ll be|be|"
    r"\w+ing|have|has|off|away|out of (?:the )?office|ooo)\b"
)

_ZH_PAST = re.compile(r"已经|昨天|前天|上周|上个?星期|上个?礼拜|上个月|去年|曾经|那时")
_ZH_OPEN = re.compile(
    r"(?:周|星期|礼拜)[一二三四五六日天]到(?:周|星期|礼拜)[一二三四五六日天]|工作日|以后|从今以后|从现在起|"
    r"从今天起|从此|永远|每天|每周|每个|每次|每逢|每|终于|再也|总是|通常|第一天"
)
_ZH_EVENT = re.compile(
    r"搬|开始|辞职|入职|结婚|离婚|买了|生了|出生|毕业|换了|换成|加入|升职|退休|签了|决定|学会|认识了|订了|生日|岁|新"
)
_ZH_STATE = re.compile(
    r"在|住|出差|休假|放假|请假|值班|加班|生病|感冒|发烧|不在|有空|没空|忙|吃素|戒|借|用|陪|待|呆|旅游|旅行|度假|闭关|"
    r"不能|不方便|不喝|不吃|是"
)


def _en_blocked(s: str) -> bool:
    return bool(_EN_PAST.search(s) or _EN_OPEN.search(s))


def _zh_blocked(s: str) -> bool:
    return bool(_ZH_PAST.search(s) or _ZH_OPEN.search(s))


# ------------------------------------------------------------------ calendar helpers (``at``'s timezone)
def _day(at: datetime, plus: int = 0) -> datetime:
    """Start of the day ``plus`` days after ``at``'s day."""
    return at.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=plus)


def _week_end(at: datetime, weeks: int = 0) -> datetime:
    """Start of the Monday after the week (Monday..Sunday) ``weeks`` after ``at``'s."""
    return _day(at, 7 - at.weekday() + 7 * weeks)


def _month_end(at: datetime, months: int = 0) -> datetime:
    """Start of the month after the month ``months`` after ``at``'s."""
    idx = at.year * 12 + at.month - 1 + months + 1
    return at.replace(year=idx // 12, month=idx % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)


def _year_end(at: datetime) -> datetime:
    return at.replace(year=at.year + 1, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)


def _weekday_end(at: datetime, wd: int, next_week: bool = False) -> datetime:
    """End of the named weekday: the next one after today (today's weekday means a week on), or,
    with ``next_week``, the one in the following calendar week."""
    if next_week:
        return _day(at, 7 - at.weekday() + wd + 1)
    ahead = (wd - at.weekday()) % 7 or 7
    return _day(at, ahead + 1)


def _date_end(at: datetime, month: int, day: int) -> datetime | None:
    """End of the next ``month``/``day`` on or after today."""
    for year in (at.year, at.year + 1):
        try:
            d = at.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
        except ValueError:
            return None
        if d >= _day(at):
            return d + timedelta(days=1)
    return None


def _day_of_month_end(at: datetime, day: int) -> datetime | None:
    for months in (0, 1):
        idx = at.year * 12 + at.month - 1 + months
        try:
            d = at.replace(year=idx // 12, month=idx % 12 + 1, day=day, hour=0, minute=0, second=0, microsecond=0)
        except ValueError:
            continue
        if d >= _day(at):
            return d + timedelta(days=1)
    return None


def _holidays_end(at: datetime) -> datetime | None:
    """The year-end holidays, when said during them or just before (1 Dec .. 6 Jan): 7 January."""
    if at.month == 12:
        return at.replace(year=at.year + 1, month=1, day=7, hour=0, minute=0, second=0, microsecond=0)
    if at.month == 1 and at.day <= 6:
        return at.replace(month=1, day=7, hour=0, minute=0, second=0, microsecond=0)
    return None


def _count(word: str) -> int | None:
    word = word.strip()
    if word.isdigit():
        return int(word)
    return _NUMS.get(word)


def _zh_count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    if len(word) == 1:
        return _ZH_NUMS.get(word)
    if word.startswith("十") and len(word) == 2 and word[1] in _ZH_NUMS:
        return 10 + _ZH_NUMS[word[1]]
    return None


def _span(at: datetime, n: int | None, unit: str) -> datetime | None:
    """The end of the day ``n`` days/weeks on (a span is read to the end of its last day)."""
    if not n or n <= 0:
        return None
    days = n * (7 if unit.startswith(("week", "周", "星期", "礼拜")) else 1)
    return _day(at, days + 1)


# ------------------------------------------------------------------ the rules
_Handler = Callable[[re.Match[str], datetime], "datetime | None"]
_WD = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUM = "|".join(sorted((re.escape(k) for k in _NUMS), key=len, reverse=True)) + r"|\d{1,2}"
_UNTIL = r"(?:until|till|til|'til|through|thru|up to|up until|through to)"


def _h_until_wd(m: re.Match[str], at: datetime) -> datetime | None:
    return _weekday_end(at, _WEEKDAYS[m["wd"]], next_week=bool(m["next"]))


def _h_until_rel(m: re.Match[str], at: datetime) -> datetime | None:
    what = m["what"]
    if what in ("tomorrow", "tomorrow night"):
        return _day(at, 2)
    if what in ("tonight", "this evening"):
        return _day(at, 1) + timedelta(hours=6)
    if what in ("the weekend", "this weekend", "the end of the weekend", "sunday night"):
        return _week_end(at)
    if what in ("the end of the week", "the end of this week", "the weekend is over"):
        return _week_end(at)
    if what in ("next week", "the end of next week"):
        return _week_end(at, 1)
    if what in ("the end of the month", "the end of this month", "the month is over", "month end", "month's end"):
        return _month_end(at)
    if what in ("next month", "the end of next month"):
        return _month_end(at, 1)
    if what in ("the end of the year", "the end of this year", "new year", "new year's", "the new year"):
        return _year_end(at)
    return None


def _h_until_date(m: re.Match[str], at: datetime) -> datetime | None:
    month = _MONTHS[m["mon"]]
    return _date_end(at, month, int(m["d"]))


def _h_until_nth(m: re.Match[str], at: datetime) -> datetime | None:
    return _day_of_month_end(at, int(m["d"]))


def _h_for_span(m: re.Match[str], at: datetime) -> datetime | None:
    return _span(at, _count(m["n"]), m["unit"])


def _h_for_period(m: re.Match[str], at: datetime) -> datetime | None:
    what = m["what"]
    if what in ("the day", "the rest of the day", "today"):
        return _day(at, 1)
    if what in ("the night", "tonight", "the evening"):
        return _day(at, 1) + timedelta(hours=6)
    if what in ("the week", "the rest of the week", "this week", "the weekend", "the rest of the weekend"):
        return _week_end(at)
    if what in ("the month", "the rest of the month", "this month"):
        return _month_end(at)
    return None


def _h_holidays(m: re.Match[str], at: datetime) -> datetime | None:
    return _holidays_end(at)


def _h_deictic(m: re.Match[str], at: datetime) -> datetime | None:
    what = m["what"]
    if what in ("today", "all day", "all day today"):
        return _day(at, 1)
    if what in ("tonight", "this evening"):
        return _day(at, 1) + timedelta(hours=6)
    if what in ("this week", "all week"):
        return _week_end(at)
    if what in ("this weekend",):
        return _week_end(at)
    if what in ("this month", "all month"):
        return _month_end(at)
    return None


# Explicit bounds: the phrase itself ends the statement's validity.
_EN_BOUNDS: list[tuple[re.Pattern[str], _Handler, str]] = [
    (re.compile(rf"\b{_UNTIL} (?:(?P<next>next|this) )?(?P<wd>{_WD})\b"), _h_until_wd, "until_weekday"),
    (
        re.compile(
            rf"\b{_UNTIL} (?P<what>tomorrow night|tomorrow|tonight|this evening|the end of (?:this |the |next )?"
            r"(?:week|month|year|weekend)|the weekend is over|the month is over|this weekend|the weekend|"
            r"next week|next month|month's end|month end|the new year|new year's|new year)\b"
        ),
        _h_until_rel,
        "until_relative",
    ),
    (
        re.compile(rf"\b{_UNTIL} (?:the )?(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<mon>{_MON})\b"),
        _h_until_date,
        "until_date",
    ),
    (
        re.compile(rf"\b{_UNTIL} (?P<mon>{_MON}) (?:the )?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b"),
        _h_until_date,
        "until_date",
    ),
    (re.compile(rf"\b{_UNTIL} the (?P<d>\d{{1,2}})(?:st|nd|rd|th)\b"), _h_until_nth, "until_day_of_month"),
    (
        re.compile(rf"\b(?:for|over|during) the (?:next|coming) (?P<n>{_NUM}) (?P<unit>day|week)s?\b"),
        _h_for_span,
        "next_span",
    ),
    (re.compile(rf"\bfor (?P<n>{_NUM}) (?:more )?(?P<unit>day|week)s?\b"), _h_for_span, "for_span"),
    (
        re.compile(
            r"\bfor (?P<what>the rest of the (?:day|week|weekend|month)|the day|the night|the evening|"
            r"the week|the weekend|the month)\b"
        ),
        _h_for_period,
        "for_period",
    ),
    (
        re.compile(
            r"\b(?:over|during|for|through|throughout) (?:the )?(?:christmas |winter |xmas )?holidays?\b|"
            r"\bover (?:christmas|xmas|the new year)\b"
        ),
        _h_holidays,
        "holidays",
    ),  # fmt: skip
]
# Deictic periods: they bound a state, but only date an event.
_EN_DEICTIC = re.compile(
    r"\b(?P<what>all day today|all day|today|tonight|this evening|this weekend|this week|all week|this month|"
    r"all month)\b"
)


def _zh_until_wd(m: re.Match[str], at: datetime) -> datetime | None:
    wd = _ZH_WEEKDAYS[m["wd"]]
    return _weekday_end(at, wd, next_week=bool(m["next"]))


def _zh_rel(m: re.Match[str], at: datetime) -> datetime | None:
    what = m["what"]
    table: dict[str, datetime] = {
        "明天": _day(at, 2),
        "今晚": _day(at, 1) + timedelta(hours=6),
        "月底": _month_end(at),
        "这个月底": _month_end(at),
        "本月底": _month_end(at),
        "下周": _week_end(at, 1),
        "下个星期": _week_end(at, 1),
        "下个月": _month_end(at, 1),
        "年底": _year_end(at),
        "周末": _week_end(at),
    }
    return table.get(what)


def _zh_before(m: re.Match[str], at: datetime) -> datetime | None:
    """ "Before next month/week": up to its start (the period itself is excluded)."""
    what = m["what"]
    if what in ("下个月", "下月"):
        return _month_end(at)
    if what in ("下周", "下个星期", "下星期", "下礼拜"):
        return _week_end(at)
    if what == "明天":
        return _day(at, 1)
    return None


def _zh_span(m: re.Match[str], at: datetime) -> datetime | None:
    return _span(at, _zh_count(m["n"]), m["unit"])


def _zh_few_days(m: re.Match[str], at: datetime) -> datetime | None:
    return _day(at, (2 if m["n"] == "两" else 3) + 1)


def _zh_deictic(m: re.Match[str], at: datetime) -> datetime | None:
    what = m["what"]
    if what in ("今天", "今日", "今天一天", "一整天"):
        return _day(at, 1)
    if what in ("今晚", "今天晚上", "今夜"):
        return _day(at, 1) + timedelta(hours=6)
    if what in ("这周末", "这个周末", "本周末"):
        return _week_end(at)
    if what in ("这周", "本周", "这个星期", "这星期", "这礼拜", "这个礼拜", "这一周", "这个周"):
        return _week_end(at)
    if what in ("这个月", "本月", "这月"):
        return _month_end(at)
    return None


_ZH_WD = r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"
_ZH_BOUNDS: list[tuple[re.Pattern[str], _Handler, str]] = [
    (re.compile(rf"(?:到|直到|一直到|截至|截止到)(?P<next>下个?)?{_ZH_WD}"), _zh_until_wd, "until_weekday"),
    (re.compile(rf"(?P<next>下个?)?{_ZH_WD}(?:之前|以前|前)"), _zh_until_wd, "until_weekday"),
    (re.compile(r"(?:到|直到|一直到)(?P<what>明天|今晚|这个月底|本月底|月底|下周|下个星期|下个月|年底|周末)"),
     _zh_rel, "until_relative"),
    (re.compile(r"(?P<n>[0-9]+|十[一二三四五六七八九]?|[一两二三四五六七八九十几])(?:个)?(?P<unit>天|周|星期|礼拜)"),
     _zh_span, "span"),
    (re.compile(r"这(?P<n>几|两)天"), _zh_few_days, "few_days"),
]  # fmt: skip
# "Before next month" is read first: its period is excluded, unlike 到下个月's.
_ZH_BEFORE = re.compile(r"(?P<what>下个月|下月|下周|下个星期|下星期|下礼拜|明天)(?:之前|以前)")
_ZH_SPAN_LEAD = re.compile(r"接下来|未来|之后|这|要|会|得")
_ZH_DEICTIC = re.compile(
    r"(?P<what>今天晚上|今天一天|一整天|今天|今日|今晚|今夜|这个周末|这周末|本周末|这个星期|这星期|这个礼拜|这礼拜|这一周|这个周|这周|本周|这个月|本月|这月)"
)


def _stative(s: str, m: re.Match[str]) -> bool:
    """A state word beside the matched period, and no event verb in the statement."""
    return not _EN_EVENT.search(s) and bool(_EN_STATE.search(s[: m.start()] + " " + s[m.end() :]))


def _first_en(s: str, at: datetime) -> Expiry | None:
    if _en_blocked(s):
        return None
    for rx, handler, rule in _EN_BOUNDS:
        m = rx.search(s)
        if m is None:
            continue
        if rule.startswith("until") and _EN_UNTIL_BLOCK.search(s):
            return None
        # "a cake for the weekend" is a purpose; "staying with Ann for the weekend" a stay
        if rule == "for_period" and not _stative(s, m):
            continue
        until = handler(m, at)
        return Expiry(until, m.group(0), rule) if until is not None else None
    m = _EN_DEICTIC.search(s)
    if m is None or not _stative(s, m):
        return None
    until = _h_deictic(m, at)
    return Expiry(until, m.group(0), "deictic") if until is not None else None


def _first_zh(s: str, at: datetime) -> Expiry | None:
    if _zh_blocked(s):
        return None
    m = _ZH_BEFORE.search(s)
    if m is not None:
        until = _zh_before(m, at)
        return Expiry(until, m.group(0), "before") if until is not None else None
    for rx, handler, rule in _ZH_BOUNDS:
        m = rx.search(s)
        if m is None:
            continue
        # "三天" alone is a quantity ("我三天没睡"): a span bounds only after 接下来/未来/这/要 ...
        if rule == "span" and not _ZH_SPAN_LEAD.search(s[: m.start()]):
            continue
        until = handler(m, at)
        return Expiry(until, m.group(0), rule) if until is not None else None
    m = _ZH_DEICTIC.search(s)
    if m is None or _ZH_EVENT.search(s) or not _ZH_STATE.search(s[: m.start()] + s[m.end() :]):
        return None
    until = _zh_deictic(m, at)
    return Expiry(until, m.group(0), "deictic") if until is not None else None


def expiry_of(text: str, at: datetime) -> Expiry | None:
    """When the statement ``text``, said at ``at``, stops being true by its own words, or ``None``
    (see the module docstring). A naive ``at`` is read as UTC."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    s = _norm(text)
    if not s or "?" in s:  # a question states nothing that could end
        return None
    has_han = any("\u4e00" <= c <= "\u9fff" for c in s)
    found = _first_zh(s, at) if has_han else None
    if found is None and not (has_han and _zh_blocked(s)):
        found = _first_en(s, at)
    if found is None or not (at < found.until <= at + MAX_SPAN):
        return None
    return Expiry(found.until, _as_written(text, found.phrase), found.rule)


def _as_written(text: str, phrase: str) -> str:
    """``phrase`` (read casefolded) as the statement wrote it ("until Friday"), when it can be found."""
    words = [re.escape(w) for w in phrase.split()]
    m = re.search(r"\s+".join(words), unicodedata.normalize("NFKC", text).replace("’", "'"), re.IGNORECASE)
    return m.group(0) if m else phrase


# A fixed, ordinary instant (a Wednesday in mid-December, so every rule can apply) to ask whether
# words bound a statement at all, whenever it was said.
_PROBE = datetime(2025, 12, 10, 12, 0, tzinfo=UTC)


def bounds_validity(text: str) -> bool:
    """True when ``text``'s own words bound how long it holds (a stay, not a move)."""
    return expiry_of(text, _PROBE) is not None
