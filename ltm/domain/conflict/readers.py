"""The languages the conflict rules read, in the order they are tried (English reads the rest)."""

from __future__ import annotations

from . import chinese, english
from .reader import Reader

READERS: tuple[Reader, ...] = (
    chinese.READER,
    english.READER,
)
