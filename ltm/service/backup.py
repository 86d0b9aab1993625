"""Moving all memory of an installation: the ``ltm-backup/1`` document, its backup and its restore.

The one implementation of the operator's move (``docs/deployment.md``, "Moving memory"); the
console's Backup / Restore and the ``python -m pages.move`` script both call these functions through
the console's page API.

The document is line-oriented (one JSON object per line, UTF-8, ``\\n`` between lines):

- line 1, the header: ``{"format": "ltm-backup/1", "created_at", "kbs": [{"id", "isolation"}],
  "vectors": false}``. No vectors: the target embeds every row again with its own knowledge base's
  embedding model (a move is also how an operator changes the embedding model, and a vector of one
  model is worthless to another);
- one line per record: ``{"k": kind, "kb": <source kb id or "">, "owner": <user/scope key>,
  "id": <record id>, "v": <value>, "sha": <32 hex>}``, where ``sha`` is the SHA-256 (first 32 hex)
  of the canonical JSON of the line without ``sha``. Kinds:

  - ``episode``: an L2 row, every field of :class:`~ltm.domain.models.Episode` (id, status,
    supersede links, times, provenance, audience, ``extra``); sealed rows are opened by the read;
  - ``kv``: a record of plugin storage, ``id`` its key, ``v`` its stored text: profiles, review
    candidates (and the queue's index), tombstones, consolidation proposals, opt-outs;
  - ``audit``: one audit entry of a memory's log, ``id`` ``<log>#<seq>``;

- the last line, the trailer: ``{"end": true, "counts": {kind: n}, "digest": <64 hex>}``,
  ``digest`` the SHA-256 of the records' ``sha`` values joined by ``\\n``, in file order.

Not in the document: caches the target rebuilds (recall index snapshots, last-turn snapshots, the
usage ledger), seal keys (the target seals its rows under keys of its own), write fences and the
journal (a backup refuses while an operation is open), the knowledge bases' settings (the target's
memory knowledge base is created by the operator) and uploaded documents' indexes.

Restore takes the document in chunks (each chunk is the header line and some record lines, in any
order, any number of times):

- a chunk is checked whole before anything is written (format, every line's ``sha``, every
  record's shape); a bad chunk is refused and changes nothing;
- every source knowledge base is mapped to a target one (``kb_map``; one source and one target
  map by themselves); keys and records naming the source KB are rewritten to the target's;
- episodes are written through the write engine with their own ids (one mutation per memory and
  chunk: fences, journal, the audit entry ``backup.restore``), their text through the content
  gate's import path (a secret the source kept redacted stays redacted; a row the gate changes is
  counted); storage records with :meth:`WriteEngine.kv_step` in the same kind of mutation, a
  profile's and a review candidate's text through the content gate first (paths
  ``restore.profile``: a secret redacted, an instruction-like value left out; and
  ``restore.candidate``: redacted, an instruction-like one flagged), so a restored record never
  keeps what no other path could store; the report counts what the gate redacted, refused and
  flagged (counts only, never the text); audit
  entries are appended to the target's log with their original number and time kept in
  ``extra.restored``;
- idempotent by record id: a record already there as it would be written (or exactly as the file
  has it, before the gate: a restore into the installation the backup came from) is skipped, one
  there with other content is a conflict (counted, never overwritten), so restoring twice changes
  nothing and an interrupted restore is resumed by sending the chunks again;
- ``verify=True`` reads every record of the chunk back and compares it (nothing is written), so
  the operator's route ends with counts and a readback of every id.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, Protocol

from ..domain.errors import PermissionDenied, ValidationError
from ..domain.filters import Criteria
from ..domain.keys import kb_part
from ..domain.models import Episode, content_hash, is_record_id
from ..domain.scope import Scope
from ..domain.storage_keys import (
    CAND_PREFIX,
    NO_KB_LOG,
    PROFILE_PREFIX,
    PROPOSAL_PREFIX,
    TOMB_PREFIX,
    audit_log_key,
    l1_lock_key,
    l2_lock_key,
    parse_audit_log_key,
    parse_storage_key,
)
from ..domain.text import unstorable
from ..domain.timefields import to_iso
from ..ports import KeyValueStore
from . import content_gate as gate
from .audit import AuditEntry
from .consent import OPTOUT_PREFIX
from .settings import KbSettings, Settings
from .writes.actor import Actor, require_admin
from .writes.journal import JOURNAL_PREFIX

log = logging.getLogger(__name__)

FORMAT = "ltm-backup/1"
OPERATION = "backup.restore"
KINDS = ("episode", "kv", "audit")
KV_PREFIXES = (PROFILE_PREFIX, CAND_PREFIX, TOMB_PREFIX, PROPOSAL_PREFIX, OPTOUT_PREFIX)
KB_KEYED = (CAND_PREFIX, TOMB_PREFIX)  # <prefix><kb>/<user key>/...
MAX_ROWS_PER_MEMORY = 200_000
MAX_CHUNK_LINES = 2_000
MAX_LINE_CHARS = 200_000
SHA_CHARS = 32
WRITE_CHUNK = 64

_EPISODE_FIELDS = {f.name: f for f in fields(Episode)}
_LIST_FIELDS = ("tags", "supersedes")
_FLOAT_FIELDS = ("importance",)
_OPTIONAL_FIELDS = ("event_at", "valid_from", "valid_until")


class BackupHost(Protocol):
    """What backup and restore use of the service (a :class:`MemoryService` is one)."""

    @property
    def kv(self) -> KeyValueStore: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def locks(self) -> Any: ...

    @property
    def writes(self) -> Any: ...

    async def known_kbs(self) -> list[str]: ...

    async def kb_settings(self, kb_id: str) -> KbSettings | None: ...


# --------------------------------------------------------------------------------------------
# the format
# --------------------------------------------------------------------------------------------


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def line_sha(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: v for k, v in body.items() if k != "sha"}).encode("utf-8")).hexdigest()[
        :SHA_CHARS
    ]


def record_line(kind: str, kb: str, owner: str, rid: str, value: Any) -> str:
    body: dict[str, Any] = {"k": kind, "kb": kb, "owner": owner, "id": rid, "v": value}
    body["sha"] = line_sha(body)
    return canonical(body)


def digest(shas: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(shas).encode("utf-8")).hexdigest()


def _bad(detail: str, **args: Any) -> ValidationError:
    return ValidationError(f"backup: {detail}", key="move.error.bad", problem=detail, **args)


@dataclass
class Record:
    line: int
    kind: str
    kb: str
    owner: str
    id: str
    value: Any
    sha: str


def parse_header(text: str) -> dict[str, Any]:
    try:
        head = json.loads(text)
    except ValueError as exc:
        raise _bad("the first line is not JSON") from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ValidationError("not an ltm-backup/1 document", key="move.error.format")
    kbs = head.get("kbs")
    if not isinstance(kbs, list) or not all(isinstance(k, dict) and isinstance(k.get("id"), str) for k in kbs):
        raise _bad("header: kbs must be a list of {id, isolation}")
    return head


def parse_record(n: int, text: str) -> Record | dict[str, Any]:
    """One line after the header: a :class:`Record`, or the trailer (a dict). Raises on anything
    else; nothing is written before every line of a chunk parsed."""
    if not isinstance(text, str) or len(text) > MAX_LINE_CHARS or unstorable(text):
        raise _bad(f"line {n}: not a line of text (or longer than {MAX_LINE_CHARS})", line=n)
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise _bad(f"line {n}: not JSON", line=n) from exc
    if not isinstance(body, dict):
        raise _bad(f"line {n}: not an object", line=n)
    if body.get("end") is True:
        counts, dg = body.get("counts"), body.get("digest")
        if not isinstance(counts, dict) or not isinstance(dg, str):
            raise _bad(f"line {n}: a trailer needs counts and digest", line=n)
        return body
    kind, kb, owner, rid, sha = (body.get(k) for k in ("k", "kb", "owner", "id", "sha"))
    if kind not in KINDS:
        raise _bad(f"line {n}: unknown kind {str(kind)[:20]!r}", line=n)
    if not all(isinstance(x, str) for x in (kb, owner, rid, sha)) or not rid:
        raise _bad(f"line {n}: kb, owner, id and sha must be text", line=n)
    if set(body) != {"k", "kb", "owner", "id", "v", "sha"}:
        raise _bad(f"line {n}: unexpected fields", line=n)
    try:
        actual = line_sha(body)
    except (TypeError, ValueError) as exc:
        raise _bad(f"line {n}: not canonical JSON", line=n) from exc
    if actual != sha:
        raise ValidationError(f"line {n}: checksum mismatch", key="move.error.checksum", line=n)
    return Record(n, kind, kb, owner, rid, body["v"], sha)


class HeldBackups:
    """Backup documents built for the console, held in this installation's memory until their parts
    are fetched (``KEEP_S``, at most ``MAX_HELD``). They hold memory text, so every erase drops
    them all (:data:`.erasure.COPIES`): a part fetched after a forget never carries the forgotten
    row, the operator builds the backup again."""

    KEEP_S = 900.0
    MAX_HELD = 2

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, tuple[float, list[str]]] = {}

    def keep(self, lines: list[str]) -> str:
        """Hold ``lines``; returns the id its parts are fetched by."""
        now = self._clock()
        for k in [k for k, (t, _) in self._held.items() if now - t > self.KEEP_S]:
            del self._held[k]
        while len(self._held) >= self.MAX_HELD:
            del self._held[min(self._held, key=lambda k: self._held[k][0])]
        bid = uuid.uuid4().hex
        self._held[bid] = (now, lines)
        return bid

    def get(self, bid: str) -> list[str] | None:
        """The held document ``bid``, or None when it expired or an erase dropped it."""
        held = self._held.get(bid)
        if held is None or self._clock() - held[0] > self.KEEP_S:
            self._held.pop(bid, None)
            return None
        return held[1]

    def drop_all(self) -> int:
        """Forget every held document (an erase ran). Returns how many were held."""
        n = len(self._held)
        self._held.clear()
        return n


# --------------------------------------------------------------------------------------------
# backup
# --------------------------------------------------------------------------------------------


def require_operator(verb: str, actor: Actor, settings: Settings) -> None:
    """One policy for both verbs: the console's operator (the dashboard's logged-in user, which
    the script also is), a memory admin. A chat command or a tool cannot move a whole installation."""
    require_admin("export" if verb == "backup" else "import", actor, settings)
    if actor.surface != "console":
        raise PermissionDenied(f"{verb} is the operator's", key="move.error.operator", verb=verb)


def operator_scope(kb: str, isolation: str, user_key: str) -> Scope:
    """The scope the operator reads and writes one memory (a KB and a user key) with."""
    return Scope(
        session_name="",
        bot_uuid="",
        isolation=isolation,
        session_key=user_key,
        scope_key=user_key,
        user_key=user_key,
        collection=kb,
        operator=True,
    )


async def _memories(service: BackupHost) -> list[tuple[str, str, str]]:
    """Every memory (kb, isolation, user key) of the installation: each one written to has an
    audit log (every mutation appends to it), per knowledge base and user key."""
    isolation: dict[str, str] = {}
    parts: dict[str, str] = {}
    for kb in await service.known_kbs():
        ks = await service.kb_settings(kb)
        if ks is not None:
            isolation[kb] = ks.isolation
            parts[kb_part(kb)] = kb
    out: list[tuple[str, str, str]] = []
    for log_key in sorted(await service.writes.audit_log.logs()):
        part, user_key = parse_audit_log_key(log_key)
        kb = parts.get(part)
        if kb is not None:
            out.append((kb, isolation[kb], user_key))
    return out


async def backup(service: BackupHost, actor: Actor) -> list[str]:
    """The ``ltm-backup/1`` document of the whole installation, as lines (the last is the
    trailer). Audited in every memory it read (``backup.read``)."""
    require_operator("backup", actor, service.settings)
    if await service.kv.keys(JOURNAL_PREFIX):
        raise ValidationError("an operation is still open", key="move.error.journal")
    memories = await _memories(service)
    kbs = sorted({(kb, iso) for kb, iso, _ in memories} | {(kb, "") for kb in await service.known_kbs()})
    iso_of: dict[str, str] = {}
    for kb, iso in kbs:
        if iso or kb not in iso_of:
            iso_of[kb] = iso
    header = {
        "format": FORMAT,
        "created_at": to_iso(service.clock()),
        "kbs": [{"id": kb, "isolation": iso_of[kb]} for kb in sorted(iso_of)],
        "vectors": False,
    }
    lines: list[str] = []
    counts = dict.fromkeys(KINDS, 0)
    for kb, iso, user_key in memories:
        scope = operator_scope(kb, iso, user_key)
        rows = await service.writes.reads.fetch(scope, Criteria(statuses=None), limit=MAX_ROWS_PER_MEMORY)
        rows.sort(key=lambda e: (e.timestamp, e.id))
        for e in rows:
            lines.append(record_line("episode", kb, user_key, e.id, asdict(e)))
        counts["episode"] += len(rows)
    for prefix in KV_PREFIXES:
        for key in sorted(await service.kv.keys(prefix)):
            raw = await service.kv.get(key)
            if raw is None:
                continue
            parsed = parse_storage_key(key)
            owner = parsed.owner if parsed is not None else ""
            kb = _kb_of_key(key, {kb_part(k): k for k in iso_of})
            if not kb and key.startswith(KB_KEYED):
                continue  # a deleted knowledge base's leftover: its memory is gone
            lines.append(record_line("kv", kb, owner, key, raw.decode("utf-8", "replace")))
            counts["kv"] += 1
    audit = service.writes.audit_log
    parts = {kb_part(k): k for k in iso_of}
    for log_key in sorted(await audit.logs()):
        part, user_key = parse_audit_log_key(log_key)
        if part != NO_KB_LOG and part not in parts:
            continue  # a deleted knowledge base's log: its memory is gone
        kb = parts.get(part, "")
        for entry in await audit.export(log_key):
            lines.append(record_line("audit", kb, user_key, f"{log_key}#{entry.get('seq')}", entry))
            counts["audit"] += 1
    for kb, iso, user_key in memories:  # the backup itself is on record in every memory it read
        await service.writes.audit(
            operator_scope(kb, iso, user_key), actor, "backup.read", [], "the memory was backed up (ltm-backup/1)"
        )
    shas = [json.loads(line)["sha"] for line in lines]
    trailer = {"end": True, "counts": counts, "digest": digest(shas)}
    log.info("backup: %s", counts)
    return [canonical(header), *lines, canonical(trailer)]


def _kb_of_key(key: str, parts: dict[str, str]) -> str:
    for prefix in KB_KEYED:
        if key.startswith(prefix):
            return parts.get(key[len(prefix) :].split("/", 1)[0], "")
    return ""


def check_document(header_line: str, trailer_line: str, shas: Sequence[str], kinds: Sequence[str]) -> dict[str, Any]:
    """The whole document's check before a restore writes anything: the trailer's digest over every
    record's ``sha`` (in file order) and its counts per kind. Raises when they do not match."""
    parse_header(header_line)
    trailer = parse_record(0, trailer_line)
    if isinstance(trailer, Record):
        raise _bad("the last line is not the trailer")
    if len(shas) != len(kinds) or not all(isinstance(s, str) for s in shas):
        raise _bad("shas and kinds must be two lists of the same length")
    if digest(list(shas)) != trailer["digest"]:
        raise ValidationError("the document's digest does not match", key="move.error.checksum", line=0)
    counts = dict.fromkeys(KINDS, 0)
    for k in kinds:
        if k not in counts:
            raise _bad(f"unknown kind {str(k)[:20]!r}")
        counts[k] += 1
    if any(counts[k] != trailer["counts"].get(k, 0) for k in KINDS):
        raise ValidationError("the document's counts do not match", key="move.error.counts")
    return {"counts": counts, "records": len(shas)}


