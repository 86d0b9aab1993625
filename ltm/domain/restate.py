"""Is a new statement a restatement of a stored one? (issue 27: no duplicate rows for a restated
fact; issue 36: a restatement never swallows a new fact.)

A restatement says the same fact again and **adds nothing**: "I live in Lisbon" / "I'm living in
Lisbon now", "我住在里斯本" / "我现在住在里斯本". Folding it into the stored row (``already_known``)
loses nothing; folding a statement that adds something loses a user's fact, so the rule is
conservative (precision first, measured per language by ``python -m benchmarks.restate``):

1. both texts are **normalised** the same way (NFKC, case, contractions, punctuation), and the words
   a restatement adds or drops without changing the fact are removed: "now", "currently", "still",
   "actually", progressive auxiliaries ("estoy viviendo"), politeness particles
   (:mod:`ltm.domain.restate_words`). The same normalised text is a restatement;
2. the **guards** must all agree: the same numbers, names, polarity (negation), tense ("used to",
   "was", 以前, でした, เคย, vivía), modality ("will", "should", "want to", "can"; 想, 会, たい, จะ,
   quiero, sẽ), quantity or frequency ("rarely", "always", "only"; 很少, たまに, ไม่ค่อย, rara vez),
   time words and people (pronouns, kinship). Any difference is another fact or a correction;
3. the new statement must bring **no content word** the stored one lacks: an added list item
   ("penicillin and latex"), a replaced value ("soy" for "oat" milk), a detail ("iced" tea). Content
   words are stemmed English and Spanish words, Vietnamese syllables, Han characters, kana and
   katakana words, and Thai character pairs (Thai is written without spaces);
4. then the two signals, as evidence: the content overlap (Jaccard) and the embedding cosine must
   both reach their floor. The embedding is never the only reason: a pair that fails 1-3 is never
   folded, whatever its cosine.

:func:`refines` names the other useful relation: the new statement keeps every content word of the
stored one and adds some, with every guard equal ("allergic to penicillin" -> "allergic to
penicillin and latex"); the write path stores it linked to the first (``refines``).

Pure: no I/O; the caller brings the cosine (its embedder's vectors).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import restate_words as tbl
from .confusables import unaccented
from .contractions import expand
from .lexical import STOPWORDS, stem
from .number_words import HAN_NUMERALS, han_number

__all__ = [
    "COSINE_MIN",
    "LEXICAL_MIN",
    "Restatement",
    "candidate",
    "cosine",
    "guards",
    "lexical_overlap",
    "normalise",
    "refines",
    "restates",
    "timeless",
]

# Tuned on tests/data/restate_tuning.tsv (the held-out part is tests/data/restate_heldout.tsv):
# evidence floors once the guards and the no-new-content test passed. The hashing embedder scores
# "I live in Lisbon" / "I'm living in Lisbon now" at 0.70, all-MiniLM-L6-v2 at 0.91.
LEXICAL_MIN = 0.5
COSINE_MIN = 0.6
# Spelling variants and plain synonyms, folded before every signal.
_VARIANTS = {
    "favorite": "favourite", "color": "colour", "mom": "mother", "mum": "mother", "dad": "father",
    "called": "named", "name": "named", "got": "have", "own": "have",
}  # fmt: skip

# After the shared table: any other negation ("needn't"), and "cannot" split so it compares word
# for word with "can not".
_NEGATION = re.compile(r"\b(\w+)n't\b")
_CANNOT = re.compile(r"\bcannot\b")
_LEAD = re.compile(
    r"^(?:(?:actually|so|well|oh|and|also|btw|by the way|fyi|just so you know|remember|remember that|"
    r"note that|for the record|as i said|like i said|again|yes|ok|okay|just)\s+)+"
)
_LEAD_ZH = re.compile(
    r"^(?:其实|其實|对了|對了|顺便说一下|記住|记住|告诉你|告訴你|我说过|再说一次|再说一遍|就是|嗯|哦)+"
)
_FILLER_LATIN = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, tbl.FILLERS_LATIN)) + r")(?!\w)")
_SPACES = re.compile(r"\s+")

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HIRA = "\u3040-\u309f"
_KATA = "\u30a0-\u30ff\u31f0-\u31ff"
_THAI = "\u0e00-\u0e7f"
_RUNS = re.compile(rf"([{_HAN}]+)|([{_HIRA}]+)|([{_KATA}]+)|([{_THAI}]+)|(\d+(?:[.,]\d+)?)|([^\W\d_]+)")
_KANA = re.compile(f"[{_HIRA}{_KATA}]")
_HAN_CHAR = re.compile(f"[{_HAN}]")
_THAI_CHAR = re.compile(f"[{_THAI}]")
_LATIN = re.compile(r"[a-zà-ɏḀ-ỿ]")
_ES_CUES = frozenset(
    "el la los las una unos unas de del en con por para y que es soy somos mi mis muy al estoy tengo gusta "
    "gustan".split()
)
_EN_CUES = STOPWORDS - frozenset("a me no y so he".split())
# English stopwords that carry a fact's direction or identity ("moved from" / "moved to", "against"):
# content words here
_KEPT = frozenset("from against out off into up down under above below other same".split())
_ES_LETTERS = re.compile("[ñáéíóú¿¡]")
_ES_SUFFIXES = (
    "iendo", "yendo", "ando", "amos", "emos", "imos", "aron", "ieron", "aba", "ían", "ía", "ar", "er", "ir", "as", "es",
    "an", "en", "os", "a", "e", "o", "s",
)  # fmt: skip
_VI_LETTERS = re.compile("[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]")

_ZH_NUM_RUN = re.compile("[零〇一二两兩三四五六七八九十百千万萬]+")

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
    "後天", "上週", "下週", "這週", "本週", "上個月", "下個月", "這個月", "週末", "以後", "之後", "小時候",
)  # fmt: skip
_TIME_ZH_RE = re.compile("(?:周|週|星期|礼拜|禮拜)[一二三四五六日天]|(?:[一二三四五六七八九十]+|\\d+)月")
# A sentence's capitalised first word that is one of these is no name.
_FUNCTION = (
    STOPWORDS
    | tbl.STOPWORDS_ES
    | tbl.STOPWORDS_VI
    | frozenset(
        tbl.PAST_ES | tbl.PAST_EN | set(tbl.MODAL_EN) | set(tbl.MODAL_ES) | set(tbl.QUANT_EN) | set(tbl.QUANT_ES)
    )
    | frozenset("sigo sigue sigues seguimos siguen estoy estás está estamos están voy vas va vamos van ya rara".split())
    | frozenset(w for k in (*tbl.MODAL_VI, *tbl.QUANT_VI, *tbl.PAST_VI) for w in k.split())
)
# Han pronouns: the person guard compares them; they are no content word
_HAN_PRONOUNS = frozenset("我你他她们們咱")


@dataclass(frozen=True)
class Restatement:
    """The verdict with the signals that decided it (for the benchmark and the logs)."""

    duplicate: bool
    reason: str
    lexical: float = 0.0
    cosine: float | None = None


# ------------------------------------------------------------------------------------ normalising
def _has_kana(s: str) -> bool:
    return _KANA.search(s) is not None


@functools.lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """NFKC, case-folded, contractions spelled out, punctuation and the words that add nothing to a
    fact dropped (per language), numbers before a classifier written in digits."""
    s = expand(unicodedata.normalize("NFKC", text or "").casefold())
    s = _CANNOT.sub("can not", _NEGATION.sub(r"\1 not", s))
    s = " ".join(_VARIANTS.get(w, w) for w in _depunct(s).split())
    s = _LEAD.sub("", s)
    s = _FILLER_LATIN.sub(" ", s)
    s = tbl.ES_PROGRESSIVE.sub("", s)
    s = tbl.ES_INTENSITY.sub(r"\1", s)
    s = tbl.VI_NUMBER.sub(lambda m: tbl.VI_NUMBERS[m.group(1)] + " ", s)
    s = tbl.TH_NUMBER.sub(lambda m: " " + tbl.TH_NUMBERS[m.group(1)] + " ", s)
    s = _LEAD_ZH.sub("", s)
    if _HAN_CHAR.search(s):
        for f in tbl.FILLERS_HAN:
            s = s.replace(f, " ")
    if _has_kana(s):
        s = tbl.JA_LIKE.sub("好き", s)
        for f in tbl.FILLERS_JA:
            s = s.replace(f, " ")
    if _THAI_CHAR.search(s):
        for f in tbl.FILLERS_TH:
            s = s.replace(f, " ")
    if unaccented(s) == s and not tbl.VI_BARE_HINTS.isdisjoint(s.split()):  # Vietnamese without accents
        s = tbl.VI_BARE_AUX.sub(r"\1", tbl.VI_BARE_FILLERS.sub(" ", s))
    s = _SPACES.sub(" ", s).strip()
    s = tbl.TH_END.sub("", s).strip()
    if not _LATIN.search(s):  # CJK or Thai only: spaces carry nothing
        s = s.replace(" ", "")
    if _has_kana(s):
        s = tbl.JA_END.sub("", s)
    return s


def _depunct(s: str) -> str:
    """Punctuation (and ``_``) as spaces; letters, digits and combining marks (Thai vowels and tones)
    kept."""
    return "".join(c if c.isalnum() or c.isspace() or unicodedata.category(c)[0] == "M" else " " for c in s)


def _spanish(norm: str) -> bool:
    """Spanish-looking text (its words get the Spanish stems): a Spanish letter, or more Spanish
    function words than English ones ("soy milk" is English)."""
    words = norm.split()
    es = sum(w in _ES_CUES or w.endswith(("iendo", "ando")) for w in words)
    return _ES_LETTERS.search(norm) is not None or es > sum(w in _EN_CUES for w in words)


def _es_stem(w: str) -> str:
    for suf in _ES_SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


# Porter stemming is most of the cost of reading a statement, and words repeat across rows.
_en_stem = functools.lru_cache(maxsize=16384)(stem)


def _stem(w: str, spanish: bool) -> str:
    if spanish:
        return _es_stem(w)
    return _en_stem(w) if not _VI_LETTERS.search(w) else w


# ------------------------------------------------------------------------------------------ guards
def _zh_number(run: str) -> str:
    return str(han_number(run))


def _numbers(norm: str) -> frozenset[str]:
    out = {m.replace(",", "") for m in re.findall(r"\d+(?:[.,]\d+)?", norm)}
    words = norm.split()
    out |= {tbl.EN_NUMBERS[w] for w in words if w in tbl.EN_NUMBERS}
    out |= {tbl.ES_NUMBERS[w] for w in words if w in tbl.ES_NUMBERS}
    out |= {_zh_number(r) for r in _ZH_NUM_RUN.findall(norm) if r not in ("一",)}  # 一 alone: "a", "one"
    return frozenset(out)


def _names(raw: str) -> frozenset[str]:
    """Capitalised words that are not a sentence's function word nor a pronoun (names)."""
    out = set()
    for sentence in re.split(r"[.!?;:。！？]\s*", unicodedata.normalize("NFKC", raw or "")):
        for i, w in enumerate(re.findall(r"[^\W\d_][\w'’-]*", sentence)):
            base = w.split("'")[0].split("’")[0]
            low = base.casefold()
            if not base[:1].isupper() or low in ("i",) or low in tbl.PEOPLE_LATIN or low in _TIME_EN:
                continue  # weekdays and months are time words, compared there
            if i == 0 and (low in _FUNCTION or _LEAD.match(low + " ") or _FILLER_LATIN.fullmatch(low)):
                continue
            out.add(low)
    return frozenset(out)


