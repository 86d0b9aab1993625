"""Conflict detection between two short statements (English and Chinese). Pure.

Each statement is read into *claims*: ``(subject, attribute, value, polarity)``, e.g.
"I moved to Berlin" -> ``(self, location, berlin, +)``, "别上 Postgres" -> ``(-, use, postgres, -)``.
Two statements about the same subject and attribute then:

- **contradict** when they give the same value with opposite polarity ("I like tea" / "I don't like
  tea anymore"), or two different values of an attribute that holds one value at a time: where one
  lives, one's name, age, employer, job, a "my X is Y" / "the X is Y" fact, a preference between
  things of the same kind ("prefers Go" / "prefers Python"), a switch of tool of the same kind
  ("we use Postgres" / "we switched to MySQL");
- are **compatible** when both can hold (liking tea and coffee, having a cat and a dog, not living
  in Paris and living in Berlin);
- are **unrelated** otherwise (other subject, other attribute, other kind of thing).

Statements the patterns cannot read fall back to a negation flip over their words: nearly the same
words with an opposite negation contradict.

What this does not do: understand time ("lived in Paris in 2019" is read as past, nothing finer),
sarcasm, quantities beyond a few patterns, or paraphrases across languages. The benchmark
(``python -m benchmarks.conflicts``) measures it on a labelled set.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

CONTRADICTING, COMPATIBLE, UNRELATED = "contradicting", "compatible", "unrelated"
LABELS: tuple[str, ...] = (CONTRADICTING, COMPATIBLE, UNRELATED)


@dataclass(frozen=True)
class Claim:
    """One reading of a statement. ``subject`` ``""`` means unknown (matches any subject)."""

    subject: str
    attribute: str
    value: str
    positive: bool = True
    strength: str = ""  # "prefer" (one choice among its kind) | "switch" (replaces the previous one)


@dataclass(frozen=True)
class Verdict:
    """How a new statement relates to an existing one, with the sides that decided it."""

    label: str
    attribute: str = ""
    new_value: str = ""
    old_value: str = ""
    reason: str = ""


# --------------------------------------------------------------------------------------------
# lexicon
# --------------------------------------------------------------------------------------------

# fmt: off
_CATEGORIES: dict[str, tuple[str, ...]] = {
    "programming_language": (
        "python", "go", "golang", "rust", "java", "javascript", "typescript", "c++", "c#", "ruby", "php",
        "kotlin", "swift", "scala", "haskell", "elixir", "perl", "lua", "julia", "dart", "clojure", "c",
    ),
    "database": (
        "postgres", "postgresql", "mysql", "sqlite", "mongodb", "mongo", "oracle", "sql server", "mariadb",
        "cassandra", "dynamodb", "clickhouse", "cockroachdb", "tidb",
    ),
    "cache": ("redis", "memcached"),
    "editor": ("vim", "neovim", "emacs", "vscode", "vs code", "sublime", "intellij", "pycharm", "atom", "helix"),
    "os": ("linux", "windows", "macos", "mac", "ubuntu", "debian", "arch", "fedora"),
    "cloud": ("aws", "gcp", "azure", "google cloud", "阿里云", "腾讯云"),
    "browser": ("chrome", "firefox", "safari", "edge"),
    "phone": ("iphone", "android", "pixel", "华为", "小米"),
    "frontend_framework": ("react", "vue", "angular", "svelte"),
    "web_framework": ("django", "flask", "fastapi", "spring", "rails", "express"),
    "drink": (
        "tea", "coffee", "green tea", "black tea", "jasmine tea", "oolong", "beer", "wine", "water", "juice",
        "milk", "soda", "coke", "latte", "espresso", "matcha", "茶", "咖啡", "绿茶", "红茶", "乌龙茶", "茉莉花茶",
        "啤酒", "红酒", "牛奶", "果汁", "奶茶", "可乐", "白酒",
    ),
    "food": (
        "pizza", "sushi", "pasta", "noodles", "rice", "burgers", "burger", "steak", "curry", "ramen", "tacos",
        "salad", "chocolate", "ice cream", "火锅", "川菜", "粤菜", "寿司", "面条", "米饭", "披萨", "饺子",
        "烧烤", "辣的", "甜食", "巧克力", "冰淇淋",
    ),
    "meat": ("meat", "pork", "beef", "chicken", "fish", "seafood", "肉", "猪肉", "牛肉", "鸡肉", "鱼", "海鲜", "荤"),
    "sport": (
        "running", "swimming", "basketball", "football", "soccer", "tennis", "hiking", "yoga", "cycling",
        "climbing", "skiing", "golf", "badminton", "跑步", "游泳", "篮球", "足球", "网球", "爬山", "瑜伽", "骑车",
        "滑雪", "羽毛球", "乒乓球",
    ),
    "music": ("jazz", "rock", "pop", "classical", "hip hop", "metal", "爵士", "摇滚", "流行", "古典"),
    "color": (
        "red", "blue", "green", "yellow", "black", "white", "purple", "orange", "pink", "grey", "gray",
        "红色", "蓝色", "绿色", "黄色", "黑色", "白色", "紫色", "橙色", "粉色", "灰色",
    ),
    "pet": ("dog", "cat", "hamster", "rabbit", "parrot", "狗", "猫", "仓鼠", "兔子", "鹦鹉"),
    "season": ("summer", "winter", "spring", "autumn", "fall", "夏天", "冬天", "春天", "秋天"),
    "time_of_day": ("mornings", "morning", "evenings", "evening", "nights", "night", "早上", "晚上", "夜里"),
    "seat": ("window seat", "aisle seat", "window seats", "aisle seats", "靠窗", "靠过道"),
}
_CATEGORY_OF: dict[str, str] = {w: cat for cat, words in _CATEGORIES.items() for w in words}
# Broader topics: two kinds of thing under one topic are "compatible", not "unrelated".
_TECH = ("programming_language", "database", "cache", "editor", "os", "cloud", "browser", "phone")
_BROAD = {
    **dict.fromkeys((*_TECH, "frontend_framework", "web_framework"), "tech"),
    **dict.fromkeys(("drink", "food", "meat"), "food_and_drink"),
}
# Attributes whose values are of many kinds (liking tea vs liking hiking): only the same kind of
# thing is the same topic. Every other attribute is one topic by itself (languages one speaks).
_KIND_SENSITIVE = {"affinity", "use", "consume", "has", "is_a"}
_SYNONYMS = {
    "postgresql": "postgres",
    "golang": "go",
    "js": "javascript",
    "ts": "typescript",
    "vs code": "vscode",
    "visual studio code": "vscode",
    "nyc": "new york",
    "new york city": "new york",
    "mongo": "mongodb",
    "macos": "mac",
    "grey": "gray",
    "soccer": "football",
}
# Attributes that hold one value at a time (per subject).
_SINGLE = {"name", "location", "origin", "employer", "role", "age", "marital", "diet", "workplace"}
_SINGLE_PREFIXES = ("attr:", "the:", "count:")
_EXCLUSIVE_USE = {"database", "editor", "os", "cloud", "phone", "browser", "frontend_framework", "web_framework"}
_FAMILY = {"past_location": "location", "origin": "location"}

_JOB_WORDS = (
    "engineer", "developer", "programmer", "teacher", "doctor", "nurse", "student", "manager", "designer",
    "lawyer", "accountant", "chef", "cook", "writer", "artist", "scientist", "researcher", "consultant",
    "analyst", "architect", "pilot", "driver", "farmer", "dentist", "pharmacist", "professor", "journalist",
    "photographer", "musician", "salesperson", "founder", "ceo", "cto", "intern", "freelancer", "translator",
    "editor", "officer", "firefighter", "police officer", "plumber", "electrician", "waiter", "barista",
    "librarian", "therapist", "veterinarian", "mechanic", "tester", "administrator", "product manager",
)
_ZH_JOB_SUFFIX = (
    "师", "员", "生", "家", "者", "工程师", "医生", "老师", "经理",
    "律师", "护士", "司机", "厨师", "学生", "总监", "主管",
)
# fmt: on

# --------------------------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------------------------

_EN_CONTRACTIONS = (
    ("’", "'"),
    ("‘", "'"),
    ("i'm", "i am"),
    ("i've", "i have"),
    ("i'll", "i will"),
    ("i'd", "i would"),
    ("we're", "we are"),
    ("we've", "we have"),
    ("we'll", "we will"),
    ("they're", "they are"),
    ("you're", "you are"),
    ("he's", "he is"),
    ("she's", "she is"),
    ("it's", "it is"),
    ("that's", "that is"),
    ("don't", "do not"),
    ("doesn't", "does not"),
    ("didn't", "did not"),
    ("can't", "cannot"),
    ("won't", "will not"),
    ("isn't", "is not"),
    ("aren't", "are not"),
    ("wasn't", "was not"),
    ("weren't", "were not"),
    ("haven't", "have not"),
    ("hasn't", "has not"),
    ("wouldn't", "would not"),
    ("shouldn't", "should not"),
    ("gonna", "going to"),
    ("wanna", "want to"),
)
_HAN = r"\u4e00-\u9fff"


def _is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def _prep(text: str) -> str:
    s = unicodedata.normalize("NFKC", str(text or "")).casefold()
    for a, b in _EN_CONTRACTIONS:
        s = s.replace(a, b)
    s = re.sub(r"[“”\"«»「」『』]", " ", s)
    s = re.sub(rf"\s+(?=[{_HAN}])|(?<=[{_HAN}])\s+", "", s)  # no spaces next to Chinese characters
    return " ".join(s.split()).strip(" .!?。！？…")


_STRIP_WORDS = re.compile(r"^(?:a|an|the|some|my|our|his|her|their|to|more|much|really|very|also|too|only|mostly)\s+")
_TRAIL_WORDS = re.compile(
    r"\s+(?:now|anymore|any more|these days|nowadays|again|too|also|as well|lately|recently|currently|"
    r"at the moment|instead|more|a lot|very much|so much|best|most|the most|every day|everyday|daily|"
    r"already|from now on|right now|for now|still|then|today|this year|in general|mostly)$"
)
_TRAIL_TIME = re.compile(
    r"\s+(?:(?:every|each|this|next|last)\s+\w+|(?:on|at|in|during)\s+(?:the\s+)?(?:weekends?|weekdays?|mornings?|"
    r"evenings?|afternoons?|nights?|work|home|summer|winter|spring|autumn|fall)|in the \w+|at night|"
    r"(?:on|in|by|before|after|until)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|"
    r"february|march|april|may|june|july|august|september|october|november|december)\b.*|tomorrow|tonight|today|"
    r"soon|later|for now|for good|for a while|forever|(?:a|one|two|three)\s+(?:days?|weeks?|months?|years?)\s+ago)$"
)
_ZH_TRAIL = re.compile(r"(?:了|啦|呢|吧|啊|呀|哦|嘛|喔|的|哈|现在|每天|天天|一直|以后|从此|目前|平时|而已|啊)+$")
_ZH_LEAD = re.compile(r"^(?:一杯|一只|一条|一个|一位|一辆|一本|个|只|条|点|些|喝|吃|的)")


_LATIN_THEN_HAN = re.compile(rf"^([a-z0-9][a-z0-9+#.\- ]*?)\s*(?=[{_HAN}])")


def _clean_value(raw: str) -> str:
    v = raw.strip(" ,.;:!?。，；：！？、'")
    m = _LATIN_THEN_HAN.match(v)  # "redis做缓存": a name, then what it is for
    if m:
        v = m.group(1)
    for _ in range(3):
        v2 = _TRAIL_TIME.sub("", _TRAIL_WORDS.sub("", _STRIP_WORDS.sub("", v)))
        v2 = _ZH_TRAIL.sub("", v2)
        v2 = _ZH_LEAD.sub("", v2) if len(v2) > 2 else v2
        if v2 == v:
            break
        v = v2.strip(" ,.;:!?。，；：！？、'")
    v = _SYNONYMS.get(v, v)
    return v


_VALUE_STOP = re.compile(
    r"\s+(?:and|but|because|since|so|which|who|where|when|while|though|although|if|unless|until|"
    r"with|for|from|as|than|over|rather than|instead of|like|except|after|before|whereas|or)\s+|[,;:()]|"
    r"(?:，|；|：|但是|但|不过|因为|所以|而且|并且|可是|然后|以及|还有)"
)
_SPLIT_ITEMS = re.compile(r"\s+(?:and|or|&)\s+|\s*,\s*|、|和|跟|与|或者|或")


def _value_items(raw: str, multi: bool) -> list[str]:
    """The value(s) in the text after a verb: cut at a clause boundary; lists split when ``multi``."""
    if multi:
        head = re.split(
            r"\s+(?:but|because|since|so|which|who|where|while|though|although|if|unless|until|"
            r"than|over|rather than|instead of|except|after|before|whereas)\s+|[;:()]|"
            r"(?:，|；|：|但是|但|不过|因为|所以|而且|并且|可是|然后)",
            raw,
            maxsplit=1,
        )[0]
        items = [_clean_value(x) for x in _SPLIT_ITEMS.split(head)]
    else:
        items = [_clean_value(_VALUE_STOP.split(raw, maxsplit=1)[0])]
    return [i for i in items if i and any(ch.isalnum() for ch in i)][:5]


def _norm_value(v: str) -> str:
    v = unicodedata.normalize("NFKC", v).casefold().strip()
    v = _SYNONYMS.get(v, v)
    words = [w for w in re.split(r"[\s\-_/]+", v) if w and w not in ("a", "an", "the")]
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def category_of(value: str) -> str:
    """The lexicon category of a value ("go" -> programming_language), else ``""``."""
    v = _norm_value(value)
    for cand in (value, v, _SYNONYMS.get(v, v)):
        if cand in _CATEGORY_OF:
            return _CATEGORY_OF[cand]
    words = v.split()
    for n in (2, 1):
        for i in range(len(words) - n + 1):
            w = " ".join(words[i : i + n])
            if w in _CATEGORY_OF:
                return _CATEGORY_OF[w]
    # Chinese: the longest known word inside the value.
    best = ""
    for w in _CATEGORY_OF:
        if any(_is_han(c) for c in w) and w in value and len(w) > len(best):
            best = w
    return _CATEGORY_OF.get(best, "")


def _head(value: str) -> str:
    v = _norm_value(value)
    if v and _is_han(v[-1]):
        return v[-2:] if len(v) >= 2 else v
    words = v.split()
    return words[-1] if words else v


def topic_of(value: str) -> str:
    """The kind of thing a value is: its lexicon category, else its head word."""
    return category_of(value) or "head:" + _head(value)


def _broad_topic(value: str) -> str:
    t = topic_of(value)
    return _BROAD.get(t, t)


def same_value(a: str, b: str) -> bool:
    """Equal after normalisation, or one is the other's head ("tea" / "green tea")."""
    na, nb = _norm_value(a), _norm_value(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    if _is_han(na[-1]) or _is_han(nb[-1]):
        short, long_ = sorted((na, nb), key=len)
        return len(short) >= 2 and long_.endswith(short)
    wa, wb = na.split(), nb.split()
    short, long_ = sorted((wa, wb), key=len)
    return len(short) >= 1 and long_[-len(short) :] == short and category_of(" ".join(short)) != ""


# --------------------------------------------------------------------------------------------
# subjects
# --------------------------------------------------------------------------------------------

# fmt: off
_EN_ADVERBS = {
    "really", "also", "still", "now", "actually", "currently", "usually", "always", "definitely", "totally",
    "just", "already", "mostly", "generally", "much", "strongly", "honestly", "truly", "absolutely", "recently",
    "finally", "officially", "even", "kind", "sort", "of", "then", "so", "well", "ok", "okay", "oh", "and", "but",
    "correction", "update", "btw", "yes", "no", "nowadays", "today", "lately", "anyway", "again", "since",
    "last", "this", "next", "year", "month", "week", "in", "fact", "seriously", "somehow", "eventually",
    "do", "does", "did", "am", "is", "are", "was", "were", "will", "would", "have", "has", "had", "be",
}
# fmt: on
_ZH_ADVERBS = re.compile(
    r"(?:现在|目前|其实|已经|还是|也|都|一直|真的|比较|非常|很|特别|最近|平时|每天|以后|从此|今年|明年|下周|明天|"
    r"周末|今后|后来|终于|又|还|就|再|刚刚|刚|去年|上个月|下个月|早就|本来|从小|依然|仍然|仍|更|最|超|挺|蛮|好像|"
    r"其实吧|说实话|对了|另外|更正|纠正一下|纠正|不对|嗯|哦|那个|好吧|总之|反正|今天|这周|这个月|后天)+$"
)


def _subject(prefix: str) -> str:
    """Map the words before the verb to a subject: self / we / a name / "" (unknown)."""
    p = prefix.strip(" ,.:;，。：；!！")
    if not p:
        return ""
    if any(_is_han(c) for c in p):
        p = _ZH_ADVERBS.sub("", p)
        p = re.sub(r"^(?:其实|更正|纠正一下|不对|另外|对了|嗯|哦|好吧|说实话)[，,:：]?", "", p)
        if "我们" in p:
            return "we"
        if "我" in p or p in ("用户", "本人"):
            return "self"
        if p in ("他", "她", "他们", "她们"):
            return p
        return p
    words = [w for w in re.split(r"[\s,:;]+", p) if w]
    while words and words[-1] in _EN_ADVERBS:
        words.pop()
    while words and words[0] in _EN_ADVERBS:
        words.pop(0)
    if not words:
        return ""
    s = " ".join(words)
    if s in ("i", "me", "myself", "user", "the user", "this user"):
        return "self"
    if s in ("we", "our team", "the team", "our company", "we all"):
        return "we"
    return s


# --------------------------------------------------------------------------------------------
# English patterns
# --------------------------------------------------------------------------------------------

_NEG = (
    r"(?P<neg>(?:(?:do|does|did|am|is|are|was|were|will|would|have|has|had|could|should)\s+)?"
    r"(?:not|never|no longer)\s+(?:(?:really|actually|even|ever|currently|still)\s+)?)?"
)
_QUIT = r"(?P<quit>(?:stopped|stop|quit|gave up|give up|no longer)\s+)?"


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    attribute: str
    multi: bool = False
    positive: bool = True
    strength: str = ""


def _alt(words: str) -> str:
    """``"a|b c|d"`` -> ``(?:a|b\\s+c|d)``: one alternation, spaces matching any whitespace."""
    return "(?:" + "|".join(w.strip().replace(" ", r"\s+") for w in words.split("|")) + ")"


def _en(verbs: str, tail: str, attribute: str, *, neg: bool = True, quit_: bool = False, **kw: object) -> _Rule:
    """``\\b[negation][stopped ](verb)`` + ``tail`` (which names the ``val`` group)."""
    head = r"\b" + (_NEG if neg else "") + (_QUIT if quit_ else "")
    return _Rule(re.compile(head + _alt(verbs) + tail), attribute, **kw)  # type: ignore[arg-type]


_VAL = r"\s+(?P<val>.+)"
_LIKE = (
    "like|likes|liked|love|loves|loved|enjoy|enjoys|enjoyed|adore|adores|am fond of|is fond of|am into|"
    "is into|am a fan of|is a fan of|am a big fan of|is a big fan of"
)
_HATE = (
    "hate|hates|hated|dislike|dislikes|disliked|detest|detests|cannot stand|can not stand|could not stand|"
    "am not a fan of|is not a fan of"
)
_PREFER = "prefer|prefers|preferred|would rather have|would rather drink|would rather use|would rather eat|" + (
    "would rather go with|would rather|favor|favors|favour|favours"
)
_USE = (
    "use|uses|using|used|rely on|relies on|go with|went with|going with|chose|choose|chosen|picked|pick|"
    "adopted|adopt|stick with|stuck with|stay with|run|runs|running"
)
_TRAVEL = (
    "going to go|going to fly|going to travel|going to visit|planning to go|plan to go|want to go|will go|"
    "will fly|will travel|will visit|plan to visit|planning to visit|want to visit|planning a trip|"
    "taking a trip|going|traveling|travelling|flying|heading|driving|visiting"
)
_MEAT = r"(?P<val>(?:meat|pork|beef|chicken|fish|seafood)\b.*)"

# fmt: off
_EN_RULES: tuple[_Rule, ...] = (
    _en("call me|am called|is called|goes by|go by", _VAL, "name", neg=False),
    _en("used to live|formerly lived|previously lived|lived", r"\s+in" + _VAL, "past_location"),
    _en("live|lives|living|reside|resides|residing|stay|stays|staying|settled|based", r"\s+(?:in|at)" + _VAL,
        "location"),
    _en("moved back|moving back|moved|move|moving|relocated|relocate|relocating", r"\s+(?:back\s+)?to" + _VAL,
        "location"),
    _en("am|is|are|come|comes|came|originally", r"\s+(?:originally\s+)?from" + _VAL, "origin"),
    _en("grew up|was born|were born", r"\s+in" + _VAL, "origin"),
    _en("work|works|working|worked", r"\s+as" + _VAL, "role"),
    _en("work|works|working|employed|job", r"\s+(?:at|for|by)" + _VAL, "employer"),
    _en("joined|joining|starting at|started at", _VAL, "employer"),
    _en("work|works|working", r"\s+in" + _VAL, "workplace"),
    _en("am|is|are", r"\s+(?P<val>\d{1,3})(?:\s+years?\s+old|\s+yo)?\b", "age"),
    _en("turned|turning|will turn", r"\s+(?P<val>\d{1,3})\b", "age", neg=False),
    _en("am|is|are", r"\s+(?P<val>married|single|divorced|engaged|widowed)\b", "marital"),
    _en("am|is|are", r"\s+(?:a\s+|an\s+)?(?:strict\s+)?(?P<val>vegetarian|vegan|pescatarian)\b", "diet"),
    _en("am|is|are", r"\s+(?:severely\s+|very\s+)?allergic to" + _VAL, "allergy", multi=True),
    _en(_PREFER, _VAL, "affinity", strength="prefer"),
    _en(_LIKE, r"\s+(?:to\s+)?(?P<val>.+)", "affinity", multi=True),
    _en(_HATE, r"\s+(?:to\s+)?(?P<val>.+)", "affinity", multi=True, positive=False),
    _en("switched|switch|switching|migrated|migrate|migrating|moved|moving|changed|converted",
        r"\s+(?:over\s+)?to" + _VAL, "use", strength="switch"),
    _en(_USE, _VAL, "use", quit_=True, multi=True),
    _en("avoid|avoids|avoiding|dropped|drop|ditched|abandoned|abandon|got rid of|uninstalled", _VAL, "use",
        neg=False, positive=False),
    _en("drink|drinks|drinking|eat|eats|eating|have|has", r"\s+" + _MEAT, "diet_meat", quit_=True),
    _en("drink|drinks|drinking|drank|eat|eats|eating|ate", _VAL, "consume", quit_=True, multi=True),
    _en("smoke|smokes|smoking", r"\b(?P<val>)", "smoke", quit_=True),
    _en("speak|speaks|speaking", _VAL, "speaks", multi=True),
    _en("have|has|own|owns|got", r"\s+(?P<num>\d+|two|three|four|five|six|no)" + _VAL, "count"),
    _en("have|has|own|owns|got|adopted", r"\s+(?:a|an|one)" + _VAL, "has", multi=True),
    _en("cancelled|canceled|called off|skipping|skipped|postponed",
        r"\s+(?:my\s+|our\s+|the\s+)?(?:trip|visit|vacation|holiday|flight)\s+to" + _VAL, "travel",
        neg=False, positive=False),
    _en(_TRAVEL, r"\s+(?:to\s+|back to\s+)?(?P<val>.+)", "travel"),
    _en("plan|plans|planning|intend|intends|intending|want|wants|hope|hopes|going|will|gonna",
        r"\s+(?:to\s+)?(?P<verb>learn|start|buy|study|quit|build|write|take|join|try|sell|adopt|get)" + _VAL,
        "plan"),
)
# fmt: on
_EN_POSSESSIVE = re.compile(
    r"^(?P<owner>my|our|his|her|their|[a-z][a-z\-]*'s)\s+(?P<attr>[a-z][a-z ]{0,40}?)\s+"
    r"(?P<neg>is not|are not|was not|isn't|aren't)?\s*(?:is|are|was|=|has become|became|is now|are now)\s+(?P<val>.+)$"
)
_EN_FAV_REVERSED = re.compile(
    r"^(?P<val>.+?)\s+(?:is|are)\s+(?:still\s+)?(?:my|our|his|her)\s+favou?rite(?:\s+(?P<cat>[a-z ]+))?$"
)
_EN_THE = re.compile(
    r"^(?:the|our|my)\s+(?P<attr>[a-z][a-z ]{0,30}?)\s+(?:is|was|has been|got|will be)\s+"
    r"(?:now\s+)?(?:(?:moved|changed|rescheduled|pushed|postponed|set|scheduled|planned|delayed|bumped)\s+)?"
    r"(?:to|on|at|in|for|until|back to)?\s*(?P<val>.+)$"
)
_EN_MOVED_OBJECT = re.compile(
    r"^(?:we|i|they|he|she)?\s*(?:have\s+|has\s+)?(?:moved|rescheduled|pushed|postponed|changed|shifted)\s+"
    r"(?:the|our|my)\s+(?P<attr>[a-z][a-z ]{0,30}?)\s+(?:to|until)\s+(?P<val>.+)$"
)
_SCHEDULE_WORDS = {
    "meeting",
    "deadline",
    "call",
    "interview",
    "appointment",
    "party",
    "flight",
    "exam",
    "wedding",
    "dinner",
    "standup",
    "stand-up",
    "launch",
    "release",
    "demo",
    "trip",
    "class",
    "lesson",
    "review",
    "sync",
    "event",
    "match",
    "game",
    "concert",
    "date",
    "birthday party",
    "offsite",
    "workshop",
}


def _role_or_kind(value: str) -> str:
    v = _norm_value(value)
    words = v.split()
    if not words:
        return ""
    if v in ("vegetarian", "vegan", "pescatarian"):
        return "diet"
    if v in _JOB_WORDS or words[-1] in _JOB_WORDS or (len(words) >= 2 and " ".join(words[-2:]) in _JOB_WORDS):
        return "role"
    if v in ("student", "retiree", "retired", "parent", "mother", "father", "mom", "dad"):
        return "role"
    return "is_a"


def _claims_en(clause: str, inherited: str) -> list[Claim]:
    out: list[Claim] = []
    neg_anywhere = bool(re.search(r"\b(?:anymore|any more|no longer|no more)\b", clause))

    m = _EN_FAV_REVERSED.match(clause)
    if m:
        cat = (m.group("cat") or "").strip()
        val = _clean_value(m.group("val"))
        attr = "attr:favorite " + (cat or topic_of(val))
        return [Claim("self", attr, val)]
    m = _EN_MOVED_OBJECT.match(clause)
    if m and m.group("attr").split()[-1] in _SCHEDULE_WORDS:
        return [Claim("", "the:" + m.group("attr").strip(), _clean_value(m.group("val")))]
    m = _EN_POSSESSIVE.match(clause)
    if m:
        owner = m.group("owner")
        subj = {"my": "self", "our": "we", "his": "he", "her": "she", "their": "they"}.get(owner, owner[:-2])
        attr = re.sub(r"^(?:current|new|old|real|actual|full)\s+", "", m.group("attr").strip())
        attr = attr.replace("favourite", "favorite")
        vals = _value_items(m.group("val"), multi=False)
        if attr in ("name", "first name", "last name", "nickname"):
            return [Claim(subj, "name", v, not m.group("neg")) for v in vals]
        if attr in ("home", "address", "city", "hometown") and attr != "hometown":
            return [Claim(subj, "location", v, not m.group("neg")) for v in vals]
        if attr in ("job", "occupation", "profession", "role", "position", "title"):
            return [Claim(subj, "role", v, not m.group("neg")) for v in vals]
        if attr in ("age",):
            return [Claim(subj, "age", v, not m.group("neg")) for v in vals]
        if attr in ("employer", "company", "workplace"):
            return [Claim(subj, "employer", v, not m.group("neg")) for v in vals]
        return [Claim(subj, "attr:" + attr, v, not m.group("neg")) for v in vals]
    m = _EN_THE.match(clause)
    if m and m.group("attr").split()[-1] in _SCHEDULE_WORDS | {
        "plan",
        "budget",
        "password",
        "wifi",
        "address",
        "venue",
        "location",
        "price",
        "rent",
        "goal",
    }:
        return [Claim("", "the:" + m.group("attr").strip(), v) for v in _value_items(m.group("val"), False)]

    for rule in _EN_RULES:
        m = rule.pattern.search(clause)
        if not m:
            continue
        subj = _subject(clause[: m.start()]) or inherited
        negated = bool(m.groupdict().get("neg")) or bool(m.groupdict().get("quit")) or neg_anywhere
        positive = rule.positive != negated
        attr = rule.attribute
        if attr == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attr == "count":
            num = m.group("num")
            noun = _norm_value(_value_items(m.group("val"), False)[0] if _value_items(m.group("val"), False) else "")
            if not noun:
                continue
            if num == "no":
                return [Claim(subj, "has", noun, False)]
            return [Claim(subj, "count:" + noun, num, positive)]
        if attr == "diet_meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "plan":
            verb = m.group("verb")
            return [Claim(subj, "plan:" + verb, v, positive) for v in _value_items(m.group("val"), True)]
        vals = _value_items(m.group("val"), rule.multi)
        if not vals:
            continue
        if attr == "role":
            kind = _role_or_kind(vals[0])
            if kind == "diet":
                return [Claim(subj, "diet", "vegetarian", positive)]
            return [Claim(subj, "role", v, positive) for v in vals]
        if attr == "use" and rule.strength == "switch":
            # "switched from X to Y" / "moved to Berlin": a place is a location, a tool is a use.
            if not category_of(vals[0]) and re.search(r"\bmoved\b|\bmoving\b", m.group(0)):
                return [Claim(subj, "location", v, positive) for v in vals]
            claims = [Claim(subj, "use", v, positive, "switch") for v in vals]
            src = re.search(r"\bfrom\s+(?P<old>.+?)\s+to\b", m.group(0)) or re.search(
                r"\bfrom\s+(?P<old>[^,;]+?)$", clause[m.end() :]
            )
            if src:
                claims += [Claim(subj, "use", _clean_value(src.group("old")), False)]
            return claims
        if attr == "use" and category_of(vals[0]) in ("drink", "food", "meat"):
            attr = "consume"
        if attr == "consume" and category_of(vals[0]) == "meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "travel" and re.match(
            r"^(?:be|have|do|make|get|take|learn|start|try|buy|use|stop|quit|work|see)\b", vals[0]
        ):
            continue
        return [Claim(subj, attr, v, positive, rule.strength) for v in vals]

    m = re.search(r"\b(?P<neg>(?:am|is|are)\s+not\s+|am\s+|is\s+|are\s+)(?:a|an)\s+(?P<val>.+)", clause)
    if m:
        subj = _subject(clause[: m.start()]) or inherited
        vals = _value_items(m.group("val"), False)
        if vals:
            kind = _role_or_kind(vals[0])
            positive = "not" not in m.group("neg") and not neg_anywhere
            if kind == "diet":
                return [Claim(subj, "diet", "vegetarian", positive)]
            return [Claim(subj, kind, vals[0], positive)]
    return out