# --------------------------------------------------------------------------------------------
# restore
# --------------------------------------------------------------------------------------------


@dataclass
class RestoreReport:
    """What one chunk did (or, with ``verify``, found). Counts per kind."""

    written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    conflicts: list[str] = field(default_factory=list)  # record ids there with other content
    verified: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    missing: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)
    # the content gate on the way in (counts only, never the text): records it changed, credential
    # values it redacted, instruction-like profile values it refused (left out), records it flagged
    gated: int = 0
    redacted: int = 0
    refused: int = 0
    flagged: int = 0
    unmapped: int = 0  # records of a knowledge base with no target (refused before writing)

    def gate(self, changed: bool, redacted: int, refused: int, flagged: bool) -> None:
        self.gated += int(changed)
        self.redacted += redacted
        self.refused += refused
        self.flagged += int(flagged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "skipped": self.skipped,
            "conflicts": self.conflicts[:50],
            "conflict_count": len(self.conflicts),
            "verified": self.verified,
            "missing": self.missing[:50],
            "missing_count": len(self.missing),
            "differing": self.differing[:50],
            "differing_count": len(self.differing),
            "gated": self.gated,
            "redacted": self.redacted,
            "refused": self.refused,
            "flagged": self.flagged,
        }


def resolve_kb_map(header: dict[str, Any], targets: Sequence[str], kb_map: dict[str, str] | None) -> dict[str, str]:
    """Every source KB of the header mapped to a known target KB. With one source and one target
    and no map, the one maps to the other."""
    sources = [k["id"] for k in header["kbs"]]
    mapping = dict(kb_map or {})
    if not mapping and len(sources) == 1 and len(targets) == 1:
        mapping = {sources[0]: targets[0]}
    for src, dst in mapping.items():
        if dst not in targets:
            raise ValidationError("no such target knowledge base", key="move.error.kb", kb=str(dst)[:80])
        if src not in sources:
            raise ValidationError("the backup has no such knowledge base", key="move.error.kb", kb=str(src)[:80])
    missing = [s for s in sources if s not in mapping]
    if missing:
        raise ValidationError(
            "map every knowledge base of the backup to one here", key="move.error.kb_map", kb=missing[0][:80]
        )
    return mapping