def _found(s: str, table: dict[str, str] | Iterable[str], false: Iterable[str] = ()) -> frozenset[str]:
    """The markers of ``table`` found in ``s`` as substrings (longest first, each span once), after
    the longer words that contain one but mean something else (``false``) are blanked."""
    for f in false:
        s = s.replace(f, " ")
    keys = table if isinstance(table, dict) else {k: k for k in table}
    out = set()
    for k in sorted(keys, key=len, reverse=True):
        if k in s:
            out.add(keys[k])
            s = s.replace(k, " ")
    return frozenset(out)


def _phrases(norm: str, table: dict[str, str] | Iterable[str]) -> frozenset[str]:
    """Word-bounded phrase markers of a Latin-script text (Vietnamese, Spanish), longest first."""
    keys = table if isinstance(table, dict) else {k: k for k in table}
    s, out = f" {norm} ", set()
    for k in sorted(keys, key=len, reverse=True):
        if f" {k} " in s:
            out.add(keys[k])
            s = s.replace(f" {k} ", "  ")
    return frozenset(out)


def _negated(norm: str) -> bool:
    if any(w in tbl.NEG_LATIN for w in norm.split()):
        return True
    s = norm
    for f in tbl.NEG_FALSE:
        s = s.replace(f, "")
    return any(n in s for n in tbl.NEG_SUBSTR) or (_has_kana(s) and tbl.NEG_JA.search(s) is not None)


