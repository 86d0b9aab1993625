"""Health probe: is memory set up, and does the vector backend really keep scopes apart?

The isolation probe writes two temporary records under two probe keys, then checks that search,
list and delete each stay inside their key, verifying deletes by reading back (the host's Chroma
and Qdrant return 0 from a delete-by-filter even when they deleted). On a backend that drops
metadata (the host's Milvus, pgvector, Valkey Search) the probe goes through the sidecar like every
verb (ltm/service/sidecar.py, ADR 0008): the host is asked with the file ids of one key's rows, so
it passes only because the store's own file_id filter keeps the keys apart.
Read-backs wait for a write to become visible (SeekDB's search lags its writes by up to ~2 s).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..domain.backends import file_id_where
from ..domain.errors import LtmError
from ..domain.filters import Criteria, scope_filter
from ..domain.models import build_episode, validate_episode_input
from ..domain.scope import Scope, derive_scope
from ..domain.timefields import minute_text
from ..i18n import t
from ..ports import VectorRecord
from .neighbours import HealthHost
from .readback import read_until
from .writes.actor import Actor, require_admin

log = logging.getLogger(__name__)

GREEN, AMBER, RED = "green", "amber", "red"
_ORDER = {GREEN: 0, AMBER: 1, RED: 2}


@dataclass
class Check:
    name: str
    verdict: str
    key: str  # locale key of the explanation
    args: dict[str, Any] = field(default_factory=dict)


def explain(key: str, lang: str, args: dict[str, Any]) -> str:
    """A check's explanation in ``lang``; an arg ``note`` names (as a locale key) a second sentence
    that follows it, formatted with the same args (a template's budget names the limit it hit)."""
    text = t(key, lang, **args)
    note = str(args.get("note") or "")
    return f"{text} {t(note, lang, **args)}" if note.startswith("health.") else text


@dataclass
class HealthReport:
    checks: list[Check]

    @property
    def verdict(self) -> str:
        return max((c.verdict for c in self.checks), key=lambda v: _ORDER[v], default=GREEN)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "checks": [{"name": c.name, "verdict": c.verdict, "key": c.key, "args": c.args} for c in self.checks],
        }


def _minute(iso: str) -> str:
    """``2026-12-05 09:43 UTC`` for a stored ISO instant (the text itself when it is not one)."""
    try:
        return minute_text(iso)
    except LtmError:
        return iso


async def run_health(
    service: HealthHost,
    scope: Scope,
    pipeline_kbs: Sequence[str] | None = None,
    *,
    probe: bool = True,
    actor: Actor | None = None,
) -> HealthReport:
    """The setup checks of ``scope``; with ``probe``, the isolation probe too, which writes two
    temporary records and so is a memory admin's (``actor``; refused without one).

    ``pipeline_kbs``: the knowledge bases of the pipeline asking (a command in a chat). A surface
    without a pipeline (the console) passes None, and the check reads the pipeline that served the
    scope's last turn (its snapshot); with no turn recorded it cannot tell."""
    template = await service.block_renderer.check_async(service.settings.memory_block_template)
    checks: list[Check] = [Check("memory_block_template", *template)]
    kb = await service.kb_settings(scope.collection) if scope.collection else None
    if kb is None:
        checks.append(Check("kb_present", RED, "health.kb_missing"))
        return HealthReport(checks)
    checks.append(Check("kb_present", GREEN, "health.kb_ok", {"kb": kb.kb_id, "isolation": kb.isolation}))
    seen_at = ""
    if pipeline_kbs is None and (last := await service.last_injection(scope)) is not None:
        if last.pipeline_kbs is not None:
            pipeline_kbs, seen_at = last.pipeline_kbs, _minute(last.at)
    if pipeline_kbs is None:
        checks.append(Check("kb_in_pipeline", AMBER, "health.pipeline_unknown"))
    elif kb.kb_id in pipeline_kbs:
        if seen_at:
            checks.append(Check("kb_in_pipeline", GREEN, "health.pipeline_seen", {"at": seen_at}))
        else:
            checks.append(Check("kb_in_pipeline", GREEN, "health.pipeline_ok"))
    else:
        checks.append(Check("kb_in_pipeline", AMBER, "health.pipeline_fallback"))
    if not kb.embedding_model:
        checks.append(Check("embedding_model", RED, "health.embedding_missing"))
        return HealthReport(checks)
    try:
        vecs = await service.embedder_for(kb.kb_id, kb).embed(["health probe"])
        dim = len(vecs[0]) if vecs else 0
        checks.append(Check("embedding_model", GREEN if dim else RED, "health.embedding_ok", {"dim": dim}))
    except Exception as exc:
        checks.append(Check("embedding_model", RED, "health.embedding_failed", {"detail": str(exc)[:200]}))
        return HealthReport(checks)
    if probe:
        require_admin("health.probe", actor, service.settings)
        checks.append(await isolation_probe(service, kb.kb_id, vecs[0]))
    return HealthReport(checks)


