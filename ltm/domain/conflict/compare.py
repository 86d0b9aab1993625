"""Reading a whole statement into claims (clause by clause, English or Chinese rules) and comparing
two statements' claims into a verdict."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache

from . import english
from .events import event_claims
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
from .reader import Reader
from .readers import READERS

# --------------------------------------------------------------------------------------------
# reading a statement
# --------------------------------------------------------------------------------------------

# English first, then the other readers in their order: the order the fillers, clause ends and
# "no longer so" markers are tried in.
_ORDERED: tuple[Reader, ...] = (english.READER, *(r for r in READERS if r is not english.READER))
_LEADS = tuple(re.compile(r.lead) for r in _ORDERED if r.lead)
_CLAUSE_SPLIT = re.compile("|".join(r.split for r in _ORDERED if r.split))
_ENDED = tuple(re.compile(r.ended) for r in _ORDERED if r.ended)
_NEGATIONS = tuple(re.compile(r.negations) for r in _ORDERED if r.negations)
_TOKENIZERS = tuple(r.tokens for r in _ORDERED if r.tokens is not None)


def _strip_lead(text: str) -> str:
    for lead in _LEADS:
        text = lead.sub("", text)
    return text


def _ended(clause: str) -> tuple[str, bool]:
    """The clause without its "no longer so" marker, and whether it had one."""
    bare = clause
    for marker in _ENDED:
        bare = marker.sub("", bare)
    return bare, bare != clause


def _read(clause: str, subject: str) -> list[Claim]:
    """The first reader that detects the clause and reads a claim in it decides."""
    for reader in READERS:
        if reader.detects(clause) and (claims := reader.claims(clause, subject)):
            return claims
    return []


@lru_cache(maxsize=4096)
def parse_claims(text: str) -> tuple[Claim, ...]:
    """Every claim the patterns read in ``text`` (possibly none)."""
    s = _strip_lead(prep(text))
    out: list[Claim] = []
    subject = ""
    for clause in _CLAUSE_SPLIT.split(s):
        clause = clause.strip(" ,.:!?")
        clause = _strip_lead(clause)
        if not clause:
            continue
        clause, ended = _ended(clause)
        claims = _read(clause, subject) + event_claims(clause)
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
    neg += sum(len(n.findall(s)) for n in _NEGATIONS)
    # a negation is counted, not compared as a word ("khong" as "not")
    toks = {w for w in words if w not in _EN_STOP and w not in _NEG_WORDS and len(w) > 1}
    toks = {w for w in toks if not any(n.fullmatch(w) for n in _NEGATIONS)}
    toks |= {c for c in s if is_han(c) and c not in _ZH_STOP_CHARS and c not in _ZH_NEG_CHARS}
    for extra in _TOKENIZERS:
        toks |= extra(s)
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
    if attr == "diet" and n.positive != o.positive and {n.value, o.value} == {"vegan", "vegetarian"}:
        vegan = n if n.value == "vegan" else o
        if vegan.positive:  # going vegan denies eating meat (not being vegetarian); not the other way round
            return Verdict(CONTRADICTING, attr, n.value, o.value, "opposite polarity")
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
