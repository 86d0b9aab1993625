"""Is a new statement a restatement of a stored one? (issue 27: no duplicate rows for a restated fact)

A restatement says the same fact again in other words: "I live in Lisbon" / "I'm living in Lisbon",
"我住在里斯本" / "我现在住在里斯本". It must never swallow a different fact, so the test is
conservative (precision first, measured by ``python -m benchmarks.restate``):

1. the **guards** must all agree, read from the normalised text: the same numbers, the same names
   (capitalised words), the same negation, the same time words, the same people (pronouns and
   kinship words). Any difference is a different fact (or a conflict, which is not ours to decide);
2. then **both** signals must be high: the lexical overlap of the content words (Jaccard of stemmed
   English words and of Han characters) and the embedding cosine of the two texts. The same
   normalised text passes on its own.

Pure: no I/O; the caller brings the cosine (its embedder's vectors).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from .contractions import expand
from .lexical import STOPWORDS, is_cjk, stem

__all__ = [
    "COSINE_MIN",
    "cosine",
    "LEXICAL_MIN",
    "SUBSTITUTION_COSINE",
    "Restatement",
    "guards",
    "lexical_overlap",
    "normalise",
    "restates",
]

# Tuned on benchmarks/data/restate_pairs.jsonl (precision of "duplicate" >= 0.97 with the MiniLM
# and the hashing embedder): both must hold, and a guard difference vetoes.
LEXICAL_MIN = 0.6
COSINE_MIN = 0.8
# A reworded content word (each side has one the other lacks) passes only with a very close
# embedding, and never in Han text: the local embedder scores 我喜欢喝绿茶 / 我喜欢喝红茶 at 1.0.
SUBSTITUTION_COSINE = 0.95
# Spelling variants and plain synonyms, folded before every signal.
_VARIANTS = {
    "favorite": "favourite", "color": "colour", "mom": "mother", "mum": "mother", "dad": "father",
    "called": "named", "name": "named", "got": "have", "own": "have",
}  # fmt: skip

# After the shared table: any other negation ("needn't"), and "cannot" split so it compares word
# for word with "can not".
_NEGATION = re.compile(r"\b(\w+)n't\b")
_CANNOT = re.compile(r"\bcannot\b")
_PUNCT = re.compile(r"[^\w\s]|_")
_LEAD = re.compile(
    r"^(?:(?:actually|so|well|oh|and|also|btw|by the way|fyi|just so you know|remember|remember that|"
    r"note that|for the record|as i said|like i said|again|yes|ok|okay)\s+)+"
)
_LEAD_ZH = re.compile(r"^(?:其实|对了|顺便说一下|记住|告诉你|我说过|再说一次|再说一遍|就是|嗯|哦)+")
_WORD = re.compile(r"[^\W\d_]+|\d+(?:[.,]\d+)?", re.UNICODE)

_EN_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_EN_NUMBERS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"})
_EN_NUMBERS.update({"a couple": "2", "once": "1", "twice": "2"})
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_ZH_NUM_RUN = re.compile("[零〇一二两三四五六七八九十百千万]+")

_NEG_EN = frozenset("not no never nobody nothing none neither nor without cannot hardly".split())
_NEG_ZH = ("不", "没", "沒", "别", "未", "无", "無", "非")
_NEG_ZH_FALSE = ("不错", "不过", "不少", "差不多", "非常", "并非不")  # not a negation of the fact

_TIME_EN = frozenset(
    "yesterday today tomorrow tonight last next ago before after until since weekend week month year "
    "morning afternoon evening night monday tuesday wednesday thursday friday saturday sunday "
    "january february march april may june july august september october november december "
    "spring summer autumn fall winter christmas easter".split()
)
_TIME_ZH = (
    "前天", "昨天", "今天", "明天", "后天", "上周", "下周", "这周", "本周", "上个月", "下个月", "这个月",
    "去年", "今年", "明年", "前年", "早上", "上午", "中午", "下午", "晚上", "周末", "春天", "夏天",
    "秋天", "冬天", "春节", "国庆", "五一", "以前", "以后", "之前", "之后", "小时候",
)  # fmt: skip
_TIME_ZH_RE = re.compile("(?:周|星期|礼拜)[一二三四五六日天]|[一二三四五六七八九十]+月")

_PEOPLE_EN = {
    **dict.fromkeys("i me my mine myself".split(), "self"),
    **dict.fromkeys("we us our ours".split(), "we"),
    **dict.fromkeys("he him his himself".split(), "he"),
    **dict.fromkeys("she her hers herself".split(), "she"),
    **dict.fromkeys("they them their theirs".split(), "they"),
    **dict.fromkeys("you your yours".split(), "you"),
}
_KIN_EN = frozenset(
    "mother mom mum father dad parents brother sister son daughter wife husband partner girlfriend "
    "boyfriend friend boss colleague coworker grandmother grandma grandfather grandpa aunt uncle cousin "
    "neighbour neighbor kid kids child children baby dog cat".split()
)
_PEOPLE_ZH = (
    ("我们", "we"), ("咱们", "we"), ("他们", "they"), ("她们", "they"), ("你们", "you"),
    ("我", "self"), ("他", "he"), ("她", "she"), ("你", "you"),
)  # fmt: skip
_KIN_ZH = (
    "妈妈", "母亲", "爸爸", "父亲", "父母", "哥哥", "姐姐", "弟弟", "妹妹", "儿子", "女儿", "老婆", "妻子",
    "老公", "丈夫", "男朋友", "女朋友", "朋友", "老板", "同事", "奶奶", "爷爷", "外婆", "外公", "姥姥",
    "阿姨", "叔叔", "舅舅", "表哥", "表姐", "邻居", "孩子", "宝宝", "狗", "猫",
)  # fmt: skip
# Words a restatement adds or drops without changing the fact.
_FILLER_ZH = frozenset("的了在是也都很就还现目前一直真其实正着呢啊吧呀嘛")
# Han characters a restatement may add beyond the fillers (measure words, "always", "the name"):
# any other added character is new content ("我喜欢茶" / "我喜欢冰茶").
_ADDABLE_ZH = frozenset("名个位从来类经常总比较确字")


@dataclass(frozen=True)
class Restatement:
    """The verdict with the signals that decided it (for the benchmark and the logs)."""

    duplicate: bool
    reason: str
    lexical: float = 0.0
    cosine: float | None = None


def normalise(text: str) -> str:
    """NFKC, case-folded, contractions spelled out, lead fillers and punctuation dropped."""
    s = expand(unicodedata.normalize("NFKC", text or "").casefold())
    s = _CANNOT.sub("can not", _NEGATION.sub(r"\1 not", s))
    s = " ".join(_VARIANTS.get(w, w) for w in _PUNCT.sub(" ", s).split())
    s = _LEAD.sub("", s)
    return _LEAD_ZH.sub("", s.replace(" ", "") if s and all(is_cjk(c) or not c.isalpha() for c in s) else s)


def _zh_number(run: str) -> str:
    if all(c in _ZH_DIGITS for c in run):
        return "".join(str(_ZH_DIGITS[c]) for c in run)
    total, cur = 0, 0
    for c in run:
        if c in _ZH_DIGITS:
            cur = _ZH_DIGITS[c]
        else:
            total += max(cur, 1) * _ZH_UNITS[c]
            cur = 0
    return str(total + cur)


def _numbers(raw: str, norm: str) -> frozenset[str]:
    out = {m.replace(",", "") for m in re.findall(r"\d+(?:[.,]\d+)?", norm)}
    words = norm.split()
    out |= {_EN_NUMBERS[w] for w in words if w in _EN_NUMBERS}
    out |= {_zh_number(r) for r in _ZH_NUM_RUN.findall(norm) if r not in ("一",)}  # 一 alone: "a", "one"
    return frozenset(out)


def _names(raw: str) -> frozenset[str]:
    """Capitalised words that are not the sentence's first word nor a pronoun (English names)."""
    out = set()
    for sentence in re.split(r"[.!?;:。！？]\s*", unicodedata.normalize("NFKC", raw or "")):
        words = re.findall(r"[A-Za-z][\w'’-]*", sentence)
        for i, w in enumerate(words):
            base = w.split("'")[0].split("’")[0]
            if not base[:1].isupper() or base.casefold() in ("i",):
                continue
            if i == 0 and (
                base.casefold() in STOPWORDS or base.casefold() in _PEOPLE_EN or _LEAD.match(base.casefold() + " ")
            ):
                continue
            if base.casefold() in _TIME_EN:
                continue  # weekdays and months are time words, compared there
            out.add(base.casefold())
    return frozenset(out)


