"""Relative dates resolved to absolute ones when a memory is written.

"I went to the support group yesterday", said on 8 May 2023, is about 7 May 2023; read a month
later, "yesterday" means nothing. :func:`resolve_dates` finds the relative day words of a text in
the seven languages (en, zh_Hans, zh_Hant, ja, vi, th, es) and names the span each points at,
read at the instant the words were said (in that instant's own calendar: the service passes UTC):

- day words: yesterday, 昨天, 昨日, hôm qua, เมื่อวาน, ayer; today, tomorrow, the day before /
  after: the day;
- N units ago: 3 days ago, 三天前, 3日前, 3 ngày trước, 3 วันก่อน, hace 3 días; weeks, months,
  years: the day, or the week / month / year it falls in;
- last / next unit: last week, 上周, 先週, tuần trước, สัปดาห์ที่แล้ว, la semana pasada; month,
  year: the calendar week (from Monday), month or year.

Precision first: a word that is also something else needs its context ("mañana" after "la",
"esta", "por la" is a morning, not tomorrow; Vietnamese "mai" alone is a name, "ngày mai" is
tomorrow; Thai "วันก่อน" without a number is "the other day" and names no date). Weekdays,
months and explicit dates are not resolved here: they already name their time
(:mod:`ltm.domain.timewindow` reads them at query time).

The memory keeps its words verbatim; the resolved spans are kept beside them (:func:`encode`
into the episode's ``extra["dates"]``) and read by the ranking's time rules (:func:`spans`): a
question about a day or a week finds a memory that named it relatively, in any of the seven
languages, and a "when" question counts such a memory as one that can answer it. They are not
added to the lexical leg's text: measured on LoCoMo, their month and year words matched the dates
other questions name (evidence recall@5 0.720 -> 0.713; docs/retrieval.md). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from .confusables import unaccented

__all__ = ["DATES_KEY", "ResolvedDate", "decode", "encode", "resolve_dates", "spans", "stored"]

DATES_KEY = "dates"  # the key in an episode's ``extra`` holding :func:`encode`'s strings
MAX_DATES = 4  # a text naming more relative days than this is a plan, not a memory of one day
UNITS = ("day", "week", "month", "year")
_MONTH_NAMES = "January February March April May June July August September October November December".split()


@dataclass(frozen=True)
class ResolvedDate:
    phrase: str  # the words as found (normalised)
    unit: str  # "day" | "week" | "month" | "year"
    start: date  # first day of the span

    @property
    def end(self) -> date:
        """The first day after the span."""
        return _end(self.unit, self.start)

    def label(self) -> str:
        """How the span reads: "7 May 2023", "the week of 1 May 2023", "May 2023", "2023"."""
        d = self.start
        if self.unit == "day":
            return f"{d.day} {_MONTH_NAMES[d.month - 1]} {d.year}"
        if self.unit == "week":
            return f"the week of {d.day} {_MONTH_NAMES[d.month - 1]} {d.year}"
        if self.unit == "month":
            return f"{_MONTH_NAMES[d.month - 1]} {d.year}"
        return str(d.year)


def _end(unit: str, start: date) -> date:
    if unit == "day":
        return start + timedelta(days=1)
    if unit == "week":
        return start + timedelta(days=7)
    if unit == "month":
        return date(start.year + start.month // 12, start.month % 12 + 1, 1)
    return date(start.year + 1, 1, 1)


def _shift(unit: str, day: date, n: int) -> date:
    """The start of the unit ``n`` units from the one holding ``day`` (n < 0: before)."""
    if unit == "day":
        return day + timedelta(days=n)
    if unit == "week":
        return day - timedelta(days=day.weekday()) + timedelta(weeks=n)
    if unit == "month":
        m = day.year * 12 + day.month - 1 + n
        return date(m // 12, m % 12 + 1, 1)
    return date(day.year + n, 1, 1)


# ---------------------------------------------------------------------------------------------
# Numbers written as words (small ones: "three days ago", 三天前, "hace dos días")
# ---------------------------------------------------------------------------------------------

_NUMBER_WORDS = {
    # en
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
    # es
    "un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7,
    "ocho": 8, "nueve": 9, "diez": 10,
    # vi
    "một": 1, "hai": 2, "ba": 3, "bốn": 4, "năm": 5, "sáu": 6, "bảy": 7, "tám": 8, "chín": 9, "mười": 10,
    # th
    "หนึ่ง": 1, "สอง": 2, "สาม": 3, "สี่": 4, "ห้า": 5, "หก": 6, "เจ็ด": 7, "แปด": 8, "เก้า": 9, "สิบ": 10,
}  # fmt: skip
_HAN_DIGITS = {"一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def _number(raw: str) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    if raw.isdigit():
        return int(raw)  # any script's decimal digits (Thai ๓ too)
    if raw in _NUMBER_WORDS:
        return _NUMBER_WORDS[raw]
    if all(ch in _HAN_DIGITS or ch == "十" for ch in raw):  # 三, 十, 十二, 二十, 二十五
        if "十" not in raw:
            return _HAN_DIGITS[raw] if len(raw) == 1 else None
        tens, _, ones = raw.partition("十")
        t = _HAN_DIGITS.get(tens, 0) if tens else 1
        o = _HAN_DIGITS.get(ones, 0) if ones else 0
        return t * 10 + o if (not tens or tens in _HAN_DIGITS) and (not ones or ones in _HAN_DIGITS) else None
    return None


# ---------------------------------------------------------------------------------------------
# The rules: (pattern, unit, offset) or (pattern, unit, None) with a number group meaning "N ago"
# ---------------------------------------------------------------------------------------------

_EN_NUM = r"(\d{1,3}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_ES_NUM = r"(\d{1,3}|un|una|uno|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez)"
_VI_NUM = r"(\d{1,3}|một|hai|ba|bốn|năm|sáu|bảy|tám|chín|mười)"
_TH_NUM = r"(\d{1,3}|หนึ่ง|สอง|สาม|สี่|ห้า|หก|เจ็ด|แปด|เก้า|สิบ)"
_HAN_NUM = r"(\d{1,3}|[一二两兩三四五六七八九十]{1,3})"

_Rule = tuple[re.Pattern[str], str, int | None]


def _w(pattern: str) -> str:
    """A pattern of whole words (Latin scripts)."""
    return rf"(?<!\w)(?:{pattern})(?!\w)"


_SKIP = "skip"  # a match that only guards its words from a shorter rule ("esta mañana" is no "mañana")

_EN_RULES: list[tuple[str, str, int | None]] = [
    (_w(r"the day before yesterday"), "day", -2),
    (_w(r"the day after tomorrow"), "day", 2),
    (_w(r"yesterday|last night"), "day", -1),
    (_w(r"today|tonight|this morning|this afternoon|this evening"), "day", 0),
    (_w(r"tomorrow"), "day", 1),
    (_w(rf"{_EN_NUM} days? ago"), "day", None),
    (_w(rf"{_EN_NUM} weeks? ago"), "week", None),
    (_w(rf"{_EN_NUM} months? ago"), "month", None),
    (_w(rf"{_EN_NUM} years? ago"), "year", None),
    (_w(r"last week"), "week", -1),
    (_w(r"next week"), "week", 1),
    (_w(r"last month"), "month", -1),
    (_w(r"next month"), "month", 1),
    (_w(r"last year"), "year", -1),
    (_w(r"next year"), "year", 1),
]
_ES_RULES: list[tuple[str, str, int | None]] = [
    (_w(r"anteayer|antier|antes de ayer|antes de anoche"), "day", -2),
    (_w(r"ayer|anoche"), "day", -1),
    (_w(r"hoy|esta noche|esta mañana|esta tarde"), "day", 0),
    (_w(r"pasado mañana"), "day", 2),
    (_w(r"(?:la|las|una|cada|toda la|por la|de la|en la|media) mañana"), _SKIP, 0),
    (_w(r"mañana"), "day", 1),
    (_w(rf"hace {_ES_NUM} días?"), "day", None),
    (_w(rf"hace {_ES_NUM} semanas?"), "week", None),
    (_w(rf"hace {_ES_NUM} mes(?:es)?"), "month", None),
    (_w(rf"hace {_ES_NUM} años?"), "year", None),
    (_w(r"la semana pasada|la semana anterior"), "week", -1),
    (_w(r"la semana que viene|la próxima semana|la semana próxima"), "week", 1),
    (_w(r"el mes pasado|el mes anterior"), "month", -1),
    (_w(r"el mes que viene|el próximo mes|el mes próximo"), "month", 1),
    (_w(r"el año pasado|el año anterior"), "year", -1),
    (_w(r"el año que viene|el próximo año|el año próximo"), "year", 1),
]
_VI_RULES: list[tuple[str, str, int | None]] = [
    # syllables are words; "mai" alone is also a name, "năm" also five
    (_w(r"hôm kia"), "day", -2),
    (_w(r"tối hôm qua|hôm qua|tối qua|đêm qua"), "day", -1),
    (_w(r"hôm nay|tối nay|sáng nay|chiều nay|đêm nay"), "day", 0),
    (_w(r"ngày mai"), "day", 1),
    (_w(r"ngày kia|ngày mốt"), "day", 2),
    (_w(rf"{_VI_NUM} ngày trước"), "day", None),
    (_w(rf"{_VI_NUM} tuần trước"), "week", None),
    (_w(rf"{_VI_NUM} tháng trước"), "month", None),
    (_w(rf"{_VI_NUM} năm trước"), "year", None),
    (_w(r"tuần trước|tuần rồi"), "week", -1),
    (_w(r"tuần sau|tuần tới"), "week", 1),
    (_w(r"tháng trước|tháng rồi"), "month", -1),
    (_w(r"tháng sau|tháng tới"), "month", 1),
    (_w(r"năm ngoái|năm trước|năm rồi"), "year", -1),
    (_w(r"năm sau|năm tới"), "year", 1),
]
_OTHER_RULES: list[tuple[str, str, int | None]] = [
    # --- th (no spaces between words)
    (r"เมื่อวานซืน", "day", -2),
    (r"เมื่อวาน(?:นี้)?|เมื่อคืน(?:นี้)?", "day", -1),
    (r"วันนี้|คืนนี้|เช้านี้", "day", 0),
    (r"พรุ่งนี้", "day", 1),
    (r"มะรืน(?:นี้)?", "day", 2),
    (rf"{_TH_NUM}\s*วัน(?:ที่แล้ว|ก่อน)", "day", None),
    (rf"{_TH_NUM}\s*(?:สัปดาห์|อาทิตย์)(?:ที่แล้ว|ก่อน)", "week", None),
    (rf"{_TH_NUM}\s*เดือน(?:ที่แล้ว|ก่อน)", "month", None),
    (rf"{_TH_NUM}\s*ปี(?:ที่แล้ว|ก่อน)", "year", None),
    (r"(?:สัปดาห์|อาทิตย์)(?:ที่แล้ว|ก่อน)", "week", -1),
    (r"(?:สัปดาห์|อาทิตย์)หน้า", "week", 1),
    (r"เดือน(?:ที่แล้ว|ก่อน)", "month", -1),
    (r"เดือนหน้า", "month", 1),
    (r"ปี(?:ที่แล้ว|ก่อน|กลาย)", "year", -1),
    (r"ปีหน้า", "year", 1),
    # --- ja (before zh: 一昨日 holds 昨日)
    (r"一昨日|おととい|おとつい", "day", -2),
    (r"昨日|きのう|昨夜|昨晩|ゆうべ", "day", -1),
    (r"今日|きょう|今朝|今晩|今夜", "day", 0),
    (r"明後日|あさって", "day", 2),
    (r"明日|あした|あす", "day", 1),
    (rf"{_HAN_NUM}\s*(?:日|天)前", "day", None),
    (rf"{_HAN_NUM}\s*(?:週間|周|週|个星期|個星期|星期)前", "week", None),
    (rf"{_HAN_NUM}\s*(?:か月|ヶ月|カ月|ケ月|个月|個月)前", "month", None),
    (rf"{_HAN_NUM}\s*年前", "year", None),
    (r"先週|上上?周|上上?週|上个?星期|上個星期", "week", -1),
    (r"来週|下周|下週|下个?星期|下個星期", "week", 1),
    (r"先月|上个月|上個月|上月", "month", -1),
    (r"来月|下个月|下個月", "month", 1),
    (r"一昨年", "year", -2),  # not 前年: two years back in Chinese, the year before in Japanese
    (r"去年|昨年", "year", -1),
    (r"来年|明年", "year", 1),
    # --- zh (Hans and Hant)
    (r"大前天", "day", -3),
    (r"前天", "day", -2),
    (r"昨天|昨晚", "day", -1),
    (r"今天|今晚|今早", "day", 0),
    (r"明天", "day", 1),
    (r"大后天|大後天", "day", 3),
    (r"后天|後天", "day", 2),
]


_RULES = _EN_RULES + _ES_RULES + _VI_RULES + _OTHER_RULES

# Vietnamese and Spanish typed without accents, read only in a text that has none. Spanish loses
# nothing by it ("manana", "el ano pasado"). Vietnamese does: without its marks a syllable is
# several words, so only the phrases no name or other word spells are kept - not "tối qua" (tôi qua,
# I came over), "đêm qua" (đem qua, bring over), "năm trước" (Nam trước, Nam before), "tuần tới"
# (Tuấn tới, Tuấn came), "ngày kia" (ngay kìa, right there); "trước đây" is "before", never a date.
_VI_BARE: list[tuple[str, str, int | None]] = [
    (_w(r"hom kia"), "day", -2),
    (_w(r"hom qua"), "day", -1),
    (_w(r"hom nay|sang nay|chieu nay"), "day", 0),
    (_w(r"ngay mai"), "day", 1),
    (_w(rf"{_VI_NUM} ngay truoc(?! day)"), "day", None),
    (_w(rf"{_VI_NUM} tuan truoc(?! day)"), "week", None),
    (_w(rf"{_VI_NUM} thang truoc(?! day)"), "month", None),
    (_w(rf"{_VI_NUM} nam truoc(?! day)"), "year", None),
    (_w(r"tuan truoc(?! day)"), "week", -1),
    (_w(r"thang truoc(?! day)"), "month", -1),
    (_w(r"nam ngoai"), "year", -1),
]
_BARE_RULES = [(unaccented(p), unit, off) for p, unit, off in _ES_RULES if unaccented(p) != p] + [
    (unaccented(p), unit, off) for p, unit, off in _VI_BARE
]


def _compile(rules: Sequence[tuple[str, str, int | None]]) -> list[_Rule]:
    return [(re.compile(p, re.IGNORECASE), unit, off) for p, unit, off in rules]


_COMPILED = _compile(_RULES)
_COMPILED_BARE = _compile(_BARE_RULES)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def resolve_dates(text: str, said_at: datetime) -> list[ResolvedDate]:
    """The relative days, weeks, months and years ``text`` names, resolved at ``said_at`` (in
    its own calendar; a naive instant reads as UTC), in text order, at most :data:`MAX_DATES`,
    each span once. Overlapping matches keep the earliest, then the longest."""
    if not text or not text.strip():
        return []
    low = _normalise(text)
    day = (said_at if said_at.tzinfo else said_at.replace(tzinfo=UTC)).date()
    found: list[tuple[int, int, str, str, int]] = []  # (start, -length, phrase, unit, offset)
    rules = _COMPILED if unaccented(low) != low else _COMPILED + _COMPILED_BARE
    for pattern, unit, off in rules:
        for m in pattern.finditer(low):
            if off is None:
                n = _number(m.group(1))
                if n is None or n > 400:
                    continue
                offset = -n
            else:
                offset = off
                if unit == "week" and m.group(0).startswith("上上"):  # the week before last
                    offset = -2
            found.append((m.start(), -(m.end() - m.start()), m.group(0), unit, offset))
    found.sort()
    out: list[ResolvedDate] = []
    taken_until = -1
    for start, neg_len, phrase, unit, offset in found:
        if start < taken_until:
            continue
        taken_until = start - neg_len
        if unit == _SKIP:
            continue
        try:
            resolved = ResolvedDate(phrase, unit, _shift(unit, day, offset))
        except (OverflowError, ValueError):
            continue
        if all((r.unit, r.start) != (resolved.unit, resolved.start) for r in out):
            out.append(resolved)
        if len(out) >= MAX_DATES:
            break
    return out


# ---------------------------------------------------------------------------------------------
# Kept beside the memory, read back by the index and the ranking
# ---------------------------------------------------------------------------------------------


def encode(resolved: Sequence[ResolvedDate]) -> list[str]:
    """``["day:2023-05-07", "week:2023-05-01"]``: what the episode's ``extra["dates"]`` holds."""
    return [f"{r.unit}:{r.start.isoformat()}" for r in resolved]


