"""Conflict rules in traditional Chinese (ltm/domain/conflict/chinese.py): a traditional ->
simplified character table before the Chinese patterns, so both scripts read alike; and two
Chinese fixes found on the traditional dev rows: "我爸爸…" is the father, not the speaker, and
brothers and sisters are one thing to have. Each exclusion has its positive control beside it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.conflict import COMPATIBLE, CONTRADICTING, UNRELATED, parse_claims, relation
from ltm.domain.conflict.chinese import SIMPLIFIED, TRADITIONAL, claims_zh, simplified


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("我搬去高雄了。", "我住在台中。"),
        ("我不再喜歡喝咖啡了。", "我喜歡喝咖啡。"),
        ("我現在在微軟上班。", "我在谷歌上班。"),
        ("我討厭榴槤。", "我喜歡榴槤。"),
        ("我戒菸了。", "我每天抽菸。"),  # Taiwan writes 菸 for tobacco
        ("我不養貓了。", "我養了一隻貓。"),
        ("週會改到星期一了。", "週會在星期三。"),
        ("我們換成了 MySQL。", "我們用 Postgres。"),
    ],
)
def test_contradicting(new: str, old: str) -> None:
    assert relation(new, old).label == CONTRADICTING


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("我也喜歡喝紅茶。", "我喜歡喝綠茶。"),
        ("我對蝦過敏。", "我對花生過敏。"),
        ("我有一個哥哥。", "我有一個妹妹。"),
    ],
)
def test_compatible(new: str, old: str) -> None:
    assert relation(new, old).label == COMPATIBLE


def test_unrelated() -> None:
    assert relation("我喜歡喝茶。", "我住在新竹。").label == UNRELATED


def test_smoking_in_traditional_script_parses() -> None:
    """抽煙 / 戒煙 did not parse before the table; the simplified forms are the control."""
    for traditional, simple in (("我每天抽煙。", "我每天抽烟。"), ("我已經戒煙了。", "我已经戒烟了。")):
        assert parse_claims(traditional) == parse_claims(simple)
        (claim,) = parse_claims(traditional)
        assert claim.attribute == "smoke"
    assert relation("我已經戒煙了。", "我每天抽煙。").label == CONTRADICTING


def test_a_relative_of_the_speaker_is_not_the_speaker() -> None:
    assert relation("我爸爸喜歡釣魚。", "我不喜歡釣魚。").label == UNRELATED
    assert relation("我姐姐住在台北。", "我住在高雄。").label == UNRELATED
    # controls: the speaker's own statements contradict
    assert relation("我喜歡釣魚。", "我不喜歡釣魚。").label == CONTRADICTING
    assert relation("我住在台北。", "我住在高雄。").label == CONTRADICTING


def test_not_having_brothers_or_sisters_contradicts_having_one() -> None:
    assert relation("我沒有兄弟姐妹。", "我有一個姐姐。").label == CONTRADICTING
    assert relation("我有一個弟弟。", "我有一個姐姐。").label == COMPATIBLE  # control


def test_the_table_is_one_to_one_and_leaves_simplified_text_alone() -> None:
    assert len(TRADITIONAL) == len(SIMPLIFIED) == len(set(TRADITIONAL))
    assert not set(TRADITIONAL) & set(SIMPLIFIED)
    assert simplified("我喜歡貓，也愛喝綠茶。") == "我喜欢猫，也爱喝绿茶。"
    assert simplified("我喜欢猫，也爱喝绿茶。") == "我喜欢猫，也爱喝绿茶。"  # control: simplified stays


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(TRADITIONAL + SIMPLIFIED + "我你他不了的是在，。！ 0123abc"), max_size=30))
def test_mapping_is_idempotent_and_the_reader_never_raises(text: str) -> None:
    assert simplified(simplified(text)) == simplified(text)
    claims_zh(text, "")
    assert relation(text, text[::-1]).label in (CONTRADICTING, COMPATIBLE, UNRELATED)