def _negated(norm: str) -> bool:
    if any(w in _NEG_EN for w in norm.split()):
        return True
    s = norm
    for f in _NEG_ZH_FALSE:
        s = s.replace(f, "")
    return any(n in s for n in _NEG_ZH)


def _times(norm: str) -> frozenset[str]:
    out = {w for w in norm.split() if w in _TIME_EN}
    out |= {w for w in _TIME_ZH if w in norm}
    out |= set(_TIME_ZH_RE.findall(norm))
    return frozenset(out)


def _people(norm: str) -> frozenset[str]:
    words = norm.split()
    out = {_PEOPLE_EN[w] for w in words if w in _PEOPLE_EN}
    out |= {stem(w) for w in words if w in _KIN_EN}
    s = norm
    for k in sorted(_KIN_ZH, key=len, reverse=True):
        if k in s:
            out.add(k)
            s = s.replace(k, " ")
    for k, v in _PEOPLE_ZH:
        if k in s:
            out.add(v)
            s = s.replace(k, " ")
    return frozenset(out)


def guards(a: str, b: str) -> str:
    """The first guard the two statements differ on ("" when none): numbers, names, negation,
    time, people."""
    na, nb = normalise(a), normalise(b)
    if _numbers(a, na) != _numbers(b, nb):
        return "numbers"
    if _names(a) != _names(b):
        return "names"
    if _negated(na) != _negated(nb):
        return "negation"
    if _times(na) != _times(nb):
        return "time"
    if _people(na) != _people(nb):
        return "people"
    return ""