async def isolation_probe(service: HealthHost, collection: str, vector: Sequence[float]) -> Check:
    """Write two probe records under two keys; search, list and delete must each stay inside a key.

    Nothing is concluded from a read too early: each read-back is retried within the write
    engine's bound (``readback_delays``) until the probe's own record shows (or is gone, after the
    delete). A leak is reported only when another key's record was actually returned; a probe
    record that never became visible makes the result inconclusive (amber), never red. The probe
    rows are removed by ``file_id``, the one field every backend keeps and filters."""
    run = uuid.uuid4().hex[:12]
    scopes = [
        derive_scope(session_name=f"person_ltmprobe{run}{side}", bot_uuid="__ltm_probe__", collection=collection)
        for side in ("a", "b")
    ]
    records = []
    for scope in scopes:
        ep = build_episode(validate_episode_input({"content": "ltm isolation probe"}), scope, origin="tool")
        records.append(VectorRecord(id=ep.id, vector=list(vector), metadata=ep.to_metadata(), document=ep.content))
    a, b = scopes
    ra, rb = records
    fa = scope_filter(a.user_key, Criteria(statuses=None))
    fb = scope_filter(b.user_key, Criteria(statuses=None))
    delays = service.writes.readback_delays
    problems: list[str] = []
    pending: list[str] = []
    vectors = service.vectors

    async def search_a() -> set[str]:
        return {h.id for h in await vectors.search(collection, vector, 10, fa)}

    async def list_of(where: dict[str, Any]) -> set[str]:
        return {i.id for i in (await vectors.list(collection, where, 10, 0)).items}

    def settled(ids: set[str]) -> bool:  # the own record shows, or a foreign one already leaked
        return ra.id in ids or rb.id in ids

    try:
        await vectors.upsert(collection, records)
        hit_ids, _ = await read_until(search_a, settled, delays)
        if rb.id in hit_ids:
            problems.append("search: another key's record was returned")
        elif ra.id not in hit_ids:
            pending.append("search")
        listed, _ = await read_until(lambda: list_of(fa), settled, delays)
        if rb.id in listed:
            problems.append("list: another key's record was listed")
        elif ra.id not in listed:
            pending.append("list")
        await vectors.delete(collection, fa)
        after_a, gone = await read_until(lambda: list_of(fa), lambda ids: ra.id not in ids, delays)
        after_b = await list_of(fb)
        if not gone:
            problems.append("delete: the record is still there after delete")
        if rb.id not in after_b:
            problems.append("delete: another key's record was deleted")
    except Exception as exc:
        problems.append(f"backend error: {str(exc)[:200]}")
    finally:
        for scope, r in zip(scopes, records, strict=True):
            try:
                # by file_id, the one field every backend keeps and filters; on a dropping backend
                # the sidecar finds the row by its scope (ADR 0008), so that first
                await vectors.delete(collection, scope_filter(scope.user_key, Criteria(statuses=None, ids=(r.id,))))
                await vectors.delete(collection, file_id_where(r.id))
            except Exception as exc:  # cleanup is best effort; the verdict already says what failed
                log.warning("probe cleanup failed: %s", exc)
    if problems:
        log.warning("isolation probe failed on %s: %s", collection, "; ".join(problems))
        return Check("isolation_probe", RED, "health.isolation_failed", {"detail": "; ".join(problems)})
    if pending:
        waited = round(sum(delays), 1)
        log.warning("isolation probe on %s inconclusive: its record was not yet visible to %s", collection, pending)
        return Check(
            "isolation_probe", AMBER, "health.isolation_pending", {"what": ", ".join(pending), "seconds": waited}
        )
    return Check("isolation_probe", GREEN, "health.isolation_ok")
