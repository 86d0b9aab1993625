"""The lexical leg: a tokenizer for English, Chinese and mixed text, and an incremental BM25 index.

Tokenizer (:func:`tokenize`):
- NFKC (full-width -> half-width) and casefold first;
- runs of CJK characters (Han, kana, Hangul) become overlapping character bigrams (a one-character run
  stays a unigram): the classic segmenter-free CJK analyzer, robust on words no dictionary knows;
- runs of letters/digits (``_`` kept, so ids like ``ep_1a2b`` stay one token) are split on
  apostrophes (``caroline's`` -> ``caroline``), English stopwords are dropped, and the rest is
  Porter-stemmed (``painting``/``paints``/``painted`` -> ``paint``). Tokens of digits are kept as is.

:class:`BM25Index` is Okapi BM25 (Lucene's non-negative IDF) over those tokens. It is incremental
(``add``/``remove`` by id, an ``add`` of a known id replaces it) and bounded: past ``max_docs`` the
oldest added documents are evicted first. Pure: no I/O, nothing shared between instances.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["BM25Index", "STOPWORDS", "count_cjk", "is_cjk", "stem", "tokenize"]

# Han (incl. ext. A and compatibility), Hiragana, Katakana, Hangul syllables and jamo.
_CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x1100, 0x11FF),
    (0xAC00, 0xD7AF),
    (0x20000, 0x2FA1F),
)
_CJK_CLASS = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _CJK_RANGES)
# Apostrophes split words ("caroline's" -> "caroline" + "s", a stopword; "don't" -> "don" + "t").
_RUN_RE = re.compile(rf"([{_CJK_CLASS}]+)|([^\W{_CJK_CLASS}]+)")


_CJK_CHAR_RE = re.compile(f"[{_CJK_CLASS}]")


def is_cjk(ch: str) -> bool:
    """Whether the character ``ch`` is CJK (Han, kana or Hangul)."""
    return bool(ch) and _CJK_CHAR_RE.fullmatch(ch[0]) is not None


def count_cjk(text: str) -> int:
    """Number of CJK characters in ``text``."""
    return len(_CJK_CHAR_RE.findall(text)) if text else 0


# A compact English stopword list (function words, auxiliaries, pronouns, question words and
# chat filler). Names, numbers and content words are never here.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his
    how i if in into is isn it its itself just let me more most mustn my myself no nor not of off on
    once only or other ought our ours ourselves out over own same shan she should shouldn so some such
    than that the their theirs them themselves then there these they this those through to too under
    until up very was wasn we were weren what when where which while who whom why will with won would
    wouldn you your yours yourself yourselves s t d ll m re ve y also yeah yes oh ok okay hey hi hello
    wow really um uh hmm ah lol get got gonna wanna kind sort thing things like just much many
    """.split()
)


# ---------------------------------------------------------------------------------------------
# Porter (1980) stemmer, the original algorithm (M. F. Porter, "An algorithm for suffix stripping").
# ---------------------------------------------------------------------------------------------


def _is_cons(w: str, i: int) -> bool:
    c = w[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _is_cons(w, i - 1)
    return True


def _measure(stem_: str) -> int:
    """Number of VC sequences in ``stem_``."""
    m = 0
    prev_vowel = False
    for i in range(len(stem_)):
        cons = _is_cons(stem_, i)
        if cons and prev_vowel:
            m += 1
        prev_vowel = not cons
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _is_cons(stem_, i) for i in range(len(stem_)))


def _ends_double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _is_cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    if len(w) < 3:
        return False
    n = len(w)
    return _is_cons(w, n - 3) and not _is_cons(w, n - 2) and _is_cons(w, n - 1) and w[-1] not in "wxy"


