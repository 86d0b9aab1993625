"""The ended-state rule (``Claim.ended``, ltm/domain/conflict/compare.py) reads the same in English
and Chinese: "used to smoke" / "以前抽烟" ends the same habit said as current (found reading the
survivors of a mutation pass: the Chinese marker missed the verbs of smoking)."""

from __future__ import annotations

import pytest

from ltm.domain.conflict import CONTRADICTING, parse_claims, relation


@pytest.mark.parametrize(
    ("ended", "current"),
    [
        ("I used to smoke.", "I smoke."),
        ("我以前抽烟。", "我抽烟。"),
        ("我以前吸烟。", "我吸烟。"),
        ("我曾经抽烟。", "我抽烟。"),
    ],
)
def test_a_habit_said_to_have_ended_contradicts_it_said_as_current(ended: str, current: str) -> None:
    (claim,) = parse_claims(ended)
    assert claim.ended and claim.attribute == "smoke"
    for new, old in ((ended, current), (current, ended)):
        v = relation(new, old)
        assert (v.label, v.reason) == (CONTRADICTING, "no longer so")
    v = relation(ended, ended)  # control: the same ended habit twice contradicts nothing
    assert v.label != CONTRADICTING


@pytest.mark.parametrize(
    ("ended", "current"),
    [
        ("我过去住在里斯本。", "我住在里斯本。"),  # simplified: the control the traditional rows match
        ("我過去住在里斯本。", "我住在里斯本。"),  # traditional 過去 / 曾經 were read as "lives there now"
        ("我曾經住在里斯本。", "我住在里斯本。"),
    ],
)
def test_a_place_said_to_be_left_in_either_chinese_script_contradicts_it_said_as_current(
    ended: str, current: str
) -> None:
    (claim,) = parse_claims(ended)
    assert claim.ended and claim.attribute == "location"
    v = relation(ended, current)
    assert (v.label, v.reason) == (CONTRADICTING, "no longer so")
    assert relation(current, current).label != CONTRADICTING  # control: the current place twice
