"""What the store holds once a write step applied: typed expectations, written in the journal and
judged by recovery.

An expectation is one JSON object, tagged by its first key::

    {"episode": id, "status": s}                    EpisodeIs (status "absent": EpisodeGone)
    {"episode": id, "status": s, "confidence": c}   EpisodeIs with its confidence
    {"kv": key, "sha": h}                           KvHolds: exactly these bytes (sha256, 32 hex)
    {"kv": key, "absent": true}                     KvAbsent
    {"kv": key, "list_has": id[, "status": s]}      KvListHas: a JSON list of {"id", "status"} holds it
    {"kv": key, "list_lacks": id}                   KvListLacks
    {"kv": key, "cites": source}                    KvCites: a JSON record whose ``sources`` hold it
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ...domain.models import Episode
from .records import hash_bytes


@dataclass(frozen=True)
class EpisodeIs:
    """The episode row ``id`` has this status (and, when given, this confidence)."""

    id: str
    status: str
    confidence: str | None = None

    @property
    def target(self) -> str:
        return self.id

    def met_by(self, episode: Episode | None) -> bool:
        if episode is None:
            return False
        return episode.status == self.status and self.confidence in (None, episode.confidence)

    def to_json(self) -> dict[str, Any]:
        return {
            "episode": self.id,
            "status": self.status,
            **({"confidence": self.confidence} if self.confidence else {}),
        }


@dataclass(frozen=True)
class EpisodeGone:
    """No row ``id`` is stored (deleted, or a new row taken back)."""

    id: str

    @property
    def target(self) -> str:
        return self.id

    def met_by(self, episode: Episode | None) -> bool:
        return episode is None

    def to_json(self) -> dict[str, Any]:
        return {"episode": self.id, "status": "absent"}


class _Stored:
    """An expectation about one plugin-storage key: ``met_by`` gets its raw value (None: absent)."""

    key: str
    tag: ClassVar[str]

    @property
    def target(self) -> str:
        return self.key

    def met_by(self, raw: bytes | None) -> bool:
        raise NotImplementedError

    @staticmethod
    def _json(raw: bytes | None) -> Any:
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    @staticmethod
    def _entries(value: Any) -> list[dict[str, Any]]:
        return [o for o in value if isinstance(o, dict)] if isinstance(value, list) else []


@dataclass(frozen=True)
class KvHolds(_Stored):
    """The key holds exactly the bytes whose :func:`hash_bytes` is ``sha``."""

    key: str
    sha: str

    @classmethod
    def of(cls, key: str, value: bytes) -> KvHolds:
        return cls(key, hash_bytes(value))

    def met_by(self, raw: bytes | None) -> bool:
        return raw is not None and hash_bytes(raw) == self.sha

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "sha": self.sha}


@dataclass(frozen=True)
class KvAbsent(_Stored):
    key: str

    def met_by(self, raw: bytes | None) -> bool:
        return not raw

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "absent": True}


@dataclass(frozen=True)
class KvListHas(_Stored):
    """The key holds a JSON list with an ``{"id": item}`` entry (of ``status``, when given)."""

    key: str
    item: str
    status: str | None = None

    def met_by(self, raw: bytes | None) -> bool:
        return any(
            str(o.get("id")) == self.item and (self.status is None or o.get("status") == self.status)
            for o in self._entries(self._json(raw))
        )

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "list_has": self.item, **({"status": self.status} if self.status else {})}


@dataclass(frozen=True)
class KvListLacks(_Stored):
    """The key's JSON list has no ``{"id": item}`` entry (or the key is absent)."""

    key: str
    item: str

    def met_by(self, raw: bytes | None) -> bool:
        value = self._json(raw)
        if raw and value is None:
            return False  # unreadable: unknown
        return all(str(o.get("id")) != self.item for o in self._entries(value))

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "list_lacks": self.item}


@dataclass(frozen=True)
class KvCites(_Stored):
    """The key holds a JSON record whose ``sources`` list holds ``source`` (a tombstone's decision)."""

    key: str
    source: str

    def met_by(self, raw: bytes | None) -> bool:
        value = self._json(raw)
        return isinstance(value, dict) and self.source in (value.get("sources") or [])

    def to_json(self) -> dict[str, Any]:
        return {"kv": self.key, "cites": self.source}


Expectation = EpisodeIs | EpisodeGone | KvHolds | KvAbsent | KvListHas | KvListLacks | KvCites


def expectation_of(d: dict[str, Any]) -> Expectation:
    """Decode one journal expectation (the inverse of ``to_json``)."""
    if "episode" in d:
        eid, status = str(d["episode"]), str(d.get("status") or "")
        return EpisodeGone(eid) if status == "absent" else EpisodeIs(eid, status, d.get("confidence"))
    key = str(d.get("kv") or "")
    if "sha" in d:
        return KvHolds(key, str(d["sha"]))
    if d.get("absent"):
        return KvAbsent(key)
    if "list_has" in d:
        return KvListHas(key, str(d["list_has"]), d.get("status"))
    if "list_lacks" in d:
        return KvListLacks(key, str(d["list_lacks"]))
    if "cites" in d:
        return KvCites(key, str(d["cites"]))
    raise ValueError(f"unknown journal expectation {sorted(d)}")


def episodes_are(episodes: Sequence[Episode] | Sequence[str], status: str) -> list[Expectation]:
    """``status`` (``"absent"``: gone) for each episode (or id)."""
    ids = [e if isinstance(e, str) else e.id for e in episodes]
    return [EpisodeGone(i) if status == "absent" else EpisodeIs(i, status) for i in ids]