# Spanish marker words that are also English words: read only in a Spanish-looking text.
_ES_ONLY_IF_SPANISH = frozenset("era solo".split())


def _es_word(w: str, spanish: bool) -> bool:
    return spanish or w not in _ES_ONLY_IF_SPANISH


def _past(norm: str, spanish: bool) -> bool:
    """Past tense. The English and Spanish word lists are read in every text (they hardly collide:
    a short Spanish statement - "Como carne" - need not look Spanish); the Spanish endings only in a
    Spanish-looking one."""
    words = norm.split()
    if any(
        w in tbl.PAST_EN
        or (w.endswith("ed") and len(w) > 3 and w.isascii() and w not in tbl.ED_NOT_PAST)
        or (w in tbl.PAST_ES and _es_word(w, spanish))
        for w in words
    ):
        return True
    if spanish and any(tbl.ES_PAST_END.search(w) or tbl.ES_IMPERFECT.search(w) for w in words):
        return True
    if _phrases(norm, tbl.PAST_VI) or _found(norm, tbl.PAST_HAN, tbl.PAST_HAN_FALSE) or _found(norm, tbl.PAST_TH):
        return True
    return _has_kana(norm) and (bool(_found(norm, tbl.PAST_JA_WORDS)) or tbl.PAST_JA_END.search(norm) is not None)


