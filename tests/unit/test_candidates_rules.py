"""Candidate extraction rules (pure): sentences, bounds, credential redaction, EN/ZH rules, and the
strict validation of a model's selection. Every exclusion has a positive control next to it."""

from __future__ import annotations

import json

import pytest

from ltm.domain import candidates as rules
from ltm.domain.candidates import (
    MAX_INPUT_CHARS,
    ModelResultError,
    classify,
    extract_by_rules,
    looks_like_credential,
    model_messages,
    parse_model_result,
    prepare,
    profile_name,
    split_sentences,
)
from ltm.service import injection


class TestSentences:
    def test_sentences_are_exact_substrings(self) -> None:
        text = "Hi there.  I prefer tea! Do you? 我住在北京。我喜欢猫！Version 3.5 is out"
        got = split_sentences(text)
        assert got == ["Hi there.", "I prefer tea!", "Do you?", "我住在北京。", "我喜欢猫！", "Version 3.5 is out"]
        assert all(s in text for s in got)

    def test_decimal_points_and_abbreviation_dots_mid_token_do_not_split(self) -> None:
        assert split_sentences("I am 1.85 m tall. See e.g.this") == ["I am 1.85 m tall.", "See e.g.this"]

    def test_memory_block_markers_match_the_injected_block(self) -> None:
        """The extractor removes exactly the block the listener injects."""
        assert (rules.MEMORY_BLOCK_BEGIN, rules.MEMORY_BLOCK_END) == (injection.BEGIN, injection.END)

    def test_injected_block_is_never_evidence(self) -> None:
        block = f'{injection.BEGIN}{{"episodes":[{{"content":"I prefer Go."}}]}}{injection.END}'
        turn = prepare(f"I prefer tea. {block} I live in Oslo.")
        assert "I prefer Go." not in " ".join(turn.sentences)
        assert turn.sentences == ("I prefer tea.", "I live in Oslo.")  # positive control: the rest stays
        unterminated = prepare(f"I prefer tea. {injection.BEGIN} I prefer Go.")
        assert unterminated.sentences == ("I prefer tea.",)

    def test_input_is_bounded_at_a_sentence_end(self) -> None:
        filler = "I like tea. " * 1000
        turn = prepare(filler + "I live in Oslo.")
        assert turn.truncated and len(turn.text) <= MAX_INPUT_CHARS
        assert turn.text.endswith("I like tea.")  # no sentence cut in half
        assert "I live in Oslo." not in turn.sentences
        short = prepare("I live in Oslo.")
        assert not short.truncated and short.sentences == ("I live in Oslo.",)


