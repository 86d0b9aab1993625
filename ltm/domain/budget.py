"""The token budget of the injected memory block.

Token counting is an estimate, on purpose conservative, because exact tokenizers (tiktoken and
friends) download their vocabularies at first use and fail offline:

- every CJK character (Han, kana, Hangul) counts as one token (BPE vocabularies of current chat
  models spend about 0.6-1.2 tokens per Chinese character);
- every other run of text counts as ``ceil(chars / 3)`` (English averages about 4 characters per
  token, so this overestimates by about a third).

:func:`fit_budget` keeps the most valuable items that fit, verbatim (never cut mid-text): it drops
near-duplicates of a more valuable item first, then drops the lowest-value items until the rest
fit. Pure: no I/O.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping

from .lexical import count_cjk, tokenize

__all__ = ["DEFAULT_OVERHEAD_PER_ITEM", "estimate_tokens", "evidence_budget", "fit_budget", "near_duplicate"]

# Rendering one item in the block costs a bullet, a date and delimiters: about this many tokens.
DEFAULT_OVERHEAD_PER_ITEM = 12
DUPLICATE_JACCARD = 0.8


def estimate_tokens(text: str) -> int:
    """A conservative token count: CJK characters 1 each, other characters ceil(n / 3)."""
    if not text:
        return 0
    cjk = count_cjk(text)
    return cjk + math.ceil((len(text) - cjk) / 3)


def _signature(text: str) -> tuple[str, frozenset[str]]:
    norm = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return norm, frozenset(tokenize(norm, stopwords=False, stemming=False))


def near_duplicate(
    a: tuple[str, frozenset[str]], b: tuple[str, frozenset[str]], threshold: float = DUPLICATE_JACCARD
) -> bool:
    """Same normalised text, or token sets with Jaccard similarity >= ``threshold``."""
    if a[0] == b[0]:
        return True
    ta, tb = a[1], b[1]
    if not ta or not tb:
        return False
    inter = len(ta & tb)
    return inter / len(ta | tb) >= threshold


def fit_budget(
    items: list[tuple[str, str, float]],
    budget_tokens: int,
    *,
    overhead_per_item: int = DEFAULT_OVERHEAD_PER_ITEM,
    duplicate_threshold: float = DUPLICATE_JACCARD,
    speakers: Mapping[str, str] | None = None,
) -> list[str]:
    """Ids of the items to inject, best first: ``items`` are ``(id, text, value)``.

    1. Near-duplicates are suppressed: an item is dropped when a more valuable kept item has the
       same normalised text or a token-set Jaccard similarity >= ``duplicate_threshold`` - and,
       when ``speakers`` (id -> speaker) is given, the same speaker: two people saying the same
       thing are two facts, and folding them would lose who said what.
    2. The lowest-value items are dropped until the total (``estimate_tokens(text) +
       overhead_per_item`` each) fits in ``budget_tokens``; so the kept items are exactly the most
       valuable ones, and an item is never kept while a more valuable one was dropped for room
       (an item too large for the whole budget on its own is skipped: it could never fit).
    Texts are never cut: what is injected is verbatim. Equal values keep the input order.
    """
    if budget_tokens <= 0 or not items:
        return []
    order = sorted(range(len(items)), key=lambda i: (-float(items[i][2]), i))
    kept: list[int] = []
    sigs: list[tuple[str, tuple[str, frozenset[str]]]] = []
    who = speakers or {}
    for i in order:
        sig = _signature(items[i][1])
        speaker = who.get(items[i][0], "")
        if any(sp == speaker and near_duplicate(sig, s, duplicate_threshold) for sp, s in sigs):
            continue
        kept.append(i)
        sigs.append((speaker, sig))
    out: list[str] = []
    used = 0
    for i in kept:
        cost = estimate_tokens(items[i][1]) + max(0, overhead_per_item)
        if cost > budget_tokens:
            continue  # could never be injected verbatim, whatever else is dropped
        if used + cost > budget_tokens:
            break  # everything after is less valuable: dropped first
        used += cost
        out.append(items[i][0])
    return out


def evidence_budget(total_tokens: int, profile_tokens: int, *, min_evidence_share: float = 0.6) -> int:
    """Tokens left for episodes (verbatim evidence) once the profile part is rendered.

    The profile part may take at most ``1 - min_evidence_share`` of the block: the caller trims its
    profile rendering to ``total_tokens - evidence_budget(...)`` when it is longer.
    """
    total = max(0, int(total_tokens))
    share = min(1.0, max(0.0, float(min_evidence_share)))
    profile_cap = int(total * (1.0 - share))
    return total - min(max(0, int(profile_tokens)), profile_cap)
