"""Vietnamese typed without accents ("toi song o Ha Noi"): the statements whose value can change.

The Vietnamese reader reads marked words ("sống ở", "làm", "tên là"); with the marks left off,
most of its words are other words ("o" is ở, but "song" is also a song, "la" is là and a leaf), so
this reader reads only the few shapes whose words a sentence of another kind does not take: where
one lives, comes from and works, one's job, a name, a favourite. It only runs on a clause with no
accented letter and with one of the commonest words of unmarked Vietnamese, after the marked reader.
Values are compared as typed (case-folded): "Sai Gon" and "Ha Noi" differ, as the same city typed
once with and once without marks would (a duplicate in review, never a lost fact).
"""

from __future__ import annotations

import re

from ..confusables import unaccented
from ..restate_words import VI_BARE_HINTS
from . import vietnamese
from .lexicon import Claim
from .reader import Reader

_HINTS = VI_BARE_HINTS | {"minh"}

# Words before a verb that change nothing of the fact: aspect and time ("dang", "van", "gio").
_FILLER = r"(?:(?:dang|van|hien|hien tai|gio|bay gio|hien nay|nay|con|da|cung|thi)\s+){0,3}"
# Not so any more: "khong con … (nua)", "khong … nua"; not so: "khong", "chua", "khong phai".
_NEG = r"(?P<neg>(?:khong con|khong phai|khong|chua)\s+)?"
_ME = r"(?:toi|minh|to)"
# Another person the speaker names ("vo toi", "em trai toi"): the subject of the claim. The marked
# reader's list, marks off.
_KIN = unaccented(vietnamese.KIN)
_WHO = rf"(?:(?P<kin>{_KIN})\s+(?:cua\s+)?{_ME}|{_ME})"
_END = r"(?:\s+(?:nhe|nha|roi|a|day|do|nua))*\s*$"
_VAL = r"(?P<val>[a-z0-9][a-z0-9 .'-]{0,40}?)"

# The jobs the marked reader knows, marks off ("ky su", "giao vien").
_JOBS = {unaccented(vi): en for vi, en in vietnamese.JOBS.items()}
_JOB = "|".join(sorted(_JOBS, key=len, reverse=True))

# who (after a time word: "gio toi song o …"), then aspect words around a negation
_LEAD = rf"^(?:(?:gio|bay gio|hien tai|hien nay|nay)\s+)?{_WHO}\s+{_FILLER}{_NEG}{_FILLER}"

_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), attribute)
    for pattern, attribute in (
        (rf"{_LEAD}(?:song|sinh song|dinh cu)\s+(?:o|tai)\s+{_VAL}{_END}", "location"),
        (rf"{_LEAD}(?:lam viec|lam|cong tac)\s+(?:o|tai|cho)\s+{_VAL}{_END}", "employer"),
        (rf"{_LEAD}(?:lam nghe\s+|lam\s+|la\s+(?:mot\s+)?)(?P<job>{_JOB}){_END}", "role"),
        (rf"^que\s+(?:cua\s+)?{_WHO}\s+{_NEG}(?:o|tai)\s+{_VAL}{_END}", "origin"),
        (rf"^{_WHO}\s+{_NEG}(?:den tu|que o)\s+{_VAL}{_END}", "origin"),
        (rf"^ten\s+(?:cua\s+)?{_WHO}\s+{_NEG}la\s+{_VAL}{_END}", "name"),
        (rf"^{_WHO}\s+{_NEG}ten\s+(?:la\s+)?{_VAL}{_END}", "name"),
        (
            rf"^(?P<what>mon|mau|bai hat|phim|mon an|do uong|ban nhac|mon the thao)\s+(?:ma\s+)?{_WHO}\s+"
            rf"thich nhat\s+{_NEG}la\s+{_VAL}{_END}",
            "favorite",
        ),
    )
)


def detects(clause: str) -> bool:
    return unaccented(clause) == clause and not _HINTS.isdisjoint(clause.split())


def claims_vi_bare(clause: str, inherited: str) -> list[Claim]:
    """The clause's claim when it has one of the shapes above; nothing otherwise."""
    c = " ".join(clause.replace(",", " ").split())
    for pattern, attribute in _RULES:
        m = pattern.match(c)
        if not m:
            continue
        groups = m.groupdict()
        subject = groups.get("kin") or "self"
        value = _JOBS[groups["job"]] if groups.get("job") else (groups.get("val") or "").strip(" .'-")
        if not value:
            continue
        attr = f"attr:favorite {groups['what']}" if attribute == "favorite" else attribute
        return [Claim(subject, attr, value, positive=not groups.get("neg"))]
    return []


READER = Reader(lang="vi_bare", claims=claims_vi_bare, detects=detects)
