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


@pytest.mark.parametrize(
    ("off", "plan", "fun"),
    [
        ("My trip to Oslo next week is off", "I'm flying to Oslo next week", "My trip to Oslo was great"),
        (
            "se canceló mi viaje a Oslo de la semana que viene",
            "la semana que viene vuelo a Oslo",
            "mi viaje a Oslo fue genial",
        ),
        ("chuyến đi Oslo tuần sau bị hủy rồi", "tuần sau tôi bay đi Oslo", "chuyến đi Oslo rất vui"),
        ("来週のオスロ旅行は中止になりました", "来週オスロに行きます", "オスロ旅行は楽しかったです"),
        ("ทริปไปออสโลอาทิตย์หน้ายกเลิกแล้ว", "อาทิตย์หน้าฉันจะบินไปออสโล", "ทริปไปออสโลสนุกมาก"),
        ("下周去奥斯陆的行程取消了", "我下周飞奥斯陆", "去奥斯陆的行程很开心"),
        ("下週去奧斯陸的行程取消了", "我下週飛奧斯陸", "去奧斯陸的行程很開心"),
    ],
)
def test_a_trip_called_off_contradicts_the_plan(off: str, plan: str, fun: str) -> None:
    """Before, each was "unrelated" or "compatible" to the plan (the trip stayed on in memory). The
    control: a trip that was fun is no trip called off."""
    v = relation(off, plan)
    assert (v.label, v.attribute) == (CONTRADICTING, "travel"), v
    assert not any(c.attribute == "travel" and not c.positive for c in parse_claims(fun)), parse_claims(fun)


@pytest.mark.parametrize(
    ("quit_", "habit"),
    [("我把烟戒了", "我每天抽一包烟"), ("我把菸戒了", "我每天抽一包菸"), ("I gave up smoking", "I smoke a pack a day")],
)
def test_a_habit_given_up_contradicts_it(quit_: str, habit: str) -> None:
    v = relation(quit_, habit)
    assert (v.label, v.attribute) == (CONTRADICTING, "smoke"), v
    assert relation(habit, habit).label != CONTRADICTING  # control
