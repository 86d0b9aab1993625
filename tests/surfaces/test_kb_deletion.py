"""The host deletes a memory knowledge base: through the loaded plugin's engine, everything kept
beside it goes with it - candidates, tombstones, the last-turn snapshot that showed it, its recall
snapshots - while another knowledge base's records stay (the positive control) and the audit log of
both is kept."""

from __future__ import annotations

import json

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.filters import Criteria
from ltm.domain.storage_keys import (
    AUDIT_PREFIX,
    CAND_PREFIX,
    FENCE_PREFIX,
    INJECT_PREFIX,
    TOMB_PREFIX,
    inject_key,
    l2_lock_key,
)
from ltm.service import Actor
from ltm.service.snapshots import InjectionSnapshot
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin

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


async def _seed_leftovers(plugin: object, kb: str, who: str) -> tuple[str, str]:
    """What issue 35 found left behind (finding 4): a write fence stored by another process, a
    document index, a recall snapshot, and an older last-turn snapshot that names no knowledge
    base but shows one of this knowledge base's rows. Returns (the row's id, that snapshot's key)."""
    svc = plugin.service  # type: ignore[attr-defined]
    scope = await svc.scope_for(kb_id=kb, session_name=f"person_{who}", bot_uuid=BOT, sender_id=who)
    doc = {"session_name": f"person_{who}", "bot_uuid": BOT, "sender_id": who}
    await svc.ingest_document(kb, f"doc-{who}", {**doc, "episodes": [{"content": f"{who} plays the oboe"}]}, ADMIN)
    (row,) = [e for e in await svc.fetch(scope, Criteria()) if "oboe" in e.content]
    fence = {"lock_key": l2_lock_key(scope), "operation": "x", "dispatched_at": "", "detail": "", "scope": {}}
    await svc.kv.set(FENCE_PREFIX + l2_lock_key(scope), json.dumps(fence).encode())  # another process's
    await svc.recall(scope, "oboe")
    await svc.writes.index.flush_snapshots()
    chat = await svc.scope_for(kb_id=kb, session_name=f"group_old_{who}", bot_uuid=BOT, sender_id=who)
    old = InjectionSnapshot(
        at="2025-01-01T00:00:00Z",
        injected=True,
        episodes=(row.id,),
        shown_ids=("m1",),
        trace={"query": "oboe", "rows": [{"id": row.id, "preview": row.content, "injected": True}]},
    ).to_record()  # an older build's: no owner, so no knowledge base
    await svc.kv.set(inject_key(chat), json.dumps(old).encode())
    return row.id, inject_key(chat)


async def test_deleting_a_knowledge_base_takes_its_fences_documents_recall_snapshots_and_rows_shown() -> None:
    fake = FakeHostHandler(bots=[BOT])
    for kb in (GONE, KEPT):
        fake.add_knowledge_base(kb)
    ctl = await load_plugin(fake, {"candidate_extraction_enabled": True})
    engine = component(ctl, "KnowledgeEngine", "memory_engine")
    for kb in (GONE, KEPT):
        await engine.on_knowledge_base_create(kb, {"embedding_model": "emb-1", "isolation": "session"})
    plugin = engine.plugin
    kv = plugin.service.kv
    gone_row, gone_snap = await _seed_leftovers(plugin, GONE, "alice")
    kept_row, kept_snap = await _seed_leftovers(plugin, KEPT, "bob")

    def of(keys: list[str], kb: str) -> list[str]:  # a recall snapshot's stamp stays: a random token
        return [k for k in keys if (f"/{kb}/" in k or f":{kb}:" in k) and not k.endswith("/stamp")]

    prefixes = ("doc/", FENCE_PREFIX, "recall/")
    before = {p: await kv.keys(p) for p in prefixes}
    for p in prefixes:  # positive control: both knowledge bases have each
        assert of(before[p], GONE) and of(before[p], KEPT), (p, before[p])

    await engine.on_knowledge_base_delete(GONE)

    after = {p: await kv.keys(p) for p in prefixes}
    for p in prefixes:
        assert not of(after[p], GONE), (p, after[p])
        assert of(after[p], KEPT) == of(before[p], KEPT), p
    # the older snapshots stay (they name no knowledge base), each without the deleted one's rows
    gone_left = json.loads(await kv.get(gone_snap) or b"{}")
    assert gone_left and gone_row not in json.dumps(gone_left) and "alice plays the oboe" not in json.dumps(gone_left)
    kept_left = json.loads(await kv.get(kept_snap) or b"{}")
    assert kept_row in json.dumps(kept_left) and "bob plays the oboe" in json.dumps(kept_left)
