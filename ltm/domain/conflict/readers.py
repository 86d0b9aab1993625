"""The languages the conflict rules read, in the order they are tried (English reads the rest)."""

from __future__ import annotations

from . import chinese, english, spanish
from .reader import Reader

READERS: tuple[Reader, ...] = (
    chinese.READER,
    spanish.READER,
    english.READER,
)
