"""Reading a whole statement into claims (clause by clause, English or Chinese rules) and comparing
two statements' claims into a verdict."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache

from .chinese import claims_zh
from .english import claims_en
from .lexicon import (
    COMPATIBLE,
    CONTRADICTING,
    EXCLUSIVE_USE,
    FAMILY,
    KIND_SENSITIVE,
    SINGLE,
    SINGLE_PREFIXES,
    UNRELATED,
    Claim,
    Verdict,
    broad_topic,
    category_of,
    is_han,
    prep,
    same_value,
    topic_of,
)

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


# A state that held and no longer does. "be used to" (accustomed) is not one; a plain past tense
# ("I lived in Lisbon in 2019") says nothing of now and is left alone.
_ENDED_EN = re.compile(
    r"(?<!\bam )(?<!\bis )(?<!\bare )(?<!\bget )(?<!\bgot )(?<!\bbe )\b(?:used to|formerly|previously)\s+(?=\w)"
)
_ENDED_ZH = re.compile(r"(?:以前|之前|曾经|曾經|过去|過去)(?=[住在喜爱愛用做是吃喝养養有工抽吸])")


def _ended(clause: str) -> tuple[str, bool]:
    """The clause without its "no longer so" marker, and whether it had one."""
    bare = _ENDED_ZH.sub("", _ENDED_EN.sub("", clause))
    return bare, bare != clause


@lru_cache(maxsize=4096)
def parse_claims(text: str) -> tuple[Claim, ...]:
    """Every claim the patterns read in ``text`` (possibly none)."""
    s = prep(text)
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
        clause, ended = _ended(clause)
        han = any(is_han(c) for c in clause)
        claims = (claims_zh(clause, subject) or claims_en(clause, subject)) if han else claims_en(clause, subject)
        for c in claims:
            if c.value or c.attribute == "smoke":
                out.append(replace(c, ended=True) if ended else c)
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
    s = prep(text)
    words = re.findall(r"[a-z0-9+#]+", s)
    neg = sum(1 for w in words if w in _NEG_WORDS) + sum(1 for c in s if c in _ZH_NEG_CHARS)
    toks = {w for w in words if w not in _EN_STOP and w not in _NEG_WORDS and len(w) > 1}
    toks |= {c for c in s if is_han(c) and c not in _ZH_STOP_CHARS and c not in _ZH_NEG_CHARS}
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
    return attribute in SINGLE or attribute.startswith(SINGLE_PREFIXES)


def _compare(n: Claim, o: Claim, aliases: frozenset[str]) -> Verdict:
    if not _subjects_match(n.subject, o.subject, aliases):
        return Verdict(UNRELATED, reason="different subjects")
    if (n.ended or o.ended) and FAMILY.get(n.attribute, n.attribute) == FAMILY.get(o.attribute, o.attribute):
        if n.ended != o.ended and n.positive == o.positive and same_value(n.value, o.value):
            return Verdict(CONTRADICTING, n.attribute, n.value, o.value, "no longer so")
        # an ended state beside a current one of another value, or two ended ones: both held
        return Verdict(COMPATIBLE, n.attribute, n.value, o.value, "one of them has ended")
    if n.attribute != o.attribute:
        fam_n, fam_o = FAMILY.get(n.attribute, n.attribute), FAMILY.get(o.attribute, o.attribute)
        if fam_n == fam_o:
            return Verdict(COMPATIBLE, n.attribute, n.value, o.value, "related attributes")
        return Verdict(UNRELATED, reason="different attributes")
    attr = n.attribute
    if attr == "smoke" or same_value(n.value, o.value):
        if n.positive != o.positive:
            return Verdict(CONTRADICTING, attr, n.value, o.value, "opposite polarity")
        return Verdict(COMPATIBLE, attr, n.value, o.value, "same value")
    same_kind = topic_of(n.value) == topic_of(o.value)
    same_topic = attr not in KIND_SENSITIVE or broad_topic(n.value) == broad_topic(o.value)
    if not same_topic:
        return Verdict(UNRELATED, attr, n.value, o.value, "different kinds of thing")
    if n.positive and o.positive:
        if _single(attr):
            return Verdict(CONTRADICTING, attr, n.value, o.value, "one value at a time")
        if attr == "affinity" and n.strength == "prefer" and o.strength == "prefer" and same_kind:
            return Verdict(CONTRADICTING, attr, n.value, o.value, "two preferred choices of one kind")
        exclusive_use = category_of(n.value) in EXCLUSIVE_USE or "switch" in (n.strength, o.strength)
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
