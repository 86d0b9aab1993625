"""Conflict rules in Thai (ltm/domain/conflict/thai.py): patterns on the raw clause (Thai writes no
spaces between words); ไม่ / ไม่ได้ / เลิก negate, เคย / เมื่อก่อน end a state, a dropped subject is
the speaker's. Each exclusion has its positive control beside it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.conflict import COMPATIBLE, CONTRADICTING, UNRELATED, parse_claims, relation, thai


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("ฉันย้ายไปอยู่ขอนแก่นแล้ว", "ฉันอยู่ระยอง"),
        ("ผมไม่ดื่มชาแล้ว", "ผมดื่มชาทุกวัน"),
        ("ฉันอายุ 41 ปี", "ฉันอายุ 40 ปี"),
        ("ฉันไม่ชอบแมว", "ฉันชอบแมว"),
        ("ฉันทำงานที่ Lazada", "ฉันทำงานที่ Shopee"),
        ("ผมชอบ Kotlin มากกว่า", "ผมชอบ Java มากกว่า"),
        ("ฉันเปลี่ยนไปใช้ Linux แล้ว", "ฉันใช้ Windows"),
        ("ผมเป็นครู", "ผมเป็นวิศวกร"),
        ("ฉันเลิกสูบบุหรี่แล้ว", "ฉันสูบบุหรี่"),
        ("ฉันโสด", "ฉันแต่งงานแล้ว"),
        ("การประชุมเลื่อนไปวันจันทร์", "การประชุมวันพุธ"),
    ],
)
def test_contradicting(new: str, old: str) -> None:
    assert relation(new, old).label == CONTRADICTING


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("ผมชอบชาด้วย", "ผมชอบกาแฟ"),  # two drinks: ชา / กาแฟ are read as tea / coffee
        ("ฉันเลี้ยงกระต่าย", "ฉันเลี้ยงแมว"),
        ("ฉันพูดภาษาญี่ปุ่นได้", "ฉันพูดภาษาอังกฤษได้"),
        ("ฉันมีพี่ชาย", "ฉันมีน้องสาว"),
    ],
)
def test_compatible(new: str, old: str) -> None:
    assert relation(new, old).label == COMPATIBLE


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("ฉันชอบกาแฟ", "ฉันอยู่เชียงใหม่"),
        ("ผมใช้ Emacs", "ผมเลี้ยงหมาสองตัว"),
    ],
)
def test_unrelated(new: str, old: str) -> None:
    assert relation(new, old).label == UNRELATED


def test_another_person_is_not_the_speaker() -> None:
    assert relation("เพื่อนของฉันอยู่ภูเก็ต", "ฉันอยู่ระยอง").label == UNRELATED
    assert relation("พ่อของฉันสูบบุหรี่", "ฉันไม่สูบบุหรี่").label == UNRELATED
    # controls: the same statements about the speaker contradict
    assert relation("ฉันอยู่ภูเก็ต", "ฉันอยู่ระยอง").label == CONTRADICTING
    assert relation("ฉันสูบบุหรี่", "ฉันไม่สูบบุหรี่").label == CONTRADICTING


def test_an_ended_state_allows_another_value_and_denies_the_same() -> None:
    assert relation("เมื่อก่อนฉันทำงานที่ SCB", "ฉันทำงานที่ KBank").label == COMPATIBLE
    assert relation("ฉันเคยสูบบุหรี่", "ฉันไม่สูบบุหรี่").label == COMPATIBLE
    v = relation("เมื่อก่อนฉันอยู่ลำปาง", "ฉันอยู่ลำปาง")  # control
    assert (v.label, v.reason) == (CONTRADICTING, "no longer so")
    (claim,) = parse_claims("ฉันไม่เคยสูบบุหรี่")  # "never": a negation, not an ended state
    assert (claim.positive, claim.ended) == (False, False)


def test_not_living_somewhere_allows_living_elsewhere() -> None:
    assert relation("ฉันไม่ได้อยู่ที่พัทยา", "ฉันอยู่ระยอง").label == COMPATIBLE
    assert relation("ฉันไม่ได้อยู่ที่พัทยา", "ฉันอยู่พัทยา").label == CONTRADICTING  # control


def test_verbs_with_sara_am_still_read_after_normalisation() -> None:
    """NFKC (lexicon.prep) splits ำ into ํ + า: ทำงาน must still be "works at"."""
    (claim,) = parse_claims("ผมทำงานที่ Agoda")
    assert (claim.attribute, claim.value) == ("employer", "agoda")
    (claim,) = parse_claims("ผมอยู่ที่ลำพูน")  # a value with ำ comes back as written
    assert (claim.attribute, claim.value) == ("location", "ลำพูน")


def test_but_splits_clauses_and_marry_is_not_but() -> None:
    """แต่ ("but") ends a clause; แต่งงาน ("marry") and แต่ก่อน ("formerly") start with it and do not."""
    claims = parse_claims("ฉันชอบกาแฟแต่ไม่ชอบชา")
    assert {(c.value, c.positive) for c in claims} == {("coffee", True), ("tea", False)}
    (claim,) = parse_claims("ฉันแต่งงานแล้ว")
    assert (claim.attribute, claim.value) == ("marital", "married")
    (claim,) = parse_claims("แต่ก่อนฉันอยู่น่าน")
    assert (claim.attribute, claim.ended) == ("location", True)


_TH_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x0E01, max_codepoint=0x0E5B),
        st.sampled_from(" 0123456789abcไม่แล้วเคยอยู่ชอบที่"),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_TH_TEXT, _TH_TEXT)
def test_the_reader_never_raises_on_thai_text(a: str, b: str) -> None:
    thai.claims_th(a, "")
    assert relation(a, b).label in (CONTRADICTING, COMPATIBLE, UNRELATED)


@pytest.mark.parametrize(
    "not_a_state",
    [
        "ฉันอยากย้ายไปอยู่เชียงใหม่",  # wants to move
        "ถ้าฉันย้ายไปอยู่เชียงใหม่",  # if I move
        "ฉันอยู่เชียงใหม่ไหม",  # a question
        "ฉันอยู่บ้าน",  # at home, not where one lives
        "ฉันอยู่กับพ่อแม่",  # lives with one's parents: not a place
    ],
)
def test_a_wish_a_condition_a_question_or_being_at_home_is_not_where_one_lives(not_a_state: str) -> None:
    assert relation(not_a_state, "ฉันอยู่กรุงเทพ").label != CONTRADICTING
    assert relation("ฉันย้ายไปอยู่เชียงใหม่", "ฉันอยู่กรุงเทพ").label == CONTRADICTING  # control


def test_a_teacher_is_not_a_maybe() -> None:
    """อาจ ("may") starts อาจารย์ ("teacher"): a teacher's home is still read."""
    assert relation("อาจารย์ของฉันอยู่เชียงใหม่", "อาจารย์ของฉันอยู่ลำปาง").label == CONTRADICTING
    assert relation("ฉันอาจย้ายไปอยู่เชียงใหม่", "ฉันอยู่ลำปาง").label != CONTRADICTING  # control: "may move"


def test_since_is_not_but() -> None:
    """ตั้งแต่ ("since") holds แต่ ("but"): the clause is not cut there, so the place stays กรุงเทพ.
    Found on a held-out row after the readers were frozen. Control: a real แต่ still splits."""
    assert relation("ฉันย้ายมาอยู่กรุงเทพตั้งแต่ปี 2018", "ฉันอยู่กรุงเทพ").label == COMPATIBLE
    assert relation("ฉันย้ายมาอยู่กรุงเทพตั้งแต่ปี 2018", "ฉันอยู่เชียงใหม่").label == CONTRADICTING
    assert relation("ฉันชอบชาแต่ฉันไม่ชอบกาแฟ", "ฉันชอบกาแฟ").label == CONTRADICTING
