"""The content gate: the one screen every text that becomes stored memory or prompt text passes.

:func:`screen` is the gate: given the name of a write path and the text fields it is about to
store, it redacts credential values (:func:`ltm.domain.credentials.redact_text`; a preference is
read as its key and value together, so ``{"wifi password": "hunter2"}`` loses its value) and reads
every field for instruction-like text (:func:`ltm.domain.instructions.instruction_like`). What a
path then does with an instruction-like text is the table's, :data:`PATHS`, not the caller's:

- ``park``: not stored; it waits in the review queue as a candidate marked ``instruction-like``
  (the review queue's guard parks it; a service without a queue stores it flagged instead);
- ``refuse``: not stored; :class:`InstructionLikeProfileError` names the field (a profile is
  injected into every turn of a chat and has no per-value review, so nothing of it waits);
- ``flag``: stored with ``extra.flags: ["instruction-like"]`` and marked wherever injected: the
  path already had a person's review (an accepted candidate, an admin's consolidation run) or is
  an admin's or operator's own bulk records (import, document), or it is a candidate (flagged,
  never auto-applied).

:data:`PATHS` also names, per path, the code that turns its text into a stored row (``sites``);
``tests/contract/test_content_gate.py`` reads the service's code for every call of a row producer
(:data:`PRODUCERS`) and fails on one that no path names (and :data:`NOT_GATED` does not excuse),
and feeds one table of labelled sentences through every path.

:func:`screen_profile_record` and :func:`screen_candidate_record` are the gate over a stored
record written as it is (a restore of a backup): the same :func:`screen`, field by field.

:func:`prompt_profile` is the same rule at render time, for profile values stored before the gate
(old data): a secret is redacted, an instruction-like value is left out of the injected block.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.credentials import REDACTED, looks_like_credential, redact_text
from ..domain.errors import ValidationError
from ..domain.instructions import INSTRUCTION_LIKE, instruction_like
from ..domain.models import EpisodeInput, ProfilePatch

log = logging.getLogger(__name__)

PARK, REFUSE, FLAG = "park", "refuse", "flag"
# How a field is read: text, a list of texts, key -> value pairs (keys and values, and each pair
# read together), or a lookup text (only redacted, so it matches what was stored: a removal).
TEXT, LIST, PAIRS, LOOKUP = "text", "list", "pairs", "lookup"


@dataclass(frozen=True)
class GuardedPath:
    """One write path of the gate's table: the fields it screens (name -> how it is read), what
    happens to instruction-like text, and the code that stores its text (``module:qualname``)."""

    fields: Mapping[str, str]
    instruction: str
    sites: tuple[str, ...]
    doc: str = ""


_EPISODE = {"content": TEXT, "tags": LIST}
_REMEMBER_SITES = (
    "ltm.service.episodes:RememberPlan.settle",
    # a parked statement's candidate holds the statement as the remember gate left it
    "ltm.service.review.queue:ReviewQueue.guard",
    "ltm.service.review.queue:ReviewQueue._park_instruction",
)

PATHS: dict[str, GuardedPath] = {
    "remember": GuardedPath(
        _EPISODE,
        PARK,
        _REMEMBER_SITES,
        "remember from the model's tool, a command or the console (origins tool, command, console)",
    ),
    "profile.update": GuardedPath(
        {
            "name": TEXT,
            "add_traits": LIST,
            "add_notes": LIST,
            "set_preferences": PAIRS,
            "remove_traits": LOOKUP,
            "remove_notes": LOOKUP,
            "remove_preferences": LOOKUP,
        },
        REFUSE,
        ("ltm.service.profiles:ProfilePlan.settle",),
        "update_profile (tool, console, an accepted name candidate): notes, traits, preference keys and values",
    ),
    "candidate.extract": GuardedPath(
        {"content": TEXT, "evidence_quote": TEXT, "note": TEXT, "name": TEXT},
        FLAG,
        ("ltm.service.review.queue:ReviewQueue.propose",),
        "review candidates from a turn, by rules or a model (never auto-applied when flagged)",
    ),
    "candidate.accept": GuardedPath(
        _EPISODE,
        FLAG,
        ("ltm.service.episodes:RememberPlan.settle",),
        "accepting a candidate (origin candidate): a person reviewed it",
    ),
    "consolidation.summary": GuardedPath(
        _EPISODE,
        FLAG,
        ("ltm.service.consolidation.run:Consolidator.preview", "ltm.service.episodes:RememberPlan.settle"),
        "a model's summary: redacted when proposed; applied by an admin (origin consolidation)",
    ),
    "import": GuardedPath(
        _EPISODE,
        FLAG,
        ("ltm.service.transfer:import_scope", "ltm.service.backup:restored_episode"),
        "!memory import l2 / the console import / a restore of an ltm-backup/1: an admin's records",
    ),
    "document": GuardedPath(
        _EPISODE,
        FLAG,
        ("ltm.service.documents:Documents.ingest_document",),
        "a JSON document uploaded to the memory knowledge base: the operator's records",
    ),
    "restore.profile": GuardedPath(
        {"name": TEXT, "traits": LIST, "notes": LIST, "preferences": PAIRS},
        REFUSE,
        ("ltm.service.backup:_kv",),
        "a profile record of a restored ltm-backup/1: each value screened alone (screen_profile_record); "
        "an instruction-like value is refused (left out of the stored record), the others stored redacted",
    ),
    "restore.candidate": GuardedPath(
        {"content": TEXT, "evidence_quote": TEXT, "note": TEXT, "name": TEXT, "tags": LIST},
        FLAG,
        ("ltm.service.backup:_kv",),
        "a review candidate of a restored ltm-backup/1 (screen_candidate_record): flagged, never auto-applied",
    ),
}

# Calls of a row producer that store no text of anyone's (or the store's own write, whose callers
# are the paths' sites): held against the code by the same test.
NOT_GATED: dict[str, str] = {
    "ltm.service.health:isolation_probe": "a fixed probe sentence, deleted again at once",
    "ltm.service.consolidation.proposals:Proposal.spent": "a stored proposal, new status (gated when proposed)",
    # storage steps (kv_step) that write no one's text: keys, hashes, ids, statuses, deletions
    "ltm.service.documents:Documents.delete_document": "deletes the document's index",
    "ltm.service.people:People._erase_profile": "deletes a speaker profile",
    "ltm.service.people:People.set_opt_out": "an opt-out record: a sender id, a bot id and a time",
    "ltm.service.review.candidates:CandidateStore.save_steps": "a candidate gated when proposed, new status",
    "ltm.service.review.tombstones:TombstoneBook.lift_tombstone": "deletes a tombstone",
    "ltm.service.review.tombstones:TombstoneBook.scrub_person_steps": "a tombstone losing its reason",
    "ltm.service.consolidation.proposals:ProposalStore._write.write": "a proposal gated when drafted, or spent",
    "ltm.service.review.candidates:CandidateStore.insert": "the queue's own write: its callers are sites",
    "ltm.service.consolidation.run:Consolidator.discard": "deletes a proposal",
}

# The calls that turn text into a stored row (episode, profile, candidate, summary proposal); a
# row built by hand (``Episode(...)``, ``Profile(...)``) counts too.
PRODUCERS: tuple[str, ...] = (
    "build_episode",
    "apply_profile_patch",
    "candidates.insert",
    "Proposal",
    "Episode",
    "Profile",
    # a stored record written from text as it is (a profile, a candidate): every storage step is
    # named, by a path or by NOT_GATED (the restore of a backup's records was such a step)
    "kv_step",
)

# The remember plan's origins and the path each is.
ORIGIN_PATHS: dict[str, str] = {
    "tool": "remember",
    "command": "remember",
    "console": "remember",
    "candidate": "candidate.accept",
    "consolidation": "consolidation.summary",
    "import": "import",
    "document": "document",
}


class InstructionLikeProfileError(ValidationError):
    """A profile change reads as an instruction to the assistant: refused, nothing changed."""

    key = "gate.error.profile_instruction"


class UnguardedPathError(LookupError):
    """A write path the gate's table does not name: a programming error, never a user's."""


@dataclass
class Screened:
    """What the gate made of one write: the fields as they may be stored, how many credential
    values were redacted, and the first instruction-like field (``(field, kind)``) or None."""

    path: str
    fields: dict[str, Any]
    redactions: int = 0
    instruction: tuple[str, str] | None = None
    action: str = ""  # the table's action when instruction-like, else ""
    flags: list[str] = field(default_factory=list)


def _redacted(text: str) -> tuple[str, int]:
    """``text`` redacted, and how many values this redacted: a value redacted before (a restored
    record the source's gate redacted) is not counted again."""
    if not text:
        return text, 0
    out, n = redact_text(text)
    return out, max(0, out.count(REDACTED) - text.count(REDACTED)) if n else 0


def _pair(key: str, value: str) -> tuple[str, str, int]:
    """A preference with its credential parts redacted: each alone, then the two read together
    ("wifi password" + "hunter2" is a password with its value)."""
    k, nk = _redacted(key)
    v, nv = _redacted(value)
    if not nv and v != REDACTED and looks_like_credential(f"{k}: {v}"):
        v, nv = REDACTED, 1
    return k, v, nk + nv


def _instruction(texts: list[str]) -> str | None:
    for text in texts:
        kind = instruction_like(text) if text else None
        if kind:
            return kind
    return None


def screen(path: str, fields: Mapping[str, Any]) -> Screened:
    """The gate. ``fields`` maps the path's field names (a subset of its table row) to their text:
    a string, a list of strings or a ``{key: value}`` mapping, as the table says. Returns the
    fields redacted and the instruction verdict; raises :class:`InstructionLikeProfileError` where
    the table refuses, :class:`UnguardedPathError` for a path the table does not name (and for a
    field it does not list)."""
    row = PATHS.get(path)
    if row is None:
        raise UnguardedPathError(f"write path {path!r} is not in the content gate's table")
    out = Screened(path, {})
    for name, value in fields.items():
        how = row.fields.get(name)
        if how is None:
            raise UnguardedPathError(f"field {name!r} of {path!r} is not in the content gate's table")
        read: list[str] = []
        if how == PAIRS:
            cleaned: dict[str, str] = {}
            for k, v in dict(value or {}).items():
                k2, v2, n = _pair(str(k), str(v))
                out.redactions += n
                cleaned[k2] = v2
                read += [k2, v2, f"{k2}: {v2}"]
            out.fields[name] = cleaned
        elif how in (LIST, LOOKUP):
            items = []
            for item in list(value or []):
                text, n = _redacted(str(item))
                out.redactions += n
                items.append(text)
            out.fields[name] = items
            read = items if how == LIST else []
        else:
            text, n = _redacted(str(value or ""))
            out.redactions += n
            out.fields[name] = text if value is not None else None
            read = [text]
        kind = _instruction(read) if out.instruction is None else None
        if kind:
            out.instruction = (name, kind)
    if out.instruction is not None:
        out.action = row.instruction
        out.flags = [INSTRUCTION_LIKE]
        if row.instruction == REFUSE:
            name, kind = out.instruction
            raise InstructionLikeProfileError(f"{path}: {name} reads as an instruction ({kind})", field=name, kind=kind)
    if out.redactions:
        log.info("content gate: %s: %d credential values redacted", path, out.redactions)
    return out


def path_of_origin(origin: str) -> str:
    """The gate's path of a statement written with ``origin``."""
    path = ORIGIN_PATHS.get(origin)
    if path is None:
        raise UnguardedPathError(f"origin {origin!r} has no path in the content gate's table")
    return path


def screen_episode(path: str, data: EpisodeInput) -> Screened:
    """:func:`screen` over a statement's content and tags; ``data`` takes the screened text."""
    out = screen(path, {"content": data.content, "tags": list(data.tags)})
    data.content = out.fields["content"]
    data.tags = _unique(out.fields["tags"])
    return out


def screen_profile_patch(patch: ProfilePatch) -> ProfilePatch:
    """:func:`screen` over a profile change (path ``profile.update``): returns it redacted, or
    raises :class:`InstructionLikeProfileError`."""
    fields: dict[str, Any] = {
        "add_traits": patch.add_traits,
        "add_notes": patch.add_notes,
        "set_preferences": patch.set_preferences,
        "remove_traits": patch.remove_traits,
        "remove_notes": patch.remove_notes,
        "remove_preferences": patch.remove_preferences,
    }
    if patch.name is not None:
        fields["name"] = patch.name
    out = screen("profile.update", fields).fields
    return ProfilePatch(
        name=out.get("name", patch.name),
        add_traits=_unique(out["add_traits"]),
        remove_traits=out["remove_traits"],
        set_preferences=out["set_preferences"],
        remove_preferences=out["remove_preferences"],
        add_notes=_unique(out["add_notes"]),
        remove_notes=out["remove_notes"],
    )


@dataclass
class ScreenedRecord:
    """What the gate made of one stored record (a profile, a review candidate) written as it is, by
    a restore: the record as it may be stored, how many credential values were redacted, how many
    instruction-like values were refused (left out), and the flags it gained."""

    record: dict[str, Any]
    redactions: int = 0
    refused: int = 0
    flags: list[str] = field(default_factory=list)
    changed: bool = False


def screen_profile_record(record: Mapping[str, Any], path: str = "restore.profile") -> ScreenedRecord:
    """:func:`screen` over a stored profile record (``name``, ``traits``, ``notes``,
    ``preferences``; every other key kept as it is), one value at a time: a secret is redacted, an
    instruction-like value is refused where the table refuses (left out of the record, counted),
    the rest is stored. A whole record is never refused for one value: the others still move."""
    out = ScreenedRecord(dict(record))

    def one(name: str, value: Any) -> Any:
        try:
            s = screen(path, {name: value})
        except InstructionLikeProfileError:
            out.refused += 1
            return None
        out.redactions += s.redactions
        if s.instruction is not None:  # a path that flags: stored marked
            out.flags = _unique([*out.flags, *s.flags])
        return s.fields[name]

    if "name" in record and record["name"] not in (None, ""):
        kept = one("name", str(record["name"]))
        out.record["name"] = "" if kept is None else kept
    for name in ("traits", "notes"):
        if name in record:
            items = [one(name, [str(x)]) for x in list(record[name] or [])]
            out.record[name] = _unique([x[0] for x in items if x is not None])
    if "preferences" in record:
        prefs = record["preferences"] if isinstance(record["preferences"], Mapping) else {}
        cleaned: dict[str, str] = {}
        for k, v in prefs.items():
            pair = one("preferences", {str(k): str(v)})
            if pair is not None:
                cleaned.update(pair)
        out.record["preferences"] = cleaned
    out.changed = out.record != dict(record)
    return out


def screen_candidate_record(record: Mapping[str, Any], path: str = "restore.candidate") -> ScreenedRecord:
    """:func:`screen` over a stored review candidate (``content``, ``evidence_quote``,
    ``model_note``, its profile patch's ``name``, its episode fields' ``tags``): redacted, and
    flagged ``instruction-like`` (never auto-applied) where the table flags."""
    text = {"content": "content", "evidence_quote": "evidence_quote", "note": "model_note"}
    fields: dict[str, Any] = {name: str(record.get(key) or "") for name, key in text.items()}
    patch = record.get("profile_patch") if isinstance(record.get("profile_patch"), Mapping) else {}
    if isinstance(patch.get("name"), str):
        fields["name"] = patch["name"]
    detail = record.get("episode_fields") if isinstance(record.get("episode_fields"), Mapping) else {}
    if isinstance(detail.get("tags"), list):
        fields["tags"] = [str(x) for x in detail["tags"]]
    s = screen(path, fields)
    out = ScreenedRecord(dict(record), redactions=s.redactions, flags=list(s.flags))
    for name, key in text.items():
        if key in record or s.fields[name]:
            out.record[key] = s.fields[name]
    if "name" in fields:
        out.record["profile_patch"] = {**patch, "name": s.fields["name"]}
    if "tags" in fields:
        out.record["episode_fields"] = {**detail, "tags": _unique(s.fields["tags"])}
    if s.flags:
        have = record.get("flags") if isinstance(record.get("flags"), list) else []
        out.record["flags"] = _unique([*have, *s.flags])
    out.changed = out.record != dict(record)
    return out


def with_flags(extra: dict[str, Any], flags: list[str]) -> dict[str, Any]:
    """``extra`` with ``flags`` joined to its own (an episode's marks), unchanged without any."""
    if not flags:
        return extra
    have = extra.get("flags") if isinstance(extra.get("flags"), list) else []
    return {**extra, "flags": _unique([*have, *flags])}


def prompt_profile(view: dict[str, Any]) -> dict[str, Any]:
    """A profile's injected view with the gate's rule applied again (profile values stored before
    the gate existed): credential values redacted, instruction-like values left out."""
    out: dict[str, Any] = {}
    dropped = 0
    for key, value in view.items():
        if isinstance(value, list):
            kept = []
            for item in value:
                text = _redacted(str(item))[0]
                if instruction_like(text):
                    dropped += 1
                else:
                    kept.append(text)
            if kept:
                out[key] = kept
        elif isinstance(value, dict):
            prefs = {}
            for k, v in value.items():
                k2, v2, _ = _pair(str(k), str(v))
                if _instruction([k2, v2, f"{k2}: {v2}"]):
                    dropped += 1
                else:
                    prefs[k2] = v2
            if prefs:
                out[key] = prefs
        else:
            text = _redacted(str(value))[0]
            if instruction_like(text):
                dropped += 1
            else:
                out[key] = text
    if dropped:
        log.info("profile view: %d instruction-like values left out of the block", dropped)
    return out


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
