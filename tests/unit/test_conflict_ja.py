"""Conflict rules in Japanese (ltm/domain/conflict/japanese.py): kana clauses are read before the
Chinese reader sees their kanji; a dropped subject is the speaker's; 以前は / "…ていました" end a
state. Each exclusion has its positive control beside it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.conflict import COMPATIBLE, CONTRADICTING, UNRELATED, chinese, japanese, parse_claims, relation
from ltm.domain.conflict.readers import READERS


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("京都に引っ越しました。", "札幌に住んでいます。"),
        ("今は日立で働いています。", "NECで働いています。"),
        ("私は41歳です。", "私は40歳です。"),
        ("トマトが嫌いです。", "トマトが好きです。"),
        ("Kotlinの方が好きです。", "Javaの方が好きです。"),
        ("ビールはもう飲みません。", "毎晩ビールを飲みます。"),
        ("ハムスターはもう飼っていません。", "ハムスターを飼っています。"),
        ("ベジタリアンです。", "毎日お肉を食べます。"),
        ("MySQLに移行しました。", "Postgresを使っています。"),
        ("妻と離婚しました。", "結婚しています。"),
        ("打ち合わせは月曜日に変更になりました。", "打ち合わせは水曜日です。"),
        ("私はエンジニアです。", "私はデザイナーです。"),
    ],
)
def test_contradicting(new: str, old: str) -> None:
    assert relation(new, old).label == CONTRADICTING


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("紅茶も好きです。", "コーヒーが好きです。"),  # two drinks: コーヒー / 紅茶 are read as coffee / black tea
        ("うさぎを飼っています。", "猫を飼っています。"),
        ("ワインも飲みます。", "ビールを飲みます。"),
        ("妹がいます。", "兄がいます。"),
        ("ドイツ語が話せます。", "英語が話せます。"),
    ],
)
def test_compatible(new: str, old: str) -> None:
    assert relation(new, old).label == COMPATIBLE


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("紅茶が好きです。", "横浜に住んでいます。"),
        ("締め切りは木曜日です。", "犬を二匹飼っています。"),
    ],
)
def test_unrelated(new: str, old: str) -> None:
    assert relation(new, old).label == UNRELATED


def test_another_person_named_as_topic_is_not_the_speaker() -> None:
    assert relation("父はタバコを吸います。", "タバコは吸いません。").label == UNRELATED
    assert relation("彼はパリに住んでいます。", "私はロンドンに住んでいます。").label == UNRELATED
    # controls: the same statements about the speaker contradict
    assert relation("タバコを吸います。", "タバコは吸いません。").label == CONTRADICTING
    assert relation("私はパリに住んでいます。", "私はロンドンに住んでいます。").label == CONTRADICTING


def test_an_ended_state_allows_another_value_and_denies_the_same() -> None:
    assert relation("以前は大阪に住んでいました。", "東京に住んでいます。").label == COMPATIBLE
    assert relation("昔はタバコを吸っていました。", "タバコを吸いません。").label == COMPATIBLE
    v = relation("以前は大阪に住んでいました。", "大阪に住んでいます。")  # control
    assert (v.label, v.reason) == (CONTRADICTING, "no longer so")


def test_a_move_in_the_past_tense_is_where_one_lives_now() -> None:
    (claim,) = parse_claims("2018年に仙台に引っ越しました。")
    assert (claim.attribute, claim.value, claim.ended) == ("location", "仙台", False)
    assert relation("2018年に仙台に引っ越しました。", "仙台に住んでいます。").label == COMPATIBLE
    assert relation("2018年に仙台に引っ越しました。", "福岡に住んでいます。").label == CONTRADICTING  # control


def test_not_living_somewhere_allows_living_elsewhere() -> None:
    assert relation("大阪には住んでいません。", "神戸に住んでいます。").label == COMPATIBLE
    assert relation("大阪には住んでいません。", "大阪に住んでいます。").label == CONTRADICTING  # control


def test_liking_two_of_a_kind_is_compatible_preferring_two_is_not() -> None:
    assert relation("Vueが好きです。", "Reactが好きです。").label == COMPATIBLE
    assert relation("Vueの方が好きです。", "Reactの方が好きです。").label == CONTRADICTING  # control


def test_the_name_marker_is_not_an_ended_state() -> None:
    """名前は contains 前は ("before"): it must not mark the name as no longer held."""
    (claim,) = parse_claims("私の名前は山本です。")
    assert (claim.attribute, claim.value, claim.ended) == ("name", "山本", False)
    (claim,) = parse_claims("前は大阪に住んでいました。")  # control: 前は on its own does
    assert claim.ended


def test_kana_clauses_are_read_by_the_japanese_reader_before_the_chinese_one() -> None:
    assert READERS.index(japanese.READER) < READERS.index(chinese.READER)
    assert japanese.READER.detects("猫を飼っています") and not japanese.READER.detects("我养了一只猫")
    (claim,) = parse_claims("猫を飼っています。")
    assert (claim.attribute, claim.value) == ("has", "cat")
    assert parse_claims("我养了一只猫。")[0].value == "猫"  # control: Chinese stays with the Chinese reader


def test_a_japanese_clause_its_reader_cannot_read_is_not_read_as_chinese() -> None:
    """有名人と会いました ("met a celebrity"): the Chinese 有 ("have") rule must not read it."""
    assert parse_claims("有名人と会いました。") == ()
    assert parse_claims("我有名人的签名。")  # control: the same characters without kana are Chinese


_JA_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x3041, max_codepoint=0x30FF),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),
        st.sampled_from("、。「」！？ 0123456789abcはがをにでもの"),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_JA_TEXT, _JA_TEXT)
def test_the_reader_never_raises_on_japanese_text(a: str, b: str) -> None:
    japanese.claims_ja(a, "")
    assert relation(a, b).label in (CONTRADICTING, COMPATIBLE, UNRELATED)


@pytest.mark.parametrize(
    "wish",
    ["大阪に引っ越したいです。", "大阪に引っ越すつもりです。", "大阪に住んでいますか", "大阪に引っ越したら"],
)
def test_a_wish_a_plan_or_a_question_is_not_where_one_lives(wish: str) -> None:
    assert relation(wish, "東京に住んでいます。").label != CONTRADICTING
    assert relation("大阪に引っ越しました。", "東京に住んでいます。").label == CONTRADICTING  # control


def test_a_planned_trip_is_still_a_trip() -> None:
    """Travel is about plans: 予定 does not drop it (the exclusion above is for states)."""
    (claim,) = parse_claims("来週京都に行く予定です。")
    assert (claim.attribute, claim.value) == ("travel", "京都")