def _modality(norm: str, spanish: bool) -> frozenset[str]:
    words = norm.split()
    out = {tbl.MODAL_EN[w] for w in words if w in tbl.MODAL_EN}
    out |= {tbl.MODAL_ES[w] for w in words if w in tbl.MODAL_ES}
    if tbl.EN_HAVE_TO.search(norm) or tbl.ES_HAVE_TO.search(norm):
        out.add("must")
    if tbl.ES_GOING_TO.search(norm) or any(tbl.ES_FUTURE_END.fullmatch(w) for w in words):
        out.add("will")
    if spanish and any(re.fullmatch(r"\w{2,}(?:ría|rías|ríamos|rían)", w) for w in words):
        out.add("would")
    out |= _phrases(norm, tbl.MODAL_VI)
    if _has_kana(norm):
        out |= _found(norm, tbl.MODAL_JA, tbl.MODAL_JA_FALSE)
    else:
        out |= {f"zh:{m}" for m in _found(norm, tbl.MODAL_HAN, tbl.MODAL_HAN_FALSE)}
    out |= _found(norm, tbl.MODAL_TH, tbl.MODAL_TH_FALSE)
    return frozenset(out)


def _quantity(norm: str, spanish: bool) -> frozenset[str]:
    words = norm.split()
    out = {tbl.QUANT_EN[w] for w in words if w in tbl.QUANT_EN}
    out |= {tbl.QUANT_ES[w] for w in words if w in tbl.QUANT_ES and _es_word(w, spanish)}
    if tbl.ES_RARELY.search(norm):
        out.add("rarely")
    out |= _phrases(norm, tbl.QUANT_VI)
    out |= _found(tbl.QUANT_HAN_FALSE.sub(" ", norm), tbl.QUANT_HAN)
    if _has_kana(norm):
        out |= _found(norm, tbl.QUANT_JA)
    out |= _found(norm, tbl.QUANT_TH)
    return frozenset(out)


