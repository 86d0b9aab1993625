"""The host deletes a memory knowledge base: through the loaded plugin's engine, everything kept
beside it goes with it - candidates, tombstones, the last-turn snapshot that showed it, its recall
snapshots - while another knowledge base's records stay (the positive control) and the audit log of
both is kept."""

from __future__ import annotations

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.scope import AUDIT_PREFIX, CAND_PREFIX, INJECT_PREFIX, TOMB_PREFIX
from ltm.service import Actor
from ltm.service.snapshots import InjectionSnapshot
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin

pytestmark = pytest.mark.asyncio
BOT = "bot-del"
GONE, KEPT = "kb-gone", "kb-kept"
ADMIN = Actor(surface="test", sender_id="admin", privilege=2)


async def _seed(plugin: object, kb: str, who: str) -> None:
    svc = plugin.service  # type: ignore[attr-defined]
    scope = await svc.scope_for(kb_id=kb, session_name=f"person_{who}", bot_uuid=BOT, sender_id=who)
    await plugin.review.propose(scope, Proposal(f"{who} likes tea", "", "preference"), ADMIN, origin="test")  # type: ignore[attr-defined]
    ep, _ = await svc.remember(scope, {"content": f"{who} lives in Oslo"}, ADMIN)
    await svc.forget(scope, ep.id, ADMIN, never=True)  # a tombstone
    await svc.save_injection(scope, InjectionSnapshot(at="2026-01-01T00:00:00Z", injected=True))


async def test_deleting_a_knowledge_base_takes_what_was_kept_beside_it() -> None:
    fake = FakeHostHandler(bots=[BOT])
    for kb in (GONE, KEPT):
        fake.add_knowledge_base(kb)
    ctl = await load_plugin(fake, {"candidate_extraction_enabled": True})
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    for kb in (GONE, KEPT):
        await engine.on_knowledge_base_create(kb, {"embedding_model": "emb-1", "isolation": "session"})
    plugin = engine.plugin
    await _seed(plugin, GONE, "alice")
    await _seed(plugin, KEPT, "bob")
    kv = plugin.service.kv

    async def keys(prefix: str) -> list[str]:
        return await kv.keys(prefix)

    before = {p: await keys(p) for p in (CAND_PREFIX, TOMB_PREFIX, INJECT_PREFIX, AUDIT_PREFIX)}
    # positive control: both knowledge bases hold candidates, tombstones and a last-turn snapshot
    for kb in (GONE, KEPT):
        assert any(kb in k for k in before[CAND_PREFIX]) and any(kb in k for k in before[TOMB_PREFIX])
    assert len(before[INJECT_PREFIX]) == 2

    await engine.on_knowledge_base_delete(GONE)

    after = {p: await keys(p) for p in (CAND_PREFIX, TOMB_PREFIX, INJECT_PREFIX, AUDIT_PREFIX)}
    assert not any(GONE in k for k in after[CAND_PREFIX] + after[TOMB_PREFIX])
    assert [k for k in before[CAND_PREFIX] if KEPT in k] == after[CAND_PREFIX]
    assert [k for k in before[TOMB_PREFIX] if KEPT in k] == after[TOMB_PREFIX]
    assert after[INJECT_PREFIX] == [k for k in before[INJECT_PREFIX] if "bob" in k]
    assert after[AUDIT_PREFIX] == before[AUDIT_PREFIX]  # the record of what was done stays
    assert await plugin.service.kb_settings(GONE) is None and await plugin.service.kb_settings(KEPT) is not None
    # the kept knowledge base still works: its tombstone still refuses the value
    bob = await plugin.service.scope_for(kb_id=KEPT, session_name="person_bob", bot_uuid=BOT, sender_id="bob")
    with pytest.raises(Exception, match="(?i)forgot|tomb|never|reject"):
        await plugin.service.remember(bob, {"content": "bob lives in Oslo"}, ADMIN)
