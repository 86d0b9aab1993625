"""The record codec: how a stored JSON record (or a row's metadata) is read back. Pure.

A stored record may be old, written by a newer version, or damaged: a reader takes what it knows
and gives every missing, empty or ``None`` field its default, so every record decoder reads the
same field the same way. The readers:

- :func:`text`: ``str`` of the value, the default when it is falsy (``None``, ``""``, ``0``, ``[]``);
- :func:`optional`: the value itself, or ``None`` when it is falsy (an optional time, ...);
- :func:`number`: ``float`` of the value, the default when it is falsy (a value that is no
  number raises ``ValueError``/``TypeError``, as ``float`` does);
- :func:`choice`: the value when it is one of the allowed ones, else the default;
- :func:`strings`: a list of ``str`` from a list value (falsy: ``[]``);
- :func:`mapping`: a ``dict`` copy of a mapping value (falsy: ``{}``);
- :func:`json_strings` / :func:`json_object`: a list or an object kept as a JSON string (flat
  metadata), anything undecodable read as empty.

:class:`Record` is the JSON round trip of a dataclass record whose fields are stored as they are
(a candidate, a tombstone): unknown keys (a newer version's) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any


def text(d: Mapping[str, Any], key: str, default: str = "") -> str:
    return str(d.get(key) or default)


def optional(d: Mapping[str, Any], key: str) -> Any:
    return d.get(key) or None


def number(d: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    return float(d.get(key) or default)


def choice(d: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = d.get(key) or default
    return value if value in allowed else default


def strings(d: Mapping[str, Any], key: str) -> list[str]:
    return [str(x) for x in (d.get(key) or [])]


def mapping(d: Mapping[str, Any], key: str) -> dict[str, Any]:
    return dict(d.get(key) or {})


def json_strings(raw: Any) -> list[str]:
    """A list of ``str`` from a list, or from a JSON string holding one; anything else is ``[]``."""
    if isinstance(raw, list):
        return [str(x) for x in raw]
    if isinstance(raw, str) and raw:
        try:
            val = json.loads(raw)
        except ValueError:
            return []
        return [str(x) for x in val] if isinstance(val, list) else []
    return []


def json_object(raw: Any) -> Any:
    """What a JSON string holds (meant: an object); ``{}`` for a value that is not a string or does
    not decode."""
    if not isinstance(raw, str):
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return {}


class Record:
    """JSON round trip of a stored dataclass record; unknown keys (a newer version's) are ignored."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        names = cls.__dataclass_fields__  # type: ignore[attr-defined]
        return cls(**{k: v for k, v in d.items() if k in names})
