"""Ages said in words, written in digits before the conflict readers read them
(ltm.domain.number_words): one table in the seven languages, each with a control where the same
words are no age and stay as they are."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.conflict import CONTRADICTING, UNRELATED, relation
from ltm.domain.number_words import ages_in_digits, han_number


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("i am thirty-one now", "i am 31 now"),
        ("she is twenty two years old", "she is 22 years old"),
        ("i turned forty.", "i turned 40."),
        ("tengo treinta y un años", "tengo 31 años"),
        ("ya tengo veintiocho anos", "ya tengo 28 anos"),  # typed without accents
        ("tôi ba mươi mốt tuổi rồi", "tôi 31 tuổi rồi"),
        ("toi hai muoi lam tuoi", "toi 25 tuoi"),
        ("con tôi mười lăm tuổi", "con tôi 15 tuổi"),
        ("我今年三十一岁了", "我今年31岁了"),
        ("我兒子二十歲", "我兒子20歲"),
        ("三十一歳になりました", "31歳になりました"),
        ("ตอนนี้ฉันอายุสามสิบเอ็ดปีแล้ว", "ตอนนี้ฉันอายุ 31 ปีแล้ว"),
        ("ลูกชายฉันอายุยี่สิบปี", "ลูกชายฉันอายุ 20 ปี"),
        ("ลูกสาวอายุสิบปี", "ลูกสาวอายุ 10 ปี"),
        ("ยายอายุหนึ่งร้อยสองปี", "ยายอายุ 102 ปี"),
        ("ยายอายุร้อยปี", "ยายอายุ 100 ปี"),
        ("ทวดอายุหนึ่งร้อยปี", "ทวดอายุ 100 ปี"),
        ("turned forty.", "turned 40."),  # the verb at the very start of the text
        ("he is nine", "he is 9"),
        ("tengo treinta años", "tengo 30 años"),
        ("tiene ciento dos años", "tiene 102 años"),
        ("tôi ba mươi tuổi", "tôi 30 tuổi"),
        ("con tôi chín tuổi", "con tôi 9 tuổi"),
        ("con tôi mười tuổi", "con tôi 10 tuổi"),
        ("他一百岁", "他100岁"),
        ("她十岁", "她10岁"),
        # the same words outside an age's frame are left alone (the controls)
        ("i am one of the founders", "i am one of the founders"),
        ("it is two in the afternoon", "it is two in the afternoon"),
        ("tengo dos perros", "tengo dos perros"),
        ("tôi có một con mèo", "tôi có một con mèo"),
        ("我有三只猫", "我有三只猫"),
        ("ฉันมีแมวสามตัว", "ฉันมีแมวสามตัว"),
    ],
)
def test_an_age_in_words_is_written_in_digits(text: str, digits: str) -> None:
    assert ages_in_digits(text) == digits


@pytest.mark.parametrize(
    ("run", "value"), [("三十一", 31), ("十五", 15), ("二十", 20), ("一百零二", 102), ("三万五千", 35000), ("二三", 23)]
)
def test_han_numbers(run: str, value: int) -> None:
    assert han_number(run) == value


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("I'm thirty-one now", "I'm 30"),
        ("ya tengo treinta y un años", "tengo 30 años"),
        ("tôi ba mươi mốt tuổi rồi", "tôi 30 tuổi"),
        ("三十一歳になりました", "30歳です"),
        ("ตอนนี้ฉันอายุสามสิบเอ็ดปีแล้ว", "ฉันอายุ 30 ปี"),
        ("我今年三十一岁了", "我30岁"),
        ("我今年三十一歲了", "我30歲"),
    ],
)
def test_an_age_in_words_contradicts_the_age_in_digits(new: str, old: str) -> None:
    """Before, each pair was "unrelated": the readers read an age in digits only."""
    v = relation(new, old)
    assert (v.label, v.attribute) == (CONTRADICTING, "age"), v
    assert relation(new, new).label != CONTRADICTING  # control: the same age twice


def test_someone_elses_age_in_words_is_unrelated() -> None:
    assert relation("My son is twenty years old", "I'm 30").label == UNRELATED
    assert relation("我儿子二十岁", "我30岁").label == UNRELATED


@given(st.text(max_size=80))
def test_never_raises_and_reads_its_own_output_unchanged(text: str) -> None:
    out = ages_in_digits(text)
    assert isinstance(out, str)
    assert ages_in_digits(out) == out  # digits are not read again
