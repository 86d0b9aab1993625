"""Records every layer agrees on: episodes (L2) and profiles (L1), with their validation.

Validation happens here, before any I/O: a malformed field raises :class:`ValidationError` and the
service writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from . import records as rec
from .audience import audience_of
from .errors import ValidationError
from .filters import STATUSES
from .scope import Scope
from .text import check_text
from .timefields import (
    OPEN_END_TS,
    OPEN_START_TS,
    check_validity,
    normalize_optional,
    now_utc,
    to_iso,
    ts,
)

SCHEMA = "ltm/1"
CLAIM_TYPES: tuple[str, ...] = ("unknown", "user_statement", "inference")
CONFIDENCE_CLASSES: tuple[str, ...] = ("confirmed", "stated", "inferred", "unverified")
ORIGINS: tuple[str, ...] = ("tool", "command", "import", "candidate", "document", "consolidation", "console")
MAX_CONTENT_CHARS = 4000
MAX_TAGS = 16
MAX_TAG_CHARS = 64
MAX_SOURCE_REF_CHARS = 256
MAX_SUPERSEDES = 16
MAX_RECORD_ID_CHARS = 64
# Every id a person or a model may name (episodes, candidates, proposals); generated ids fit it.
RECORD_ID_RE = re.compile(rf"[A-Za-z0-9_.:\-]{{1,{MAX_RECORD_ID_CHARS}}}")


def new_episode_id() -> str:
    return "ep_" + uuid.uuid4().hex[:20]


def is_record_id(value: Any) -> bool:
    """True for a well-formed record id; any other value names no record anywhere."""
    return isinstance(value, str) and RECORD_ID_RE.fullmatch(value) is not None


def bounded_int(raw: Any, field: str, lo: int, hi: int, default: int) -> int:
    """A whole number in ``lo..hi`` (an integral float counts; ``None`` is ``default``). A bool, text,
    NaN, an infinity or a fraction is refused with the field named."""
    if raw is None:
        return default
    ok = (
        not isinstance(raw, bool)
        and isinstance(raw, (int, float))
        and (isinstance(raw, int) or (math.isfinite(raw) and raw.is_integer()))
        and lo <= raw <= hi
    )
    if not ok:
        raise ValidationError(
            f"{field}: a whole number from {lo} to {hi}", key="error.field_int", field=field, lo=lo, hi=hi
        )
    return int(raw)


def normalize_text(value: str) -> str:
    """NFKC (full-width -> half-width), casefold, collapse whitespace, strip punctuation at the ends."""
    v = unicodedata.normalize("NFKC", value).casefold()
    v = " ".join(v.split())
    return v.strip(" .,;:!?。，；：！？、\"'“”‘’")


def content_hash(content: str) -> str:
    return hashlib.sha256(normalize_text(content).encode("utf-8")).hexdigest()[:32]


def default_confidence(claim_type: str) -> str:
    """Grounding caps confidence: an inference is never more than ``inferred``."""
    return {"user_statement": "stated", "inference": "inferred"}.get(claim_type, "unverified")


@dataclass
class Episode:
    """One L2 memory. ``file_id`` equals ``id`` so the host can delete it by ``file_id``."""

    id: str
    content: str
    user_key: str
    scope_key: str
    session_name: str
    bot_uuid: str = ""
    sender_id: str = ""
    importance: float = 0.5
    tags: list[str] = field(default_factory=list)
    status: str = "active"
    supersedes: list[str] = field(default_factory=list)
    superseded_by: str = ""
    timestamp: str = ""
    event_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    claim_type: str = "unknown"
    confidence: str = "unverified"
    source_ref: str = ""
    origin: str = "tool"
    content_hash: str = ""
    document_id: str = ""
    import_original_id: str = ""
    audience: str = ""  # who may read it (ltm.domain.audience.audience_of); "" = none but the operator
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def file_id(self) -> str:
        return self.id

    def to_metadata(self) -> dict[str, Any]:
        """Flat, Chroma-safe metadata (no ``None``, no nested values; lists as JSON strings)."""
        ts_value = ts(self.timestamp, 0.0)
        md: dict[str, Any] = {
            "schema": SCHEMA,
            "episode_id": self.id,
            "file_id": self.id,
            "uuid": self.id,
            "text": self.content,
            "user_key": self.user_key,
            "scope_key": self.scope_key,
            "session_name": self.session_name,
            "bot_uuid": self.bot_uuid,
            "sender_id": self.sender_id,
            "importance": float(self.importance),
            "tags": json.dumps(self.tags, ensure_ascii=False),
            "status": self.status,
            "supersedes": json.dumps(self.supersedes),
            "superseded_by": self.superseded_by,
            "timestamp": self.timestamp,
            "ts": ts_value,
            "event_ts": ts(self.event_at, ts_value),
            "valid_from_ts": ts(self.valid_from, OPEN_START_TS),
            "valid_until_ts": ts(self.valid_until, OPEN_END_TS),
            "claim_type": self.claim_type,
            "confidence": self.confidence,
            "source_ref": self.source_ref,
            "origin": self.origin,
            "content_hash": self.content_hash or content_hash(self.content),
            "document_id": self.document_id,
            "import_original_id": self.import_original_id,
            "audience": self.audience,
        }
        for key in ("event_at", "valid_from", "valid_until"):
            val = getattr(self, key)
            if val:
                md[key] = val
        if self.extra:
            md["extra"] = json.dumps(self.extra, ensure_ascii=False, sort_keys=True)
        return md

    @classmethod
    def from_metadata(cls, md: dict[str, Any], fallback_id: str = "") -> Episode:
        """Read a stored record. Records without ``status`` read as active; host keys are dropped."""
        eid = str(md.get("episode_id") or md.get("file_id") or fallback_id)
        return cls(
            id=eid,
            content=rec.text(md, "text"),
            user_key=rec.text(md, "user_key"),
            scope_key=rec.text(md, "scope_key"),
            session_name=rec.text(md, "session_name"),
            bot_uuid=rec.text(md, "bot_uuid"),
            sender_id=rec.text(md, "sender_id"),
            importance=rec.number(md, "importance"),
            tags=rec.json_strings(md.get("tags")),
            status=rec.choice(md, "status", STATUSES, "active"),
            supersedes=rec.json_strings(md.get("supersedes")),
            superseded_by=rec.text(md, "superseded_by"),
            timestamp=rec.text(md, "timestamp"),
            event_at=rec.optional(md, "event_at"),
            valid_from=rec.optional(md, "valid_from"),
            valid_until=rec.optional(md, "valid_until"),
            claim_type=rec.text(md, "claim_type", "unknown"),
            confidence=rec.text(md, "confidence", "unverified"),
            source_ref=rec.text(md, "source_ref"),
            origin=rec.text(md, "origin", "tool"),
            content_hash=rec.text(md, "content_hash"),
            document_id=rec.text(md, "document_id"),
            import_original_id=rec.text(md, "import_original_id"),
            audience=rec.text(md, "audience"),
            extra=rec.json_object(md.get("extra")),
        )

    def to_public(self) -> dict[str, Any]:
        """The JSON shape shown to people, tools and exports."""
        d = asdict(self)
        d["file_id"] = self.id
        if not d["extra"]:
            d.pop("extra")
        return d

    def retagged(self, **changes: Any) -> Episode:
        """A copy with lifecycle fields changed; scope keys are never restamped."""
        forbidden = {"user_key", "scope_key", "session_name", "bot_uuid", "id", "audience"} & set(changes)
        if forbidden:
            raise ValueError(f"scope fields cannot be rewritten: {sorted(forbidden)}")
        return Episode(**{**asdict(self), **changes})


def validity_window(e: Episode) -> str:
    """The validity window of a memory as one readable string: ``<from> .. <until>``, an open end
    written ``open`` (the model and people read it the same way)."""
    return f"{e.valid_from or 'open'} .. {e.valid_until or 'open'}"


@dataclass
class EpisodeInput:
    """A validated request to store an episode (everything the caller may set)."""

    content: str
    importance: float = 0.5
    tags: list[str] = field(default_factory=list)
    event_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    claim_type: str = "user_statement"
    source_ref: str = ""
    supersedes: list[str] = field(default_factory=list)
    status: str = "active"


# The fields a caller may set on a new episode, listed once: EpisodeInput's, but its status (a new
# episode's status is the service's to give). A field added to EpisodeInput is settable everywhere.
SETTABLE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EpisodeInput) if f.name != "status")
# The details a statement carries beside its words: what a review candidate keeps for the episode it
# becomes (its content is the candidate's own, what it supersedes is decided when it is accepted).
DETAIL_FIELDS: tuple[str, ...] = tuple(n for n in SETTABLE_FIELDS if n not in ("content", "supersedes"))


def _str_list(raw: Any, name: str, max_items: int, max_chars: int) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [p for p in (x.strip() for x in raw.split(",")) if p]
    if not isinstance(raw, list):
        raise ValidationError(f"{name}: expected a list of strings", key="error.field_type", field=name)
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            raise ValidationError(f"{name}: expected a list of strings", key="error.field_type", field=name)
        item = " ".join(check_text(item, name).split())
        if not item:
            continue
        if len(item) > max_chars:
            raise ValidationError(f"{name}: item longer than {max_chars}", key="error.field_long", field=name)
        if item not in out:
            out.append(item)
    if len(out) > max_items:
        raise ValidationError(f"{name}: more than {max_items} items", key="error.field_many", field=name)
    return out


def validate_episode_input(raw: dict[str, Any], *, default_claim: str = "user_statement") -> EpisodeInput:
    """Check every field of a write request; raise on the first malformed one."""
    if not isinstance(raw, dict):
        raise ValidationError("expected an object", key="error.field_type", field="episode")
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValidationError("content: required non-empty text", key="error.content_empty", field="content")
    content = check_text(content, "content").strip()
    if len(content) > MAX_CONTENT_CHARS:
        raise ValidationError(
            f"content: longer than {MAX_CONTENT_CHARS} characters", key="error.content_long", field="content"
        )
    importance = raw.get("importance", 0.5)
    if importance is None:
        importance = 0.5
    if isinstance(importance, bool) or not isinstance(importance, (int, float)):
        raise ValidationError("importance: expected a number 0..1", key="error.importance", field="importance")
    importance = float(importance)
    if not (0.0 <= importance <= 1.0) or importance != importance:
        raise ValidationError("importance: expected a number 0..1", key="error.importance", field="importance")
    tags = _str_list(raw.get("tags"), "tags", MAX_TAGS, MAX_TAG_CHARS)
    claim = raw.get("claim_type") or default_claim
    if claim not in CLAIM_TYPES:
        raise ValidationError(
            f"claim_type: one of {', '.join(CLAIM_TYPES)}", key="error.claim_type", field="claim_type"
        )
    source_ref = raw.get("source_ref") or ""
    if not isinstance(source_ref, str) or len(source_ref) > MAX_SOURCE_REF_CHARS:
        raise ValidationError("source_ref: text up to 256 characters", key="error.field_type", field="source_ref")
    check_text(source_ref, "source_ref")
    event_at = normalize_optional(raw.get("event_at"), "event_at")
    valid_from = normalize_optional(raw.get("valid_from"), "valid_from")
    valid_until = normalize_optional(raw.get("valid_until"), "valid_until")
    check_validity(valid_from, valid_until)
    supersedes = _str_list(raw.get("supersedes"), "supersedes", MAX_SUPERSEDES, MAX_RECORD_ID_CHARS)
    if not all(is_record_id(s) for s in supersedes):
        raise ValidationError("supersedes: not a memory id", key="error.key_part", field="supersedes")
    status = raw.get("status") or "active"
    if status not in STATUSES:
        raise ValidationError(f"status: one of {', '.join(STATUSES)}", key="error.status", value=str(status))
    return EpisodeInput(
        content=content,
        importance=importance,
        tags=tags,
        event_at=event_at,
        valid_from=valid_from,
        valid_until=valid_until,
        claim_type=claim,
        source_ref=source_ref.strip(),
        supersedes=supersedes,
        status=status,
    )


def build_episode(
    data: EpisodeInput,
    scope: Scope,
    *,
    origin: str,
    episode_id: str | None = None,
    timestamp: str | None = None,
    document_id: str = "",
    import_original_id: str = "",
    audience: str | None = None,
    shared: bool = False,
) -> Episode:
    """A new episode of ``scope``. Its audience is the one the read rule gives what is written in
    ``scope`` (:func:`ltm.domain.audience.audience_of`; ``shared`` only from an operator's document or
    an admin's import, never from a model), unless a caller passes a narrower one (a summary takes
    its sources')."""
    if origin not in ORIGINS:
        raise ValueError(f"unknown origin {origin}")
    return Episode(
        id=episode_id or new_episode_id(),
        content=data.content,
        user_key=scope.user_key,
        scope_key=scope.scope_key,
        session_name=scope.session_name,
        bot_uuid=scope.bot_uuid,
        sender_id=scope.sender_id,
        importance=data.importance,
        tags=list(data.tags),
        status=data.status,
        supersedes=list(data.supersedes),
        timestamp=timestamp or to_iso(now_utc()),
        event_at=data.event_at,
        valid_from=data.valid_from,
        valid_until=data.valid_until,
        claim_type=data.claim_type,
        confidence=default_confidence(data.claim_type),
        source_ref=data.source_ref,
        origin=origin,
        content_hash=content_hash(data.content),
        document_id=document_id,
        import_original_id=import_original_id,
        audience=audience if audience is not None else audience_of(scope, shared=shared),
    )


# --------------------------------------------------------------------------------------------
# L1 profiles
# --------------------------------------------------------------------------------------------

MAX_NAME_CHARS = 128
MAX_ITEM_CHARS = 256
MAX_NOTES = 20


@dataclass
class Profile:
    kind: str  # "session" | "speaker"
    key: str
    name: str = ""
    traits: list[str] = field(default_factory=list)
    preferences: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    updated_at: str = ""
    sender_id: str = ""  # a speaker profile's speaker (its key may hold a shortened id)

    def is_empty(self) -> bool:
        return not (self.name or self.traits or self.preferences or self.notes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], kind: str, key: str) -> Profile:
        prefs = data.get("preferences") or {}
        if isinstance(prefs, list):  # tolerate a list of "k: v" strings
            prefs = {str(i): str(v) for i, v in enumerate(prefs)}
        return cls(
            kind=kind,
            key=key,
            name=rec.text(data, "name"),
            traits=rec.strings(data, "traits"),
            preferences={str(k): str(v) for k, v in dict(prefs).items()},
            notes=rec.strings(data, "notes"),
            updated_at=rec.text(data, "updated_at"),
            sender_id=rec.text(data, "sender_id") if kind == "speaker" else "",
        )


