"""The console's Backup and Restore routes (``ltm-backup/1``, :mod:`ltm.service.backup`).

The page API answers one call at a time within the page SDK's 30 s and the host's message size, so
the document travels in parts:

- ``/backup`` ``{}`` builds the whole document once (one read of every memory, audited) and answers
  its first part with a ``backup_id``; ``{"backup_id", "part"}`` answers the next parts from the
  copy the installation's service holds (``MemoryService.held_backups``: memory only, never
  stored, dropped by every erase);
- ``/restore/check`` ``{"header", "trailer", "shas", "kinds"}``: the whole document's digest and
  counts, before the first write;
- ``/restore`` ``{"lines", "kb_map", "verify"}``: one chunk (the header line first) restored, or
  with ``verify`` read back; the answer is the chunk's counts.

The console and ``python -m pages.move_cli`` drive these the same way.
"""

from __future__ import annotations

from typing import Any

from ltm.service import BACKUP_MAX_CHUNK_LINES, BACKUP_MAX_LINE_CHARS, Actor, MemoryService

from .requests import BadRequest, Body

PART_LINES = 400


async def backup_route(service: MemoryService, body: Body, actor: Actor) -> dict[str, Any]:
    bid = body.text("backup_id", max_len=64)
    part = body.integer("part", 0, 0, 1_000_000)
    if not bid:
        lines = await service.backup(actor)
        bid = service.held_backups.keep(lines)
    else:
        service.require_mover("backup", actor)
        held = service.held_backups.get(bid)
        if held is None:
            raise BadRequest("move.expired")
        lines = held
    parts = max(1, -(-len(lines) // PART_LINES))
    if part >= parts:
        raise BadRequest("err.field_range", field="part", lo=0, hi=parts - 1)
    trailer = lines[-1]
    return {
        "backup_id": bid,
        "part": part,
        "parts": parts,
        "lines": lines[part * PART_LINES : (part + 1) * PART_LINES],
        "total_lines": len(lines),
        "trailer": trailer,
        "filename": f"ltm-backup-{bid[:8]}.jsonl",
    }


def _lines(body: Body, name: str, limit: int) -> list[str]:
    v = body.raw.get(name)
    if not isinstance(v, list) or not v or len(v) > limit or not all(isinstance(x, str) for x in v):
        raise BadRequest("err.field_text", field=name)
    return v


def _kb_map(body: Body) -> dict[str, str]:
    v = body.raw.get("kb_map") or {}
    if (
        not isinstance(v, dict)
        or len(v) > 100
        or not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())
    ):
        raise BadRequest("err.field_text", field="kb_map")
    return {k.strip(): x.strip() for k, x in v.items() if k.strip() and x.strip()}


async def check_route(service: MemoryService, body: Body, actor: Actor) -> dict[str, Any]:
    header = body.text("header", required=True, max_len=BACKUP_MAX_LINE_CHARS)
    trailer = body.text("trailer", required=True, max_len=BACKUP_MAX_LINE_CHARS)
    shas = _lines(body, "shas", 5_000_000)
    kinds = _lines(body, "kinds", 5_000_000)
    return service.check_backup(actor, header, trailer, shas, kinds)


async def restore_route(service: MemoryService, body: Body, actor: Actor) -> dict[str, Any]:
    lines = _lines(body, "lines", BACKUP_MAX_CHUNK_LINES + 2)
    verify = body.raw.get("verify") is True
    report = await service.restore_backup(actor, lines, _kb_map(body), verify=verify)
    return {"verify": verify, **report.to_dict()}