def _remap(value: Any, src: str, dst: str) -> Any:
    """A stored JSON value with every text equal to the source KB id rewritten to the target's."""
    if isinstance(value, str):
        return dst if value == src else value
    if isinstance(value, list):
        return [_remap(v, src, dst) for v in value]
    if isinstance(value, dict):
        return {k: _remap(v, src, dst) for k, v in value.items()}
    return value


def _remap_key(key: str, src: str, dst: str) -> str:
    for prefix in KB_KEYED:
        if key.startswith(prefix):
            part, sep, rest = key[len(prefix) :].partition("/")
            if part == kb_part(src):
                return prefix + kb_part(dst) + sep + rest
    return key


def _remap_text(raw: str, src: str, dst: str) -> str:
    if not src or src == dst:
        return raw
    try:
        return json.dumps(_remap(json.loads(raw), src, dst), ensure_ascii=False)
    except ValueError:
        return raw


def _episode(rec: Record) -> dict[str, Any]:
    """The row a record describes, checked field by field (a malformed one refuses the chunk)."""
    v = rec.value
    if not isinstance(v, dict) or set(v) != set(_EPISODE_FIELDS):
        raise _bad(f"line {rec.line}: an episode needs exactly the fields of a memory row", line=rec.line)
    for name, value in v.items():
        ok = (
            (name in _LIST_FIELDS and isinstance(value, list) and all(isinstance(x, str) for x in value))
            or (name in _FLOAT_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool))
            or (name in _OPTIONAL_FIELDS and (value is None or isinstance(value, str)))
            or (name == "extra" and isinstance(value, dict))
            or (name not in (*_LIST_FIELDS, *_FLOAT_FIELDS, *_OPTIONAL_FIELDS, "extra") and isinstance(value, str))
        )
        if not ok:
            raise _bad(f"line {rec.line}: field {name} has the wrong type", line=rec.line)
    if not is_record_id(v["id"]) or v["id"] != rec.id or v["user_key"] != rec.owner or not v["content"].strip():
        raise _bad(f"line {rec.line}: id, owner or content do not match the row", line=rec.line)
    return v