# --------------------------------------------------------------------------------------------
# Chinese patterns
# --------------------------------------------------------------------------------------------

_ZH_NEG = r"(?P<neg>不再|再也不|已经不|从来不|从不|不要|别再|不会再|不会|不想|不打算|不|没有|没|别|未|无需|不用再)?"


def _zh(pattern: str, attribute: str, **kw: object) -> _Rule:
    return _Rule(re.compile(pattern), attribute, **kw)  # type: ignore[arg-type]


# fmt: off
_ZH_RULES: tuple[_Rule, ...] = (
    _zh(r"(?:我叫|我的名字(?:是|叫)|叫我|名字(?:是|叫))(?P<val>.+)", "name"),
    _zh(r"(?:以前|之前|曾经|小时候)(?:住在|住|生活在)(?P<val>.+)", "past_location"),
    _zh(rf"{_ZH_NEG}(?:住在|住|生活在|定居在|定居|常驻|搬到了|搬到|搬去了|搬去|搬回了|搬回|移居到|移居|落户)"
        r"(?P<val>.+)", "location"),
    _zh(r"(?:来自|老家是|老家在|出生在|出生于|祖籍)(?P<val>.+)", "origin"),
    _zh(r"是(?P<val>[\u4e00-\u9fff]{1,6})人$", "origin"),
    _zh(rf"{_ZH_NEG}(?:就职于|任职于|入职了|入职|跳槽到了|跳槽到|加入了|加入)(?P<val>.+)", "employer"),
    _zh(rf"{_ZH_NEG}在(?P<val>[^，。；]{{1,15}}?)(?:工作|上班|任职|实习)", "employer"),
    _zh(r"(?P<num>\d{1,3})岁", "age"),
    _zh(r"(?P<val>已婚|单身|结婚了|离婚了|订婚了)", "marital"),
    _zh(rf"{_ZH_NEG}(?:吃素|素食)", "diet_veg"),
    _zh(rf"{_ZH_NEG}(?:吃|爱吃|喜欢吃)(?P<val>肉|猪肉|牛肉|鸡肉|鱼|海鲜|荤)", "diet_meat"),
    _zh(rf"{_ZH_NEG}对(?P<val>.+?)过敏", "allergy"),
    _zh(r"最喜欢的(?P<attr>[^是]{1,6})是(?P<val>.+)", "favorite"),
    _zh(rf"{_ZH_NEG}(?:更喜欢|更爱|比较喜欢|偏好|偏爱|倾向于|宁愿|宁可|更倾向于|最喜欢|最爱)(?P<val>.+)", "affinity",
        strength="prefer"),
    _zh(rf"{_ZH_NEG}(?:讨厌|受不了|反感|厌恶)(?P<val>.+)", "affinity", multi=True, positive=False),
    _zh(rf"{_ZH_NEG}(?:喜欢|喜爱|热爱|爱喝|爱吃|爱看|爱玩|爱|迷上了|钟爱)(?P<val>.+)", "affinity", multi=True),
    _zh(r"(?:戒了|戒掉了|戒掉|戒)(?:烟|香烟)(?P<val>)", "smoke", positive=False),
    _zh(r"(?:戒了|戒掉了|戒掉|戒)(?P<val>.+)", "consume", positive=False),
    _zh(rf"{_ZH_NEG}(?:改用|换成了|换成|换用|切换到|切到|迁移到|迁到|转到)(?P<val>.+)", "use", strength="switch"),
    _zh(rf"{_ZH_NEG}(?:使用|采用|选用|用的是|依赖|继续用|用|上(?=\s*[A-Za-z]))(?P<val>.+)", "use", multi=True),
    _zh(r"(?:弃用|放弃了|放弃|抛弃|淘汰了|淘汰)(?P<val>.+)", "use", positive=False),
    _zh(rf"{_ZH_NEG}(?:抽烟|吸烟)(?P<val>)", "smoke"),
    _zh(rf"{_ZH_NEG}(?:喝|吃)(?P<val>.+)", "consume", multi=True),
    _zh(rf"{_ZH_NEG}(?:会说|说|讲)(?P<val>.{{1,6}}语|.{{1,4}}话|英文|中文)", "speaks", multi=True),
    _zh(r"取消了(?:去)?(?P<val>.+?)的(?:行程|旅行|计划|旅游|出差)", "travel", positive=False),
    _zh(rf"{_ZH_NEG}(?:打算|计划|准备|要|想|将|会)?(?:去|到|飞往|飞去)(?P<val>.+?)(?:旅游|旅行|玩|出差|度假|看看)?$",
        "travel"),
    _zh(rf"{_ZH_NEG}(?:打算|计划|准备|想要|想|要)(?P<verb>学|买|考|开始|换|卖|养)(?P<val>.+)", "plan"),
    _zh(rf"{_ZH_NEG}(?:有|养了|养着|养)(?P<num>一|两|二|三|四|五|\d+)?(?:个|只|条|辆|套|位|台)?(?P<val>.+)", "has",
        multi=True),
)
# fmt: on
_ZH_POSSESSIVE = re.compile(
    r"^(?P<owner>[^的]{1,6})的(?P<attr>[^是为]{1,8}?)(?P<neg>不是|不再是)?(?:是|为|改成了|改成|变成了|变成|换成了|换成)(?P<val>.+)$"
)
_ZH_SCHEDULE = re.compile(
    r"(?P<attr>会议|周会|例会|会|面试|聚会|航班|考试|约会|活动|婚礼|晚饭|聚餐|截止日期|截止时间|deadline|演出|比赛|上线|发布)"
    r"(?:时间)?(?:改到了|改到|改在|改成了|改成|推迟到了|推迟到|提前到了|提前到|定在了|定在|安排在|挪到|在|是)(?P<val>.+)"
)
_ZH_NUM = {"一": "1", "两": "2", "二": "2", "三": "3", "四": "4", "五": "5"}


