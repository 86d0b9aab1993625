"""Export and import of one scope: the one implementation of ``export_scope`` / ``import_scope``.

Export (L2) writes every episode of the scope (all statuses unless narrowed) with its provenance and
time fields, plus ``checksum`` = ``sha256:`` + SHA-256 of the canonical JSON of the ``episodes``
list (keys sorted, no whitespace, UTF-8). Export (L1) writes the session profile and the speaker
profiles of the scope, with a checksum over ``profiles``.

Import (L2) accepts that document, or a bare list, or ``{"episodes": [...]}``:

- a ``checksum``, when present, must match before anything else happens (a corrupted or
  hand-edited file is refused); a file without one (hand-written) is accepted;
- the whole batch is validated before any write; any error refuses the whole batch;
- everything lands in the *current* scope: ``user_key``/``scope_key``/``session_name``/``bot_uuid``
  in the file are ignored;
- every episode gets a new id; its original id is kept as ``import_original_id`` (a hand-written
  item without ``id`` gets ``hash:<content hash>``). An item whose (content hash, original id)
  already exists in the scope, as its id or as its ``import_original_id``, is skipped, so
  importing the same file twice does not duplicate;
- an imported record says it was imported: its ``origin`` is ``import`` (the file's is kept as
  ``extra.imported_origin``), its confidence is at most what its claim type gives a new statement
  (``confirmed`` only comes from a person confirming it here: the file's is kept as
  ``extra.imported_confidence``, a file's ``confirmed_by``/``confirmed_at`` are dropped), so an
  import never passes itself off as the speaker's own confirmed statement. ``sender_id`` is kept
  (whose statement it was); the record's audience is the current chat's (``"shared": true``
  marks it readable in every chat of a ``bot``-isolation knowledge base);
- ``supersedes``/``superseded_by`` links are remapped to the new ids (or to the episode already
  imported from that original id); a link to an episode that is not in the scope is dropped, and
  re-joined from the other side when that episode is imported later (paged exports);
- the write is one mutation of the service (``WriteEngine.mutate``: fence check, journal
  entry expecting every new id, the writes in chunks, one audit entry ``episode.import``) under the
  scope lock, all or nothing: if a later chunk fails (refused or an unknown outcome), the chunks
  already written are taken back; an unknown outcome also fences the scope.

Export writes one audit entry too (``scope.export``): it is a whole-scope read by an admin.
Both verbs read through ``WriteEngine.fetch`` (the one scope filter, paged through the backend),
never another scope.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..domain.episode_views import export_record
from ..domain.errors import LtmError, ValidationError
from ..domain.filters import Criteria
from ..domain.models import (
    CONFIDENCE_CLASSES,
    ORIGINS,
    Episode,
    EpisodeInput,
    build_episode,
    content_hash,
    default_confidence,
    new_episode_id,
    validate_episode_input,
)
from ..domain.scope import Scope
from ..domain.storage_keys import l2_lock_key
from ..domain.text import check_data, unstorable
from ..domain.timefields import normalize_optional, to_iso
from . import content_gate as gate
from .neighbours import TransferHost
from .writes.actor import Actor, require_admin
from .writes.errors import need_l2
from .writes.plan import WriteStep

log = logging.getLogger(__name__)

FORMAT = "ltm-export/1"
OPERATION = "episode.import"
MAX_EXPORT = 20_000
MAX_IMPORT = 5_000
MAX_EXTRA_CHARS = 4_000
MAX_ID_CHARS = 64
MAX_SENDER_CHARS = 256
WRITE_CHUNK = 64
IMPORT_STATUSES = ("active", "superseded", "archived")
_CONFIDENCE_RANK = {"unverified": 0, "inferred": 1, "stated": 2, "confirmed": 3}

IGNORED_ON_IMPORT = ("user_key", "scope_key", "session_name", "bot_uuid", "file_id", "document_id")


# --------------------------------------------------------------------------------------------
# canonical form
# --------------------------------------------------------------------------------------------


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def checksum(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


episode_record = export_record


def _source(scope: Scope) -> dict[str, str]:
    return {
        "scope_key": scope.scope_key,
        "user_key": scope.user_key,
        "isolation": scope.isolation,
        "collection": scope.collection,
    }


# --------------------------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------------------------


async def export_scope(
    service: TransferHost,
    scope: Scope,
    actor: Actor,
    *,
    layer: str = "l2",
    statuses: Sequence[str] | None = None,
    page: int = 1,
    page_size: int | None = None,
) -> dict[str, Any]:
    """The export document of this scope. ``layer`` "l1" (profiles) or "l2" (episodes).

    L2 episodes are ordered oldest first (timestamp, id); with ``page_size`` the document holds one
    page and says ``page``/``pages``/``total`` (each page carries its own checksum and imports on
    its own; links across pages are re-joined through ``import_original_id``). A memory admin's
    verb (a whole-scope dump): refused before anything is read.
    """
    require_admin("export", actor, service.settings)
    now = to_iso(service.clock())
    if layer == "l1":
        session = await service.get_profile(scope, "session")
        speakers = await service.speaker_profiles(scope)
        profiles = {
            "session": session.to_dict(),
            "speakers": [p.to_dict() for p in speakers],
        }
        doc: dict[str, Any] = {
            "format": FORMAT,
            "layer": "l1",
            "exported_at": now,
            "source": _source(scope),
            "count": len(speakers) + (0 if session.is_empty() else 1),
            "checksum": checksum(profiles),
            "profiles": profiles,
        }
        await _audit_export(service, scope, actor, f"exported L1 profiles ({doc['count']})", [])
        return doc
    if layer != "l2":
        raise ValidationError(f"unknown layer {layer!r}", key="cmd.transfer.layer", value=str(layer))
    crit = Criteria(statuses=tuple(statuses) if statuses else None)
    rows = await service.fetch(scope, crit, limit=MAX_EXPORT + 1)
    truncated = len(rows) > MAX_EXPORT
    rows = rows[:MAX_EXPORT]
    rows.sort(key=lambda e: (e.timestamp, e.id))
    total = len(rows)
    page = max(1, int(page))
    if page_size:
        size = max(1, int(page_size))
        pages = max(1, -(-total // size))
        rows = rows[(page - 1) * size : page * size]
    else:
        pages, page = 1, 1
    episodes = [episode_record(e) for e in rows]
    doc = {
        "format": FORMAT,
        "layer": "l2",
        "exported_at": now,
        "source": _source(scope),
        "statuses": list(crit.statuses) if crit.statuses else "all",
        "page": page,
        "pages": pages,
        "total": total,
        "truncated": truncated,
        "count": len(episodes),
        "checksum": checksum(episodes),
        "episodes": episodes,
    }
    await _audit_export(
        service,
        scope,
        actor,
        f"exported {len(episodes)} of {total} memories (page {page}/{pages})",
        [e["id"] for e in episodes][:50],
    )
    log.info("export l2 of %s: %d episodes (page %d/%d)", scope.user_key, len(episodes), page, pages)
    return doc


async def _audit_export(service: TransferHost, scope: Scope, actor: Actor, summary: str, targets: list[str]) -> None:
    async with service.locks.hold(l2_lock_key(scope)):
        await service.writes.audit(scope, actor, "scope.export", targets, summary)


# --------------------------------------------------------------------------------------------
# import
# --------------------------------------------------------------------------------------------


@dataclass
class ImportItem:
    n: int
    data: EpisodeInput
    original_id: str
    sender_id: str
    timestamp: str | None
    confidence: str | None
    origin: str
    supersedes: list[str]
    superseded_by: str
    extra: dict[str, Any]
    hash: str
    shared: bool = False


@dataclass
class ImportReport:
    imported: int
    skipped: int
    ids: list[str] = field(default_factory=list)
    batch: str = ""
    links_dropped: int = 0


def _fail(n: int, detail: str, **args: Any) -> ValidationError:
    return ValidationError(f"episode {n}: {detail}", key="cmd.transfer.item", n=n, problem=detail, **args)


def _episodes_of(payload: Any) -> list[Any]:
    if isinstance(payload, list):
        return payload
    if not isinstance(payload, dict):
        raise ValidationError("expected a list or an object with episodes", key="cmd.transfer.shape")
    fmt = payload.get("format")
    if fmt is not None and fmt != FORMAT:
        raise ValidationError(f"unknown format {fmt!r}", key="cmd.transfer.format", value=str(fmt)[:40])
    layer = payload.get("layer")
    if layer is not None and layer != "l2":
        raise ValidationError(f"not an L2 export: {layer!r}", key="cmd.transfer.layer", value=str(layer)[:40])
    episodes = payload.get("episodes")
    if not isinstance(episodes, list):
        raise ValidationError("expected a list or an object with episodes", key="cmd.transfer.shape")
    if "checksum" in payload:
        given = payload.get("checksum")
        try:
            actual = checksum(episodes)
        except (TypeError, ValueError):
            actual = ""
        if not isinstance(given, str) or given != actual:
            raise ValidationError("checksum mismatch: the file was changed or corrupted", key="cmd.transfer.checksum")
    return episodes


def _text(raw: Any, n: int, name: str, limit: int) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise _fail(n, f"{name}: expected text", field=name)
    if unstorable(raw):
        raise _fail(n, f"{name}: contains a character that is not text", field=name)
    v = raw.strip()
    if len(v) > limit:
        raise _fail(n, f"{name}: longer than {limit}", field=name)
    return v


def validate_batch(items: list[Any]) -> list[ImportItem]:
    """Validate every item; raise on the first bad one (nothing is written)."""
    if not items:
        raise ValidationError("no episodes to import", key="cmd.transfer.empty")
    if len(items) > MAX_IMPORT:
        raise ValidationError(f"more than {MAX_IMPORT} episodes", key="cmd.transfer.too_many", limit=MAX_IMPORT)
    out: list[ImportItem] = []
    seen_ids: set[str] = set()
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise _fail(n, "expected an object")
        status = item.get("status") or "active"
        if status not in IMPORT_STATUSES:
            raise _fail(n, f"status must be one of {', '.join(IMPORT_STATUSES)}", field="status")
        fields = {
            k: item.get(k)
            for k in (
                "content",
                "importance",
                "tags",
                "event_at",
                "valid_from",
                "valid_until",
                "claim_type",
                "source_ref",
            )
            if k in item
        }
        fields["status"] = status
        try:
            data = validate_episode_input(fields, default_claim="unknown")
            timestamp = normalize_optional(item.get("timestamp"), "timestamp")
        except LtmError as exc:
            raise _fail(n, exc.detail or exc.key) from exc
        h = content_hash(data.content)
        given_hash = item.get("content_hash")
        if given_hash not in (None, "") and given_hash != h:
            raise _fail(n, "content_hash does not match the content (edited?)", field="content_hash")
        screened = gate.screen_episode("import", data)  # a secret in the file is not stored
        if screened.redactions:
            h = content_hash(data.content)
        oid = _text(item.get("id"), n, "id", MAX_ID_CHARS)
        if oid:
            if oid in seen_ids:
                raise _fail(n, f"duplicate id {oid}", field="id")
            seen_ids.add(oid)
        sender = _text(item.get("sender_id"), n, "sender_id", MAX_SENDER_CHARS)
        confidence = item.get("confidence")
        if confidence in (None, ""):
            confidence = None
        elif confidence not in CONFIDENCE_CLASSES:
            raise _fail(n, f"confidence must be one of {', '.join(CONFIDENCE_CLASSES)}", field="confidence")
        elif data.claim_type == "inference" and _CONFIDENCE_RANK[confidence] > _CONFIDENCE_RANK["inferred"]:
            confidence = "inferred"  # an inference is never more than inferred
        origin = item.get("origin")
        origin = origin if isinstance(origin, str) and origin in ORIGINS else "import"
        shared = item.get("shared", False)
        if not isinstance(shared, bool):
            raise _fail(n, "shared: expected true or false", field="shared")
        sup_raw = item.get("supersedes") or []
        if not isinstance(sup_raw, list) or not all(
            isinstance(s, str) and len(s) <= MAX_ID_CHARS and not unstorable(s) for s in sup_raw
        ):
            raise _fail(n, "supersedes: expected a list of ids", field="supersedes")
        sup_by = _text(item.get("superseded_by"), n, "superseded_by", MAX_ID_CHARS)
        extra = item.get("extra")
        extra = {} if extra is None else extra
        if not isinstance(extra, dict):
            raise _fail(n, "extra: expected an object", field="extra")
        try:
            check_data(extra, "extra")
        except LtmError as exc:
            raise _fail(n, "extra: contains a character that is not text", field="extra") from exc
        try:
            if len(canonical_json(extra)) > MAX_EXTRA_CHARS:
                raise _fail(n, "extra: too large", field="extra")
        except (TypeError, ValueError) as exc:
            raise _fail(n, "extra: not JSON", field="extra") from exc
        out.append(
            ImportItem(
                n=n,
                data=data,
                original_id=oid or f"hash:{h}",
                sender_id=sender,
                timestamp=timestamp,
                confidence=confidence,
                origin=origin,
                supersedes=[s.strip() for s in sup_raw if s.strip()],
                superseded_by=sup_by,
                extra=gate.with_flags(extra, screened.flags),  # instruction-like: stored marked
                hash=h,
                shared=shared,
            )
        )
    return out


def _imported_marks(item: ImportItem) -> tuple[str, dict[str, Any]]:
    """The confidence an imported record may have here, and its ``extra`` with the file's
    provenance kept as data: the file's origin and a confidence above the claim's default."""
    cap = default_confidence(item.data.claim_type)
    given = item.confidence or cap
    extra = {k: v for k, v in item.extra.items() if k not in ("confirmed_by", "confirmed_at")}
    if item.origin != "import":
        extra["imported_origin"] = item.origin
    if _CONFIDENCE_RANK[given] > _CONFIDENCE_RANK[cap]:
        extra["imported_confidence"] = given
        given = cap
    return given, extra


async def import_scope(service: TransferHost, scope: Scope, payload: Any, actor: Actor) -> ImportReport:
    """Import L2 episodes into ``scope`` (see the module docstring). Validates the whole batch first.
    A memory admin's verb: refused before the document is read."""
    require_admin("import", actor, service.settings)
    need_l2(scope)
    plan = validate_batch(_episodes_of(payload))
    batch = "imp_" + uuid.uuid4().hex[:12]
    async with service.locks.hold(l2_lock_key(scope)):
        existing = await service.fetch(scope, Criteria(statuses=None), limit=MAX_EXPORT)
        keys: dict[tuple[str, str], str] = {}  # (content hash, original id) -> id in this scope
        id_map: dict[str, str] = {}  # any known original id -> id in this scope
        for e in existing:
            h = e.content_hash or content_hash(e.content)
            keys[(h, e.id)] = e.id
            id_map.setdefault(e.id, e.id)
            if e.import_original_id:
                keys[(h, e.import_original_id)] = e.id
                id_map.setdefault(e.import_original_id, e.id)
        fresh: list[ImportItem] = []
        new_ids: dict[int, str] = {}
        skipped = 0
        for item in plan:
            key = (item.hash, item.original_id)
            if key in keys:
                skipped += 1
                id_map.setdefault(item.original_id, keys[key])
                continue
            eid = new_episode_id()
            keys[key] = eid
            id_map[item.original_id] = eid
            new_ids[item.n] = eid
            fresh.append(item)
        for item in fresh:  # tombstones apply to imports too: a rejected value never comes back
            if item.data.status == "active":
                await service.screen_statement(scope.with_sender(item.sender_id), item.data, actor, "import")
        now = to_iso(service.clock())
        episodes: list[Episode] = []
        dropped = 0
        for item in fresh:
            sup = [id_map[s] for s in item.supersedes if s in id_map]
            by = id_map.get(item.superseded_by, "") if item.superseded_by else ""
            dropped += len(item.supersedes) - len(sup) + (1 if item.superseded_by and not by else 0)
            ep = build_episode(
                item.data,
                scope.with_sender(item.sender_id),
                origin="import",
                episode_id=new_ids[item.n],
                timestamp=item.timestamp or now,
                import_original_id=item.original_id,
                shared=item.shared,
            )
            confidence, extra = _imported_marks(item)
            ep = replace(
                ep,
                supersedes=sup,
                superseded_by=by,
                confidence=confidence,
                extra=_remap_lineage(extra, id_map),
            )
            episodes.append(ep)
        patches = _repair_links(episodes, {e.id: e for e in existing})
        if episodes:
            ids = [e.id for e in episodes]
            summary = f"import {batch}: {len(ids)} memories imported, {skipped} duplicates skipped" + (
                f", {len(patches)} links re-joined" if patches else ""
            )
            steps = _import_steps(service, scope, episodes, patches, ((ids + [p.id for _, p in patches])[:50], summary))
            await service.writes.mutate(actor, OPERATION, steps)
    log.info("import into %s: %d new, %d skipped (%s)", scope.user_key, len(episodes), skipped, batch)
    return ImportReport(len(episodes), skipped, [e.id for e in episodes], batch, dropped)