def _times(norm: str) -> frozenset[str]:
    out = {w for w in norm.split() if w in _TIME_EN}
    out |= {w for w in _TIME_ZH if w in norm}
    # a month in Han numerals or digits is the same month ("五月" / "5月")
    out |= {
        _zh_number(m[:-1]) + "月" if m.endswith("月") and not m[0].isdigit() else m for m in _TIME_ZH_RE.findall(norm)
    }
    return frozenset(out)


def _people(norm: str) -> frozenset[str]:
    """Who the statement is about; a statement naming nobody is the speaker's ("Vivo en Madrid",
    "東京に住んでいます")."""
    s = f" {norm} "
    out = set()
    for k, v in tbl.PEOPLE_VI_PHRASES.items():
        if f" {k} " in s:
            out.add(v)
            s = s.replace(f" {k} ", "  ")
    words = s.split()
    out |= {tbl.PEOPLE_LATIN[w] for w in words if w in tbl.PEOPLE_LATIN}
    out |= {stem(w) for w in words if w in tbl.KIN_LATIN}
    if _has_kana(s):
        out |= _found(s, tbl.KIN_JA, tbl.KIN_JA_FALSE)
        out |= _found(s, dict(tbl.PEOPLE_JA))
    else:
        for k in sorted(tbl.KIN_HAN, key=len, reverse=True):
            if k in s:
                out.add(k)
                s = s.replace(k, " ")
        for k, v in tbl.PEOPLE_HAN:
            if k in s:
                out.add(v)
                s = s.replace(k, " ")
    th = s
    for f in tbl.PEOPLE_TH_FALSE:
        th = th.replace(f, " ")
    out |= _found(th, tbl.KIN_TH)
    out |= _found(th, dict(tbl.PEOPLE_TH))
    return frozenset(out) or frozenset({"self"})


def _with_self(norm: str, names: frozenset[str]) -> bool:
    """Whether the speaker is joined with another person ("my wife and I love sushi", "Tom and I
    run", "tôi và vợ"): in English and Spanish a word of the speaker's beside "and" / "y" whose other
    side is a person (a kin word, another pronoun, a word of a name in ``names``); in Vietnamese the
    speaker's word beside "và" / "với" / "cùng"; in CJK and Thai by their phrases."""
    if any(p in norm for p in tbl.SELF_JOIN_PHRASES):
        return True
    words = norm.split()
    for i in range(1, len(words) - 1):
        w, left, right = words[i], words[i - 1], words[i + 1]
        if w in tbl.JOIN_VI and (left in tbl.SELF_JOIN_LATIN or right in tbl.SELF_JOIN_LATIN):
            return True
        if w not in tbl.JOIN_LATIN:
            continue
        if right in tbl.SELF_JOIN_LATIN and _someone(left, names):
            return True
        if left in tbl.SELF_JOIN_LATIN and (_someone(right, names) or right in tbl.POSSESSIVE_LATIN):
            return True
    return False


def _someone(word: str, names: frozenset[str]) -> bool:
    """A word naming someone other than the speaker: a kin word, another pronoun, a word of a name."""
    return (
        word in tbl.KIN_LATIN
        or stem(word) in tbl.KIN_LATIN
        or tbl.PEOPLE_LATIN.get(word, "self") != "self"
        or word in names
    )


