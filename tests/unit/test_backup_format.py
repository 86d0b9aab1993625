"""The ``ltm-backup/1`` format's reader (ltm/service/backup.py) line by line: what a mutation pass
(``scripts/mutate``) showed the round-trip tests leave open. A document written by one version
reads in the next (the canonical line and its sha are pinned), and each malformed part gets its own
clear refusal (``move.error.*``, naming the problem), beside a well-formed control."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.errors import ValidationError
from ltm.domain.filters import Criteria
from ltm.domain.models import EpisodeInput, build_episode
from ltm.service import backup as bk
from tests.support import ADMIN, KB, build_service, scope_of
from tests.unit.test_backup import OPERATOR, TARGET_KB

HEADER = json.dumps({"format": bk.FORMAT, "created_at": "2026-12-05T00:00:00Z", "kbs": [{"id": "kb-1"}]})


def test_a_record_line_is_written_as_it_was_in_the_last_version() -> None:
    """The line is canonical JSON with its text as text (not ``\\u`` escapes); its sha is taken of
    that: a change here would refuse every backup written before it (checksum mismatch)."""
    line = bk.record_line("kv", "kb-1", "alice", "profile/x#session", "Zoë drinks 茶")
    assert line == (
        '{"id":"profile/x#session","k":"kv","kb":"kb-1","owner":"alice",'
        '"sha":"8fd69dd925bfd16862cc11b1e38d8fc9","v":"Zoë drinks 茶"}'
    )
    assert bk.digest(["a" * 32, "b" * 32]) == "cc740c0404dd22b284fe0523b80e9c5a0a0957d23e8a6ed9378eac41157140cd"
    rec = bk.parse_record(2, line)
    assert isinstance(rec, bk.Record) and rec.value == "Zoë drinks 茶"


def _refused(call: Any, problem: str, key: str = "move.error.bad") -> None:
    with pytest.raises(ValidationError) as err:
        call()
    assert err.value.key == key and problem in str(err.value), str(err.value)


def test_a_header_whose_kbs_are_partly_malformed_is_refused() -> None:
    assert bk.parse_header(HEADER)["kbs"] == [{"id": "kb-1"}]  # control
    for kbs in ([{"id": "kb-1"}, {"isolation": "session"}], [{"id": "kb-1"}, "kb-2"], "kb-1"):
        head = json.dumps({"format": bk.FORMAT, "kbs": kbs})
        _refused(lambda head=head: bk.parse_header(head), "kbs must be a list")
    _refused(lambda: bk.parse_header(json.dumps({"format": "ltm-export/1", "kbs": []})), "", "move.error.format")


def test_each_malformed_line_gets_its_own_refusal() -> None:
    good = bk.record_line("kv", "", "alice", "profile/alice#session", "{}")
    assert isinstance(bk.parse_record(2, good), bk.Record)  # control
    body = json.loads(good)
    cases = [
        ("x" * (bk.MAX_LINE_CHARS + 1), "not a line of text"),
        ('{"k": "kv"\x00}', "not a line of text"),
        ("not json", "not JSON"),
        ("[1, 2]", "not an object"),
        (json.dumps({"end": True, "counts": {}}), "a trailer needs counts and digest"),
        (bk.record_line("blob", "", "alice", "x", "{}"), "unknown kind"),
        (bk.record_line("kv", "", "alice", "", "{}"), "must be text"),
        (json.dumps({**body, "extra": 1}), "unexpected fields"),
    ]
    for line, problem in cases:
        _refused(lambda line=line: bk.parse_record(3, line), problem)
    _refused(lambda: bk.parse_record(3, json.dumps({**body, "v": "{ }"})), "checksum", "move.error.checksum")


def test_a_line_with_a_field_that_is_not_text_is_refused() -> None:
    body: dict[str, Any] = {"k": "kv", "kb": 5, "owner": "alice", "id": "profile/alice#session", "v": "{}"}
    body["sha"] = bk.line_sha(body)
    _refused(lambda: bk.parse_record(3, json.dumps(body)), "must be text")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_held_backups_keep_the_newest_two_until_they_expire_or_an_erase() -> None:
    clock = Clock()
    held = bk.HeldBackups(clock)
    first = held.keep(["z-first"])
    clock.now += 1
    second = held.keep(["a-second"])
    clock.now += 1
    third = held.keep(["m-third"])  # over MAX_HELD: the oldest goes, whatever it holds
    assert held.get(first) is None and held.get(second) == ["a-second"] and held.get(third) == ["m-third"]
    clock.now += bk.HeldBackups.KEEP_S - 1.5
    assert held.get(third) == ["m-third"]  # not expired yet (control)
    clock.now += 1
    assert held.get(second) is None  # kept longer than KEEP_S
    fourth = held.keep(["n-fourth"])  # the expired one makes room: the third stays
    assert held.get(third) == ["m-third"] and held.get(fourth) == ["n-fourth"]
    assert held.drop_all() == 2 and held.get(third) is None and held.drop_all() == 0


# ------------------------------------------------------------------------------------------ the document
def test_the_whole_document_check_refuses_each_mismatch() -> None:
    recs = [json.loads(bk.record_line("kv", "", "alice", f"profile/alice#s{n}", "{}")) for n in range(2)]
    shas, kinds = [r["sha"] for r in recs], [r["k"] for r in recs]
    trailer = json.dumps({"end": True, "counts": {"kv": 2}, "digest": bk.digest(shas)})  # no other kind named
    assert bk.check_document(HEADER, trailer, shas, kinds)["counts"] == {"episode": 0, "kv": 2, "audit": 0}
    _refused(lambda: bk.check_document(HEADER, json.dumps(recs[0]), shas, kinds), "not the trailer")
    _refused(lambda: bk.check_document(HEADER, trailer, [shas[0], 5], kinds), "two lists")  # type: ignore[list-item]
    _refused(lambda: bk.check_document(HEADER, trailer, shas, ["kv", "blob"]), "unknown kind")


def test_a_restore_reports_at_most_fifty_ids_of_each_list_and_counts_them_all() -> None:
    ids = [f"r{n}" for n in range(60)]
    out = bk.RestoreReport(conflicts=list(ids), missing=list(ids), differing=list(ids)).to_dict()
    for name in ("conflict", "missing", "differing"):
        assert out[name + "s" if name == "conflict" else name] == ids[:50] and out[f"{name}_count"] == 60
    small = bk.RestoreReport(missing=["m1"]).to_dict()
    assert small["missing"] == ["m1"] and small["missing_count"] == 1 and small["differing_count"] == 0


def test_the_knowledge_base_map_names_every_source_and_only_known_ones() -> None:
    head = {"kbs": [{"id": "kb-a"}, {"id": "kb-b"}]}
    assert bk.resolve_kb_map(head, ["t1", "t2"], {"kb-a": "t1", "kb-b": "t2"}) == {"kb-a": "t1", "kb-b": "t2"}
    assert bk.resolve_kb_map({"kbs": [{"id": "kb-a"}]}, ["t1"], None) == {"kb-a": "t1"}  # one to one: by itself
    for kb_map, key in (
        ({"kb-a": "t1"}, "move.error.kb_map"),  # kb-b unmapped
        ({"kb-a": "t1", "kb-b": "t9"}, "move.error.kb"),  # no such target
        ({"kb-a": "t1", "kb-b": "t2", "kb-c": "t2"}, "move.error.kb"),  # no such source
    ):
        with pytest.raises(ValidationError) as err:
            bk.resolve_kb_map(head, ["t1", "t2"], kb_map)
        assert err.value.key == key, kb_map


# ------------------------------------------------------------------------------------------ restoring
async def _pair(tmp: Path, isolation: str = "session") -> tuple[Any, Any, list[str]]:
    src = await build_service("numpy", tmp / "src", isolation=isolation)
    alice = await scope_of(src, "person_alice", "alice")
    await src.remember(alice, {"content": "I live in Lisbon"}, ADMIN)
    dst = await build_service("numpy", tmp / "dst")
    await dst.register_kb(TARGET_KB, {"embedding_model": "hash", "isolation": isolation})
    return src, dst, await bk.backup(src, OPERATOR)


async def test_a_stored_record_naming_the_source_kb_names_the_target_after_a_restore(tmp_path: Path) -> None:
    src, dst, lines = await _pair(tmp_path)
    key = "consolidation/somebody/cp_" + "0" * 20
    value = {"collection": KB, "sources": [KB, {"kb": KB}], "note": f"not {KB}"}
    extra = bk.record_line("kv", "", "somebody", key, json.dumps(value))
    report = await bk.restore(dst, OPERATOR, [*lines[:-1], extra], {KB: TARGET_KB})
    assert report.written["kv"] == 1
    got = json.loads(await dst.kv.get(key) or b"{}")
    assert got == {"collection": TARGET_KB, "sources": [TARGET_KB, {"kb": TARGET_KB}], "note": f"not {KB}"}


async def test_a_bot_isolation_memory_restores_into_a_bot_isolation_kb_only(tmp_path: Path) -> None:
    src, dst, lines = await _pair(tmp_path, "bot")
    report = await bk.restore(dst, OPERATOR, lines[:-1], {KB: TARGET_KB})
    assert report.written["episode"] == 1
    other = await build_service("numpy", tmp_path / "other")  # control: a session-isolation target
    with pytest.raises(ValidationError) as err:
        await bk.restore(other, OPERATOR, lines[:-1], None)
    assert err.value.key == "move.error.isolation"


async def test_each_malformed_episode_or_chunk_is_refused_with_its_line(tmp_path: Path) -> None:
    src, dst, lines = await _pair(tmp_path)
    head, body = lines[0], lines[1:-1]
    n = next(i for i, x in enumerate(body) if json.loads(x)["k"] == "episode")
    ep = json.loads(body[n])

    def line(v: dict[str, Any], kb: str | None = None) -> str:
        return bk.record_line("episode", ep["kb"] if kb is None else kb, ep["owner"], ep["id"], v)

    row = ep["v"]
    cases = [
        (line({k: v for k, v in row.items() if k != "extra"}), "exactly the fields"),
        (line({**row, "importance": "high"}), "wrong type"),
        (line({**row, "tags": "one"}), "wrong type"),
        (line(row, kb=""), "names no knowledge base"),
    ]
    for bad, problem in cases:
        with pytest.raises(ValidationError) as err:
            await bk.restore(dst, OPERATOR, [head, body[0], bad], {KB: TARGET_KB})
        assert err.value.key == "move.error.bad" and problem in str(err.value), (problem, str(err.value))
        assert err.value.params.get("line") == 3  # the chunk's third line (the header is line 1)
    too_many = [head, *["{}"] * (bk.MAX_CHUNK_LINES + 2)]
    with pytest.raises(ValidationError) as err:
        await bk.restore(dst, OPERATOR, too_many, {KB: TARGET_KB})
    assert f"more than {bk.MAX_CHUNK_LINES} lines" in str(err.value)
    assert not await dst.kv.keys("profile/")
    report = await bk.restore(dst, OPERATOR, [head, body[n]], {KB: TARGET_KB})  # control: the row as it was
    assert report.written["episode"] == 1


async def test_a_record_of_a_kind_a_backup_does_not_hold_is_refused(tmp_path: Path) -> None:
    """A storage record outside the backed-up kinds (a knowledge base's settings, a write fence, the
    journal) or a malformed audit entry refuses its chunk: a file never writes such keys."""
    src, dst, lines = await _pair(tmp_path)
    head = lines[0]
    cases = [
        (bk.record_line("kv", "", "x", "kb/evil", "{}"), "a kind a backup does not hold"),
        (bk.record_line("kv", "", "x", "fence/l2:kb:x", "{}"), "a kind a backup does not hold"),
        (bk.record_line("kv", "", "x", "profile/x#session", {"not": "text"}), "a kind a backup does not hold"),
        (bk.record_line("audit", KB, "x", "log#1", ["not", "an", "entry"]), "its log and number"),
        (bk.record_line("audit", KB, "x", "log#1", {"seq": "1"}), "its log and number"),
        (bk.record_line("audit", KB, "x", "log-1", {"seq": 1}), "its log and number"),
    ]
    before = sorted(await dst.kv.keys(""))
    for bad, problem in cases:
        with pytest.raises(ValidationError) as err:
            await bk.restore(dst, OPERATOR, [head, bad], {KB: TARGET_KB})
        assert problem in str(err.value), (problem, str(err.value))
    assert sorted(await dst.kv.keys("")) == before
    ok = bk.record_line("audit", KB, "x", "log#1", {"seq": 1, "operation": "remember"})
    assert (await bk.restore(dst, OPERATOR, [head, ok], {KB: TARGET_KB})).written["audit"] == 1  # control


async def test_a_row_that_predates_the_gate_restored_where_it_came_from_is_there(tmp_path: Path) -> None:
    """The source holds a row the gate would change now (stored before the gate): its backup
    restored into the same installation finds it there as the file has it, writes nothing and
    reports no conflict. Control: into another installation it is stored gated."""
    src = await build_service("numpy", tmp_path / "src")
    alice = await scope_of(src, "person_alice", "alice")
    old = build_episode(EpisodeInput(content="my api key is sk-abcdefghijklmnopqrstuvwx"), alice, origin="tool")
    steps = src.writes.new_row_steps(alice, [old], "test.plant", ([old.id], "an old row"), 64)
    await src.writes.mutate(ADMIN, "test.plant", steps)
    lines = await bk.backup(src, OPERATOR)
    again = await bk.restore(src, OPERATOR, lines[:-1], None)
    assert sum(again.written.values()) == 0 and not again.conflicts, again.to_dict()
    dst = await build_service("numpy", tmp_path / "dst")
    moved = await bk.restore(dst, OPERATOR, lines[:-1], None)
    assert moved.written["episode"] == 1 and moved.redacted == 1
    rows = await dst.fetch(await scope_of(dst, "person_alice", "alice"), Criteria(statuses=None))
    assert [r.content for r in rows] == ["my api key is [redacted]"]


async def test_a_stored_record_there_with_other_content_is_a_conflict_never_overwritten(tmp_path: Path) -> None:
    src, dst, lines = await _pair(tmp_path)
    key = "profile/person_alice#session"
    mine = json.dumps({"notes": ["the target's own note"]}).encode()
    await dst.kv.set(key, mine)
    theirs = bk.record_line("kv", "", "person_alice", key, json.dumps({"notes": ["the file's note"]}))
    report = await bk.restore(dst, OPERATOR, [lines[0], theirs], {KB: TARGET_KB})
    assert report.conflicts == [key] and report.written["kv"] == 0 and report.skipped["kv"] == 0
    assert await dst.kv.get(key) == mine
    back = await bk.restore(dst, OPERATOR, [lines[0], theirs], {KB: TARGET_KB}, verify=True)
    assert back.differing == [key] and back.verified["kv"] == 0
    same = bk.record_line("kv", "", "person_alice", key, mine.decode())  # control: the same record is there
    assert (await bk.restore(dst, OPERATOR, [lines[0], same], {KB: TARGET_KB})).skipped["kv"] == 1
