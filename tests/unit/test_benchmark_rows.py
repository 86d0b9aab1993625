"""The benchmarks that seed a store directly (``benchmarks.latency``, ``benchmarks.storage_cost``)
write the row ``MemoryService.remember`` writes: ``benchmarks.rows.stored_row`` of the stored
episode and its vector is that row, field for field."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from benchmarks.rows import stored_row
from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.numpy_index import NumpyIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.models import Episode
from ltm.ports import VectorRecord
from ltm.service import Actor, MemoryService
from ltm.service.sealing import unseal


class RecordingIndex(NumpyIndex):
    """The numpy index, keeping every record it was asked to write."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[VectorRecord] = []

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        self.written.extend(records)
        await super().upsert(collection, records)


def test_stored_row_is_the_row_remember_writes() -> None:
    """The row as remember hands it to the seal (opened with its key) is ``stored_row``, and sealed
    the benchmark's row has the stored row's keys in the same order (the sizes count them)."""

    async def remembered() -> tuple[VectorRecord, dict, VectorRecord]:
        index = RecordingIndex()
        emb = HashingEmbedder()
        svc = MemoryService(kv=MemoryKeyValueStore(), vectors=index, embedder_for=lambda c, kb: emb)
        await svc.register_kb("kb1", {"embedding_model": "hash", "isolation": "session"})
        scope = await svc.scope_for(kb_id="kb1", session_name="group_g1", bot_uuid="bot", sender_id="u1")
        raw = {"content": "I moved to Lisbon in May", "tags": ["travel"], "importance": 0.7, "source_ref": "D1:3"}
        await svc.remember(scope, raw, Actor(surface="tool", sender_id="u1"))
        [row] = index.written
        opened = unseal(row.metadata, row.id, await svc.sealed.keyring.key_of("kb1", scope.user_key, row.id))
        built = stored_row(Episode.from_metadata(opened, row.id), row.vector)
        [resealed], _ = await svc.sealed.seal_records("kb1", [built])  # as benchmarks.latency seeds it
        return row, opened, resealed

    row, opened, resealed = asyncio.run(remembered())
    episode = Episode.from_metadata(opened, row.id)
    assert episode.content == "I moved to Lisbon in May" and episode.source_ref == "D1:3"  # a real row
    built = stored_row(episode, row.vector)
    assert built.id == row.id and built.vector == row.vector and built.metadata == opened
    assert list(resealed.metadata) == list(row.metadata)  # the same keys in the same order


def test_kept_chroma_data_is_read_with_the_keys_that_sealed_it(tmp_path) -> None:
    """``benchmarks.latency --keep-data``: a second run on the kept rows opens them (the keys are
    kept beside them), so its cold turn makes the same host calls as the first; without them every
    row read as one written before vectors were carried (16 re-embeds and a host search per turn)."""
    import json

    from benchmarks import latency

    args = ["--sizes", "300", "--scopes", "10", "--hot", "3", "--queries", "4", "--cold", "2", "--remembers", "2"]
    args += ["--paths", "host", "--keep-data", str(tmp_path)]
    calls = []
    for run in (1, 2):
        out = tmp_path / f"r{run}.json"
        assert latency.main([*args, "--out", str(out)]) == 0
        host = json.loads(out.read_text(encoding="utf-8"))["sizes"][0]["host"]
        calls.append(host["cold_first_turn_unseen"]["calls_by_kind"])
    assert calls[0].get("embed") == 1 and "vector.search" not in calls[0], calls[0]
    assert calls[1] == calls[0]