def restored_episode(v: dict[str, Any]) -> tuple[Episode, gate.Screened]:
    """A backed-up row as the target stores it: its text through the content gate's import path
    (what the source redacted stays redacted; an instruction-like row is flagged, as an import is;
    a redacted row's content hash is the stored text's), and the gate's verdict."""
    screened = gate.screen("import", {"content": v["content"], "tags": list(v["tags"])})
    content, tags = screened.fields["content"], list(dict.fromkeys(screened.fields["tags"]))
    extra = gate.with_flags(dict(v["extra"]), screened.flags)
    row = {**v, "content": content, "tags": tags, "extra": extra}
    if content != v["content"] and v.get("content_hash"):
        row["content_hash"] = content_hash(content)
    return Episode(**row), screened


RECORD_GATES: dict[str, Callable[[dict[str, Any]], gate.ScreenedRecord]] = {
    "profile.session": gate.screen_profile_record,
    "profile.speaker": gate.screen_profile_record,
    "candidate": gate.screen_candidate_record,
}


def restored_record(key: str, text: str) -> tuple[str, gate.ScreenedRecord | None]:
    """A stored record of a backup as the target stores it: a profile or a review candidate through
    the content gate (:data:`RECORD_GATES`; ``None`` for a record that holds no one's text: the
    queue's index, tombstones, proposals, opt-outs). The text is kept byte for byte when the gate
    changes nothing (a restore twice, or into its own installation, finds it there as it is)."""
    parsed = parse_storage_key(key)
    layout = parsed.layout if parsed is not None else ""
    if layout == "candidate" and not parsed.tail.startswith("r/"):  # type: ignore[union-attr]
        layout = ""
    screen = RECORD_GATES.get(layout)
    if screen is None:
        return text, None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise _bad(f"{layout}: a stored record that is not a JSON object")
    out = screen(data)
    return (json.dumps(out.record, ensure_ascii=False) if out.changed else text), out