def _content(norm: str) -> frozenset[str]:
    """Content words: numbers left out (the numbers guard compared them)."""
    out: set[str] = set()
    for w in _WORD.findall(norm):
        if any(is_cjk(c) for c in w):
            out |= {c for c in w if is_cjk(c) and c not in _FILLER_ZH and c not in _ZH_DIGITS and c not in _ZH_UNITS}
        elif w not in STOPWORDS and w not in _EN_NUMBERS and not w[0].isdigit():
            out.add(stem(w))
    return frozenset(out)


def lexical_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the content words (stemmed English words, Han characters)."""
    ca, cb = _content(normalise(a)), _content(normalise(b))
    if not ca or not cb:
        return 1.0 if ca == cb else 0.0
    return len(ca & cb) / len(ca | cb)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors (0.0 for a zero vector)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def restates(
    new: str,
    old: str,
    cosine: float | None,
    *,
    lexical_min: float = LEXICAL_MIN,
    cosine_min: float = COSINE_MIN,
) -> Restatement:
    """Whether ``new`` restates ``old``. ``cosine``: the embedding similarity of the two texts
    (None: no embedding, then only the same normalised text counts)."""
    differs = guards(new, old)
    if differs:
        return Restatement(False, differs)
    if normalise(new) == normalise(old):
        return Restatement(True, "same text", 1.0, cosine)
    lex = lexical_overlap(new, old)
    ca, cb = _content(normalise(new)), _content(normalise(old))
    if ca - cb and cb - ca:  # a word replaced, not only added or dropped
        if any(is_cjk(c) for w in ca ^ cb for c in w):
            return Restatement(False, "substitution", lex, cosine)
        cosine_min = max(cosine_min, SUBSTITUTION_COSINE)
    elif any(is_cjk(w) and w not in _ADDABLE_ZH for w in ca ^ cb):
        return Restatement(False, "addition", lex, cosine)
    if cosine is None:
        return Restatement(False, "no embedding", lex)
    if lex < lexical_min:
        return Restatement(False, "lexical", lex, cosine)
    if cosine < cosine_min:
        return Restatement(False, "embedding", lex, cosine)
    return Restatement(True, "restated", lex, cosine)