@dataclass
class ProfilePatch:
    """A validated profile change. Corrections replace: a preference key maps to one value."""

    name: str | None = None
    add_traits: list[str] = field(default_factory=list)
    remove_traits: list[str] = field(default_factory=list)
    set_preferences: dict[str, str] = field(default_factory=dict)
    remove_preferences: list[str] = field(default_factory=list)
    add_notes: list[str] = field(default_factory=list)
    remove_notes: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return self.name is None and not any(
            (
                self.add_traits,
                self.remove_traits,
                self.set_preferences,
                self.remove_preferences,
                self.add_notes,
                self.remove_notes,
            )
        )


PATCH_FIELDS = (
    "target",
    "name",
    "add_traits",
    "remove_traits",
    "set_preferences",
    "remove_preferences",
    "add_notes",
    "remove_notes",
)


def validate_profile_patch(raw: dict[str, Any]) -> ProfilePatch:
    if not isinstance(raw, dict):
        raise ValidationError("expected an object", key="error.field_type", field="profile")
    unknown = sorted(set(raw) - set(PATCH_FIELDS))
    if unknown:
        raise ValidationError(
            f"unknown fields: {', '.join(unknown)}", key="error.unknown_fields", fields=", ".join(unknown)
        )
    name = raw.get("name")
    if name is not None:
        if not isinstance(name, str) or len(name.strip()) > MAX_NAME_CHARS:
            raise ValidationError("name: text up to 128 characters", key="error.field_type", field="name")
        name = " ".join(check_text(name, "name").split())
    prefs_raw = raw.get("set_preferences") or {}
    if not isinstance(prefs_raw, dict):
        raise ValidationError("set_preferences: expected an object", key="error.field_type", field="set_preferences")
    prefs: dict[str, str] = {}
    for k, v in prefs_raw.items():
        if not isinstance(k, str) or not isinstance(v, str) or not k.strip() or not v.strip():
            raise ValidationError(
                "set_preferences: keys and values must be non-empty text",
                key="error.field_type",
                field="set_preferences",
            )
        if len(k) > MAX_ITEM_CHARS or len(v) > MAX_ITEM_CHARS:
            raise ValidationError("set_preferences: item too long", key="error.field_long", field="set_preferences")
        check_text(k + v, "set_preferences")
        prefs[" ".join(k.split()).lower()] = " ".join(v.split())
    patch = ProfilePatch(
        name=name,
        add_traits=_str_list(raw.get("add_traits"), "add_traits", 50, MAX_ITEM_CHARS),
        remove_traits=_str_list(raw.get("remove_traits"), "remove_traits", 50, MAX_ITEM_CHARS),
        set_preferences=prefs,
        remove_preferences=[
            p.lower() for p in _str_list(raw.get("remove_preferences"), "remove_preferences", 50, MAX_ITEM_CHARS)
        ],
        add_notes=_str_list(raw.get("add_notes"), "add_notes", 50, MAX_ITEM_CHARS),
        remove_notes=_str_list(raw.get("remove_notes"), "remove_notes", 50, MAX_ITEM_CHARS),
    )
    if patch.is_empty():
        raise ValidationError("nothing to change", key="error.profile_empty")
    return patch