def _same_row(a: Episode, b: Episode) -> bool:
    return canonical(asdict(a)) == canonical(asdict(b))


def _as_in_file(there: Episode, v: dict[str, Any]) -> bool:
    """The row is there exactly as the file has it, before the gate (restored into the installation
    it came from, whose old row the gate would change now): there, not a conflict."""
    return canonical(asdict(there)) == canonical(v)


async def restore(
    service: BackupHost,
    actor: Actor,
    lines: Sequence[str],
    kb_map: dict[str, str] | None = None,
    *,
    verify: bool = False,
) -> RestoreReport:
    """Restore (or, with ``verify``, read back) one chunk: the header line, then record lines (a
    trailer line among them is ignored). See the module docstring."""
    require_operator("restore", actor, service.settings)
    if not isinstance(lines, (list, tuple)) or not lines:
        raise _bad("a chunk is the header line and some record lines")
    if len(lines) > MAX_CHUNK_LINES + 2:
        raise _bad(f"more than {MAX_CHUNK_LINES} lines in one chunk")
    header = parse_header(lines[0] if isinstance(lines[0], str) else "")
    records = [r for n, text in enumerate(lines[1:], 2) if isinstance(r := parse_record(n, text), Record)]
    targets = await service.known_kbs()
    mapping = resolve_kb_map(header, targets, kb_map)
    iso = {kb: (ks.isolation if (ks := await service.kb_settings(kb)) else "session") for kb in targets}
    src_iso = {k["id"]: str(k.get("isolation") or "") for k in header["kbs"]}
    # every record checked before the first write
    episodes: dict[tuple[str, str], list[Episode]] = {}
    kvs: list[tuple[Record, str, str, str, str]] = []  # record, target key, gated text, text as in file, target kb
    as_in_file: dict[str, dict[str, Any]] = {}  # episode id -> its row as in the file, before the gate
    audits: dict[tuple[str, str], list[Record]] = {}
    report = RestoreReport()
    for rec in records:
        if rec.kb and rec.kb not in mapping:
            raise ValidationError("record of an unmapped knowledge base", key="move.error.kb_map", kb=rec.kb[:80])
        dst = mapping.get(rec.kb, "")
        if rec.kind == "episode":
            if not rec.kb:
                raise _bad(f"line {rec.line}: an episode names no knowledge base", line=rec.line)
            ep, verdict = restored_episode(_episode(rec))
            report.gate(not _as_in_file(ep, rec.value), verdict.redactions, 0, bool(verdict.flags))
            episodes.setdefault((dst, rec.owner), []).append(ep)
            as_in_file[ep.id] = rec.value
        elif rec.kind == "kv":
            if not isinstance(rec.value, str) or not rec.id.startswith(KV_PREFIXES) or unstorable(rec.id):
                raise _bad(f"line {rec.line}: a storage record of a kind a backup does not hold", line=rec.line)
            key = _remap_key(rec.id, rec.kb, dst) if rec.kb else rec.id
            text = rec.value
            for src, to in mapping.items():
                text = _remap_text(text, src, to)
            gated, kverdict = restored_record(key, text)
            if kverdict is not None:
                report.gate(kverdict.changed, kverdict.redactions, kverdict.refused, bool(kverdict.flags))
            kvs.append((rec, key, gated, text, dst or (targets[0] if targets else "")))
        else:
            if not isinstance(rec.value, dict) or not isinstance(rec.value.get("seq"), int) or "#" not in rec.id:
                raise _bad(f"line {rec.line}: an audit entry needs its log and number", line=rec.line)
            audits.setdefault((dst, rec.owner), []).append(rec)
        if rec.kb and iso.get(dst) and src_iso.get(rec.kb) and iso[dst] != src_iso[rec.kb]:
            raise ValidationError("isolation differs", key="move.error.isolation", kb=dst[:80])
    for (kb, user_key), eps in episodes.items():
        scope = operator_scope(kb, iso.get(kb, "session"), user_key)
        await _episodes(service, actor, scope, eps, as_in_file, report, verify)
    for rec, key, text, raw, kb in kvs:
        await _kv(service, actor, rec, key, (text, raw), kb, iso.get(kb, "session"), report, verify)
    for (kb, user_key), recs in audits.items():
        await _audit(service, actor, operator_scope(kb, iso.get(kb, "session"), user_key), recs, report, verify)
    return report


