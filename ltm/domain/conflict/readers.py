"""The languages the conflict rules read, in the order they are tried (English reads the rest)."""

from __future__ import annotations

from . import chinese, english, japanese, spanish, thai, vietnamese, vietnamese_bare
from .reader import Reader

READERS: tuple[Reader, ...] = (
    japanese.READER,  # kana: before Chinese, whose characters Japanese shares
    thai.READER,
    chinese.READER,
    vietnamese.READER,
    vietnamese_bare.READER,  # unmarked Vietnamese: a few value shapes only, after the marked reader
    spanish.READER,
    english.READER,
)
