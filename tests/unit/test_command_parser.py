"""The ``!memory`` tokenizer and parser (pure), with hypothesis fuzzing: no input escapes as anything
but a :class:`ParseError` whose message exists in both catalogs."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from components.commands.parser import (
    BOOL,
    SPECS,
    TARGETS,
    VERBS,
    Parsed,
    ParseError,
    VerbSpec,
    parse,
    tokenize,
)
from ltm.domain.filters import STATUSES
from ltm.domain.privilege import POLICY
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
        assert err.value.key == "cmd.parse.unterminated_quote" and err.value.params["position"] == 8

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
            catalog(lang)[exc.key].format(**exc.params)  # every placeholder is filled
            assert t(exc.key, lang, **exc.params).strip()
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


# ------------------------------------------------------------------------------ the spec table

ID = st.text(alphabet="abcdef0123456789", min_size=20, max_size=20).map(lambda h: "ep_" + h)
PAGE = st.integers(1, 500).map(str)
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
QUOTED = st.lists(WORD, min_size=1, max_size=3).map(lambda ws: '"' + " ".join(ws) + '"')
INSTANT = st.sampled_from(["2024-05-01T00:00:00Z", "2023-12-31T23:59:00+08:00"])
STATUS = st.lists(st.sampled_from(list(STATUSES)), min_size=1, max_size=3, unique=True).map(",".join)
FLAG_VALUES = {"reason": QUOTED, "as-of": INSTANT, "status": STATUS, "speaker": WORD, "tag": WORD,
               "before": INSTANT, "page": PAGE}  # fmt: skip


def opt(s: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.just("") | s


@st.composite
def flags_of(draw: st.DrawFn, spec: VerbSpec, names: tuple[str, ...] | None = None, at_least: int = 0) -> str:
    """Some of the row's own flags, each with a valid value."""
    pool = sorted(names if names is not None else (spec.flags or {}))
    chosen = draw(st.lists(st.sampled_from(pool), min_size=at_least, unique=True)) if pool else []
    out = []
    for name in chosen:
        kind = (spec.flags or {})[name]
        out.append(f"--{name}" if kind == BOOL else f"--{name} {draw(FLAG_VALUES[name])}")
    return " ".join(out)


def _list_line(spec: VerbSpec) -> st.SearchStrategy[str]:
    by_status = flags_of(spec, ("status", "as-of"))
    by_include = flags_of(spec, ("include-superseded", "include-archived", "as-of"))
    return st.builds(lambda page, flags: f"{page} {flags}", opt(PAGE), by_status | by_include)


