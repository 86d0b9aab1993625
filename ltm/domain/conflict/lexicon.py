"""What every reader of a statement shares: the verdict types, the vocabulary (kinds of thing,
synonyms, which attributes hold one value at a time), value and subject normalisation, and the
rule shape the English and Chinese pattern tables are written in."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from ..contractions import expand
from ..number_words import ages_in_digits

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
    # said as a state that has ended ("I used to live in Lisbon", "我以前喜欢茶"): it denies the same
    # state said as current, and allows any other value
    ended: bool = False


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
KIND_SENSITIVE = {"affinity", "use", "consume", "has", "is_a"}
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
SINGLE = {"name", "location", "origin", "employer", "role", "age", "marital", "diet", "workplace"}
SINGLE_PREFIXES = ("attr:", "the:", "count:")
EXCLUSIVE_USE = {"database", "editor", "os", "cloud", "phone", "browser", "frontend_framework", "web_framework"}
FAMILY = {"past_location": "location", "origin": "location"}

JOB_WORDS = (
    "engineer", "developer", "programmer", "teacher", "doctor", "nurse", "student", "manager", "designer",
    "lawyer", "accountant", "chef", "cook", "writer", "artist", "scientist", "researcher", "consultant",
    "analyst", "architect", "pilot", "driver", "farmer", "dentist", "pharmacist", "professor", "journalist",
    "photographer", "musician", "salesperson", "founder", "ceo", "cto", "intern", "freelancer", "translator",
    "editor", "officer", "firefighter", "police officer", "plumber", "electrician", "waiter", "barista",
    "librarian", "therapist", "veterinarian", "mechanic", "tester", "administrator", "product manager",
)
ZH_JOB_SUFFIX = (
    "师", "员", "生", "家", "者", "工程师", "医生", "老师", "经理",
    "律师", "护士", "司机", "厨师", "学生", "总监", "主管",
)
# fmt: on

# --------------------------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------------------------

_HAN = r"\u4e00-\u9fff"


def is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def prep(text: str) -> str:
    s = ages_in_digits(expand(unicodedata.normalize("NFKC", str(text or "")).casefold()))
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


def clean_value(raw: str) -> str:
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


def value_items(raw: str, multi: bool) -> list[str]:
    """The value(s) in the text after a verb: cut at a clause boundary; lists split when ``multi``."""
    if multi:
        head = re.split(
            r"\s+(?:but|because|since|so|which|who|where|while|though|although|if|unless|until|"
            r"than|over|rather than|instead of|except|after|before|whereas)\s+|[;:()]|"
            r"(?:，|；|：|但是|但|不过|因为|所以|而且|并且|可是|然后)",
            raw,
            maxsplit=1,
        )[0]
        items = [clean_value(x) for x in _SPLIT_ITEMS.split(head)]
    else:
        items = [clean_value(_VALUE_STOP.split(raw, maxsplit=1)[0])]
    return [i for i in items if i and any(ch.isalnum() for ch in i)][:5]


def norm_value(v: str) -> str:
    v = unicodedata.normalize("NFKC", v).casefold().strip()
    v = _SYNONYMS.get(v, v)
    words = [w for w in re.split(r"[\s\-_/]+", v) if w and w not in ("a", "an", "the")]
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def category_of(value: str) -> str:
    """The lexicon category of a value ("go" -> programming_language), else ``""``."""
    v = norm_value(value)
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
        if any(is_han(c) for c in w) and w in value and len(w) > len(best):
            best = w
    return _CATEGORY_OF.get(best, "")


def _head(value: str) -> str:
    v = norm_value(value)
    if v and is_han(v[-1]):
        return v[-2:] if len(v) >= 2 else v
    words = v.split()
    return words[-1] if words else v


def topic_of(value: str) -> str:
    """The kind of thing a value is: its lexicon category, else its head word."""
    return category_of(value) or "head:" + _head(value)


def broad_topic(value: str) -> str:
    t = topic_of(value)
    return _BROAD.get(t, t)


# The value of a state ended without naming it: retired, or a job lost ("employer: ANY, not so").
ANY = "*"


def same_value(a: str, b: str) -> bool:
    """Equal after normalisation, or one is the other's head ("tea" / "green tea"); :data:`ANY` is any
    value."""
    if ANY in (a, b) and a and b:
        return True
    na, nb = norm_value(a), norm_value(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    if is_han(na[-1]) or is_han(nb[-1]):
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
    "do", "does", "did", "am", "is", "are", "was", "were", "will", "would", "have", "has", "had", "be", "been",
}
# fmt: on
_ZH_ADVERBS = re.compile(
    r"(?:现在|目前|其实|已经|还是|也|都|一直|真的|比较|非常|很|特别|最近|平时|每天|以后|从此|今年|明年|下周|明天|"
    r"周末|今后|后来|终于|又|还|就|再|刚刚|刚|去年|上个月|下个月|早就|本来|从小|依然|仍然|仍|更|最|超|挺|蛮|好像|"
    r"其实吧|说实话|对了|另外|更正|纠正一下|纠正|不对|嗯|哦|那个|好吧|总之|反正|今天|这周|这个月|后天)+$"
)


def subject_of(prefix: str) -> str:
    """Map the words before the verb to a subject: self / we / a name / "" (unknown)."""
    p = prefix.strip(" ,.:;，。：；!！")
    if not p:
        return ""
    if any(is_han(c) for c in p):
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


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    attribute: str
    multi: bool = False
    positive: bool = True
    strength: str = ""


# Claims about a place: a reader may name the place by its English name, so that one city written
# in two languages ("Londres", "London") is one value.
PLACE_ATTRIBUTES = ("location", "past_location", "origin", "travel")


def english_places(claims: list[Claim], names: dict[str, str]) -> list[Claim]:
    """``claims`` with each place value that ``names`` knows replaced by its English name."""
    return [
        replace(c, value=names[c.value]) if c.attribute in PLACE_ATTRIBUTES and c.value in names else c for c in claims
    ]


def consumed(attribute: str, value: str) -> str:
    """``use`` of something one eats or drinks is ``consume``; any other attribute stays."""
    return "consume" if attribute == "use" and category_of(value) in ("drink", "food", "meat") else attribute


def diet_of(subject: str, attribute: str, value: str, positive: bool, *, ended: bool = False) -> Claim | None:
    """Eating meat (or not) said as a claim about being vegetarian; None for anything else."""
    if attribute == "consume" and category_of(value) == "meat":
        return Claim(subject, "diet", "vegetarian", not positive, ended=ended)
    return None