def _replace(w: str, suffix: str, repl: str, min_m: int) -> str | None:
    """If ``w`` ends with ``suffix``: the replaced word when the stem's measure > min_m, else ``w``."""
    if not w.endswith(suffix):
        return None
    base = w[: len(w) - len(suffix)]
    return base + repl if _measure(base) > min_m else w


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
    "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def stem(word: str) -> str:
    """Porter-stem one lowercase ASCII word; anything else is returned unchanged."""
    w = word
    if len(w) <= 2 or not w.isascii() or not w.isalpha():
        return w
    # Step 1a
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # Step 1b
    step1b_extra = False
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w = w[:-2]
        step1b_extra = True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w = w[:-3]
        step1b_extra = True
    if step1b_extra:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _ends_double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    # Step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    # Step 2
    for suf, rep in _STEP2:
        r = _replace(w, suf, rep, 0)
        if r is not None:
            w = r
            break
    # Step 3
    for suf, rep in _STEP3:
        r = _replace(w, suf, rep, 0)
        if r is not None:
            w = r
            break
    # Step 4
    for suf in _STEP4:
        if w.endswith(suf):
            base = w[: len(w) - len(suf)]
            if _measure(base) > 1 and (suf != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    # Step 5a
    if w.endswith("e"):
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _cvc(base)):
            w = base
    # Step 5b
    if _measure(w) > 1 and _ends_double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w


_STEM_CACHE: dict[str, str] = {}
_STEM_CACHE_MAX = 50_000


def _stem_cached(word: str) -> str:
    s = _STEM_CACHE.get(word)
    if s is None:
        s = stem(word)
        if len(_STEM_CACHE) < _STEM_CACHE_MAX:
            _STEM_CACHE[word] = s
    return s


def tokenize(text: str, *, stopwords: bool = True, stemming: bool = True) -> list[str]:
    """Index/query tokens of ``text`` (English words stemmed, CJK as character bigrams)."""
    if not text:
        return []
    norm = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    stop = STOPWORDS if stopwords else frozenset()
    for cjk, word in _RUN_RE.findall(norm):
        if cjk:
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend([cjk[i : i + 2] for i in range(len(cjk) - 1)])
        elif word not in stop:
            out.append(_stem_cached(word) if stemming else word)
    return out


_EMPTY: Mapping[str, int] = MappingProxyType({})


