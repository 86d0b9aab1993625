"""The ``!memory`` tokenizer and parser (pure), with hypothesis fuzzing: no input escapes as anything
but a :class:`ParseError` whose message exists in both catalogs."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.commands.parser import VERBS, Parsed, ParseError, parse, tokenize
from ltm.i18n import LANGUAGES, catalog, t


def values(text: str) -> list[str]:
    return [tok.value for tok in tokenize(text)]


class TestTokenizer:
    def test_whitespace_and_quotes(self) -> None:
        assert values('a  "b c"\u3000d\te') == ["a", "b c", "d", "e"]
        assert values("\u201c中文 引号\u201d x") == ["中文 引号", "x"]
        assert values('--reason="two words"') == ["--reason=two words"]
        assert values(r'"say \"hi\" \\ ok"') == ['say "hi" \\ ok']
        assert values("don't stop") == ["don't", "stop"]
        assert values('""') == [""]

    def test_spans_point_into_the_line(self) -> None:
        text = 'memory  import l2 {"a": 1}'
        toks = tokenize(text)
        assert text[toks[2].start : toks[2].end] == "l2"

    def test_unterminated(self) -> None:
        with pytest.raises(ParseError) as err:
            tokenize('search "open')
        assert err.value.key == "cmd.parse.unterminated_quote" and err.value.args_["position"] == 8

    def test_quoted_flag_is_text(self) -> None:
        toks = tokenize('"--status" --status')
        assert [tok.is_flag for tok in toks] == [False, True]


class TestParse:
    def test_bare_and_root(self) -> None:
        assert parse("memory").verb == "summary"
        assert parse("").verb == "summary"
        assert parse("memory list").verb == "list"
        assert parse("list").verb == "list"

    def test_list(self) -> None:
        p = parse("memory list 3 --include-archived")
        assert (p.page, p.statuses) == (3, ("active", "archived"))
        assert parse("memory list --status superseded,archived").statuses == ("superseded", "archived")
        assert parse("memory list --status all").statuses is None
        assert parse("memory list").statuses == ("active",)

    def test_ids_and_reason(self) -> None:
        p = parse('memory forget ep_abc --reason "user asked"')
        assert (p.verb, p.episode_id, p.reason) == ("forget", "ep_abc", "user asked")
        assert parse("memory archive ep_1 --reason=x").reason == "x"

    def test_search_is_free_text(self) -> None:
        assert parse('memory search green  "tea time" --not-a-flag').query == "green tea time --not-a-flag"

    def test_delete(self) -> None:
        p = parse("memory delete --speaker bob --tag t --before 2024-05-01T12:00:00+02:00 --status archived")
        assert (p.speaker, p.tag, p.before, p.statuses) == ("bob", "t", "2024-05-01T10:00:00Z", ("archived",))
        assert p.before_ts == 1714557600.0

    def test_export_import_audit(self) -> None:
        assert parse("memory export").action == "l1"
        p = parse("memory export l2 --status active --page 2")
        assert (p.action, p.statuses, p.page) == ("l2", ("active",), 2)
        doc = {"episodes": [{"content": 'a "quoted" value  with  spaces'}]}
        p = parse("memory import l2 " + json.dumps(doc, indent=2))
        assert p.payload == doc
        assert parse("memory audit 4").page == 4 and parse("memory audit export").policy_verb == "audit.export"
        assert parse("memory audit").policy_verb == "audit"

    @pytest.mark.parametrize(
        ("line", "key"),
        [
            ("memory nope", "cmd.parse.unknown_verb"),
            ("memory list x", "cmd.parse.bad_page"),
            ("memory list 99999999999", "cmd.parse.bad_page"),
            ("memory list \u0661", "cmd.parse.bad_page"),
            ("memory forget", "cmd.parse.id_missing"),
            ("memory forget a b", "cmd.parse.forget_one"),
            ("memory show a/b", "cmd.parse.bad_id"),
            ("memory delete", "cmd.parse.delete_filter"),
            ("memory delete ep_1", "cmd.parse.delete_positional"),
            ("memory delete --speaker", "cmd.parse.flag_value"),
            ("memory delete --speaker --tag x", "cmd.parse.flag_value"),
            ("memory delete --status ''", "cmd.parse.bad_status"),
            ("memory delete --tag " + "x" * 300, "cmd.parse.value_long"),
            ("memory import", "cmd.parse.import_layer"),
            ('memory import "l2" []', "cmd.parse.import_layer"),
            ("memory import l2 {", "cmd.parse.import_json"),
            ("memory import l2 " + "[" * 100000, "cmd.parse.import_json"),
            ("memory export l2 --page 0", "cmd.parse.bad_page"),
            ("memory export l1 --page 2", "cmd.parse.l1_flags"),
            ("memory search " + "q" * 600, "cmd.parse.query_long"),
            ("memory health --x", "cmd.parse.unknown_flag"),
            ("memory help list more", "cmd.parse.extra_args"),
        ],
    )
    def test_errors(self, line: str, key: str) -> None:
        with pytest.raises(ParseError) as err:
            parse(line)
        assert err.value.key == key


# ------------------------------------------------------------------------------------------ fuzz

WORDS = st.sampled_from(
    [
        *VERBS,
        "memory",
        "l1",
        "l2",
        "all",
        "active",
        "archived",
        "superseded",
        "deleted",
        "1",
        "2",
        "0",
        "-1",
        "ep_0123456789abcdef0123",
        "--status",
        "--include-archived",
        "--include-superseded",
        "--reason",
        "--page",
        "--speaker",
        "--tag",
        "--before",
        "--",
        "--x=y",
        "--status=",
        '"',
        '\\"',
        "\u201c",
        "\u201d",
        "{",
        "}",
        "[",
        "]",
        '{"episodes": [',
        "2024-01-01T00:00:00Z",
        "yesterday",
        "\u3000",
        "\n",
        "\u202e",
        "\x00",
    ]
)
SOUP = st.lists(st.one_of(WORDS, st.text(max_size=12)), max_size=12).map(" ".join)


def _check(line: str) -> None:
    try:
        parsed = parse(line)
    except ParseError as exc:
        for lang in LANGUAGES:
            assert exc.key in catalog(lang), exc.key
            catalog(lang)[exc.key].format(**exc.args_)  # every placeholder is filled
            assert t(exc.key, lang, **exc.args_).strip()
        return
    assert isinstance(parsed, Parsed)
    assert parsed.verb == "summary" or parsed.verb in VERBS
    assert parsed.page >= 1


class TestFuzz:
    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.text(max_size=200))
    def test_any_text(self, line: str) -> None:
        _check(line)
        _check("memory " + line)

    @settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(SOUP)
    def test_token_soup(self, line: str) -> None:
        _check("memory " + line)

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(VERBS), SOUP)
    def test_every_verb(self, verb: str, rest: str) -> None:
        _check(f"memory {verb} {rest}")