def _claims_zh(clause: str, inherited: str) -> list[Claim]:
    trailing_neg = bool(re.search(r"(?:不.{0,6}了$|再也不|不再)", clause))
    m = _ZH_SCHEDULE.search(clause)
    if m:
        return [Claim("", "the:" + m.group("attr"), v) for v in _value_items(m.group("val"), False)]
    m = _ZH_POSSESSIVE.match(clause)
    if m and not re.search(r"(?:喜欢|住|用|叫)", m.group("owner")):
        owner = m.group("owner")
        subj = _subject(owner) or owner
        attr = m.group("attr")
        vals = _value_items(m.group("val"), False)
        positive = not m.group("neg")
        if attr in ("名字", "姓名", "名"):
            return [Claim(subj, "name", v, positive) for v in vals]
        if attr in ("工作", "职业"):
            return [Claim(subj, "role", v, positive) for v in vals]
        if attr in ("家", "住址", "地址"):
            return [Claim(subj, "location", v, positive) for v in vals]
        return [Claim(subj, "attr:" + attr, v, positive) for v in vals]
    m = re.search(r"是(?:一名|一个|一位|个|名)?(?P<val>[\u4e00-\u9fffA-Za-z]{1,10})$", clause)
    if m and (m.group("val").endswith(_ZH_JOB_SUFFIX) or m.group("val") in ("学生", "程序员")):
        neg = bool(re.search(r"不是$|不再是$", clause[: m.start() + 1])) or "不是" in clause
        return [Claim(_subject(clause[: m.start()]) or inherited, "role", m.group("val"), not neg)]

    for rule in _ZH_RULES:
        m = rule.pattern.search(clause)
        if not m:
            continue
        subj = _subject(clause[: m.start()]) or inherited
        gd = m.groupdict()
        negated = bool(gd.get("neg"))
        positive = rule.positive != negated
        attr = rule.attribute
        if attr == "age":
            return [Claim(subj, "age", m.group("num"), positive)]
        if attr == "marital":
            return [Claim(subj, "marital", m.group("val").rstrip("了"), positive)]
        if attr == "diet_veg":
            return [Claim(subj, "diet", "vegetarian", positive and not trailing_neg)]
        if attr == "diet_meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attr == "favorite":
            vals = _value_items(m.group("val"), False)
            return [Claim(subj or "self", "attr:favorite " + m.group("attr"), v) for v in vals]
        if attr == "plan":
            return [Claim(subj, "plan:" + m.group("verb"), v, positive) for v in _value_items(m.group("val"), True)]
        vals = _value_items(m.group("val"), rule.multi)
        if not vals:
            continue
        if attr == "has":
            if re.match(r"^(?:点|些|时候|空|事|意思|道理|可能|必要|问题|机会|兴趣)", vals[0]):
                continue
            num = gd.get("num")
            if num and num != "一":
                return [Claim(subj, "count:" + vals[0], _ZH_NUM.get(num, num), positive)]
        if attr == "use" and category_of(vals[0]) in ("drink", "food", "meat"):
            attr = "consume"
        if attr == "consume" and category_of(vals[0]) == "meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "travel" and re.match(r"^(?:上班|上学|工作|睡觉|吃饭|买|看|做|找|学)", vals[0]):
            continue
        return [Claim(subj, attr, v, positive, rule.strength) for v in vals]
    return []


