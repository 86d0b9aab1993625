"""The health probe's verdict is right per backend: green where filters hold, red where they don't."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ltm.adapters.numpy_index import NumpyIndex
from ltm.domain.filters import filter_conditions
from ltm.ports import ListPage, VectorHit, VectorRecord
from ltm.service import MemoryService
from ltm.service.health import AMBER, GREEN, RED, explain, run_health
from tests.support import ADMIN, KB, scope_of

KEPT = ("text", "file_id", "uuid")


class MetadataDroppingIndex:
    """Host semantics of Milvus/pgvector (host reference §4.1): only text, file_id and uuid are
    persisted; filters on any other key are silently ignored (delete-by-filter on stripped keys is a
    guarded no-op)."""

    name = "milvus-like"

    def __init__(self) -> None:
        self.inner = NumpyIndex()

    @staticmethod
    def _strip(where: dict[str, Any]) -> dict[str, Any] | None:
        kept = [{f: {op: v}} for f, op, v in filter_conditions(where) if f in KEPT]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else {"$and": kept}

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        slim = [
            VectorRecord(r.id, r.vector, {k: v for k, v in r.metadata.items() if k in KEPT}, r.document)
            for r in records
        ]
        await self.inner.upsert(collection, slim)

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        return await self.inner.search(collection, vector, top_k, self._strip(where) or {"file_id": {"$ne": ""}})

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        return await self.inner.list(collection, self._strip(where) or {"file_id": {"$ne": ""}}, limit, offset)

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        stripped = self._strip(where)
        if stripped is not None:
            await self.inner.delete(collection, stripped)

    async def drop_collection(self, collection: str) -> None:
        await self.inner.drop_collection(collection)


async def test_green_on_real_engines(service: MemoryService) -> None:
    scope = await scope_of(service)
    report = await run_health(service, scope, [KB], actor=ADMIN)
    assert report.verdict == GREEN, report.to_dict()
    assert [c.name for c in report.checks] == [
        "memory_block_template",
        "kb_present",
        "kb_in_pipeline",
        "embedding_model",
        "isolation_probe",
    ]
    # the probe leaves nothing behind in the real scope or elsewhere
    assert (await service.list_episodes(scope, statuses=None)).items == []


async def test_red_on_metadata_dropping_backend(fast_service: MemoryService) -> None:
    # the same storage (the KB registered where metadata is kept), its vectors now on a backend that drops it
    svc = MemoryService(kv=fast_service.kv, vectors=MetadataDroppingIndex(), embedder_for=fast_service.embedder_for)
    scope = await scope_of(svc)
    report = await run_health(svc, scope, [KB], actor=ADMIN)
    probe = report.checks[-1]
    assert probe.name == "isolation_probe" and probe.verdict == RED
    assert "another key" in probe.args["detail"]


async def test_red_without_kb(fast_service: MemoryService) -> None:
    scope = await fast_service.scope_for(kb_id="", session_name="person_x")
    report = await run_health(fast_service, scope, [])
    assert report.verdict == RED and report.checks[1].key == "health.kb_missing"
    assert report.checks[0].name == "memory_block_template"  # reported with or without a knowledge base


async def test_the_console_reads_the_pipeline_of_the_scopes_last_turn(fast_service: MemoryService) -> None:
    """A surface without a pipeline (the console passes None) reads the pipeline that served the
    scope's last turn: green when it listed the memory KB, amber when it did not, amber "cannot
    tell" with no turn recorded or a snapshot of an older build; a caller's own list still decides."""
    svc = fast_service
    scope = await scope_of(svc)

    async def pipeline_check(kbs: Sequence[str] | None = None) -> tuple[str, str, dict[str, Any]]:
        c = next(c for c in (await run_health(svc, scope, kbs, probe=False)).checks if c.name == "kb_in_pipeline")
        return c.verdict, c.key, c.args

    assert await pipeline_check() == (AMBER, "health.pipeline_unknown", {})  # no turn yet
    await svc.remember(scope, {"content": "Alice drinks jasmine tea"}, ADMIN)
    injection = await svc.prepare_turn(scope, "what tea?")
    assert injection is not None
    svc.record_turn(scope, injection)  # a caller that did not say (an older listener)
    await svc.snapshot_writer.drain()
    assert await pipeline_check() == (AMBER, "health.pipeline_unknown", {})
    svc.record_turn(scope, injection, ["kb-other", KB])
    await svc.snapshot_writer.drain()
    at = datetime.fromisoformat(injection.snapshot.at).strftime("%Y-%m-%d %H:%M UTC")
    assert await pipeline_check() == (GREEN, "health.pipeline_seen", {"at": at})
    assert await pipeline_check(["kb-other"]) == (AMBER, "health.pipeline_fallback", {})  # the caller's list wins
    svc.record_turn(scope, injection, ["kb-other"])
    await svc.snapshot_writer.drain()
    assert await pipeline_check() == (AMBER, "health.pipeline_fallback", {})
    assert await pipeline_check([KB]) == (GREEN, "health.pipeline_ok", {})
    for lang in ("en_US", "zh_Hans", "zh_Hant", "ja_JP", "es_ES", "vi_VN", "th_TH"):
        text = explain("health.pipeline_seen", lang, {"at": at})
        assert at in text and text != "health.pipeline_seen"
