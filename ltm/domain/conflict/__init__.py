"""Conflict detection between two short statements, in the seven languages the product ships. Pure.

Each statement is read into *claims*: ``(subject, attribute, value, polarity)``, e.g.
"I moved to Berlin" -> ``(self, location, berlin, +)``, "别上 Postgres" -> ``(-, use, postgres, -)``.
Two statements about the same subject and attribute then:

- **contradict** when they give the same value with opposite polarity ("I like tea" / "I don't like
  tea anymore"), or two different values of an attribute that holds one value at a time: where one
  lives, one's name, age, employer, job, a "my X is Y" / "the X is Y" fact, a preference between
  things of the same kind ("prefers Go" / "prefers Python"), a switch of tool of the same kind
  ("we use Postgres" / "we switched to MySQL");
- are **compatible** when both can hold (liking tea and coffee, having a cat and a dog, not living
  in Paris and living in Berlin);
- are **unrelated** otherwise (other subject, other attribute, other kind of thing).

Statements the patterns cannot read fall back to a negation flip over their words: nearly the same
words with an opposite negation contradict.

Each language's patterns are a reader (:mod:`.readers`: Japanese, Thai, Chinese simplified and
traditional, Vietnamese, Spanish, English, tried in that order). Life events told as events ("I left
Netflix", 我退休了, 定年退職しました) are read beside them as the state they end or start
(:mod:`.events`).

What this does not do: understand time ("lived in Paris in 2019" is read as past, nothing finer),
sarcasm, quantities beyond a few patterns, or paraphrases across languages. The benchmark
(``python -m benchmarks.conflicts``) measures it on a labelled set.
"""

from __future__ import annotations

from .compare import find_conflicts, parse_claims, relation
from .lexicon import (
    COMPATIBLE,
    CONTRADICTING,
    LABELS,
    UNRELATED,
    Claim,
    Verdict,
    category_of,
    same_value,
    topic_of,
)

__all__ = [
    "COMPATIBLE",
    "CONTRADICTING",
    "LABELS",
    "UNRELATED",
    "Claim",
    "Verdict",
    "category_of",
    "find_conflicts",
    "parse_claims",
    "relation",
    "same_value",
    "topic_of",
]
