"""The status vocabulary and the listing defaults live in the domain (one place), not in a surface."""

from __future__ import annotations

import itertools

import pytest

from components.commands import render
from ltm.domain.filters import ACTIVE, AS_OF_STATUSES, STATUSES
from ltm.domain.vocabulary import (
    CANDIDATE_STATUSES,
    DEFAULT_STATUS,
    candidate_status_key,
    listed_statuses,
    status_key,
)
from ltm.i18n import t
from ltm.service.review import CANDIDATE_STATUSES as QUEUE_STATUSES


def _old_parser_rule(as_of: bool, sup: bool, arch: bool) -> tuple[str, ...]:
    """The rule as `components/commands/parser.py` wrote it before it moved (kept as the oracle)."""
    chosen = ("active", "superseded") if as_of else ("active",)
    if sup and not as_of:
        chosen += ("superseded",)
    if arch:
        chosen += ("archived",)
    return chosen


@pytest.mark.parametrize(("as_of", "sup", "arch"), list(itertools.product([False, True], repeat=3)))
def test_the_default_with_the_include_flags_is_the_old_parser_rule(as_of: bool, sup: bool, arch: bool) -> None:
    got = listed_statuses(ACTIVE, as_of=as_of, include_superseded=sup, include_archived=arch)
    assert got == _old_parser_rule(as_of, sup, arch)


def test_as_of_widens_only_the_default() -> None:
    assert listed_statuses(ACTIVE, as_of=True) == AS_OF_STATUSES
    assert listed_statuses(ACTIVE, as_of=False) == ACTIVE
    assert listed_statuses(None, as_of=True) is None  # every status stays every status
    # positive control for "an explicit choice is kept": a non-default choice is not widened
    assert listed_statuses(("archived",), as_of=True) == ("archived",)
    assert listed_statuses(("active", "archived"), as_of=True) == ("active", "archived")


def test_every_status_has_a_catalog_label() -> None:
    for status in STATUSES:
        key = status_key(status)
        assert t(key, "en_US") != key, status
        assert render.status_label("en_US", status) == t(key, "en_US")
    for status in CANDIDATE_STATUSES:
        assert t(candidate_status_key(status), "en_US") != candidate_status_key(status), status


def test_candidate_vocabulary_matches_the_queue() -> None:
    assert CANDIDATE_STATUSES == QUEUE_STATUSES
    assert candidate_status_key("nonsense") == candidate_status_key("pending")
    assert DEFAULT_STATUS in STATUSES