async def _episodes(
    service: BackupHost,
    actor: Actor,
    scope: Scope,
    eps: list[Episode],
    as_in_file: dict[str, dict[str, Any]],
    report: RestoreReport,
    verify: bool,
) -> None:
    async with service.locks.hold(l2_lock_key(scope)):
        have = await service.writes.reads.fetch_ids(scope, [e.id for e in eps])
        fresh: list[Episode] = []
        for e in eps:
            there = have.get(e.id)
            if there is None and verify:
                report.missing.append(e.id)
            elif there is None:
                fresh.append(e)
            elif _same_row(there, e) or _as_in_file(there, as_in_file[e.id]):
                (report.verified if verify else report.skipped)["episode"] += 1
            else:
                (report.differing if verify else report.conflicts).append(e.id)
        if verify or not fresh:
            return
        ids = [e.id for e in fresh]
        audit = (ids[:50], f"restored {len(ids)} memories from a backup (ltm-backup/1)")
        steps = service.writes.new_row_steps(scope, fresh, OPERATION, audit, WRITE_CHUNK)
        await service.writes.mutate(actor, OPERATION, steps)
        report.written["episode"] += len(fresh)


async def _kv(
    service: BackupHost,
    actor: Actor,
    rec: Record,
    key: str,
    texts: tuple[str, str],
    kb: str,
    isolation: str,
    report: RestoreReport,
    verify: bool,
) -> None:
    """One stored record: ``texts`` is the record as the content gate lets it be stored and as the
    file has it (the same for a record the gate did not change); either one there counts as there."""
    new, raw = (t.encode("utf-8") for t in texts)
    scope = operator_scope(kb, isolation, rec.owner)
    lock = l1_lock_key(key[len(PROFILE_PREFIX) :]) if key.startswith(PROFILE_PREFIX) else l2_lock_key(scope)
    async with service.locks.hold(lock):
        old = await service.kv.get(key)
        if old is not None and old in (new, raw):
            (report.verified if verify else report.skipped)["kv"] += 1
            return
        if old is not None:
            (report.differing if verify else report.conflicts).append(key)
            return
        if verify:
            report.missing.append(key)
            return
        step = service.writes.kv_step(
            scope,
            OPERATION,
            key,
            new,
            None,
            audit=([key][:1], "restored a stored record from a backup") if rec.owner else None,
            lock_key=lock,
        )
        await service.writes.mutate(actor, OPERATION, [step])
        report.written["kv"] += 1