def _repair_links(new: list[Episode], existing: dict[str, Episode]) -> list[tuple[Episode, Episode]]:
    """Re-join supersede links to episodes already in the scope (e.g. imported from an earlier page,
    whose link was dropped then): ``(original, patched)`` pairs of existing episodes."""
    patched: dict[str, tuple[Episode, Episode]] = {}

    def current(eid: str) -> Episode | None:
        return patched[eid][1] if eid in patched else existing.get(eid)

    for ep in new:
        for sid in ep.supersedes:
            old = current(sid)
            if old is not None and old.status == "superseded" and not old.superseded_by:
                patched[sid] = (existing[sid], old.retagged(superseded_by=ep.id))
        if ep.superseded_by:
            newer = current(ep.superseded_by)
            if newer is not None and ep.id not in newer.supersedes:
                patched[newer.id] = (existing[newer.id], newer.retagged(supersedes=[*newer.supersedes, ep.id]))
    return list(patched.values())


def _import_steps(
    service: TransferHost,
    scope: Scope,
    episodes: list[Episode],
    patches: list[tuple[Episode, Episode]],
    audit: tuple[list[str], str],
) -> list[WriteStep]:
    """The writes of one import batch, ``WRITE_CHUNK`` rows each: the new rows (taken back by
    deleting them: their ids are all new), then the re-joined links of existing rows (taken back by
    writing the originals). The service makes them all or nothing. A re-joined link changes no
    status, so its step expects nothing recovery could check."""
    lock_key = l2_lock_key(scope)
    steps = service.writes.new_row_steps(scope, episodes, OPERATION, audit, WRITE_CHUNK)
    for i in range(0, len(patches), WRITE_CHUNK):
        pairs = patches[i : i + WRITE_CHUNK]
        steps.append(
            WriteStep(
                scope,
                lock_key,
                [],
                apply=lambda pairs=pairs: service.writes.upsert(scope, [p for _, p in pairs], OPERATION),
                undo=lambda pairs=pairs: service.writes.upsert(
                    scope, [o for o, _ in pairs], OPERATION + ".undo", fence_check=False
                ),
            )
        )
    return steps


def _remap_lineage(extra: dict[str, Any], id_map: dict[str, str]) -> dict[str, Any]:
    """Lineage ids (a summary's ``sources``) point at ids of this scope after an import, so that
    cascades still find derived records; a source that was not imported is dropped from the list."""
    out = dict(extra)
    if isinstance(out.get("sources"), list):
        out["sources"] = [id_map[s] for s in out["sources"] if isinstance(s, str) and s in id_map]
    return out
