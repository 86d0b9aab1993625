"""Sealed and older rows side by side (ltm/service/sealing.py): a row an older build wrote in plain
text reads, recalls, exports and is forgotten as before, with no migration; a new row reaches the
store sealed and reads the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ltm.domain.filters import Criteria, scope_filter
from ltm.domain.models import build_episode, validate_episode_input
from ltm.ports import VectorRecord
from ltm.service.row_codec import VECTOR_KEY, encode_vector
from ltm.service.sealing import SEAL_KEY
from ltm.service.transfer import export_scope, import_scope
from tests.support import ADMIN, KB, build_service, restarted, scope_of

OLD = "Alice's old note: the piano tuner comes on Fridays"
NEW = "Alice's new note: the gardener comes on Mondays"


@pytest.mark.parametrize("kind", ["numpy", "chroma"])
async def test_older_plain_rows_and_sealed_rows_read_alike(tmp_path: Path, kind: str) -> None:
    svc = await build_service(kind, tmp_path)
    s = await scope_of(svc)
    old = build_episode(validate_episode_input({"content": OLD}), s, origin="tool", timestamp="2025-01-01T00:00:00Z")
    (vec,) = await svc.embedder_for(KB, None).embed([OLD])  # type: ignore[arg-type]
    md = {**old.to_metadata(), VECTOR_KEY: encode_vector(vec)}
    await svc.vectors.upsert(KB, [VectorRecord(old.id, list(vec), md, OLD)])  # as an older build wrote it
    new, _ = await svc.remember(s, {"content": NEW}, ADMIN)

    raw = {i.id: i.metadata for i in (await svc.vectors.list(KB, scope_filter(s.user_key), 10, 0)).items}
    assert raw[old.id]["text"] == OLD and SEAL_KEY not in raw[old.id]  # positive control: the old row is plain
    assert raw[new.id]["text"] == "" and SEAL_KEY in raw[new.id] and NEW not in json.dumps(raw[new.id])

    svc2 = restarted(svc)  # nothing in memory: every read goes to the store and the keyring
    listed = {e.id: e.content for e in (await svc2.list_episodes(s, page_size=10)).items}
    assert listed == {old.id: OLD, new.id: NEW}
    assert {r.episode.id for r in (await svc2.recall(s, "who comes on which day?")).episodes} == {old.id, new.id}
    doc = await export_scope(svc2, s, ADMIN)
    assert sorted(e["content"] for e in doc["episodes"]) == sorted([OLD, NEW])
    other = await scope_of(svc2, "person_bob", "bob")
    report = await import_scope(svc2, other, doc, ADMIN)
    assert report.imported == 2
    assert sorted(e.content for e in await svc2.fetch(other, Criteria())) == sorted([OLD, NEW])

    await svc2.forget(s, old.id, ADMIN)
    await svc2.forget(s, new.id, ADMIN)
    assert await svc2.fetch(s, Criteria(statuses=None)) == []
