"""Value tombstones: the normalised value a person rejected or forgot for good, and its key. Pure.

A tombstone is keyed on the *value*, not on a record id, so the same statement cannot come back
under a new id. Normalisation folds what does not change the meaning of a short statement:

- Unicode compatibility forms (NFKC: full-width ``Ｐｙｔｈｏｎ`` and half-width ``Python`` agree,
  so do ``１２３`` and ``123``, ideographic and ASCII spaces);
- case (``casefold``: ``STRASSE`` and ``straße`` agree);
- every punctuation mark and every space, wherever it is (``"I like tea!"``, ``i like, tea``,
  ``I  like tea。`` and ``我 喜欢 茶`` vs ``我喜欢茶`` agree), and invisible format characters.

Letters, digits, marks and symbols stay (``C++`` and ``C`` differ; ``$5`` and ``5`` differ).

Whose value: a first-person statement ("I am vegetarian", "我吃素") is a fact about its speaker, so
its key includes the speaker's id; another speaker saying the same words states a different fact.
A statement without a first-person word is keyed for the whole scope.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

TOMBSTONE_ID_PREFIX = "tb_"
_FIRST_PERSON_EN = re.compile(r"(?<![a-z])(i|i'm|i’m|im|i've|i'll|i'd|me|my|mine|myself)(?![a-z])")
_FIRST_PERSON_ZH = re.compile("我(?!们)")


def normalize_value(text: str) -> str:
    """The comparison form of a statement (see the module docstring). ``""`` for no content."""
    folded = unicodedata.normalize("NFKC", str(text or "")).casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LNMS")


def is_first_person(text: str) -> bool:
    """Whether the statement speaks about its speaker ("I", "my", "我" but not "我们")."""
    folded = unicodedata.normalize("NFKC", str(text or "")).casefold()
    return bool(_FIRST_PERSON_EN.search(folded) or _FIRST_PERSON_ZH.search(folded))


def subject_of(text: str, sender_id: str) -> str:
    """Whose value this is: the speaker for a first-person statement, else the whole scope (``""``)."""
    return str(sender_id or "") if is_first_person(text) else ""


def value_hash(subject: str, text: str) -> str:
    """SHA-256 of (subject, normalised value), hex. Empty when the value normalises to nothing."""
    norm = normalize_value(text)
    if not norm:
        return ""
    return hashlib.sha256(f"{subject}\x1f{norm}".encode()).hexdigest()


def tombstone_id(subject: str, text: str) -> str:
    """The short, stable id of a value's tombstone in one scope (``tb_`` + 16 hex digits)."""
    h = value_hash(subject, text)
    return TOMBSTONE_ID_PREFIX + h[:16] if h else ""


def value_key(text: str, sender_id: str) -> str:
    """The tombstone id of ``text`` said by ``sender_id`` (the one function every path uses)."""
    return tombstone_id(subject_of(text, sender_id), text)
