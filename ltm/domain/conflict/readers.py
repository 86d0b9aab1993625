"""The languages the conflict rules read, in the order they are tried (English reads the rest)."""

from __future__ import annotations

from . import chinese, english, japanese, spanish, thai, vietnamese
from .reader import Reader

READERS: tuple[Reader, ...] = (
    japanese.READER,  # kana: before Chinese, whose characters Japanese shares
    thai.READER,
    chinese.READER,
    vietnamese.READER,
    spanish.READER,
    english.READER,
)