# --------------------------------------------------------------------------------------------
# reading a statement
# --------------------------------------------------------------------------------------------

_LEAD_EN = re.compile(
    r"^(?:(?:actually|correction|update|so|well|oh|and|but|also|now|ok|okay|hey|hi|btw|by the way|fyi|"
    r"just so you know|to be clear|for the record|note|remember|remember that|please note|please remember|"
    r"heads up|quick update|news|good news|bad news|yes|no|sorry|i meant|i mean|to correct|not anymore)"
    r"[,:!-]?\s+)+"
)
_LEAD_ZH = re.compile(
    r"^(?:其实|更正|纠正一下|纠正|不对|另外|对了|顺便说一下|说实话|我说错了|刚才说错了|哦|嗯|好吧|那个|告诉你|记住|注意)[，,：:！!]?"
)
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s*|,\s+but\s+|\s+but\s+|,\s+so\s+|\s+so\s+(?=i\b|we\b)|,\s+and\s+(?=(?:i|we|my|our|now|then)\b)|"
    r"\s+and\s+(?=(?:i|we|my|our)\b)|\s+and\s+(?=(?:now\s+)?(?:work|works|live|lives|moved|prefer|prefers|use|uses|like|"
    r"likes|love|loves|hate|hates|have|has|am|is|switched|drink|drinks)\b)|\s+because\s+|\s+since\s+(?=i|we)|"
    r",\s+(?=(?:i|we|now|then|but|and)\b)|[；;。！？!?]|，|但是|但|不过|而且|因为|所以|可是|然后"
)


