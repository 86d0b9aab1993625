"""Life events read as the state they end or start (ltm.domain.conflict.events), in the seven
languages: each meets the stored state; the same event told of someone else does not."""

from __future__ import annotations

import pytest

from ltm.domain.conflict import CONTRADICTING, UNRELATED, parse_claims, relation, same_value
from ltm.domain.conflict.events import event_claims
from ltm.domain.conflict.lexicon import ANY, prep


@pytest.mark.parametrize(
    ("event", "state"),
    [
        ("I just got a job at Airbnb", "I work at Netflix"),
        ("I started working at Airbnb last month", "I work at Netflix"),
        ("I left Netflix in March", "I work at Netflix"),
        ("I quit my job at Netflix", "I work at Netflix"),
        ("I retired in June", "I work at Netflix"),
        ("I got laid off from Netflix", "I work at Netflix"),
        ("I got married in May", "I'm single"),
        ("Our dog passed away last week", "We have a dog"),
        ("I went vegan this year", "I eat meat"),
        ("Me jubilé en junio", "Trabajo en Telefónica"),
        ("Dejé Telefónica en marzo", "Trabajo en Telefónica"),
        ("Empecé a trabajar en Iberia", "Trabajo en Telefónica"),
        ("tôi đã nghỉ việc ở Viettel", "tôi làm việc ở Viettel"),
        ("tôi nghỉ hưu rồi", "tôi làm việc ở Viettel"),
        ("先月トヨタを辞めました", "トヨタで働いています"),
        ("定年退職しました", "トヨタで働いています"),
        ("ฉันลาออกจากเอไอเอสแล้ว", "ฉันทำงานที่เอไอเอส"),
        ("ผมเกษียณแล้ว", "ผมทำงานที่เอไอเอส"),
        ("我从京东辞职了", "我在京东上班"),
        ("我去年退休了", "我在京东上班"),
        ("我跳槽去了美团", "我在京东上班"),
        ("我從台積電離職了", "我在台積電上班"),
        ("I broke up with my boyfriend last week", "I have a boyfriend"),
        ("My cat died in October", "I have a cat"),
        ("Corté con mi novia", "Tengo novia"),
        ("Mi gato murió en octubre", "Tengo un gato"),
        ("tôi chia tay bạn gái rồi", "Tôi có bạn gái"),
        ("con mèo của tôi chết rồi", "Tôi nuôi một con mèo"),
        ("con meo cua toi chet roi", "Tôi nuôi một con mèo"),  # the owner typed without accents
        ("彼女と別れました", "彼女がいます"),
        ("うちの猫が死にました", "猫を飼っています"),
        ("ฉันเลิกกับแฟนแล้ว", "ฉันมีแฟน"),
        ("แมวของฉันตายแล้ว", "ฉันเลี้ยงแมว"),
        ("我和女朋友分手了", "我有女朋友"),
        ("我的貓死了", "我養了一隻貓"),
        ("I moved from Leeds to York", "I live in Leeds"),
        ("Me mudé de Sevilla a Málaga", "Vivo en Sevilla"),
        ("Nos mudamos de Lima a Cusco", "Vivimos en Lima"),
        ("tôi chuyển từ Huế vào Đà Nẵng", "tôi sống ở Huế"),
        ("ฉันย้ายจากขอนแก่นไปอุดรธานี", "ฉันอยู่ขอนแก่น"),
    ],
)
def test_an_event_meets_the_state_it_ends_or_starts(event: str, state: str) -> None:
    """Before, each was "unrelated" or "compatible": the event was no state the readers read."""
    v = relation(event, state)
    assert v.label == CONTRADICTING, v
    assert relation(state, state).label != CONTRADICTING  # control: the state said again


@pytest.mark.parametrize(
    ("event", "state"),
    [
        ("My wife just got a job at Airbnb", "I work at Netflix"),
        ("I left my umbrella at Netflix", "I work at Netflix"),
        ("My sister got married in May", "I'm single"),
        ("Mi padre se jubiló en junio", "Trabajo en Telefónica"),
        ("bố tôi nghỉ hưu rồi", "tôi làm việc ở Viettel"),
        ("父は定年退職しました", "トヨタで働いています"),
        ("พ่อฉันเกษียณแล้ว", "ฉันทำงานที่เอไอเอส"),
        ("我爸去年退休了", "我在京东上班"),
        ("我爸退休了", "我在台積電上班"),
        ("My brother broke up with his girlfriend", "I have a girlfriend"),
        ("My cat is sick", "I have a cat"),
        ("Mi hermano cortó con su novia", "Tengo novia"),
        ("anh trai tôi chia tay bạn gái rồi", "Tôi có bạn gái"),
        ("兄は彼女と別れました", "彼女がいます"),
        ("พี่ชายฉันเลิกกับแฟนแล้ว", "ฉันมีแฟน"),
        ("我哥和女朋友分手了", "我有女朋友"),
        ("我的貓生病了", "我養了一隻貓"),
        ("My sister moved from Leeds to York", "I live in Leeds"),
        ("Mi hermana se mudó de Sevilla a Málaga", "Vivo en Sevilla"),
        ("chị tôi chuyển từ Huế vào Đà Nẵng", "tôi sống ở Huế"),
        ("พี่สาวฉันย้ายจากขอนแก่นไปอุดรธานี", "ฉันอยู่ขอนแก่น"),
    ],
)
def test_someone_elses_event_or_no_event_contradicts_nothing(event: str, state: str) -> None:
    assert relation(event, state).label == UNRELATED, relation(event, state)


def test_a_habit_given_up_stays_a_habit_not_a_job() -> None:
    """ "タバコを辞めました" quits smoking (the reader's), not an employer named タバコ."""
    assert event_claims(prep("タバコを辞めました")) == []
    assert [c.attribute for c in parse_claims("タバコを辞めました")] == ["smoke"]


def test_any_is_every_value_and_only_of_its_own_attribute() -> None:
    assert same_value(ANY, "netflix") and same_value("京东", ANY)
    assert not same_value(ANY, "")
    # retired (employer ANY, not so) beside a home: other attributes, unrelated
    assert relation("I retired in June", "I live in Leeds").label == UNRELATED


def test_going_vegan_denies_meat_and_not_the_other_way_round() -> None:
    assert relation("I went vegan this year", "I eat meat").label == CONTRADICTING
    assert relation("I'm vegetarian", "I'm vegan").label == CONTRADICTING  # one diet at a time, as before
    # eating meat denies being vegetarian; "I'm not vegan" says nothing of meat
    assert relation("I'm not vegan", "I eat meat").label != CONTRADICTING


def test_an_event_with_no_one_named_is_the_speakers() -> None:
    (claim,) = event_claims(prep("just retired"))
    assert (claim.subject, claim.attribute, claim.value, claim.positive) == ("self", "employer", ANY, False)
    (other,) = event_claims(prep("My father retired in June"))
    assert other.subject == "my father"  # control: named, so theirs


def test_a_move_names_where_one_lives_now() -> None:
    (claim,) = event_claims(prep("京都から神戸に引っ越しました"))
    assert (claim.attribute, claim.value, claim.positive) == ("location", "神戸", True)
    assert relation("京都から神戸に引っ越しました", "神戸に住んでいます").label != CONTRADICTING  # control
