"""The privilege policy (pure) and its documented matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.commands.parser import VERBS, ParseError, parse
from ltm.domain.privilege import (
    POLICY,
    Caller,
    caller_of,
    can_run,
    is_admin,
    matrix,
    may_change_record,
    may_edit_profile,
    may_supersede,
    requires_admin,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
READ_ONLY = {
    "summary",
    "help",
    "profile",
    "list",
    "search",
    "show",
    "superseded",
    "archived",
    "audit",
    "health",
    "candidates",  # the review queue of one's own scope
    "tombstones",  # ids, reasons, who and when; never the value
}
OWN_ONLY = {"forget"}  # one's own record: no admin; another's or a shared one: admin (the service decides)
SELF_ONLY = {"me", "forget-me", "optout", "optin"}  # a person's rights over what they said: anyone, for themselves


class TestPolicy:
    def test_reads_are_open_everything_else_needs_admin(self) -> None:
        for verb, rule in POLICY.items():
            assert rule.needs_admin == (verb not in READ_ONLY | OWN_ONLY | SELF_ONLY), verb
            assert (rule.admin_column == "for another's") == (verb in OWN_ONLY), verb

    def test_every_parsed_verb_has_a_rule(self) -> None:
        lines = ["memory", "memory audit export", *(f"memory {v}" for v in VERBS)]
        verbs = set()
        for line in lines:
            try:
                verbs.add(parse(line).policy_verb)
            except ParseError:  # verbs that need arguments: their name is the policy verb
                verbs.add(line.split()[-1])
        assert verbs <= set(POLICY)

    def test_unknown_verb_is_denied_by_default(self) -> None:
        assert requires_admin("drop_everything")
        assert not can_run("drop_everything", 1, "alice", [])

    @pytest.mark.parametrize(
        ("privilege", "sender", "admins", "expected"),
        [
            (2, "", [], True),  # host bot admin
            (1, "alice", ["alice"], True),  # listed speaker
            (1, " alice", [" alice"], True),  # ids are compared exactly, spaces included
            (1, " alice ", [" alice"], False),
            (1, "admin-1\xa0", ["admin-1"], False),  # a look-alike is another person
            (1, "\u3000admin-1", ["admin-1"], False),
            (1, "admin-1\u200b", ["admin-1"], False),
            (1, "admin-1", ["admin-1\xa0"], False),
            (1, "bob", ["alice"], False),
            (1, "", [""], False),  # an empty id never matches
            (1, None, ["None"], False),
            (0, "alice", [], False),
        ],
    )
    def test_is_admin(self, privilege: int, sender: str | None, admins: list[str], expected: bool) -> None:
        assert is_admin(privilege, sender, admins) is expected
        assert can_run("delete", privilege, sender, admins) is expected
        assert can_run("list", privilege, sender, admins)


class TestRecordPolicy:
    def test_own_record_or_admin(self) -> None:
        alice, admin = Caller("alice", admin=False), Caller("root", admin=True)
        assert may_change_record(alice, "alice")  # positive control: one's own
        assert not may_change_record(alice, "bob")
        assert not may_change_record(alice, "")  # a shared / session-level record
        assert not may_change_record(Caller("", admin=False), "")  # no speaker owns nothing
        assert not may_change_record(Caller("alice\xa0", admin=False), "alice")
        assert may_change_record(admin, "bob") and may_change_record(admin, "")

    def test_supersede_own_or_shared_by_admin(self) -> None:
        alice, admin = Caller("alice", admin=False), Caller("root", admin=True)
        assert may_supersede(alice, "alice")  # positive control
        assert not may_supersede(alice, "") and not may_supersede(Caller("", admin=False), "")
        assert may_supersede(admin, "")
        assert not may_supersede(admin, "bob")  # another speaker's claim is corrected by that speaker

    def test_caller_of_reads_admin_ids_exactly(self) -> None:
        assert caller_of(1, "admin-1", ["admin-1"]) == Caller("admin-1", True)
        assert caller_of(1, "admin-1\xa0", ["admin-1"]) == Caller("admin-1\xa0", False)
        assert caller_of(2, "", []).admin

    @pytest.mark.parametrize(
        ("target", "group", "admin", "members", "expected"),
        [
            ("speaker", True, False, False, True),  # one's own speaker profile
            ("session", False, False, False, True),  # a private chat's one person
            ("session", True, False, False, False),  # the group profile: admins only by default
            ("session", True, True, False, True),
            ("session", True, False, True, True),  # the setting lets members edit it
        ],
    )
    def test_profiles(self, target: str, group: bool, admin: bool, members: bool, expected: bool) -> None:
        caller = Caller("alice", admin)
        assert may_edit_profile(caller, target, group=group, members_edit_group_profile=members) is expected


class TestDocumentedMatrix:
    def test_docs_match_policy(self) -> None:
        """docs/commands.md has one matrix row per policy verb, with the same answer."""
        text = DOCS.read_text(encoding="utf-8")
        rows = dict(re.findall(r"^\| `([a-z.-]+)` \| [^|]+ \| (yes|no|for another's) \|$", text, flags=re.M))
        assert rows == {verb: POLICY[verb].admin_column for verb, _kind, _needs in matrix()}

    def test_every_verb_documented(self) -> None:
        text = DOCS.read_text(encoding="utf-8")
        for verb in VERBS:
            assert f"`!memory {verb}" in text, verb

    def test_readme_points_to_the_matrix_instead_of_copying_it(self) -> None:
        """The matrix lives in docs/commands.md only; the README names that file and repeats no row."""
        readme = (DOCS.parent.parent / "README.md").read_text(encoding="utf-8")
        docs = DOCS.read_text(encoding="utf-8")
        row = re.compile(r"^\| `([a-z.-]+)` \| [^|]+ \| (yes|no|for another's) \|$", flags=re.M)
        assert len(row.findall(docs)) == len(POLICY)  # positive control: the pattern finds the docs rows
        assert row.findall(readme) == []
        assert "privilege matrix in `docs/commands.md`" in " ".join(readme.split())
