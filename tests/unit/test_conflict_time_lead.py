"""A time said before the subject ("these days I live in …", "hoy en día trabajo en …", ช่วงนี้ผม…)
is not part of who: the statement is still the speaker's, and contradicts the speaker's other value.
The controls: the same time before someone else ("最近我哥住在杭州") stays someone else's fact."""

from __future__ import annotations

import pytest

from ltm.domain.conflict import CONTRADICTING, UNRELATED, relation


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("These days I live in Bristol", "I live in Leeds"),
        ("As of this week I work at Shopify", "I work at Stripe"),
        ("Since the summer we've been living in Cork", "We live in Dublin"),  # "have been" is no subject
        ("After the divorce I moved to Bristol", "I live in Leeds"),
        ("Hoy en día trabajo en Inditex", "Trabajo en Telefónica"),
        ("Desde el verano vivimos en Valencia", "Vivimos en Sevilla"),
        ("ช่วงนี้ผมทำงานที่ธนาคารกรุงเทพ", "ผมทำงานที่ปตท."),
        ("ตั้งแต่เดือนที่แล้วฉันอยู่ภูเก็ต", "ฉันอยู่ขอนแก่น"),
    ],
)
def test_a_time_before_the_subject_keeps_the_statement_the_speakers(new: str, old: str) -> None:
    """Before, each was "unrelated" (different subjects): the time was read as part of who."""
    assert relation(new, old).label == CONTRADICTING, relation(new, old)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("These days my brother lives in Bristol", "I live in Leeds"),
        ("Hoy en día mi hermana vive en Bilbao", "Vivo en Madrid"),
        ("最近我哥住在杭州", "我住在南京"),  # 我哥 is a brother (a contradiction of the speaker's home before)
        ("最近我哥住在台中", "我住在高雄"),
        ("ช่วงนี้พี่ชายฉันอยู่ภูเก็ต", "ฉันอยู่ขอนแก่น"),
    ],
)
def test_the_same_time_before_someone_else_stays_theirs(new: str, old: str) -> None:
    assert relation(new, old).label == UNRELATED, relation(new, old)
