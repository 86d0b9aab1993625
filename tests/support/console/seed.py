"""A MemoryService (numpy index, in-memory KV, hashing embedder) seeded for the console tests.

Stored text includes markup and script that must show as text in every panel (``HOSTILE``).
The clock ticks one minute per call so ordering is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ltm.domain.candidates import Proposal
from ltm.domain.scope import Scope
from ltm.service import MemoryService
from ltm.service.consolidation import ConsolidationSettings, Consolidator
from ltm.service.review import ReviewQueue
from ltm.service.snapshots import InjectionSnapshot
from tests.support import ADMIN, KB, build_service, restarted, scope_of, with_consolidator, with_review

HOSTILE_SCRIPT = '<script>window.__pwned = "script"</script>'
HOSTILE_IMG = "<img src=/pwned-img onerror=\"window.__pwned='img'\">"
HOSTILE_SVG = '"><svg onload="window.__pwned=\'svg\'"></svg><a href="javascript:window.__pwned=\'a\'">x</a>'
HOSTILE_TPL = "{{7*7}} ${7*7} {name} %s &lt;b&gt; &amp;"
HOSTILE = (HOSTILE_SCRIPT, HOSTILE_IMG, HOSTILE_SVG, HOSTILE_TPL)
N_PLAIN = 24  # plain active episodes of alice: more than one page of 20


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    state = {"t": start or datetime(2024, 6, 1, 8, 0, tzinfo=UTC)}

    def clock() -> datetime:
        state["t"] += timedelta(minutes=1)
        return state["t"]

    return clock


def consolidation_settings() -> ConsolidationSettings:
    """Consolidation on, no model (archive-only cleanup), no age threshold: the seeded superseded
    record is a cleanup candidate at once."""
    return ConsolidationSettings(
        enabled=True, model_uuid="", min_age_days=0, max_candidates=20, apply_profile_updates=False
    )


@dataclass
class Seeded:
    service: MemoryService
    alice: Scope
    bob: Scope
    group: Scope
    tea_id: str = ""
    hostile_ids: list[str] = field(default_factory=list)
    archived_id: str = ""
    superseded_id: str = ""
    bob_id: str = ""
    carol_id: str = ""
    dave_id: str = ""
    dated_ids: list[str] = field(default_factory=list)
    review: ReviewQueue | None = None
    consolidator: Consolidator | None = None
    pending_id: str = ""  # a pending candidate of alice
    conflict_id: str = ""  # a candidate of alice that contradicts "Alice moved to Lyon"
    lyon_id: str = ""


async def seeded_service(tmp: Path) -> Seeded:
    clock = ticking_clock()
    svc = await build_service("numpy", tmp, clock=clock)
    alice = await scope_of(svc)  # person_alice / bot1 / sender alice
    bob = await scope_of(svc, "person_bob", "bob")
    group = await svc.scope_for(kb_id=KB, session_name="group_g1", bot_uuid="bot1", sender_id="carol")
    s = Seeded(service=svc, alice=alice, bob=bob, group=group)

    await svc.update_profile(
        alice,
        {
            "target": "session",
            "name": HOSTILE_SCRIPT,
            "add_traits": [HOSTILE_IMG, "likes tea"],
            "set_preferences": {"drink": HOSTILE_SVG},
            "add_notes": [HOSTILE_TPL],
        },
        ADMIN,
    )
    await svc.update_profile(alice, {"target": "speaker", "name": "Alice", "add_traits": ["vegetarian"]}, ADMIN)
    await svc.update_profile(bob, {"target": "session", "name": "Bob's private session"}, ADMIN)
    await svc.update_profile(group, {"target": "speaker", "name": "Carol"}, ADMIN)

    for i in range(N_PLAIN):
        await svc.remember(alice, {"content": f"Plain memory number {i:02d} about the weather"}, ADMIN)
    for n, text in enumerate(HOSTILE):
        ep, _ = await svc.remember(
            alice, {"content": f"hostile {n}: {text}", "tags": [text[:60]], "source_ref": text[:200]}, ADMIN
        )
        s.hostile_ids.append(ep.id)
    tea, _ = await svc.remember(alice, {"content": "Alice drinks jasmine tea every morning"}, ADMIN)
    s.tea_id = tea.id
    old, _ = await svc.remember(alice, {"content": "Alice lives in Paris"}, ADMIN)
    await svc.remember(alice, {"content": "Alice moved to Lyon", "supersedes": [old.id]}, ADMIN)
    s.superseded_id = old.id
    arch, _ = await svc.remember(alice, {"content": "Alice once owned a red bicycle"}, ADMIN)
    await svc.set_status(alice, arch.id, "archived", ADMIN, reason=HOSTILE_IMG)
    s.archived_id = arch.id
    for day in (3, 10, 20):
        raw = {"content": f"Alice's dentist visit on June {day}", "event_at": f"2023-06-{day:02d}T09:00:00Z"}
        ep, _ = await svc.remember(alice, raw, ADMIN)
        s.dated_ids.append(ep.id)

    b, _ = await svc.remember(bob, {"content": "Bob's secret: the vault code is 1234"}, ADMIN)
    s.bob_id = b.id
    c, _ = await svc.remember(group, {"content": "Carol prefers green tea"}, ADMIN)
    s.carol_id = c.id
    d, _ = await svc.remember(group.with_sender("dave"), {"content": "Dave plays the violin"}, ADMIN)
    s.dave_id = d.id

    # The review queue joins after the seed memories were written (the seed bypasses review): the
    # plugin's graph (review queue, consolidator) made over the same stores, as after a restart.
    svc = restarted(
        svc, clock=clock, review=with_review(), consolidator=with_consolidator(None, settings=consolidation_settings)
    )
    s.service, s.review, s.consolidator = svc, svc.review, svc.consolidator
    assert s.review is not None
    s.lyon_id = next(
        e.id for e in (await svc.list_episodes(alice, page_size=100)).items if e.content == "Alice moved to Lyon"
    )
    pending = await s.review.propose(
        alice,
        Proposal("I prefer window seats on long flights.", "I prefer window seats on long flights.", "preference"),
        ADMIN,
        origin="rules",
        source_ref="query:41",
    )
    s.pending_id = pending.id
    conflict = await s.review.propose(
        alice,
        Proposal("Alice moved to Berlin", "Alice moved to Berlin", "correction"),
        ADMIN,
        origin="model",
        source_ref="query:42",
    )
    s.conflict_id = conflict.id

    await svc.save_injection(
        alice,
        InjectionSnapshot.from_record(
            {
                "at": "2024-06-01T09:00:00Z",
                "injected": True,
                "blocks": 1,
                "chars": 321,
                "tokens": 80,
                "block_tokens": 120,
                "speaker": {"id": "alice", "name": HOSTILE_SCRIPT},
                "profiles_used": ["session", "speaker"],
                "episodes": [tea.id, s.hostile_ids[1], "ep_gone000000000000000"],
                "shown_ids": [tea.id[3:8], s.hostile_ids[1], "ep_gone000000000000000"],  # the block's short ids
                "query_id": 7,
            }
        ),
    )
    return s