@lru_cache(maxsize=4096)
def parse_claims(text: str) -> tuple[Claim, ...]:
    """Every claim the patterns read in ``text`` (possibly none)."""
    s = _prep(text)
    s = _LEAD_EN.sub("", s)
    s = _LEAD_ZH.sub("", s)
    out: list[Claim] = []
    subject = ""
    for clause in _CLAUSE_SPLIT.split(s):
        clause = clause.strip(" ,.:!?")
        clause = _LEAD_EN.sub("", clause)
        clause = _LEAD_ZH.sub("", clause)
        if not clause:
            continue
        han = any(_is_han(c) for c in clause)
        claims = (_claims_zh(clause, subject) or _claims_en(clause, subject)) if han else _claims_en(clause, subject)
        for c in claims:
            if c.value or c.attribute == "smoke":
                out.append(c)
        if claims and claims[0].subject:
            subject = claims[0].subject
    return tuple(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------
# comparing
# --------------------------------------------------------------------------------------------

_EN_STOP = set(
    "a an the to of in on at for and or is are was were am be been i me my we our you your it this that "
    "with as by from so very really just also do does did have has had will would can could should there".split()
)
_NEG_WORDS = {"not", "never", "no", "nobody", "nothing", "none", "stopped", "quit", "longer", "anymore", "cannot"}
_ZH_NEG_CHARS = set("不没别未无")
_ZH_STOP_CHARS = set("我你他她它们的了是在也都很和就还吗呢吧啊呀哦这那个一有")


def _tokens(text: str) -> tuple[set[str], int]:
    s = _prep(text)
    words = re.findall(r"[a-z0-9+#]+", s)
    neg = sum(1 for w in words if w in _NEG_WORDS) + sum(1 for c in s if c in _ZH_NEG_CHARS)
    toks = {w for w in words if w not in _EN_STOP and w not in _NEG_WORDS and len(w) > 1}
    toks |= {c for c in s if _is_han(c) and c not in _ZH_STOP_CHARS and c not in _ZH_NEG_CHARS}
    return toks, neg


def _fallback(new: str, old: str) -> Verdict:
    a, na = _tokens(new)
    b, nb = _tokens(old)
    if not a or not b:
        return Verdict(UNRELATED, reason="no content words")
    jac = len(a & b) / len(a | b)
    if jac >= 0.7 and (na % 2) != (nb % 2):
        return Verdict(CONTRADICTING, reason="negation flip")
    if jac >= 0.5:
        return Verdict(COMPATIBLE, reason="same words")
    return Verdict(UNRELATED, reason="different words")


def _subjects_match(a: str, b: str, aliases: frozenset[str]) -> bool:
    if not a or not b or a == b:
        return True
    return (a == "self" and b in aliases) or (b == "self" and a in aliases)


def _single(attribute: str) -> bool:
    return attribute in _SINGLE or attribute.startswith(_SINGLE_PREFIXES)


def _compare(n: Claim, o: Claim, aliases: frozenset[str]) -> Verdict:
    if not _subjects_match(n.subject, o.subject, aliases):
        return Verdict(UNRELATED, reason="different subjects")
    if n.attribute != o.attribute:
        fam_n, fam_o = _FAMILY.get(n.attribute, n.attribute), _FAMILY.get(o.attribute, o.attribute)
        if fam_n == fam_o:
            return Verdict(COMPATIBLE, n.attribute, n.value, o.value, "related attributes")
        return Verdict(UNRELATED, reason="different attributes")
    attr = n.attribute
    if attr == "smoke" or same_value(n.value, o.value):
        if n.positive != o.positive:
            return Verdict(CONTRADICTING, attr, n.value, o.value, "opposite polarity")
        return Verdict(COMPATIBLE, attr, n.value, o.value, "same value")
    same_kind = topic_of(n.value) == topic_of(o.value)
    same_topic = attr not in _KIND_SENSITIVE or _broad_topic(n.value) == _broad_topic(o.value)
    if not same_topic:
        return Verdict(UNRELATED, attr, n.value, o.value, "different kinds of thing")
    if n.positive and o.positive:
        if _single(attr):
            return Verdict(CONTRADICTING, attr, n.value, o.value, "one value at a time")
        if attr == "affinity" and n.strength == "prefer" and o.strength == "prefer" and same_kind:
            return Verdict(CONTRADICTING, attr, n.value, o.value, "two preferred choices of one kind")
        exclusive_use = category_of(n.value) in _EXCLUSIVE_USE or "switch" in (n.strength, o.strength)
        if attr == "use" and same_kind and exclusive_use:
            return Verdict(CONTRADICTING, attr, n.value, o.value, "two tools of one kind")
    return Verdict(COMPATIBLE, attr, n.value, o.value, "both can hold")


_RANK = {CONTRADICTING: 0, COMPATIBLE: 1, UNRELATED: 2}


def relation(new: str, old: str, aliases: Iterable[str] = ()) -> Verdict:
    """How statement ``new`` relates to the existing statement ``old`` (see the module docstring).

    ``aliases`` are names that also mean the speaker ("alice" when Alice speaks), lower case."""
    al = frozenset(a.casefold() for a in aliases if a)
    cn, co = parse_claims(new), parse_claims(old)
    if not cn or not co:
        return _fallback(new, old)
    best: Verdict | None = None
    for n in cn:
        for o in co:
            v = _compare(n, o, al)
            if best is None or _RANK[v.label] < _RANK[best.label]:
                best = v
    assert best is not None
    return best


def find_conflicts(
    new: str, existing: Sequence[tuple[str, str]], aliases: Iterable[str] = ()
) -> list[tuple[str, Verdict]]:
    """``(id, verdict)`` for every existing ``(id, text)`` that ``new`` contradicts."""
    al = tuple(aliases)
    out = []
    for rid, text in existing:
        v = relation(new, text, al)
        if v.label == CONTRADICTING:
            out.append((rid, v))
    return out