@dataclass(frozen=True)
class _Reading:
    """What the rule reads in one statement (computed once per text and language: cached)."""

    norm: str
    numbers: frozenset[str]
    names: frozenset[str]
    words: frozenset[str]  # every word, as is and stemmed: where another text's names are looked for
    negated: bool
    past: bool
    modality: frozenset[str]
    quantity: frozenset[str]
    times: frozenset[str]
    people: frozenset[str]
    content: frozenset[str]
    units: tuple[str, ...]  # the content units in text order
    compares: bool  # a comparison or preference: the order of its units carries the fact
    es_forms: frozenset[tuple[str, str]] = frozenset()  # Spanish words in -o / -e: (stem, ending)


# The accented Vietnamese guards with their marks taken off (the bare negations and people are listed
# in ``restate_words``): past, modality and quantity words.
_PAST_VI_BARE = tuple(unaccented(w) for w in tbl.PAST_VI)
_MODAL_VI_BARE = {unaccented(k): v for k, v in tbl.MODAL_VI.items()}
_QUANT_VI_BARE = {unaccented(k): v for k, v in tbl.QUANT_VI.items()}


def _vi_bare(norm: str) -> bool:
    """A Vietnamese statement typed without accents ("toi khong an thit"): no accented letter, and
    one of its commonest words."""
    return unaccented(norm) == norm and not tbl.VI_BARE_HINTS.isdisjoint(norm.split())


@functools.lru_cache(maxsize=8192)
def _read(text: str, spanish: bool, vi_bare: bool = False) -> _Reading:
    n = normalise(text)
    negated, past = _negated(n), _past(n, spanish)
    modality, quantity, people = _modality(n, spanish), _quantity(n, spanish), _people(n)
    if vi_bare:  # the same guards in Vietnamese typed without accents: only more reasons not to fold
        negated = negated or not tbl.NEG_VI_BARE.isdisjoint(n.split())
        past = past or bool(_phrases(n, _PAST_VI_BARE))
        modality = modality | _phrases(n, _MODAL_VI_BARE)
        quantity = quantity | _phrases(n, _QUANT_VI_BARE)
        people = (people - {"self"}) | _phrases(n, tbl.PEOPLE_VI_BARE) or frozenset({"self"})
    kept = set(n.split())  # a capitalised filler ("Bây giờ", "Estoy viviendo") was normalised away: no name
    names = frozenset((w, _stem(w, spanish)) for name in _names(text) for w in normalise(name).split() if w in kept)
    if _with_self(n, frozenset(w for w, _ in names)):
        people = people | {"self", "with self"}  # "my wife and I": about the speaker too
    return _Reading(
        norm=n,
        numbers=_numbers(n),
        names=names,  # type: ignore[arg-type]
        words=frozenset(n.split()) | {_stem(w, spanish) for w in n.split()},
        negated=negated,
        past=past,
        modality=modality,
        quantity=quantity,
        times=_times(n),
        people=people,
        content=_content_of(text, spanish),
        units=_units(n, spanish),
        compares=_compares(n),
        es_forms=_es_forms(n) if spanish else frozenset(),
    )


@functools.lru_cache(maxsize=8192)
def _content_of(text: str, spanish: bool) -> frozenset[str]:
    return _content(normalise(text), spanish)


def _pair(a: str, b: str) -> tuple[_Reading, _Reading]:
    na, nb = normalise(a), normalise(b)
    sp = _spanish(na) or _spanish(nb)
    vb = _vi_bare(na) or _vi_bare(nb)
    return _read(a, sp, vb), _read(b, sp, vb)


def _name_gap(a: _Reading, b: _Reading) -> bool:
    """Whether a name of ``a`` is missing from ``b`` (compared as stems too, so a sentence's
    capitalised first verb - "Vivo" - matches "viviendo")."""
    return any(w not in b.words and st not in b.words for w, st in a.names)  # type: ignore[misc]


