"""The turn as the service prepares it (``MemoryService.prepare_turn``), the injection snapshot's one
codec, and the known memory spaces read from the service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.storage_keys import inject_key
from ltm.service import Settings
from ltm.service.chat_turn import Injection
from ltm.service.injection import BEGIN, END
from ltm.service.served_turns import ServedTurns, identity
from ltm.service.snapshots import FIELDS, InjectionSnapshot, SnapshotOwner
from pages.scopes import known_scopes as console_scopes
from tests.support import ADMIN, build_service, scope_of

TEXT = st.text(max_size=40)
IDS = st.lists(st.text(min_size=1, max_size=24), max_size=6).map(tuple)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
SNAPSHOTS = st.builds(
    InjectionSnapshot,
    at=TEXT,
    injected=st.booleans(),
    blocks=st.integers(0, 3),
    chars=st.integers(0, 10**6),
    tokens=st.integers(0, 10**6),
    block_tokens=st.integers(0, 10**6),
    speaker_id=TEXT,
    speaker_name=TEXT,
    profiles_used=st.lists(st.sampled_from(["session", "speaker"]), max_size=2, unique=True).map(tuple),
    episodes=IDS,
    shown_ids=IDS,
    query_id=st.none() | st.integers(-(2**31), 2**31),
    trace=st.none() | st.dictionaries(st.text(max_size=8), JSON, max_size=4),
    owner=st.none() | st.builds(SnapshotOwner, TEXT, TEXT, TEXT),
    pipeline_kbs=st.none() | IDS,
    extra=st.dictionaries(st.text(max_size=10).filter(lambda k: k not in FIELDS), JSON, max_size=3),
)


@given(SNAPSHOTS)
def test_a_snapshot_survives_its_record_and_the_store(snapshot: InjectionSnapshot) -> None:
    """``from_record(to_record(s)) == s``, through JSON as the store keeps it; the record's own
    round trip is exact too (a newer build's keys included)."""
    record = json.loads(json.dumps(snapshot.to_record(), ensure_ascii=False))
    assert InjectionSnapshot.from_record(record) == snapshot
    assert InjectionSnapshot.from_record(record).to_record() == record


def test_a_record_of_an_older_build_reads_with_defaults() -> None:
    snap = InjectionSnapshot.from_record({"at": "2024-05-01T10:00:00Z", "episodes": ["x"], "speaker": "bob"})
    assert (snap.at, snap.episodes, snap.tokens, snap.speaker_id, snap.trace) == (
        "2024-05-01T10:00:00Z",
        ("x",),
        0,
        "bob",
        None,
    )
    assert snap.shown_as() == [("x", "x")]  # no short ids: the whole id is what was shown
    odd = InjectionSnapshot.from_record({"episodes": "x", "shown_ids": ["a", "b"], "trace": [], "tokens": "many"})
    assert (odd.episodes, odd.trace, odd.tokens, odd.shown_as()) == ((), None, 0, [])
    # control: short ids, one per episode, are what the block showed
    assert InjectionSnapshot(episodes=("ep_1", "ep_2"), shown_ids=("1", "ep_2")).shown_as() == [
        ("ep_1", "1"),
        ("ep_2", "ep_2"),
    ]


async def _turn(tmp_path: Path, settings: Settings) -> tuple[Any, Any, ServedTurns, Injection | None, list[str]]:
    svc = await build_service("numpy", tmp_path, settings=lambda: settings)
    scope = await scope_of(svc)
    await svc.remember(scope, {"content": "Alice drinks jasmine tea every morning"}, ADMIN)
    served, written = ServedTurns(), []
    who = identity(scope.collection, "person_alice", "bot1", "alice")
    injection = await svc.prepare_turn(scope, "what tea?", speaker_name="Alice", query_id=7, served=served, who=who)
    assert await svc.last_injection(scope) is None  # nothing recorded before the caller publishes
    if injection is not None:  # the host's side of the turn, then the record of it
        written.append(injection.block)
        svc.record_turn(scope, injection)
    return svc, scope, served, injection, written


async def test_prepare_turn_builds_the_block_and_saves_its_snapshot(tmp_path: Path) -> None:
    svc, scope, served, injection, published = await _turn(tmp_path, Settings())
    assert injection is not None
    assert BEGIN in injection.block and END in injection.block and "jasmine tea" in injection.block
    assert published == [injection.block]  # the host's side got the same block
    assert [e["content"] for e in injection.payload["episodes"]] == ["Alice drinks jasmine tea every morning"]
    snap = injection.snapshot
    assert snap.injected and snap.blocks == 1 and snap.chars == len(injection.block) and snap.query_id == 7
    assert (snap.speaker_id, snap.speaker_name) == ("alice", "Alice") and len(snap.episodes) == 1
    assert snap.trace is not None and snap.trace.get("rows")
    saved = await svc.last_injection(scope)
    assert saved == snap.owned_by(scope)  # what was returned is what the console reads
    await svc.snapshot_writer.drain()  # written after the turn (issue 38)
    assert await svc.last_injection(scope) == saved
    assert list(json.loads(await svc.kv.get(inject_key(scope)))) == list(FIELDS)  # the stored record
    assert served.served(identity(scope.collection, "person_alice", "bot1", "alice"))


async def test_without_auto_recall_the_turn_injects_and_saves_nothing(tmp_path: Path) -> None:
    svc, scope, served, injection, published = await _turn(tmp_path, Settings(auto_recall=False))
    assert injection is None and published == []
    assert await svc.last_injection(scope) is None and len(served) == 0


async def test_known_scopes_come_from_the_service(tmp_path: Path) -> None:
    svc = await build_service("numpy", tmp_path)
    assert (await svc.known_scopes()).to_dict() == {"scopes": [], "truncated": False, "bots": []}
    alice, carol = await scope_of(svc), await scope_of(svc, "group_g1", "carol")
    await svc.remember(alice, {"content": "Alice likes tea"}, ADMIN)
    await svc.update_profile(carol, {"add_traits": ["sings"]}, ADMIN)
    await svc.save_injection(alice, InjectionSnapshot(at="2024-06-01T09:00:00Z"))
    known = await svc.known_scopes()
    by_name = {s.session_name: s for s in known.scopes}
    assert set(by_name) == {"person_alice", "group_g1"}  # positive control: both written spaces
    assert by_name["person_alice"].sources == {"audit", "injection"} and by_name["group_g1"].speakers == {"carol"}
    assert await console_scopes(svc) == known.to_dict()  # the console shows the service's answer