def _dedup_add(items: list[str], new: list[str], remove: list[str], limit: int) -> list[str]:
    removed = {normalize_text(r) for r in remove}
    out = [i for i in items if normalize_text(i) not in removed]
    for item in new:
        norm = normalize_text(item)
        out = [i for i in out if normalize_text(i) != norm]
        out.append(item)
    if len(out) > limit:
        out = out[len(out) - limit :]  # the oldest entries make room
    return out


def apply_profile_patch(
    profile: Profile, patch: ProfilePatch, *, max_traits: int, max_preferences: int, updated_at: str
) -> Profile:
    """Pure: return the patched profile. Bounded, deduplicated, corrections replace."""
    prefs = {k: v for k, v in profile.preferences.items() if k not in set(patch.remove_preferences)}
    for k, v in patch.set_preferences.items():
        prefs.pop(k, None)
        prefs[k] = v
    if len(prefs) > max_preferences:
        prefs = dict(list(prefs.items())[len(prefs) - max_preferences :])
    return Profile(
        kind=profile.kind,
        key=profile.key,
        name=profile.name if patch.name is None else patch.name,
        traits=_dedup_add(profile.traits, patch.add_traits, patch.remove_traits, max_traits),
        preferences=prefs,
        notes=_dedup_add(profile.notes, patch.add_notes, patch.remove_notes, MAX_NOTES),
        updated_at=updated_at,
        sender_id=profile.sender_id,
    )
