"""The session gist in the service's recall: read from the scope's in-process index, over the rows
the reader may see, and handed to the ranking (no host call)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.numpy_index import NumpyIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain import gist, ranking
from ltm.domain.filters import Criteria, scope_where
from ltm.service import MemoryService
from ltm.service.session_gist import read_sessions
from tests.support import ADMIN, KB, scope_of

DAY1 = "2024-05-01T10:00:00Z"
DAY1_LATER = "2024-05-01T10:20:00Z"
DAY5 = "2024-05-05T18:00:00Z"
DAY5_LATER = "2024-05-05T18:30:00Z"

POTTERY = [  # one conversation (day 1) about the pottery class
    ("alice", "Alice: we went to the pottery class on Saturday", DAY1),
    ("alice", "Alice: the kids shaped wet clay on the wheel", DAY1),
    ("bob", "Bob: did they glaze anything at the pottery class?", DAY1_LATER),
    ("alice", "Alice: the kids made cups and a bowl", DAY1_LATER),
]
OTHER = [  # another conversation (day 5)
    ("alice", "Alice: the kids made cups again", DAY5),
    ("bob", "Bob: the football match went to extra time", DAY5),
    ("bob", "Bob: pottery class pottery class pottery class, my friend keeps talking about it", DAY5_LATER),
]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """What the service's recall hands to ``ranking.rank`` (the sessions it read)."""
    calls: list[dict[str, Any]] = []
    real = ranking.rank

    def spy(candidates: list[ranking.Candidate], **kw: Any) -> list[tuple[ranking.Candidate, float]]:
        calls.append({"ids": [c.id for c in candidates], **kw})
        return real(candidates, **kw)

    monkeypatch.setattr(ranking, "rank", spy)
    yield calls


async def _service(rows: list[tuple[str, str, str]]) -> tuple[MemoryService, dict[str, str]]:
    emb = HashingEmbedder()
    svc = MemoryService(kv=MemoryKeyValueStore(), vectors=NumpyIndex(), embedder_for=lambda c, kb: emb)
    await svc.register_kb(KB, {"embedding_model": "hash", "isolation": "session"})
    ids: dict[str, str] = {}
    for sender, text, at in rows:
        scope = await scope_of(svc, session="group_g1", sender=sender)
        got = await svc.remember(scope, {"content": text, "event_at": at}, ADMIN)
        ids[text] = got.episode.id
    return svc, ids


def _by_text(sessions: gist.SessionScores, ids: dict[str, str]) -> dict[str, int]:
    return {text: sessions.of[eid] for text, eid in ids.items() if eid in sessions.of}


async def test_sessions_are_the_conversations_and_the_topic_leads(seen: list[dict[str, Any]]) -> None:
    svc, ids = await _service(POTTERY + OTHER)
    scope = await scope_of(svc, session="group_g1", sender="alice")
    await svc.recall(scope, "what did the kids make at the pottery class", limit=5, with_profiles=False)
    sessions = seen[-1]["sessions"]
    assert isinstance(sessions, gist.SessionScores)
    labels = _by_text(sessions, ids)
    day1 = {labels[t] for _, t, _ in POTTERY if t in labels}
    day5 = {labels[t] for _, t, _ in OTHER if t in labels}
    assert len(day1) == 1 and len(day5) == 1 and day1 != day5  # 20 minutes apart: one; four days: two
    (s1,), (s5,) = day1, day5
    assert sessions.dense.size == 2 and {s1, s5} == {0, 1}
    # the pottery conversation is the best unit, though a memory of day 5 repeats the words
    fused = gist.session_scores(sessions.dense, sessions.lexical, ranking.RankSettings().gist_vector_weight)
    assert fused[s1] > fused[s5]


async def test_rows_the_reader_cannot_see_do_not_count(seen: list[dict[str, Any]]) -> None:
    """A recall of one speaker's memories reads the sessions of that speaker's memories only: Bob's
    repeated words on day 5 add nothing to its lexical score (positive control: an open recall
    counts them)."""
    svc, ids = await _service(POTTERY + OTHER)
    scope = await scope_of(svc, session="group_g1", sender="alice")
    await svc.recall(scope, "pottery class", limit=5, with_profiles=False)
    open_ = seen[-1]["sessions"]
    await svc.recall(scope, "pottery class", limit=5, with_profiles=False, only_speaker=True)
    alice = seen[-1]["sessions"]
    s5_open = open_.of[ids[OTHER[2][1]]]
    s5 = alice.of.get(ids[OTHER[0][1]])
    assert open_.lexical[s5_open] > 0.0  # Bob's memory makes day 5 match, when it may be read
    assert s5 is not None and alice.lexical[s5] == 0.0  # Alice's own day-5 memory names no pottery
    assert ids[OTHER[2][1]] not in alice.of


