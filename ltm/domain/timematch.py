"""How well a memory fits a time question: the query's window against the memory's event time.

A memory's ``event_ts`` is often when something was *told*, not when it *happened*: "I went
camping last week" is stored at the time of the message. So a memory matches a window when

1. its event time falls inside the window (full match), or
2. a time expression in its own text, read relative to its event time ("last week", "yesterday",
   "on 3 May"), names a span that overlaps the window (full match; read only for memories told
   after the window started and at most a season, or the window's length, after it ended: a
   text points back from when it was told), or
3. it was told shortly *after* the window (a partial match: people report things afterwards),
   within ``slack`` = the window's own length, at least a day and at most a month.

:func:`asks_when` tells a question about a time ("when did", "how long ago", "什么时候", "いつ",
"khi nào", "เมื่อไร", "cuándo": the seven languages) from
others, and :func:`mentions_time` whether a memory's text speaks of a time at all, so that a
"when" question can prefer memories that can answer it.

Pure: no I/O; the derived spans are cached by ``(text, event_ts)``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache

from .timewindow import parse_time_window

__all__ = ["asks_when", "mentions_time", "text_window", "window_affinity"]

DAY = 86400.0
_MAX_DERIVED = 400 * DAY  # an open-ended span from a text ("before 2020") says nothing
_LOOKBACK = 92 * DAY  # how long after a window a text is still read for a time inside it

_WHEN_RE = re.compile(
    r"\b(?:when|since\s+when|how\s+long(?:\s+ago)?|what\s+(?:year|month|day|date|time|week)"
    r"|which\s+(?:year|month|day|date|week)|what\s+(?:was|is)\s+the\s+date)\b"
    r"|什么时候|何时|哪天|哪一天|哪年|哪一年|哪个月|几月|几号|几时|多久|多长时间|多少年|多少天"
    r"|什麼時候|何時|哪一年|哪個月|幾月|幾號|幾時|多長時間"  # zh_Hant
    r"|いつ(?![もかでの])|何年|何月|何日|何曜日|どのくらい前"  # ja (not いつも "always", いつか "someday")
    r"|\bkhi nào\b|\bbao giờ\b|\blúc nào\b|\bhồi nào\b|\bngày nào\b|\bnăm nào\b|\bbao lâu\b"  # vi
    r"|\bkhi nao\b|\bbao gio\b|\bluc nao\b|\bhoi nao\b|\bngay nao\b|\bbao lau\b"  # vi without accents
    r"|เมื่อไร|เมื่อไหร่|ตอนไหน|วันไหน|ปีไหน|นานเท่าไร"  # th
    r"|\bcuándo\b|\bhace cuánto\b|\bqué día\b|\bqué año\b|\bqué fecha\b|\ben qué (?:año|mes|fecha)\b"  # es
    # es without accents: "cuando" only as the question's opening word ("¿cuando…", or a question that
    # starts with it and has no clause before its "?"): "cuando era niño, ¿qué comía?" is "when I was"
    r"|¿\s{0,2}cuando\b|^\s{0,3}cuando\b[^,.;¿]*\?\s*$|\bhace cuanto\b|\bque dia\b|\bque fecha\b"
    r"|\ben que (?:ano|mes|fecha)\b",
    re.IGNORECASE,
)
# One pass of word splitting and a set lookup (a large regex alternation costs ~10x more per text).
_WORD_RE = re.compile(r"[a-z]+")
_TIME_WORDS = frozenset(
    """ago yesterday tonight tomorrow recently lately earlier weekend weekends last next
    monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
    fridays saturdays sundays january february march april june july august september october
    november december""".split()
)
_YEAR_RE = re.compile(r"\b(?:19|20)\d{2}\b")
_THIS_RE = re.compile(r"\bthis\s+(?:morning|afternoon|evening|week|month|year|weekend)\b")
_ZH_TIME_RE = re.compile(
    r"昨天|前天|今天|明天|昨晚|今晚|上周|下周|上个月|下个月|去年|前年|明年|最近|刚才|周末|星期[一二三四五六日天]"
    # a number only from where it starts: tried inside a long run of digits it would scan the rest of
    # the run again at every digit (a 100,000-digit text took minutes)
    r"|周[一二三四五六日]|(?<![0-9一二三四五六七八九十两])[0-9一二三四五六七八九十两]+\s*(?:年|个月|月|号|日|天|周|星期)"
)


def asks_when(query: str) -> bool:
    """Whether the question asks for a time ("When did ...", "How long ago ...", "什么时候")."""
    return bool(query) and _WHEN_RE.search(query) is not None


@lru_cache(maxsize=8192)
def mentions_time(text: str) -> bool:
    """Whether the text speaks of a time (a date, a weekday, "last week", "ago", "昨天", ...)."""
    if not text:
        return False
    low = text.lower()
    if not _TIME_WORDS.isdisjoint(_WORD_RE.findall(low)):
        return True
    if _YEAR_RE.search(low) or ("this" in low and _THIS_RE.search(low)):
        return True
    return not low.isascii() and _ZH_TIME_RE.search(text) is not None


@lru_cache(maxsize=20_000)
def text_window(text: str, event_ts: float) -> tuple[float, float] | None:
    """The span a time expression in ``text`` names, read relative to ``event_ts`` (or ``None``)."""
    if not text or not mentions_time(text):
        return None
    try:
        anchor = datetime.fromtimestamp(event_ts, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    got = parse_time_window(text, anchor)
    if got is None or got[1] - got[0] > _MAX_DERIVED:
        return None
    return got


def window_affinity(window: tuple[float, float], event_ts: float, text: str, *, told_after: float = 0.5) -> float:
    """1.0 when the memory's time is inside ``window`` (its event time, or a span its text names),
    ``told_after`` when it was told within the slack after the window, else 0.0."""
    start, end = window
    if event_ts != event_ts:  # NaN: no time at all
        return 0.0
    if start <= event_ts < end:
        return 1.0
    # A text's own time reference points back from when it was told: only a memory told after the
    # window started (and not long after it ended) can name a time inside it. This also bounds
    # the parsing to the few candidates in that range.
    if start <= event_ts < end + max(_LOOKBACK, end - start):
        derived = text_window(text, event_ts)
        if derived is not None and derived[0] < end and derived[1] > start:
            return 1.0
    slack = min(max(end - start, DAY), 31 * DAY)
    if end <= event_ts < end + slack:
        return told_after
    return 0.0