class BM25Index:
    """Okapi BM25 over :func:`tokenize` tokens; incremental and bounded (oldest evicted first).

    ``k1`` and ``b`` are the usual Robertson/Sparck Jones parameters. Scores are non-negative;
    a document sharing no term with the query is not returned.
    """

    def __init__(self, *, max_docs: int = 20_000, k1: float = 1.2, b: float = 0.75) -> None:
        if max_docs < 1:
            raise ValueError("max_docs must be positive")
        self.max_docs = int(max_docs)
        self.k1 = float(k1)
        self.b = float(b)
        # id -> (its distinct terms, its length), oldest first; the frequencies live in the postings
        # only, and terms are interned: a held document costs its postings and one small tuple
        self._docs: dict[str, tuple[tuple[str, ...], int]] = {}
        self._postings: dict[str, dict[str, int]] = {}  # term -> {id: tf}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def term_count(self, doc_id: str) -> int:
        """Number of distinct terms of an indexed document (0 when it is not indexed)."""
        held = self._docs.get(str(doc_id))
        return len(held[0]) if held else 0

    def ids(self) -> list[str]:
        """Document ids, oldest first."""
        return list(self._docs)

    def distinct_terms(self, doc_id: str) -> int | None:
        """Number of distinct terms of an indexed document (``None`` when not indexed)."""
        held = self._docs.get(str(doc_id))
        return None if held is None else len(held[0])

    def doc_length(self, doc_id: str) -> int:
        """Number of index terms of an indexed document, repeats counted (0 when not indexed)."""
        held = self._docs.get(str(doc_id))
        return held[1] if held else 0

    def postings(self, term: str) -> Mapping[str, int]:
        """The documents holding ``term`` (an index term, e.g. from :func:`tokenize`) with its
        frequency in each: a read-only view, valid until the index changes."""
        post = self._postings.get(term)
        return MappingProxyType(post) if post is not None else _EMPTY

    def add(self, doc_id: str, text: str, *, tokens: Iterable[str] | None = None) -> list[str]:
        """Index ``text`` under ``doc_id`` (replacing a previous version). Returns the evicted ids."""
        doc_id = str(doc_id)
        if doc_id in self._docs:
            self.remove(doc_id)
        tf: dict[str, int] = {}
        n = 0
        for t in tokenize(text) if tokens is None else tokens:
            tf[t] = tf.get(t, 0) + 1
            n += 1
        tf = {sys.intern(t): c for t, c in tf.items()}
        self._docs[doc_id] = (tuple(tf), n)
        self._total_len += n
        for t, c in tf.items():
            self._postings.setdefault(t, {})[doc_id] = c
        evicted: list[str] = []
        while len(self._docs) > self.max_docs:
            oldest = next(iter(self._docs))
            self.remove(oldest)
            evicted.append(oldest)
        return evicted

    def remove(self, doc_id: str) -> bool:
        """Forget ``doc_id``; ``False`` when it was not indexed."""
        held = self._docs.pop(str(doc_id), None)
        if held is None:
            return False
        terms, n = held
        self._total_len -= n
        for t in terms:
            post = self._postings.get(t)
            if post is not None:
                post.pop(str(doc_id), None)
                if not post:
                    del self._postings[t]
        return True

    def state(self) -> tuple[dict[str, tuple[tuple[str, ...], int]], dict[str, dict[str, int]], int]:
        """The index's whole state as plain containers (for a serialized copy, e.g. ``marshal``):
        the documents oldest first with their distinct terms and length, the postings, the total
        length. Shared, not copied: serialize it before the index changes."""
        return self._docs, self._postings, self._total_len

    @classmethod
    def from_state(
        cls,
        state: tuple[dict[str, Any], dict[str, dict[str, int]], int],
        *,
        max_docs: int,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> BM25Index:
        """An index holding ``state`` (what :meth:`state` returned, e.g. through ``marshal``, which
        keeps the terms interned). Only the shape is checked: the state must come from :meth:`state`."""
        docs, postings, total = state
        if not isinstance(docs, dict) or not isinstance(postings, dict) or not isinstance(total, int):
            raise ValueError("not a BM25 state")
        if len(docs) > max_docs:
            raise ValueError("more documents than max_docs")
        idx = cls(max_docs=max_docs, k1=k1, b=b)
        idx._docs, idx._postings, idx._total_len = docs, postings, total
        return idx

    def clear(self) -> None:
        self._docs.clear()
        self._postings.clear()
        self._total_len = 0

    def idf(self, term: str) -> float:
        n = len(self._docs)
        df = len(self._postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5)) if df else 0.0

    def _query_terms(self, query: str) -> dict[str, int]:
        q: dict[str, int] = {}
        for t in tokenize(query):
            if t in self._postings:
                q[t] = q.get(t, 0) + 1
        return q

    def _accumulate(self, qterms: dict[str, int], restrict: set[str] | None) -> dict[str, float]:
        n = len(self._docs)
        if not n or not qterms:
            return {}
        avgdl = self._total_len / n if self._total_len else 1.0
        k1, b = self.k1, self.b
        scores: dict[str, float] = {}
        docs = self._docs
        for term, qtf in qterms.items():
            post = self._postings[term]
            idf = math.log(1.0 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for doc_id, tf in post.items():
                if restrict is not None and doc_id not in restrict:
                    continue
                norm = k1 * (1.0 - b + b * docs[doc_id][1] / avgdl)
                scores[doc_id] = scores.get(doc_id, 0.0) + qtf * idf * tf * (k1 + 1.0) / (tf + norm)
        return scores

    def search(self, query: str, top_k: int = 10) -> list[tuple[str, float]]:
        """The ``top_k`` best documents for ``query`` as ``(id, score)``, best first (ties: newest first)."""
        if top_k <= 0:
            return []
        scores = self._accumulate(self._query_terms(query), None)
        order = {d: i for i, d in enumerate(self._docs)} if len(scores) > top_k else None
        if order is None:
            ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        else:
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], -order[kv[0]]))
        return ranked[:top_k]

    def scores(self, query: str, ids: Iterable[str]) -> dict[str, float]:
        """BM25 of ``query`` for each given id that is indexed (0.0 when no term matches)."""
        wanted = {str(i) for i in ids if str(i) in self._docs}
        got = self._accumulate(self._query_terms(query), wanted)
        return {d: got.get(d, 0.0) for d in wanted}
