"""Health probe: is memory set up, and does the vector backend really keep scopes apart?

The isolation probe writes two temporary records under two probe keys, then checks that search,
list and delete each stay inside their key, verifying deletes by reading back (the host's Chroma
and Qdrant return 0 from a delete-by-filter even when they deleted). A backend that drops metadata
(the host's Milvus or pgvector) fails the probe: its filters are ignored, so scopes would leak.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..domain.models import build_episode, validate_episode_input
from ..domain.scope import Criteria, Scope, derive_scope, scope_filter
from ..i18n import t
from ..ports import VectorRecord
from .injection import template_check_async
from .memory_service import MemoryService
from .writes import Actor, require_admin

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


async def run_health(
    service: MemoryService,
    scope: Scope,
    pipeline_kbs: Sequence[str] | None = None,
    *,
    probe: bool = True,
    actor: Actor | None = None,
) -> HealthReport:
    """The setup checks of ``scope``; with ``probe``, the isolation probe too, which writes two
    temporary records and so is a memory admin's (``actor``; refused without one)."""
    template = await template_check_async(service.settings.memory_block_template)
    checks: list[Check] = [Check("memory_block_template", *template)]
    kb = await service.kb_settings(scope.collection) if scope.collection else None
    if kb is None:
        checks.append(Check("kb_present", RED, "health.kb_missing"))
        return HealthReport(checks)
    checks.append(Check("kb_present", GREEN, "health.kb_ok", {"kb": kb.kb_id, "isolation": kb.isolation}))
    if pipeline_kbs is None:
        checks.append(Check("kb_in_pipeline", AMBER, "health.pipeline_unknown"))
    elif kb.kb_id in pipeline_kbs:
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


async def isolation_probe(service: MemoryService, collection: str, vector: Sequence[float]) -> Check:
    """Write two probe records under two keys; search, list and delete must each stay inside a key."""
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
    problems: list[str] = []
    try:
        await service.vectors.upsert(collection, records)
        hits = await service.vectors.search(collection, vector, 10, fa)
        hit_ids = {h.id for h in hits}
        if ra.id not in hit_ids:
            problems.append("search: the probe's own record was not found")
        if rb.id in hit_ids:
            problems.append("search: another key's record was returned")
        listed = {i.id for i in (await service.vectors.list(collection, fa, 10, 0)).items}
        if ra.id not in listed:
            problems.append("list: the probe's own record was not listed")
        if rb.id in listed:
            problems.append("list: another key's record was listed")
        await service.vectors.delete(collection, fa)
        after_a = {i.id for i in (await service.vectors.list(collection, fa, 10, 0)).items}
        after_b = {i.id for i in (await service.vectors.list(collection, fb, 10, 0)).items}
        if ra.id in after_a:
            problems.append("delete: the record is still there after delete")
        if rb.id not in after_b:
            problems.append("delete: another key's record was deleted")
    except Exception as exc:
        problems.append(f"backend error: {str(exc)[:200]}")
    finally:
        for f in (fa, fb):
            try:
                await service.vectors.delete(collection, f)
            except Exception as exc:  # cleanup is best effort; the verdict already says what failed
                log.warning("probe cleanup failed: %s", exc)
    if problems:
        log.warning("isolation probe failed on %s: %s", collection, "; ".join(problems))
        return Check("isolation_probe", RED, "health.isolation_failed", {"detail": "; ".join(problems)})
    return Check("isolation_probe", GREEN, "health.isolation_ok")
