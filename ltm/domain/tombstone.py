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

Whose audience (issue 35): a tombstone carries the audience of the memory it came from
(:func:`ltm.domain.audience.audience_of`). A shared one (``*``) keeps the key it always had; a private
one (a private chat's, in ``bot`` isolation) has the audience in its hash, so it is another key and
binds, lists and shows only where that audience reads (:func:`guard_keys`,
:func:`ltm.domain.audience.write_audiences`). A member's ``forget --never`` is keyed on the member as
subject whatever the words (``own``): it binds only that member's own statements; an admin's keys
the value by the rule above.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

TOMBSTONE_ID_PREFIX = "tb_"
SHARED = "*"  # ltm.domain.audience.SHARED (this module stays free of the scope module)
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


def value_hash(subject: str, text: str, audience: str = SHARED) -> str:
    """SHA-256 of (subject, normalised value[, private audience]), hex. Empty when the value
    normalises to nothing. A shared audience adds nothing: those keys are the ones stored before
    tombstones had an audience."""
    norm = normalize_value(text)
    if not norm:
        return ""
    tail = "" if audience in ("", SHARED) else f"\x1f{audience}"
    return hashlib.sha256(f"{subject}\x1f{norm}{tail}".encode()).hexdigest()


def tombstone_id(subject: str, text: str, audience: str = SHARED) -> str:
    """The short, stable id of a value's tombstone in one scope (``tb_`` + 16 hex digits)."""
    h = value_hash(subject, text, audience)
    return TOMBSTONE_ID_PREFIX + h[:16] if h else ""


def value_key(text: str, sender_id: str, audience: str = SHARED, *, own: bool = False) -> str:
    """The tombstone id of ``text`` said by ``sender_id`` for ``audience`` (the one function every
    path uses). ``own``: a member's own decision, keyed on the member whatever the words."""
    subject = str(sender_id or "") if own else subject_of(text, sender_id)
    return tombstone_id(subject, text, audience)


def guard_keys(text: str, sender_id: str, audiences: tuple[str, ...]) -> list[str]:
    """Every tombstone id that refuses ``text`` said by ``sender_id`` written for any of
    ``audiences``: the value's own key and the speaker's own-decision key, per audience."""
    out: list[str] = []
    for audience in audiences:
        for own in (False, True):
            k = value_key(text, sender_id, audience, own=own)
            if k and k not in out:
                out.append(k)
    return out