def decode(values: object) -> list[ResolvedDate]:
    """:func:`encode`'s strings back (anything malformed is skipped: stored data is not trusted)."""
    if not isinstance(values, list):
        return []
    out: list[ResolvedDate] = []
    for v in values[:MAX_DATES]:
        if not isinstance(v, str):
            continue
        unit, _, raw = v.partition(":")
        if unit not in UNITS:
            continue
        try:
            out.append(ResolvedDate("", unit, date.fromisoformat(raw)))
        except ValueError:
            continue
    return out


@lru_cache(maxsize=20_000)
def _from_extra(extra: str) -> tuple[ResolvedDate, ...]:
    try:
        obj = json.loads(extra)
    except ValueError:
        return ()
    return tuple(decode(obj.get(DATES_KEY))) if isinstance(obj, dict) else ()


def stored(metadata: dict[str, object] | None) -> tuple[ResolvedDate, ...]:
    """The resolved dates a stored row carries (its metadata's ``extra`` JSON), cached per value."""
    raw = (metadata or {}).get("extra")
    if not isinstance(raw, str) or f'"{DATES_KEY}"' not in raw:
        return ()
    return _from_extra(raw)


def spans(metadata: dict[str, object] | None) -> tuple[tuple[float, float], ...]:
    """The stored resolved dates of a row as UTC ``[start_ts, end_ts)`` spans (cached per value)."""
    raw = (metadata or {}).get("extra")
    if not isinstance(raw, str) or f'"{DATES_KEY}"' not in raw:
        return ()
    return _spans(raw)


@lru_cache(maxsize=20_000)
def _spans(extra: str) -> tuple[tuple[float, float], ...]:
    out = []
    for r in _from_extra(extra):
        e = r.end
        a = datetime(r.start.year, r.start.month, r.start.day, tzinfo=UTC).timestamp()
        out.append((a, datetime(e.year, e.month, e.day, tzinfo=UTC).timestamp()))
    return tuple(out)
