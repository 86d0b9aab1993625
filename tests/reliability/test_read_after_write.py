"""Read-after-write without instant visibility (issue 25, item 2).

SeekDB's vector search sees a new vector only 0.1-2 s after its write while its listing sees it at
once (docs/host-facts.md). The fake host reproduces that with ``search_visible_after_s``. What the
plugin reads back from the host waits, within a bound, before it concludes; the health probe never
reports a leak it did not see: a probe record not yet visible is inconclusive (amber), not red.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ltm.domain.backends import READBACK_DELAYS_S, readback_delays
from ltm.ports import ListPage
from ltm.service import MemoryService
from ltm.service.health import AMBER, GREEN, RED, isolation_probe, run_health
from tests.support import ADMIN, DelegatingIndex, build_service, scope_of
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import EMBEDDING_MODEL, KB, host_service


async def seekdb_like(lag_s: float) -> tuple[FakeHostHandler, MemoryService]:
    fake = FakeHostHandler(bots=["bot1"], search_visible_after_s=lag_s)
    svc = host_service(fake)
    fake.add_knowledge_base(KB)
    await svc.register_kb(KB, {"embedding_model": EMBEDDING_MODEL})
    return fake, svc


def probe_check(report: Any) -> Any:
    return next(c for c in report.checks if c.name == "isolation_probe")


async def test_fake_host_delays_search_but_not_listing() -> None:
    """The adapter's own positive control: right after a write, listing finds it, search does not;
    a moment later search does."""
    fake, svc = await seekdb_like(0.3)
    scope = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    ep, _ = await svc.remember(scope, {"content": "Alice keeps bees"}, ADMIN)
    vec = (await (await svc.embedder(scope)).embed(["Alice keeps bees"]))[0]
    where = {"file_id": {"$eq": ep.id}}
    assert [i.id for i in (await svc.vectors.list(KB, where, 5, 0)).items] == [ep.id]
    assert [h.id for h in await svc.vectors.search(KB, vec, 5, where)] == []
    fake.clock = lambda: float("inf")  # long after the write
    assert [h.id for h in await svc.vectors.search(KB, vec, 5, where)] == [ep.id]


async def test_probe_is_green_when_search_lags_the_write() -> None:
    fake, svc = await seekdb_like(0.4)
    scope = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    report = await run_health(svc, scope, [KB], actor=ADMIN)
    probe = probe_check(report)
    assert probe.verdict == GREEN, probe
    assert fake.vector_rows(KB)["ids"] == []  # the probe leaves nothing behind


async def test_probe_not_yet_visible_is_inconclusive_never_red() -> None:
    fake, svc = await seekdb_like(3600.0)  # never visible within the bound
    svc.writes.readback_delays = (0.01, 0.01)
    scope = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    report = await run_health(svc, scope, [KB], actor=ADMIN)
    probe = probe_check(report)
    assert probe.verdict == AMBER and probe.key == "health.isolation_pending", probe
    assert report.verdict != RED
    assert fake.vector_rows(KB)["ids"] == []


@pytest.mark.parametrize("vdb", ["milvus", "pgvector", "valkey"])
async def test_a_leak_it_sees_is_still_red(vdb: str) -> None:
    """Positive control of the two above: a backend that drops the filters is red at once, lag or
    not, when the scope is not kept in its file_id (the sidecar's isolation switched off); with it,
    the same backend is green because its own file_id filter keeps the keys apart (ADR 0008)."""
    fake = FakeHostHandler(vdb=vdb, search_visible_after_s=0.2)
    svc = host_service(fake)
    fake.add_knowledge_base(KB)
    await svc.register_kb(KB, {"embedding_model": EMBEDDING_MODEL})
    vec = (await svc.embedder_for(KB, await svc.kb_settings(KB)).embed(["health probe"]))[0]
    check = await isolation_probe(svc, KB, vec)
    assert check.verdict == GREEN, check
    assert fake.vector_rows(KB)["ids"] == []
    svc.sealed.inner.isolate = False  # the host gets the scope filter as it is, and drops it
    check = await isolation_probe(svc, KB, vec)
    assert check.verdict == RED and "another key" in check.args["detail"], check
    assert fake.vector_rows(KB)["ids"] == []  # removed by file_id although its filters are dropped


class LateDelete(DelegatingIndex):
    """Listing still shows a deleted record for the next ``lag`` listings (a delete that becomes
    visible late)."""

    def __init__(self, inner: Any, lag: int) -> None:
        super().__init__(inner)
        self.lag = lag
        self.ghosts: dict[str, Any] = {}

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        before = await self.inner.list(collection, where, 100, 0)
        await self.inner.delete(collection, where)
        self.ghosts = {i.id: i for i in before.items}

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        page = await self.inner.list(collection, where, limit, offset)
        if self.ghosts and self.lag > 0:
            self.lag -= 1
            return ListPage(items=[*page.items, *self.ghosts.values()][:limit], total=-1)
        return page


async def test_delete_verification_waits_for_the_delete(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path, vectors=lambda v: LateDelete(v, lag=2))
    svc.writes.readback_delays = (0.01, 0.01, 0.01)
    scope = await scope_of(svc)
    ep, _ = await svc.remember(scope, {"content": "Alice keeps bees"}, ADMIN)
    gone = await svc.forget(scope, ep.id, ADMIN)
    assert gone.id == ep.id
    assert (await svc.list_episodes(scope, statuses=None)).items == []


async def test_delete_verification_still_refuses_a_delete_that_never_lands(tmp_path: Path) -> None:
    """Positive control: past the bound a record that is still there is still an error."""
    svc = await build_service("numpy", tmp_path, vectors=lambda v: LateDelete(v, lag=100))
    svc.writes.readback_delays = (0.01,)
    scope = await scope_of(svc)
    ep, _ = await svc.remember(scope, {"content": "Alice keeps bees"}, ADMIN)
    from ltm.domain.errors import LtmError

    with pytest.raises(LtmError) as err:
        await svc.forget(scope, ep.id, ADMIN)
    assert err.value.key == "error.delete_unverified"


async def test_the_default_bound_covers_seekdb() -> None:
    assert 2.0 < sum(READBACK_DELAYS_S) < 5.0  # SeekDB: 0.1-2 s; a health run stays short
    assert sum(readback_delays(3.0)) <= 3.0 and readback_delays(0.01) == ()


async def test_registration_ignores_a_verdict_in_the_creation_settings(tmp_path: Path) -> None:
    """Only the probe decides: a ``backend`` the host's creation settings carry is not taken."""
    svc = await build_service("numpy", tmp_path)
    kb = await svc.register_kb("kb-2", {"embedding_model": "hash", "backend": "drops_metadata"})
    assert kb.backend == "keeps_metadata"  # numpy keeps metadata: no probe needed
    fake = FakeHostHandler(vdb="milvus")
    hsvc = host_service(fake)
    fake.add_knowledge_base(KB)
    kb = await hsvc.register_kb(KB, {"embedding_model": EMBEDDING_MODEL, "backend": "keeps_metadata"})
    assert kb.backend == "drops_metadata" and fake.vector_rows(KB)["ids"] == []


async def test_an_inconclusive_probe_is_retried_on_first_use() -> None:
    """The KB is registered while the host cannot answer (the probe fails): the verdict stays
    unknown and the KB works; the next use after the retry interval probes again."""
    from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A

    from ltm.service import registry

    fake = FakeHostHandler(vdb="milvus")
    svc = host_service(fake)
    fake.add_knowledge_base(KB)
    fake.fail_next(A.VECTOR_UPSERT)
    kb = await svc.register_kb(KB, {"embedding_model": EMBEDDING_MODEL})
    assert kb.backend == ""
    scope = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1")  # within the interval
    assert scope.collection == KB
    old = registry.PROBE_RETRY_S
    registry.PROBE_RETRY_S = 0.0
    try:  # the retry finds the backend dropping metadata: served through the sidecar (ADR 0008)
        scope = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1")
        assert scope.collection == KB
    finally:
        registry.PROBE_RETRY_S = old
    assert (await svc.kb_settings(KB)).backend == "drops_metadata"  # stored: no probe on the next use
    assert await svc.sealed.inner.dropping(KB)  # handed to the sidecar


async def test_a_kb_marked_unusable_before_adr_0008_is_probed_again_and_works() -> None:
    """A KB registered under the old verdict (drops_metadata, no probe version) becomes usable on
    its next use: probed again (its metric measured), then served through the sidecar."""
    import json

    from ltm.service.writes import Actor

    fake = FakeHostHandler(vdb="pgvector")
    svc = host_service(fake)
    fake.add_knowledge_base(KB)
    old = {"embedding_model": EMBEDDING_MODEL, "isolation": "session", "backend": "drops_metadata"}
    await svc.kv.set("kb/" + KB, json.dumps(old).encode())
    scope = await svc.scope_for(kb_id=KB, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    kb = await svc.kb_settings(KB)
    assert (kb.backend, kb.metric, kb.probe) == ("drops_metadata", "cosine", 2)
    ep, _ = await svc.remember(scope, {"content": "Alice drinks jasmine tea"}, Actor(surface="tool", sender_id="alice"))
    assert [r.episode.id for r in (await svc.recall(scope, "tea", limit=3)).episodes] == [ep.id]


async def test_read_until_is_bounded_and_stops_when_done() -> None:
    from ltm.service.readback import read_until

    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    reads = iter(range(100))

    async def read() -> int:
        return next(reads)

    value, done = await read_until(read, lambda v: v >= 2, (0.1, 0.2, 0.3, 0.4), sleep)
    assert (value, done, slept) == (2, True, [0.1, 0.2])  # stopped at the first conclusive read
    slept.clear()
    value, done = await read_until(read, lambda v: v < 0, (0.1, 0.2), sleep)
    assert (done, slept, value) == (False, [0.1, 0.2], 5)  # never conclusive: len(delays) + 1 reads