def _compares(norm: str) -> bool:
    """A comparison or preference ("tea over coffee", 比, より, hơn, กว่า, "más que"): the order of
    its content words carries the fact."""
    return bool(_phrases(norm, tbl.COMPARE_LATIN) or _found(norm, tbl.COMPARE_SUBSTR))


def _order_differs(a: _Reading, b: _Reading) -> bool:
    """In a comparison, the shared content units must come in the same order ("I prefer tea over
    coffee" is not "I prefer coffee over tea")."""
    if not (a.compares or b.compares):
        return False
    return [u for u in a.units if u in b.content] != [u for u in b.units if u in a.content]


def _es_forms(norm: str) -> frozenset[tuple[str, str]]:
    """The Spanish words ending in -o or -e, as (stem, ending): "trabajo" (I work) and "trabaje"
    (trabajé typed without its accent: I worked; or a subjunctive) share a stem, as "vivo" (I) and
    "vive" (she) do, and the stemmer folds them together; the ending tells them apart."""
    return frozenset(
        (_es_stem(w), w[-1])
        for w in norm.split()
        if len(w) >= 4 and w[-1] in "oe" and w.isalpha() and not w.endswith("ndo")  # a gerund: "viviendo"
    )


def _es_form_changed(a: _Reading, b: _Reading) -> bool:
    """A Spanish verb said in another person, tense or mood: the same stem ends in -o in one
    statement and only in -e in the other ("trabajo" / "trabaje", "vivo" / "vive")."""
    for stem_, _ in a.es_forms:
        ends_a = {e for s, e in a.es_forms if s == stem_}
        ends_b = {e for s, e in b.es_forms if s == stem_}
        if ends_b and not ends_a & ends_b:
            return True
    return False


def _guard(a: _Reading, b: _Reading) -> str:
    if a.numbers != b.numbers:
        return "numbers"
    if _name_gap(a, b) or _name_gap(b, a):
        return "names"
    for field in ("negated", "past", "modality", "quantity", "times", "people"):
        if getattr(a, field) != getattr(b, field):
            return _GUARD_NAMES[field]
    if _order_differs(a, b):
        return "order"
    if _es_form_changed(a, b):
        return "tense"
    return ""


_GUARD_NAMES = {
    "negated": "negation",
    "past": "tense",
    "modality": "modality",
    "quantity": "quantity",
    "times": "time",
    "people": "people",
}


def guards(a: str, b: str) -> str:
    """The first guard the two statements differ on ("" when none): numbers, names, negation,
    tense, modality, quantity, time, people, and the order of the things a comparison compares."""
    return _guard(*_pair(a, b))


def timeless(text: str) -> bool:
    """Whether ``text`` states something without a time of its own: no past tense, no time word.
    Said again later, such a statement is the same state ("I live in Lisbon" two days ago and now),
    where a dated event is not ("I went to Porto")."""
    n = normalise(text)
    return not _past(n, _spanish(n)) and not _times(n)


# ------------------------------------------------------------------------------------ content words
def _ja_word(run: str) -> str:
    """A hiragana run without the grammar around it ("りんごが" -> "りんご"; "んでいます" -> "")."""
    prev = None
    while run and run != prev:
        prev = run
        run = tbl.JA_GRAMMAR_TAIL.sub("", run)
        run = tbl.JA_GRAMMAR_HEAD.sub("", run)
    return run


