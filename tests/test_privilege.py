"""The privilege policy (pure) and its documented matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.commands.parser import VERBS, ParseError, parse
from ltm.domain.privilege import POLICY, can_run, is_admin, matrix, requires_admin

DOCS = Path(__file__).resolve().parent.parent / "docs" / "commands.md"
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


class TestPolicy:
    def test_reads_are_open_everything_else_needs_admin(self) -> None:
        for verb, rule in POLICY.items():
            assert rule.needs_admin == (verb not in READ_ONLY), verb

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
            (1, " alice ", [" alice"], True),
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


class TestDocumentedMatrix:
    def test_docs_match_policy(self) -> None:
        """docs/commands.md has one matrix row per policy verb, with the same answer."""
        text = DOCS.read_text(encoding="utf-8")
        rows = dict(re.findall(r"^\| `([a-z.]+)` \| [^|]+ \| (yes|no) \|$", text, flags=re.M))
        assert rows == {verb: ("yes" if needs else "no") for verb, _kind, needs in matrix()}

    def test_every_verb_documented(self) -> None:
        text = DOCS.read_text(encoding="utf-8")
        for verb in VERBS:
            assert f"`!memory {verb}" in text, verb
