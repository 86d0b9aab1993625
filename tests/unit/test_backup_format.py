"""The ``ltm-backup/1`` format's reader (ltm/service/backup.py) line by line: what a mutation pass
(``scripts/mutate``) showed the round-trip tests leave open. A document written by one version
reads in the next (the canonical line and its sha are pinned), and each malformed part gets its own
clear refusal (``move.error.*``, naming the problem), beside a well-formed control."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ltm.domain.errors import ValidationError
from ltm.service import backup as bk

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
