"""Short memory references: the id the memory block shows, and how a short one is read back.

An episode id is ``ep_`` and 20 hex digits. The block is paid for on every turn, so it names a
memory by the shortest prefix of those digits (at least :data:`SHOWN_MIN` of them) that no other
row of the scope it was drawn from starts with, like a short commit hash. A tool or command may be
given that short form; it names a memory only when exactly one row of the caller's scope, in any
status, starts with it (:func:`matching`): a short form that has become ambiguous since it was shown
is refused, never guessed. Pure: no I/O.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterable, Sequence

__all__ = [
    "ACCEPTED_MIN",
    "SHOWN_MIN",
    "RefTable",
    "fold_repeats",
    "full_hex",
    "is_short_ref",
    "last_line",
    "matching",
    "repeat_marker",
    "short_refs",
]

PREFIX = "ep_"
FULL_HEX = 20
SHOWN_MIN = 5  # digits a shown reference has at least (a 1,000-row scope rarely needs a sixth)
ACCEPTED_MIN = 4  # fewer digits than this name no memory (too easily typed by accident)

_FULL = re.compile(rf"ep_([0-9a-f]{{{FULL_HEX}}})")
_SHORT = re.compile(rf"(?:ep_)?([0-9a-f]{{{ACCEPTED_MIN},{FULL_HEX - 1}}})")


def full_hex(episode_id: str) -> str | None:
    """The 20 digits of a generated episode id, None for any other id (imported or foreign ids are
    always shown whole)."""
    m = _FULL.fullmatch(episode_id)
    return m.group(1) if m else None


def is_short_ref(text: str) -> bool:
    """Whether ``text`` has the form of a short reference (``4f2a1`` or ``ep_4f2a1``), not a whole id."""
    return bool(_SHORT.fullmatch(text))


class RefTable:
    """The generated ids of one scope, sorted, to give each its short reference (build once per
    version of the scope's rows; each lookup is a binary search)."""

    def __init__(self, scope_ids: Iterable[str]) -> None:
        # every ``ep_`` id counts, well-formed or not: an extra id can only lengthen a reference
        self.digits = sorted({i[3:] for i in scope_ids if i.startswith(PREFIX)})
        self.nbytes = sys.getsizeof(self.digits) + sum(map(sys.getsizeof, self.digits))

    def short(self, episode_id: str) -> str:
        """``episode_id``'s short reference, unique in this table; an id that is not a generated one
        is its own reference."""
        h = full_hex(episode_id)
        if h is None:
            return episode_id
        d = self.digits
        j = bisect.bisect_left(d, h)
        held = j < len(d) and d[j] == h
        # in sorted order the longest prefix ``h`` shares with any other id is shared with a neighbour
        shared = max((_common(h, d[k]) for k in ((j - 1, j + 1) if held else (j - 1, j)) if 0 <= k < len(d)), default=0)
        return h[: max(SHOWN_MIN, shared + 1)] if shared + 1 < FULL_HEX else episode_id


def short_refs(shown: Sequence[str], scope_ids: Iterable[str]) -> dict[str, str]:
    """For each id in ``shown``: its short reference, unique among ``scope_ids``."""
    table = RefTable(scope_ids)
    return {eid: table.short(eid) for eid in shown}


def matching(ref: str, scope_ids: Iterable[str]) -> list[str]:
    """The ids among ``scope_ids`` the short reference ``ref`` names (one: resolved; none or several:
    it names no memory)."""
    m = _SHORT.fullmatch(ref)
    if not m:
        return []
    # any id with these digits after ``ep_`` counts (the table's rule), so a match is never hidden
    return sorted({i for i in scope_ids if i.startswith(PREFIX + m.group(1))})


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


FOLD_MIN_CHARS = 24  # shorter lines are cheaper to repeat than to name


def repeat_marker(ref: str) -> str:
    return "{=" + ref + "}"


def last_line(text: str) -> str:
    return text.rsplit("\n", 1)[-1]


def fold_repeats(texts: Sequence[str], refs: Sequence[str]) -> list[str]:
    """The texts of the rows of one block, where a row that repeats the last line of another row
    (its own words, at least :data:`FOLD_MIN_CHARS` long) names that row instead: ``{=4f2a1}``
    stands for the last line of row ``4f2a1``. A memory stored with the turn it answered repeats
    that turn, whose own memory is often recalled with it: this keeps one copy. A row's own last
    line is never folded into a row that ends the same way; longer lines are folded first."""
    ends = [last_line(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda j: -len(ends[j]))
    out = []
    for i, text in enumerate(texts):
        folded = text
        for j in order:
            end = ends[j]
            if j != i and len(end) >= FOLD_MIN_CHARS and end != ends[i] and end in folded:
                folded = folded.replace(end, repeat_marker(refs[j]))
        out.append(folded)
    return out
