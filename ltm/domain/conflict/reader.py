"""The shape of one language's reader of statements: what the comparison needs from each language."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .lexicon import Claim


def _always(_clause: str) -> bool:
    return True


@dataclass(frozen=True)
class Reader:
    """How one language's clauses are read into claims.

    ``claims(clause, inherited_subject)`` reads one clause (already normalised by ``lexicon.prep``,
    its leading fillers and "no longer so" marker removed); ``detects(clause)`` says whether to try
    this reader on it (its script or cue words): the registry tries readers in order, and the first
    that detects the clause and reads a claim wins. The regex sources extend what every statement
    goes through: ``lead`` (fillers at the start: "pues", "えっと"), ``split`` (what ends a clause:
    "pero", "けど"), ``ended`` (a marker of a state that no longer holds, removed from the clause:
    "solía", "以前"). ``negations`` (regex source) counts negations for the fallback that compares
    words when no pattern reads a statement; it must not repeat what the fallback already counts
    (English "not", "no", "never"...; the characters 不没别未无). ``tokens`` adds content tokens
    for that fallback (a script without spaces, for example)."""

    lang: str
    claims: Callable[[str, str], list[Claim]]
    detects: Callable[[str], bool] = _always
    lead: str = ""
    split: str = ""
    ended: str = ""
    negations: str = ""
    tokens: Callable[[str], set[str]] | None = None
