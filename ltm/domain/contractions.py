"""English contractions spelled out: the one table the extraction rules, the conflict lexicon and
the restatement check read a statement through. Pure.

:func:`expand` folds the curly apostrophes to ``'`` and replaces each whole word of
:data:`CONTRACTIONS` (``i'm`` -> ``i am``, ``can't`` -> ``cannot``, ``gonna`` -> ``going to``); a
word that merely contains one (``bit's``) is left alone. The text is expected case-folded.
"""

from __future__ import annotations

import re

APOSTROPHES = {"\u2019": "'", "\u2018": "'"}  # ’ ‘

# fmt: off
CONTRACTIONS: dict[str, str] = {
    "i'm": "i am", "i've": "i have", "i'll": "i will", "i'd": "i would",
    "you're": "you are", "you've": "you have", "you'll": "you will", "you'd": "you would",
    "we're": "we are", "we've": "we have", "we'll": "we will", "we'd": "we would",
    "they're": "they are", "they've": "they have", "they'll": "they will", "they'd": "they would",
    "he's": "he is", "he'll": "he will", "he'd": "he would",
    "she's": "she is", "she'll": "she will", "she'd": "she would",
    "it's": "it is", "that's": "that is",
    "don't": "do not", "doesn't": "does not", "didn't": "did not",
    "can't": "cannot", "won't": "will not",
    "isn't": "is not", "aren't": "are not", "wasn't": "was not", "weren't": "were not",
    "haven't": "have not", "hasn't": "has not", "hadn't": "had not",
    "wouldn't": "would not", "shouldn't": "should not", "couldn't": "could not", "mustn't": "must not",
    "gonna": "going to", "wanna": "want to",
}
# fmt: on

_APOSTROPHE = re.compile("[" + "".join(APOSTROPHES) + "]")
_ALTERNATIVES = "|".join(map(re.escape, sorted(CONTRACTIONS, key=len, reverse=True)))
_WORD = re.compile(r"(?<![\w'])(?:" + _ALTERNATIVES + r")(?![\w'])")


def fold_apostrophes(text: str) -> str:
    return _APOSTROPHE.sub("'", text)


def expand(text: str) -> str:
    """``text`` with its apostrophes folded and every contraction of the table spelled out."""
    return _WORD.sub(lambda m: CONTRACTIONS[m.group(0)], fold_apostrophes(text))