async def test_the_gist_moves_a_memory_of_the_best_conversation_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end through the service: with the stage the evidence is recalled above the day-5
    memory that is a little stronger alone (1 % here, shorter and as close to the question); with
    the stage off (the weight at 0: the control) it is not."""
    svc, ids = await _service(POTTERY + OTHER)
    scope = await scope_of(svc, session="group_g1", sender="carol")
    query = "which cups did the kids make"
    evidence, distractor = ids[POTTERY[3][1]], ids[OTHER[0][1]]

    async def order(weight: float | None) -> list[str]:
        real = ranking.rank

        def at(candidates: list[ranking.Candidate], **kw: Any) -> list[tuple[ranking.Candidate, float]]:
            if weight is not None:
                kw["settings"] = replace(kw["settings"], gist_weight=weight)
            return real(candidates, **kw)

        monkeypatch.setattr(ranking, "rank", at)
        try:
            res = await svc.recall(scope, query, limit=7, with_profiles=False)
        finally:
            monkeypatch.setattr(ranking, "rank", real)
        return [r.episode.id for r in res.episodes]

    off = await order(0.0)
    on = await order(None)
    assert off.index(distractor) < off.index(evidence)
    assert on.index(evidence) < on.index(distractor)


async def test_the_vector_legs_scan_gives_the_same_scores() -> None:
    """The gist reads the similarities the vector leg's scan computed; a scan of other rows (a
    write in between) is not used: the rows are scanned again, with the same result."""
    svc, ids = await _service(POTTERY + OTHER)
    scope = await scope_of(svc, session="group_g1", sender="alice")
    idx = await svc.scope_index(scope)
    emb = HashingEmbedder()
    qv = (await emb.embed(["pottery class cups"]))[0]
    where = scope_where(scope, Criteria(as_of_ts=2e9))
    scan: list[tuple[Any, Any]] = []
    assert idx.vector_search(qv, 5, where, scan=scan)
    alone = read_sessions(idx, "pottery class cups", qv, where, list(ids.values()), gap_s=3600.0)
    read = read_sessions(idx, "pottery class cups", qv, where, list(ids.values()), gap_s=3600.0, scan=scan[0])
    slots, sims = scan[0]
    partial = read_sessions(
        idx, "pottery class cups", qv, where, list(ids.values()), gap_s=3600.0, scan=(slots[:2], sims[:2])
    )
    assert alone is not None and read is not None and partial is not None
    for got in (read, partial):
        assert got.of == alone.of and got.lexical.tolist() == alone.lexical.tolist()
        assert np.allclose(got.dense, alone.dense, atol=1e-6)
    # positive control: a scan with other similarities is read (the scores differ)
    fake = read_sessions(
        idx, "pottery class cups", qv, where, list(ids.values()), gap_s=3600.0, scan=(slots, sims * 0.0 + 0.5)
    )
    assert fake is not None and np.allclose(fake.dense, 0.5, atol=1e-6)


async def test_no_gist_where_the_index_cannot_answer() -> None:
    """An as-of filter (other statuses than active) is not the index's to answer: no gist."""
    svc, ids = await _service(POTTERY + OTHER)
    scope = await scope_of(svc, session="group_g1", sender="alice")
    idx = await svc.scope_index(scope)
    qv = (await HashingEmbedder().embed(["pottery"]))[0]
    history = scope_where(scope, Criteria(statuses=("active", "superseded")))
    assert read_sessions(idx, "pottery", qv, history, list(ids.values()), gap_s=3600.0) is None
    assert read_sessions(idx, "pottery", qv, scope_where(scope), list(ids.values()), gap_s=3600.0) is not None


async def test_the_gist_after_the_index_compacted_its_slots() -> None:
    """A removed row leaves a hole; the recall snapshot compacts the index (its rows move to other
    slots). The gist read before must not be reused by slot after it: the next read equals a fresh
    one (found in the real host, where it raised IndexError after a correction). Control: the
    compaction did move the rows."""
    svc, ids = await _service(POTTERY + OTHER)
    scope = await scope_of(svc, session="group_g1", sender="alice")
    idx = await svc.scope_index(scope)
    qv = (await HashingEmbedder().embed(["pottery class cups"]))[0]
    where = scope_where(scope, Criteria(as_of_ts=2e9))
    kept = [eid for text, eid in ids.items() if text != POTTERY[0][1]]
    assert read_sessions(idx, "pottery class cups", qv, where, kept, gap_s=3600.0) is not None
    assert idx.remove(ids[POTTERY[0][1]])
    before = read_sessions(idx, "pottery class cups", qv, where, kept, gap_s=3600.0)
    slots = dict(idx.pos)
    idx.snapshot("stamp")  # compacts: the hole goes, every later row moves one slot down
    assert idx.pos != slots and len(idx.ids) == len(kept)  # control: the slots moved
    after = read_sessions(idx, "pottery class cups", qv, where, kept, gap_s=3600.0)
    assert before is not None and after is not None
    assert after.of == before.of and after.lexical.tolist() == before.lexical.tolist()
    assert np.allclose(after.dense, before.dense, atol=1e-6)