def _units(norm: str, spanish: bool) -> tuple[str, ...]:
    """Content units in text order: stemmed words, Han characters, kana words, Thai character
    pairs; numbers and pronouns left out (their guards compared them)."""
    out: list[str] = []
    ja = _has_kana(norm)
    s = norm
    if ja:
        for k, _ in tbl.PEOPLE_JA:
            s = s.replace(k, " ")
    for f in tbl.PEOPLE_TH_FALSE:
        s = s.replace(f, f.replace("เขา", "เขาx"))  # keep "mountain" from reading as "he"
    for k, _ in tbl.PEOPLE_TH:
        s = s.replace(k, " ")
    for han, hira, kata, thai, digits, word in _RUNS.findall(s):
        if han:
            out += [
                c
                for c in han
                if c not in _HAN_PRONOUNS and c not in HAN_NUMERALS and (ja or c not in tbl.FILLER_HAN_CHARS)
            ]
        elif hira:
            if w := _ja_word(hira):
                out.append("h:" + w)
        elif kata:  # pairs, so a compound ("ピーナッツアレルギー") holds its parts
            out += ["k:" + kata[i : i + 2] for i in range(max(1, len(kata) - 1))]
        elif thai:
            out += ["t:" + thai[i : i + 2] for i in range(max(1, len(thai) - 1))]
        elif word and not digits:
            if (
                (word in STOPWORDS and word not in _KEPT)
                or word in tbl.EN_NUMBERS
                or word in tbl.PEOPLE_LATIN
                or (spanish and (word in tbl.STOPWORDS_ES or word in tbl.ES_NUMBERS))
                or word in tbl.STOPWORDS_VI
            ):
                continue
            out.append(_stem(word, spanish))
    return tuple(dict.fromkeys(out))


def _content(norm: str, spanish: bool) -> frozenset[str]:
    return frozenset(_units(norm, spanish))


def _jaccard(ca: frozenset[str], cb: frozenset[str]) -> float:
    if not ca or not cb:
        return 1.0 if ca == cb else 0.0
    return len(ca & cb) / len(ca | cb)


def lexical_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the content units of the two statements."""
    ra, rb = _pair(a, b)
    return _jaccard(ra.content, rb.content)


def candidate(new: str, old: str, *, lexical_min: float = LEXICAL_MIN) -> bool:
    """The cheap test the write path runs on every stored row before embedding any: the content
    overlap reaches the floor and no guard differs (a row that fails can neither be restated nor
    refined)."""
    sp = _spanish(normalise(new)) or _spanish(normalise(old))
    if _jaccard(_content_of(new, sp), _content_of(old, sp)) < lexical_min:
        return False
    return not _guard(_read(new, sp), _read(old, sp))


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
    """Whether ``new`` restates ``old`` (adds nothing to it). ``cosine``: the embedding similarity of
    the two texts (None: no embedding, then only the same normalised text counts)."""
    rn, ro = _pair(new, old)
    if rn.norm == ro.norm:
        return Restatement(True, "same text", 1.0, cosine)
    differs = _guard(rn, ro)
    if differs:
        return Restatement(False, differs, cosine=cosine)
    ca, cb = rn.content, ro.content
    lex = _jaccard(ca, cb)
    if ca - cb:  # a new content word: an added item, a replaced value, a detail
        return Restatement(False, "added" if cb <= ca else "replaced", lex, cosine)
    if ca == cb:  # only words that add nothing differ (fillers, particles, inflection)
        return Restatement(True, "same content", lex, cosine)
    # the new statement says less than the stored one: the embedding is the evidence that what it
    # keeps is the same fact
    if cosine is None:
        return Restatement(False, "no embedding", lex)
    if lex < lexical_min:
        return Restatement(False, "lexical", lex, cosine)
    if cosine < cosine_min:
        return Restatement(False, "embedding", lex, cosine)
    return Restatement(True, "restated", lex, cosine)


def refines(new: str, old: str, *, lexical_min: float = LEXICAL_MIN) -> bool:
    """Whether ``new`` keeps everything ``old`` says and adds to it, every guard equal ("allergic to
    penicillin" -> "allergic to penicillin and latex"): stored, linked to ``old`` as a refinement."""
    rn, ro = _pair(new, old)
    if rn.norm == ro.norm or _guard(rn, ro):
        return False
    ca, cb = rn.content, ro.content
    # a direction word ("from" for "to") is no refinement but another fact
    return bool(cb) and cb < ca and not (ca - cb) & _KEPT and _jaccard(ca, cb) >= lexical_min