async def _audit(
    service: BackupHost, actor: Actor, scope: Scope, recs: list[Record], report: RestoreReport, verify: bool
) -> None:
    log_key = audit_log_key(scope)
    audit = service.writes.audit_log
    async with service.locks.hold(l2_lock_key(scope)):
        entries = await audit.export(log_key)
        have = {
            (str(r.get("source", "")), r.get("seq"))
            for e in entries
            if isinstance(r := (e.get("extra") or {}).get("restored"), dict)
        }
        # restored into the installation it came from: the log's own entries are the file's
        native = {
            (log_key, e.get("seq"), e.get("at"), e.get("operation"))
            for e in entries
            if not isinstance((e.get("extra") or {}).get("restored"), dict)
        }
        for rec in recs:
            source = rec.id.rsplit("#", 1)[0]
            own = (source, rec.value["seq"], rec.value.get("at"), rec.value.get("operation"))
            if (source, rec.value["seq"]) in have or own in native:
                (report.verified if verify else report.skipped)["audit"] += 1
                continue
            if verify:
                report.missing.append(rec.id)
                continue
            await audit.append(log_key, restored_entry(rec.value, source, scope.collection))
            have.add((source, rec.value["seq"]))
            report.written["audit"] += 1


def restored_entry(v: dict[str, Any], source: str, kb: str) -> AuditEntry:
    """An audit entry of the source as the target's log keeps it: its event as it was, its number
    and time in the source kept in ``extra.restored``."""

    def text(name: str) -> str:
        x = v.get(name)
        return x if isinstance(x, str) else ""

    extra = v.get("extra") if isinstance(v.get("extra"), dict) else {}
    targets = v.get("targets") if isinstance(v.get("targets"), list) else []
    return AuditEntry(
        seq=0,
        at=text("at"),
        operation=text("operation"),
        targets=[t for t in targets if isinstance(t, str)],
        scope_key=text("scope_key"),
        user_key=text("user_key"),
        sender=text("sender"),
        surface=text("surface"),
        query_id=v.get("query_id") if isinstance(v.get("query_id"), int) else None,
        summary=text("summary"),
        reason=text("reason"),
        extra={**extra, "restored": {"source": source, "seq": v["seq"], "at": text("at")}},
        collection=kb,
        operator=text("operator"),
    )