class TestCredentials:
    @pytest.mark.parametrize(
        "sentence",
        [
            "My OpenAI key is sk-proj-abcDEF1234567890abcdefXYZ.",
            "Use token ghp_0123456789abcdefghijABCDEFGHIJ012345 for the repo.",
            "Here is the AWS key AKIAIOSFODNN7EXAMPLE for staging.",
            "My password is hunter2!",
            "password: correct-horse-battery",
            "The verification code is 493821.",
            "My one-time code 771204 just arrived.",
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
            "我的密码是 abc12345。",
            "验证码：583920",
            "登录密码为Passw0rd",
            "connect with postgres://admin:s3cret@db.example:5432/app",
            "token = 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        ],
    )
    def test_credential_looking_sentences(self, sentence: str) -> None:
        assert looks_like_credential(sentence)

    @pytest.mark.parametrize(
        "sentence",
        [
            "My pass\u200bword is hunter2!",  # a zero-width space inside the keyword
            "My pass\u00adword is hunter2!",  # a soft hyphen
            "My pass\u2060word: correct-horse",  # a word joiner
            "My p@ssword is hunter2",
            "P@SSW0RD: 493821",
            "my pa$$word = letmein",
            "my pass-word is letmein",
            "my p\u0430ssword is qwerty",  # Cyrillic a
            "my p1n 4821",
            "api-k3y: abcdefgh",
            "My card is 4111 1111 1111 1111.",
            "card 5500-0000-0000-0004 exp 12/29",
            "amex 378282246310005 please",
            "卡号6011111111111117",
        ],
    )
    def test_obfuscated_credentials_and_card_numbers(self, sentence: str) -> None:
        assert looks_like_credential(sentence)

    @pytest.mark.parametrize(
        "sentence",
        [
            "My phone is +86 138 0013 8000.",  # 13 digits, not Luhn-valid
            "Order 1234 5678 9012 3456 shipped.",  # 16 digits, not Luhn-valid
            "The reference is 0000000000000.",  # one repeated digit
            "Email me at bob@example.com.",
            "I paid $45 for 3 items.",
            "I forgot my p@ssword again.",  # names a password, holds none
            "We met in 2019 and again in 2024.",
        ],
    )
    def test_obfuscation_positive_controls_are_kept(self, sentence: str) -> None:
        assert not looks_like_credential(sentence)

    @pytest.mark.parametrize(
        "sentence",
        [
            "I forgot my password again.",  # talks about a password, holds none
            "I prefer tea over coffee.",
            "My flight code is on the ticket.",
            "我忘记密码了。",
            "I use the Postgres database at work.",
            "My phone number ends in 42.",
        ],
    )
    def test_positive_controls_are_kept(self, sentence: str) -> None:
        assert not looks_like_credential(sentence)

    def test_redacted_sentences_are_dropped_and_counted(self) -> None:
        turn = prepare("I prefer tea. My password is hunter2! 我住在北京。验证码：583920")
        assert turn.sentences == ("I prefer tea.", "我住在北京。")
        assert turn.redactions == 2
        assert "hunter2" not in " ".join(turn.sentences)

    def test_redacted_text_is_never_in_the_model_prompt(self) -> None:
        turn = prepare("I prefer tea. My api key is sk-abcdefghijklmnop1234567890.")
        system, user = model_messages(turn, 3)
        assert "sk-abcdefghijklmnop1234567890" not in system + user
        assert "I prefer tea." in user  # positive control

    def test_obfuscated_credentials_are_never_in_the_model_prompt(self) -> None:
        turn = prepare(
            "I prefer tea. My pass\u200bword is hunter2! My p@ssword: qwerty9. "
            "My card is 4111 1111 1111 1111. I live in Oslo."
        )
        system, user = model_messages(turn, 3)
        assert turn.redactions == 3
        for secret in ("hunter2", "qwerty9", "4111"):
            assert secret not in system + user
        assert "I prefer tea." in user and "I live in Oslo." in user  # positive control


class TestRules:
    @pytest.mark.parametrize(
        ("sentence", "expected"),
        [
            ("My name is Alice.", "identity"),
            ("I'm 34 years old.", "identity"),
            ("I work as a nurse.", "identity"),
            ("I live in Lisbon.", "identity"),
            ("I prefer Python for scripting.", "preference"),
            ("I don't eat pork.", "preference"),
            ("My favourite colour is green.", "preference"),
            ("I'm allergic to peanuts.", "preference"),
            ("Please always answer in English.", "preference"),
            ("I'm going to Tokyo next week.", "plan"),
            ("I plan to learn Rust this year.", "plan"),
            ("Actually, I moved to Berlin.", "correction"),
            ("I don't drink coffee anymore.", "correction"),
            ("我叫李雷。", "identity"),
            ("我今年30岁。", "identity"),
            ("我住在杭州。", "identity"),
            ("我在腾讯工作。", "identity"),
            ("我喜欢绿茶。", "preference"),
            ("我不吃香菜。", "preference"),
            ("我对花生过敏。", "preference"),
            ("我打算下个月去日本。", "plan"),
            ("其实我搬到上海了。", "correction"),
            ("别上 Postgres，先用 SQLite。", "correction"),
        ],
    )
    def test_classes(self, sentence: str, expected: str) -> None:
        assert classify(sentence) == expected

    @pytest.mark.parametrize(
        ("excluded", "control"),
        [
            ("Do I like tea?", "I like tea."),
            ("What if I moved to Berlin?", "I moved to Berlin."),
            ("If I lived in Paris, I would walk more.", "I live in Paris."),
            ("你喜欢咖啡吗？", "我喜欢咖啡。"),
            ("如果我搬到上海，我就换工作。", "我搬到上海了。"),
            ("The weather is nice today.", "I love sunny weather."),
            ("She likes tea.", "I like tea."),
            ("ok", "I am 30."),
        ],
    )
    def test_questions_hypotheticals_and_other_talk_are_not_candidates(self, excluded: str, control: str) -> None:
        assert classify(excluded) is None
        assert classify(control) is not None

    def test_extract_keeps_order_bound_and_one_per_sentence(self) -> None:
        turn = prepare("Hello! I like tea. I like tea. I live in Oslo. I'm a nurse. I plan to learn Rust.")
        got = extract_by_rules(turn, 3)
        assert [p.content for p in got] == ["I like tea.", "I live in Oslo.", "I'm a nurse."]
        assert all(p.evidence_quote == p.content for p in got)
        assert len(extract_by_rules(turn, 10)) == 4

    def test_profile_name_only_for_a_bare_name_statement(self) -> None:
        assert profile_name("My name is Alice Smith.") == "Alice Smith"
        assert profile_name("Hi, call me Bob!") == "Bob"
        assert profile_name("我叫李雷。") == "李雷"
        assert profile_name("My name is Alice and I live in Oslo.") is None
        turn = prepare("My name is Alice Smith.")
        (p,) = extract_by_rules(turn, 3)
        assert p.target == "profile" and p.profile_patch == {"name": "Alice Smith"}


def _turn() -> rules.TurnText:
    return prepare("Hi! I prefer tea over coffee. I moved to Berlin last month. What's up?")


def _answer(*items: dict[str, object], **top: object) -> str:
    return json.dumps({"candidates": list(items), **top})


class TestModelResult:
    def test_exact_quotes_are_accepted_with_advice_stored(self) -> None:
        raw = _answer(
            {"evidence_quote": "I prefer tea over coffee.", "classification": "preference", "recommendation": "accept"},
            {"evidence_quote": "I moved to Berlin last month.", "classification": "correction", "note": "moved"},
        )
        got = parse_model_result(raw, _turn(), 3)
        assert [p.content for p in got] == ["I prefer tea over coffee.", "I moved to Berlin last month."]
        assert got[0].recommendation == "accept" and got[1].note == "moved"

    def test_a_single_json_fence_is_tolerated(self) -> None:
        raw = (
            "```json\n"
            + _answer({"evidence_quote": "I prefer tea over coffee.", "classification": "preference"})
            + "\n```"
        )
        assert len(parse_model_result(raw, _turn(), 3)) == 1

    def test_empty_selection(self) -> None:
        assert parse_model_result('{"candidates": []}', _turn(), 3) == []

    @pytest.mark.parametrize(
        "raw",
        [
            _answer(
                {"evidence_quote": "The user prefers tea to coffee.", "classification": "preference"}
            ),  # paraphrase
            _answer({"evidence_quote": "I prefer tea over coffee", "classification": "preference"}),  # no period
            _answer({"evidence_quote": "i prefer tea over coffee.", "classification": "preference"}),  # case
            _answer({"evidence_quote": "I prefer  tea over coffee.", "classification": "preference"}),  # spacing
            _answer(
                {"evidence_quote": "I prefer tea over coffee. I moved to Berlin last month.", "classification": "plan"}
            ),
            _answer({"evidence_quote": "What's up?", "classification": "fact"}),  # unknown class
            _answer(
                {"evidence_quote": "I prefer tea over coffee.", "classification": "preference", "status": "accepted"}
            ),
            _answer({"evidence_quote": "I prefer tea over coffee.", "classification": "preference"}, extra=1),
            _answer(
                {"evidence_quote": "I prefer tea over coffee.", "classification": "preference", "recommendation": "yes"}
            ),
            _answer({"evidence_quote": "I prefer tea over coffee."}),  # missing class
            _answer(
                {"evidence_quote": "I prefer tea over coffee.", "classification": "preference"},
                {"evidence_quote": "I prefer tea over coffee.", "classification": "preference"},
            ),
            '{"candidates": [{"evidence_quote": "I prefer tea over coffee.", "classification": "preference"}',
            "Sure! Here are the candidates: I prefer tea over coffee.",
            '[{"evidence_quote": "I prefer tea over coffee.", "classification": "preference"}]',
            '{"candidates": "I prefer tea over coffee."}',
            _answer({"evidence_quote": "I prefer tea over coffee.", "classification": "preference", "note": "x" * 201}),
            _answer(
                {"evidence_quote": "I prefer tea over coffee.", "classification": "preference", "note": "y" * 3990}
            ),
        ],
    )
    def test_any_fault_rejects_the_whole_selection(self, raw: str) -> None:
        """One bad item (or a malformed answer) rejects the valid items with it, too."""
        with pytest.raises(ModelResultError):
            parse_model_result(raw, _turn(), 3)

    def test_more_than_the_bound_is_rejected(self) -> None:
        turn = prepare("I like tea. I like cats. I live in Oslo. I am 30.")
        items = [{"evidence_quote": s, "classification": "preference"} for s in turn.sentences]
        with pytest.raises(ModelResultError):
            parse_model_result(_answer(*items), turn, 3)
        assert len(parse_model_result(_answer(*items[:3]), turn, 3)) == 3  # positive control

    def test_a_redacted_sentence_cannot_be_picked(self) -> None:
        turn = prepare("I prefer tea. My password is hunter2!")
        raw = _answer({"evidence_quote": "My password is hunter2!", "classification": "identity"})
        with pytest.raises(ModelResultError):
            parse_model_result(raw, turn, 3)

    def test_non_text_answer(self) -> None:
        with pytest.raises(ModelResultError):
            parse_model_result(None, _turn(), 3)
