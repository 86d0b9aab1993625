"""People's rights over their own memory (issue 35, finding 6), through the service verbs every
surface calls: ``me`` (what the memory holds that a person said, every chat of the bot), ``forget-me``
(a code, then the erasure of everything they said) and opt-out (nothing they say is stored).

Every exclusion has its control: the other person's memories stay and stay unlisted; a wrong or
expired code erases nothing while the right one does; while Alice is opted out Bob keeps working.
Runs on numpy, Chroma and Qdrant: the erased text is looked for in the vector store itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.errors import ScopeError, ValidationError
from ltm.domain.filters import Criteria, scope_filter
from ltm.domain.scope import Scope
from ltm.service import Actor, MemoryService, Settings
from ltm.service.consent import OptedOutError
from ltm.service.people import FORGET_ME_TTL_S
from ltm.service.review import ReviewQueue, ReviewSettings
from ltm.service.transfer import import_scope
from tests.support import KB, build_service, scope_of, with_review
from tests.support.console.state import stored_state
from tests.support.review import ticking_clock

ALICE_SAID = ("I keep bees on my roof", "My sister lives in Porto", "I am allergic to penicillin")
BOB_SAID = "Bob restores old motorbikes"
ROOT = Actor(surface="test", sender_id="root")


def actor(sender: str) -> Actor:
    return Actor(surface="command", sender_id=sender)


@dataclass
class World:
    svc: MemoryService
    review: ReviewQueue
    alice_dm: Scope
    alice_group: Scope
    bob_group: Scope
    pending: dict[str, str] = field(default_factory=dict)  # a candidate of each speaker, by speaker


async def world(
    tmp: Path, kind: str = "numpy", isolation: str = "bot", monotonic: Callable[[], float] | None = None
) -> World:
    svc = await build_service(
        kind,
        tmp,
        settings=lambda: Settings.from_config({"admin_sender_ids": ["root"]}),
        isolation=isolation,
        clock=ticking_clock(),
        monotonic=monotonic,
        review=with_review(settings=lambda: ReviewSettings.from_config({"candidate_extraction_enabled": True})),
    )
    review = svc.review
    assert review is not None
    w = World(
        svc,
        review,
        await scope_of(svc, "person_alice", "alice"),
        await scope_of(svc, "group_g1", "alice"),
        await scope_of(svc, "group_g1", "bob"),
    )
    await svc.remember(w.alice_dm, {"content": ALICE_SAID[0]}, actor("alice"))
    await svc.remember(w.alice_group, {"content": ALICE_SAID[1]}, actor("alice"))
    await svc.remember(w.alice_group, {"content": ALICE_SAID[2]}, actor("alice"))
    await svc.remember(w.bob_group, {"content": BOB_SAID}, actor("bob"))
    await svc.update_profile(w.alice_group, {"target": "speaker", "name": "Alice Liddell"}, actor("alice"))
    await svc.update_profile(w.bob_group, {"target": "speaker", "name": "Bob Builder"}, actor("bob"))
    return w


async def vector_texts(svc: MemoryService, user_key: str) -> str:
    """Every document and metadata value the vector store holds for one user key, as one string: the
    rows as stored (sealed) and as the keys plugin storage still holds open them."""
    where = scope_filter(user_key, Criteria(statuses=None))
    stored = await svc.vectors.list(KB, where, 10_000, 0)
    opened = await svc.sealed.list(KB, where, 10_000, 0)
    rows = [(i.document, i.metadata) for i in [*stored.items, *opened.items]]
    return json.dumps(rows, ensure_ascii=False)


class TestMe:
    async def test_lists_what_the_person_said_in_every_chat_and_nothing_of_anyone_else(self, tmp_path: Path) -> None:
        w = await world(tmp_path)
        held = await w.svc.my_memory(w.alice_dm, actor("alice"))
        assert sorted(e.content for _kb, e in held.episodes) == sorted(ALICE_SAID)
        assert {e.session_name for _kb, e in held.episodes} == {"person_alice", "group_g1"}  # the chat of each
        assert [p.profile.name for p in held.profiles] == ["Alice Liddell"]
        blob = json.dumps(held.to_dict(), ensure_ascii=False)
        assert "motorbikes" not in blob and "Bob Builder" not in blob
        bob = await w.svc.my_memory(await scope_of(w.svc, "person_bob", "bob"), actor("bob"))  # control
        assert [e.content for _kb, e in bob.episodes] == [BOB_SAID]

    async def test_in_a_group_it_shows_nothing_and_says_to_ask_in_private(self, tmp_path: Path) -> None:
        w = await world(tmp_path)
        with pytest.raises(ScopeError) as exc:
            await w.svc.my_memory(w.alice_group, actor("alice"))
        assert exc.value.key == "privacy.me.private_only"

    async def test_nobody_asks_for_someone_else(self, tmp_path: Path) -> None:
        w = await world(tmp_path)
        with pytest.raises(ScopeError):
            await w.svc.my_memory(w.alice_dm, actor("bob"))  # the speaker of the scope is not the caller

    async def test_session_isolation_finds_every_chat_of_the_bot(self, tmp_path: Path) -> None:
        w = await world(tmp_path, isolation="session")
        held = await w.svc.my_memory(w.alice_dm, actor("alice"))
        assert sorted(e.content for _kb, e in held.episodes) == sorted(ALICE_SAID)


class TestForgetMe:
    @pytest.mark.parametrize("kind", ["numpy", "chroma", "qdrant"])
    async def test_erases_everything_the_person_said_and_nothing_else(self, tmp_path: Path, kind: str) -> None:
        w = await world(tmp_path, kind)
        cand = await w.review.propose(
            w.alice_group, Proposal("I play the oboe", "I play the oboe", "preference"), actor("alice"), origin="rules"
        )
        ep = (await w.svc.remember(w.alice_dm, {"content": "I dislike loud parties"}, actor("alice"))).episode
        await w.svc.forget(w.alice_dm, ep.id, actor("alice"), reason="parties are my secret", never=True)
        code = w.svc.forget_me_code(w.alice_dm, actor("alice"))
        assert len(code) == 6 and code.isdigit()
        done = await w.svc.forget_me(w.alice_dm, actor("alice"), code)
        assert (done.episodes, done.profiles, done.candidates, done.tombstones) == (3, 1, 1, 1)
        held = await w.svc.my_memory(w.alice_dm, actor("alice"))
        assert held.episodes == [] and held.profiles == []
        texts = await vector_texts(w.svc, w.alice_dm.user_key)
        for said in ALICE_SAID:
            assert said not in texts  # gone from the vector store itself
        assert BOB_SAID in texts  # control: the scan sees what stays
        kv = {k: await w.svc.kv.get(k) for k in await w.svc.kv.keys("")}
        stored = json.dumps({k: (v or b"").decode("utf-8", "replace") for k, v in kv.items()}, ensure_ascii=False)
        for gone in ("oboe", "Alice Liddell", "parties are my secret", *ALICE_SAID):
            assert gone not in stored, gone
        assert "Bob Builder" in stored  # control: other people's profiles stay
        assert (await w.review.get(w.alice_group.as_operator(), cand.id)).status == "rejected"
        bob = await w.svc.list_episodes(w.bob_group)
        assert [e.content for e in bob.items if e.sender_id == "bob"] == [BOB_SAID]

    async def test_a_wrong_expired_or_someone_elses_code_erases_nothing(self, tmp_path: Path) -> None:
        now = [1000.0]
        w = await world(tmp_path, monotonic=lambda: now[0])
        code = w.svc.forget_me_code(w.alice_dm, actor("alice"))
        before = await stored_state(w.svc)
        wrong = "000000" if code != "000000" else "111111"
        bob_dm = await scope_of(w.svc, "person_bob", "bob")
        for scope, who, given in ((w.alice_dm, "alice", wrong), (bob_dm, "bob", code), (w.alice_dm, "alice", "")):
            with pytest.raises(ValidationError):
                await w.svc.forget_me(scope, actor(who), given)
        now[0] += FORGET_ME_TTL_S + 1
        with pytest.raises(ValidationError):
            await w.svc.forget_me(w.alice_dm, actor("alice"), code)
        assert await stored_state(w.svc) == before
        fresh = w.svc.forget_me_code(w.alice_dm, actor("alice"))  # control: a fresh code works, once
        assert (await w.svc.forget_me(w.alice_dm, actor("alice"), fresh)).episodes == 3
        with pytest.raises(ValidationError):
            await w.svc.forget_me(w.alice_dm, actor("alice"), fresh)

    async def test_the_console_erases_the_same_audited_as_the_operator(self, tmp_path: Path) -> None:
        w = await world(tmp_path)
        op = Actor.console("ops@example")
        held = await w.svc.person("bot1", "alice", op)
        assert len(held.episodes) == 3
        done = await w.svc.erase_person("bot1", "alice", op)
        assert done.episodes == 3 and done.profiles == 1
        entries, _ = await w.svc.audit_page(w.alice_dm.as_operator(), 1, 50)
        erased = [e for e in entries if e["operation"] in ("episode.erase", "profile.erase")]
        assert erased and all(e["operator"] == "ops@example" for e in erased)
        blob = json.dumps(entries, ensure_ascii=False)
        assert not any(said in blob for said in ALICE_SAID)  # the event stays, without the text


class TestOptOut:
    async def test_nothing_she_says_is_stored_while_others_keep_working(self, tmp_path: Path) -> None:
        w = await world(tmp_path)
        assert await w.svc.set_opt_out(w.alice_dm, actor("alice"), True)
        assert await w.svc.opted_out(w.alice_dm, actor("alice"))
        before = await stored_state(w.svc)
        with pytest.raises(OptedOutError):
            await w.svc.remember(w.alice_group, {"content": "I moved to Lisbon"}, actor("alice"))
        with pytest.raises(OptedOutError):
            await w.svc.update_profile(w.alice_group, {"target": "speaker", "name": "A."}, actor("alice"))
        report = await w.review.extract(w.alice_group, "I love jazz. My dog is called Rex.", actor("alice"))
        assert report.candidates == [] and ("opted_out", "") in report.skipped
        assert await stored_state(w.svc) == before
        # control: Bob in the same chat is stored, and extraction from his words works
        assert (await w.svc.remember(w.bob_group, {"content": "Bob moved to Lisbon"}, actor("bob"))).episode
        assert (await w.review.extract(w.bob_group, "I love jazz.", actor("bob"))).candidates
        assert await w.svc.set_opt_out(w.alice_dm, actor("alice"), False)
        assert (await w.svc.remember(w.alice_group, {"content": "I moved to Lisbon"}, actor("alice"))).episode


# One gate, one table, every path that stores a person's statement (rule 10): each refuses Alice
# while she is opted out and lets Bob through (the control), and a refused path writes nothing.
async def _tool(w: World, who: str) -> None:
    scope = w.alice_group if who == "alice" else w.bob_group
    await w.svc.remember(scope, {"content": f"{who} likes sailing"}, actor(who))


async def _profile(w: World, who: str) -> None:
    scope = w.alice_group if who == "alice" else w.bob_group
    await w.svc.update_profile(scope, {"target": "speaker", "add_traits": ["sails"]}, actor(who))


async def _import(w: World, who: str) -> None:
    doc = {"episodes": [{"content": f"{who} imported a fact", "sender_id": who}]}
    await import_scope(w.svc, w.bob_group, doc, ROOT)


async def _document(w: World, who: str) -> None:
    doc = {
        "session_name": "group_g1",
        "bot_uuid": "bot1",
        "episodes": [{"content": f"{who} in a doc", "sender_id": who}],
    }
    await w.svc.ingest_document(KB, f"doc-{who}", doc, ROOT)


async def _accept(w: World, who: str) -> None:
    # proposed before the opt-out (see the test), accepted by an admin after it
    cand = w.pending[who]
    await w.review.accept((w.alice_group if who == "alice" else w.bob_group), cand, ROOT)


async def _propose(w: World, who: str) -> None:
    scope = w.alice_group if who == "alice" else w.bob_group
    text = f"I ({who}) collect stamps"
    await w.review.propose(scope, Proposal(text, text, "preference"), actor(who), origin="rules")


PATHS = {
    "tool": _tool,
    "profile": _profile,
    "import": _import,
    "document": _document,
    "accept": _accept,
    "propose": _propose,
}


@pytest.mark.parametrize("path", sorted(PATHS))
async def test_every_path_asks_the_one_gate(tmp_path: Path, path: str) -> None:
    w = await world(tmp_path)
    for who in ("alice", "bob"):
        text = f"I am {who} and I like kites"
        cand = await w.review.propose(
            w.alice_group if who == "alice" else w.bob_group,
            Proposal(text, text, "preference"),
            actor(who),
            origin="rules",
        )
        w.pending[who] = cand.id
    await w.svc.set_opt_out(w.alice_dm, actor("alice"), True)
    before = await stored_state(w.svc)
    with pytest.raises(OptedOutError):
        await PATHS[path](w, "alice")
    assert await stored_state(w.svc) == before  # refused whole, nothing written
    await PATHS[path](w, "bob")  # the control: the same path stores Bob's statement
    assert await stored_state(w.svc) != before