ARGS = {  # per row: a strategy of valid argument text (the verb's own shape and flags)
    "help": lambda s: opt(st.sampled_from(VERBS)),
    "profile": lambda s: st.just(""),
    "health": lambda s: st.just(""),
    "list": _list_line,
    "search": lambda s: st.builds(lambda q, a: f"{q} {a}", st.lists(WORD, min_size=1, max_size=4).map(" ".join),
                                  opt(INSTANT.map(lambda i: "--as-of " + i))),
    "why": lambda s: st.builds(lambda q, a: f"{q} {a}", st.lists(WORD, min_size=1, max_size=4).map(" ".join),
                               opt(INSTANT.map(lambda i: "--as-of " + i))),
    "show": lambda s: ID,
    "forget": lambda s: st.builds(lambda i, f: f"{i} {f}", ID, flags_of(s)),
    "superseded": lambda s: opt(PAGE),
    "archived": lambda s: opt(PAGE),
    "archive": lambda s: st.builds(lambda i, f: f"{i} {f}", ID, flags_of(s)),
    "restore": lambda s: st.builds(lambda i, f: f"{i} {f}", ID, flags_of(s)),
    "confirm": lambda s: st.builds(lambda i, f: f"{i} {f}", ID, flags_of(s)),
    "export": lambda s: st.just("") | st.just("l1") | st.builds(lambda f: f"l2 {f}", flags_of(s)),
    "import": lambda s: st.sampled_from(["l2 []", 'l2 {"episodes": []}', 'L2 [{"content": "a  b"}]']),
    "delete": lambda s: flags_of(s, ("speaker", "tag", "before", "status"), at_least=1).flatmap(
        lambda f: opt(FLAG_VALUES["reason"].map(lambda r: "--reason " + r)).map(lambda r: f"{f} {r}")
    ),
    "audit": lambda s: st.builds(lambda e, p: f"{e} {p}", st.sampled_from(["", "export"]), opt(PAGE)),
    "candidates": lambda s: st.builds(lambda p, f: f"{p} {f}", opt(PAGE), flags_of(s)),
    "candidate": lambda s: st.builds(lambda a, i, r: f"{a} {i} {r}", st.sampled_from(s.actions), ID, opt(WORD)),
    "tombstones": lambda s: opt(PAGE),
    "tombstone": lambda s: st.builds(lambda i, f: f"lift {i} {f}", ID, flags_of(s)),
    "consolidate": lambda s: st.just("preview") | st.builds(lambda i: f"run {i}".strip(), opt(ID)),
    "me": lambda s: opt(PAGE),
    "forget-me": lambda s: st.just("") | st.from_regex(r"[0-9]{6}", fullmatch=True).map(lambda c: "confirm " + c),
    "optout": lambda s: st.just(""),
    "optin": lambda s: st.just(""),
}  # fmt: skip


def test_every_row_has_a_generator_and_a_policy() -> None:
    assert set(ARGS) == set(VERBS)
    assert all(s.name in POLICY for s in SPECS)
    assert all(s.target in ("", *TARGETS) for s in SPECS)
    assert {s.name for s in SPECS if s.admin_only} == {v for v in VERBS if POLICY[v].needs_admin}


@st.composite
def valid_line(draw: st.DrawFn) -> tuple[VerbSpec, str, str]:
    spec = draw(st.sampled_from(SPECS))
    args = draw(ARGS[spec.name](spec))
    verb = draw(st.sampled_from([spec.name, spec.name.upper(), spec.name.title()]))
    return spec, verb, args


@settings(max_examples=800, deadline=None)
@given(valid_line(), st.booleans())
def test_every_row_round_trips(case: tuple[VerbSpec, str, str], rooted: bool) -> None:
    """A generated valid line parses to its row's verb; its id lands in the row's target field only."""
    spec, verb, args = case
    line = ("memory " if rooted else "") + f"{verb} {args}"
    p = parse(line)
    assert p.verb == spec.name, line
    ids = {t: getattr(p, f"{t}_id") for t in TARGETS}
    assert all(not v for t, v in ids.items() if t != spec.target), (line, ids)
    if spec.target and spec.name != "consolidate":  # consolidate run may name no proposal
        assert ids[spec.target] and ids[spec.target] in line
    assert p.page >= 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=12), SOUP)
def test_an_unknown_verb_is_refused(word: str, rest: str) -> None:
    """The control: a verb outside the table never parses, whatever follows it."""
    if word.lower() in VERBS or word.lower() == "memory":
        word += "x"
    try:
        tokenize(rest)
    except ParseError:
        assume(False)  # an unterminated quote is refused before the verb is read
    with pytest.raises(ParseError) as err:
        parse(f"memory {word} {rest}")
    assert err.value.key == "cmd.parse.unknown_verb"


def test_typed_ids() -> None:
    rid = "ep_0123456789abcdef0123"
    assert parse(f"candidate accept {rid}").candidate_id == rid
    assert parse(f"candidate reject {rid}").episode_id == ""
    assert parse(f"tombstone lift {rid}").tombstone_id == rid
    assert parse(f"consolidate run {rid}").proposal_id == rid
    assert parse(f"show {rid}").episode_id == rid
