"""Hypothesis at every input boundary of the loaded plugin (over the fake LangBot host):

- tool parameters (remember, recall_memory, update_profile, forget) as fuzzed dicts;
- time fields (event_at / valid_from / valid_until / time_from / time_until / --before) as
  ISO-8601-like strings at the edges (years 0001 and 9999, offsets up to +-99:99, bad dates) and text;
- engine ingest JSON (``MemoryService.ingest_document``) as fuzzed payloads;
- console API bodies (``pages.router.handle``) for every route, with fuzzed fields and non-dict bodies;
- ``!memory`` command lines (the command component as the host drives it).

Hostile text (:data:`NASTY`: lone surrogates, NUL, invisible and direction characters, a look-alike
of the block's closing marker, overlong ids) and non-finite numbers are mixed into every strategy;
the inputs that once escaped as exceptions are pinned on every surface at the end of the module.

Every call: no exception escapes, a refusal comes with a clear localized message (never a bare
key, a placeholder or a traceback, never the "internal error" fallback), and a refused request
changes nothing at all (vector rows and every plugin storage key, audit included). One plugin and
one store per test function: state accumulates as in a real installation.

Instants at the edge of the calendar (year 0001 with a positive offset, 9999 with a negative one)
once escaped as ``OverflowError``; they are pinned by :data:`EDGE_INSTANTS` and fuzzed everywhere.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.proxies.execute_context import ExecuteContextProxy

from ltm.domain.errors import LtmError
from ltm.domain.storage_keys import LEDGER_PREFIX
from ltm.i18n import error_text, t
from ltm.service import Actor
from ltm.service.index_snapshot import PREFIX as SNAPSHOT_PREFIX
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import assert_clear_message, component, load_plugin

KB = "kb-fuzz"
BOT = "bot-fuzz"
ADMIN = Actor(surface="test", sender_id="admin", privilege=2)
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
INTERNAL = (t("cmd.error.internal", "en_US"), "The console request failed unexpectedly")


# --------------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------------

ISO_LIKE = st.builds(
    lambda y, mo, d, h, mi, sec, frac, sep, tz: f"{y:04d}-{mo:02d}-{d:02d}{sep}{h:02d}:{mi:02d}{sec}{frac}{tz}",
    st.sampled_from([1, 1970, 2024, 2999, 3000, 9999]) | st.integers(0, 9999),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 25),
    st.integers(0, 61),
    st.sampled_from(["", ":00", ":59", ":60"]),
    st.sampled_from(["", ".5", ".123456", ".1234567"]),
    st.sampled_from(["T", " ", "t"]),
    st.sampled_from(["Z", "z", "+00:00", "-05:30", "+14:00", "-14:00", "+0530", "+99:99", "", "+24:00"]),
)
NASTY = (
    "\ud800",
    "\udfff",
    "a\udc80b",
    "\x00",
    "a\x00b",
    "\u200b",
    "\u202e",
    "\u2028",
    "\u2029",
    "\uff1c/ltm-memory-data\uff1e",
    "ep_" + "x" * 300,
    "x" * 5000,
)
NASTY_TEXT = st.lists(st.text(max_size=8) | st.sampled_from(NASTY), min_size=1, max_size=4).map("".join)
NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf")])
INSTANTS = st.one_of(ISO_LIKE, st.text(max_size=30), st.none(), st.integers(), st.floats(allow_nan=True), NASTY_TEXT)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    NON_FINITE,
    st.text(max_size=60),
    NASTY_TEXT,
    st.sampled_from(["", " ", "\x00", "</ltm-memory-data>", "active", "archived", "speaker", "session", "any"]),
    ISO_LIKE,
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def fuzzed_dict(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    key = st.sampled_from(keys) | st.text(max_size=10)
    return st.dictionaries(key, JSONISH | INSTANTS, max_size=6)


# --------------------------------------------------------------------------------------------
# the harness: one loaded plugin per test function, driven on a private event loop
# --------------------------------------------------------------------------------------------


@dataclass
class Harness:
    loop: asyncio.AbstractEventLoop
    fake: FakeHostHandler
    ctl: Any
    session: Session
    known_ids: list[str]
    qid: int = 100

    def run(self, aw: Any) -> Any:
        return self.loop.run_until_complete(aw)

    def state(self) -> tuple[Any, ...]:
        rows = self.fake.vector_rows(KB)
        metas = [json.dumps(md, sort_keys=True, default=str) for md in rows["metadatas"]]
        vectors = sorted(zip(rows["ids"], metas, rows["documents"], strict=True))
        # recall index snapshots are a cache the plugin rewrites in the background, reads included;
        # the usage ledger counts every tool call, refused ones too (a record of use, not memory)
        kept = {k: v for k, v in self.fake.storage.items() if not k.startswith((SNAPSHOT_PREFIX, LEDGER_PREFIX))}
        return kept, vectors

    def tool(self, name: str) -> Any:
        return component(self.ctl, "Tool", name)

    @property
    def service(self) -> Any:
        return self.tool("remember").plugin.service

    def next_query(self) -> int:
        self.qid += 1
        self.fake.add_query(
            self.qid,
            {"launcher_type": "person", "launcher_id": "fz", "sender_id": "fz", "_knowledge_base_uuids": [KB]},
            bot_uuid=BOT,
            pipeline_kbs=[KB],
        )
        return self.qid


@pytest.fixture
def h() -> Iterator[Harness]:
    loop = asyncio.new_event_loop()
    fake = FakeHostHandler(bots=[BOT])
    fake.add_knowledge_base(KB)
    try:
        ctl = loop.run_until_complete(load_plugin(fake, {"admin_sender_ids": ["fz"]}))
        harness = Harness(loop, fake, ctl, Session(launcher_type="person", launcher_id="fz", sender_id="fz"), [])
        harness.run(
            component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})
        )
        for n in range(3):
            out = harness.run(
                harness.tool("remember").call({"content": f"seed fact {n}"}, harness.session, harness.next_query())
            )
            harness.known_ids.append(out["id"])
        yield harness
    finally:
        loop.close()


def _note(text: str) -> None:
    """A hypothesis event (``--hypothesis-show-statistics``); a no-op outside a property."""
    try:
        event(text)
    except InvalidArgument:
        pass


# --------------------------------------------------------------------------------------------
# tools
# --------------------------------------------------------------------------------------------

TOOL_KEYS = {
    "remember": ["content", "importance", "tags", "event_at", "valid_from", "valid_until", "claim_type", "supersedes"],
    "recall_memory": ["query", "speaker", "limit", "time_from", "time_until"],
    "update_profile": [
        "target",
        "name",
        "add_traits",
        "remove_traits",
        "set_preferences",
        "remove_preferences",
        "add_notes",
        "remove_notes",
    ],
    "forget": ["episode_id", "reason"],
}


def encodable(value: Any) -> None:
    """What goes back to the host is serialised as UTF-8 JSON: no lone surrogate may be in it."""
    json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")


def _call_tool(h: Harness, name: str, params: Any) -> dict[str, Any]:
    before = h.state()
    try:
        out = h.run(h.tool(name).call(params, h.session, h.next_query()))
    except Exception as exc:  # noqa: BLE001 - the property
        raise AssertionError(f"tool {name} raised {type(exc).__name__}: {exc} for {params!r}") from exc
    assert isinstance(out, dict) and isinstance(out.get("ok"), bool), out
    _note(f"{name}: {'ok' if out['ok'] else 'refused'}")
    encodable(out)  # the host serialises the result
    if not out["ok"]:
        assert_clear_message(out.get("error"))
        assert h.state() == before, f"tool {name} refused but changed the store: {params!r}"
    elif name == "recall_memory":
        assert h.state() == before
    elif name == "remember":
        h.known_ids.append(out["id"])
    assert not [k for k in h.fake.storage if k.startswith(("journal/", "fence/"))]
    return out


def _control(h: Harness, name: str) -> None:
    """After the fuzz, a plain valid request still does its job: a tool that refuses everything
    (cleanly, changing nothing) would pass every property above, and fails here."""
    params: dict[str, Any] = {
        "remember": {"content": "Control fact: the office plant is called Fern."},
        "update_profile": {"add_traits": ["punctual"]},
    }.get(name, {})
    if name in ("forget", "recall_memory"):
        stored = _call_tool(h, "remember", {"content": "Control fact: the spare key is under the blue pot."})
        assert stored["ok"] is True, stored
        params = {"episode_id": stored["id"]} if name == "forget" else {"query": "spare key blue pot"}
    before = h.state()
    out = _call_tool(h, name, params)
    assert out["ok"] is True, out
    if name == "recall_memory":
        assert stored["id"] in [e["id"] for e in out["episodes"]], out  # found, not just "ok"
    else:
        assert h.state() != before  # the write landed


TEXT = st.text(min_size=1, max_size=80) | NASTY_TEXT
VALID_BASE = {
    "remember": st.fixed_dictionaries(
        {"content": TEXT}, optional={"importance": st.floats(0, 1), "tags": st.lists(TEXT, max_size=3)}
    ),
    "recall_memory": st.fixed_dictionaries(
        {"query": TEXT}, optional={"limit": st.integers(1, 20) | NON_FINITE | st.floats()}
    ),
    "update_profile": st.fixed_dictionaries(
        {"add_traits": st.lists(TEXT, min_size=1, max_size=3)}, optional={"target": st.sampled_from(["session"])}
    ),
    "forget": st.fixed_dictionaries({"episode_id": st.sampled_from(["ep_unknown"])}),
}


def tool_params(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Raw fuzz, or a valid request with fuzzed extra or replaced fields."""
    fuzz = fuzzed_dict(TOOL_KEYS[name])
    return fuzz | st.builds(lambda base, extra: {**base, **extra}, VALID_BASE[name], fuzz) | VALID_BASE[name]


@pytest.mark.parametrize("name", sorted(TOOL_KEYS))
def test_tool_parameters(h: Harness, name: str) -> None:
    """Each tool with fuzzed parameter dicts (known keys with any JSON value, unknown keys, valid
    requests with perturbed fields)."""

    @FUZZ
    @given(params=tool_params(name), use_known_id=st.booleans())
    def check(params: dict[str, Any], use_known_id: bool) -> None:
        if use_known_id and h.known_ids:
            key = "episode_id" if name == "forget" else "supersedes"
            params = {**params, key: h.known_ids[len(params) % len(h.known_ids)]}
            if name == "remember":
                params["supersedes"] = [params["supersedes"]]
        _call_tool(h, name, params)

    check()
    _control(h, name)


@pytest.mark.parametrize("name", sorted(TOOL_KEYS))
@pytest.mark.parametrize(
    "params",
    [None, [], {"": None}, "content", 3],
    ids=["none", "empty-list", "empty-key", "string", "number"],
)
def test_tool_parameters_that_are_not_a_dict(h: Harness, name: str, params: Any) -> None:
    _call_tool(h, name, params)


def test_time_fields(h: Harness) -> None:
    """Every time field of remember and recall_memory with ISO-like edge values and text."""

    @FUZZ
    @given(
        event_at=INSTANTS,
        valid_from=INSTANTS,
        valid_until=INSTANTS,
        time_from=INSTANTS,
        time_until=INSTANTS,
    )
    def check(event_at: Any, valid_from: Any, valid_until: Any, time_from: Any, time_until: Any) -> None:
        _call_tool(
            h,
            "remember",
            {"content": "a dated fact", "event_at": event_at, "valid_from": valid_from, "valid_until": valid_until},
        )
        _call_tool(h, "recall_memory", {"query": "dated fact", "time_from": time_from, "time_until": time_until})

    check()


# --------------------------------------------------------------------------------------------
# engine ingest JSON
# --------------------------------------------------------------------------------------------

EPISODE_ITEM = fuzzed_dict(
    ["content", "session_name", "bot_uuid", "sender_id", "event_at", "valid_from", "tags", "importance", "status"]
)
GOOD_ITEM = st.fixed_dictionaries(
    {"content": st.text(min_size=1, max_size=40), "session_name": st.sampled_from(["person_a", "group_g", "bad"])},
    optional={"event_at": INSTANTS, "tags": JSONISH, "importance": SCALARS, "sender_id": SCALARS},
)
PAYLOADS = st.one_of(
    JSONISH,
    st.lists(EPISODE_ITEM | GOOD_ITEM, max_size=4),
    st.fixed_dictionaries({"episodes": st.lists(EPISODE_ITEM | GOOD_ITEM, max_size=4)}, optional={"bot_uuid": SCALARS}),
)


def test_engine_ingest_payloads(h: Harness) -> None:
    """ingest_document with any JSON: a count and exactly that many new rows, or a refusal with a
    clear message and no change at all (not even the document index)."""
    doc_no = iter(range(10**6))

    @FUZZ
    @given(payload=PAYLOADS)
    def check(payload: Any) -> None:
        before = h.state()
        n_before = len(before[1])
        try:
            n = h.run(h.service.ingest_document(KB, f"doc-{next(doc_no)}", payload, ADMIN))
        except LtmError as exc:
            _note("ingest: refused")
            assert_clear_message(error_text(exc, "en_US"))
            assert_clear_message(error_text(exc, "zh_Hans"), lang="zh_Hans")
            encodable(error_text(exc, "en_US"))
            assert h.state() == before, f"refused but changed the store: {payload!r}"
            return
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"ingest raised {type(exc).__name__}: {exc} for {payload!r}") from exc
        assert isinstance(n, int) and n >= 1
        _note("ingest: ok")
        assert len(h.state()[1]) == n_before + n

    check()


# --------------------------------------------------------------------------------------------
# console API bodies
# --------------------------------------------------------------------------------------------


def _scope_strategy() -> st.SearchStrategy[dict[str, Any]]:
    valid = st.just({"kb_id": KB, "session_name": "person_fz", "bot_uuid": BOT, "sender_id": "fz"})
    good = st.fixed_dictionaries(
        {
            "kb_id": st.sampled_from([KB, "", "kb-unknown"]),
            "session_name": st.sampled_from(["person_fz", "group_g", "person_a b", "x", ""]),
            "bot_uuid": st.sampled_from([BOT, "", "a:b", "has space"]),
            "sender_id": st.sampled_from(["fz", "", "other"]),
        }
    )
    return st.one_of(valid, valid, good, fuzzed_dict(["kb_id", "session_name", "bot_uuid", "sender_id"]))


def test_console_bodies(h: Harness) -> None:
    """Every route with fuzzed bodies (scope fields at the top or under ``scope``, every documented
    field with any value, non-dict bodies) and methods."""
    from pages.router import ROUTES, handle

    fields = [
        "id", "reason", "status", "speaker", "time_from", "time_until", "page", "page_size", "query", "layer",
        "probe", "target", "speaker_id", "patch", "isolation", "lang",
    ]  # fmt: skip

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        endpoint=st.sampled_from(sorted(ROUTES) * 8 + ["", "/nope", "/episodes/", "episodes"]),
        method=st.sampled_from(["POST"] * 6 + ["GET", "post", "DELETE", ""]),
        scope=_scope_strategy(),
        extra=fuzzed_dict(fields),
        nest=st.booleans(),
        shape=st.sampled_from(["dict", "dict", "dict", "list", "str", "none"]),
        use_known_id=st.booleans(),
    )
    def check(
        endpoint: str,
        method: str,
        scope: dict[str, Any],
        extra: dict[str, Any],
        nest: bool,
        shape: str,
        use_known_id: bool,
    ) -> None:
        body: Any = {**extra, "scope": scope} if nest else {**scope, **extra}
        if use_known_id and h.known_ids:
            body["id"] = h.known_ids[0]
        body = {"dict": body, "list": [body], "str": json.dumps(body, default=str), "none": None}[shape]
        before = h.state()
        try:
            resp = h.run(handle(h.service, PageRequest(endpoint=endpoint, method=method, body=body)))
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"handle raised {type(exc).__name__}: {exc}") from exc
        _note(f"{endpoint if endpoint in ROUTES else '<unknown>'}: {'refused' if resp.error else 'ok'}")
        if resp.error is None:
            json.dumps(resp.data)
            encodable(resp.data)
            return
        encodable(resp.error)
        assert not resp.error.startswith(INTERNAL), f"{endpoint}: internal error for {body!r}"
        assert_clear_message(resp.error)
        assert h.state() == before, f"{endpoint} refused but changed the store: {body!r}"

    check()


# --------------------------------------------------------------------------------------------
# command lines
# --------------------------------------------------------------------------------------------

READ_ONLY_VERBS = ("summary", "help", "profile", "list", "search", "show", "superseded", "archived", "audit", "health")


def _command(h: Harness, line: str, privilege: int) -> list[str]:
    full = "!" + line
    command_text = full[1:]
    ctx = ExecuteContextProxy(
        query_id=h.next_query(),
        session=h.session,
        command_text=command_text,
        full_command_text=full,
        command="",
        crt_command="",
        params=command_text.split(" "),
        crt_params=command_text.split(" "),
        privilege=privilege,
        plugin_runtime_handler=h.fake,
    )
    ctx.command = ctx.params[0]
    ctx.shift()
    cmd = component(h.ctl, "Command", "memory")
    return [r.text for r in h.run(_collect(cmd, ctx))]


async def _collect(cmd: Any, ctx: Any) -> list[Any]:
    return [r async for r in cmd._execute(ctx)]


WORDS = st.sampled_from(
    [
        "list", "search", "show", "forget", "archive", "restore", "delete", "export", "import", "audit", "help",
        "profile", "health", "l1", "l2", "--reason", "--before", "--tag", "--status", "--speaker", "--page",
        "--include-archived", '"', "“", "--", "active,archived", "2024-05-01T00:00:00Z", "9999-12-31T23:59-14:00",
        "0001-01-01T00:00+14:00", "{", "}", "[]", '{"episodes":[]}', "ep_x", "0", "-1", "99999999999",
        "l2", '{"episodes":[{"content":"a\\ud800"}]}', '[{"content":"x","tags":["\\u0000"]}]', "NaN",
        "Infinity", "1e999", "ep_" + "x" * 300, *NASTY,
    ]
)  # fmt: skip
LINES = st.lists(WORDS | st.text(max_size=10), max_size=8).map(" ".join)


def test_command_lines(h: Harness) -> None:
    """``!memory <line>`` for a member and an admin: one or more non-empty replies, never the
    internal-error fallback; a read-only verb or a refused line leaves the data unchanged."""
    from components.commands.parser import VERBS, ParseError, parse

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        line=st.builds(
            lambda verb, rest: f"{verb} {rest}",
            st.sampled_from([*VERBS, ""]),
            st.just("") | st.lists(WORDS, max_size=3).map(" ".join) | LINES,
        ),
        privilege=st.sampled_from([1, 2]),
    )
    def check(line: str, privilege: int) -> None:
        try:
            verb: str | None = parse("memory " + line).verb
        except ParseError:
            verb = None
        _note(f"command {verb}")
        before = h.state()
        replies = _command(h, "memory " + line, privilege)
        assert replies and all(isinstance(r, str) and r.strip() for r in replies), replies
        encodable(replies)
        assert not replies[0].startswith(INTERNAL), f"internal error for {line!r}"
        assert "Traceback" not in "".join(replies)
        if verb is None:
            assert h.state() == before, f"a refused line changed the store: {line!r}"
        elif verb in READ_ONLY_VERBS:
            data = ({k: v for k, v in before[0].items() if not k.startswith("audit/")}, before[1])
            now = h.state()
            assert ({k: v for k, v in now[0].items() if not k.startswith("audit/")}, now[1]) == data

    check()


# --------------------------------------------------------------------------------------------
# the calendar edge, pinned on every surface
# --------------------------------------------------------------------------------------------

EDGE_INSTANTS = ("0001-01-01T00:00+14:00", "9999-12-31T23:59-14:00")


@pytest.mark.parametrize("value", EDGE_INSTANTS)
def test_an_instant_at_the_edge_of_the_calendar_is_refused_cleanly(h: Harness, value: str) -> None:
    """Once an OverflowError (timefields.parse_instant): now a clear refusal on every surface."""
    from ltm.domain.errors import ValidationError
    from ltm.domain.timefields import normalize_optional
    from pages.router import handle

    with pytest.raises(ValidationError):
        normalize_optional(value, "event_at")
    before = h.state()
    out = h.run(h.tool("remember").call({"content": "edge", "event_at": value}, h.session, h.next_query()))
    assert out["ok"] is False
    assert_clear_message(out["error"])
    out = h.run(h.tool("recall_memory").call({"query": "edge", "time_from": value}, h.session, h.next_query()))
    assert out["ok"] is False
    assert_clear_message(out["error"])
    with pytest.raises(LtmError):
        h.run(
            h.service.ingest_document(
                KB, "doc-edge", [{"content": "x", "session_name": "person_a", "event_at": value}], ADMIN
            )
        )
    body = {"kb_id": KB, "session_name": "person_fz", "bot_uuid": BOT, "time_from": value}
    resp = h.run(handle(h.service, PageRequest(endpoint="/episodes", method="POST", body=body)))
    assert resp.error and not resp.error.startswith(INTERNAL)
    replies = _command(h, f"memory delete --before {value}", 2)
    assert not replies[0].startswith(INTERNAL)
    assert h.state() == before


# --------------------------------------------------------------------------------------------
# inputs that once escaped as exceptions (a ValueError, a UnicodeEncodeError, "Something went
# wrong"): each is refused with the field named, on every surface, and nothing is written; the
# same request with the bad character removed is the positive control
# --------------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
HOSTILE_TOOL_CALLS = [
    ("recall_memory", {"query": "seed fact", "limit": NAN}, "limit", {"query": "seed fact", "limit": 3}),
    ("recall_memory", {"query": "seed fact", "limit": INF}, "limit", {"query": "seed fact", "limit": 3}),
    ("recall_memory", {"query": "seed fact", "limit": -INF}, "limit", {"query": "seed fact", "limit": 3}),
    ("recall_memory", {"query": "seed \ud800 fact"}, "query", {"query": "seed fact"}),
    ("remember", {"content": "I like \ud800 tea"}, "content", {"content": "I like tea"}),
    ("remember", {"content": "I like \udfff"}, "content", {"content": "I like it"}),
    ("remember", {"content": "I like \x00 tea"}, "content", {"content": "I like green tea"}),
    ("remember", {"content": "tagged", "tags": ["t\udc80"]}, "tags", {"content": "tagged", "tags": ["t"]}),
    ("remember", {"content": "long id", "supersedes": ["ep_" + "x" * 300]}, "supersedes", {"content": "long id"}),
    ("update_profile", {"add_traits": ["kind\ud800"]}, "add_traits", {"add_traits": ["kind"]}),
    ("update_profile", {"name": "Al\udc80"}, "name", {"name": "Al"}),
    ("update_profile", {"set_preferences": {"tea\ud800": "green"}}, "set_preferences",
     {"set_preferences": {"tea": "green"}}),
    ("update_profile", {"target": "session", "add_notes": ["n\x00"]}, "add_notes",
     {"target": "session", "add_notes": ["n"]}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "params", "field", "control"), HOSTILE_TOOL_CALLS)
def test_hostile_tool_input_is_refused_naming_the_field(
    h: Harness, name: str, params: dict[str, Any], field: str, control: dict[str, Any]
) -> None:
    before = h.state()
    out = h.run(h.tool(name).call(params, h.session, h.next_query()))
    assert out["ok"] is False, out
    assert_clear_message(out["error"])
    assert field in out["error"], out["error"]
    encodable(out)
    assert h.state() == before
    ok = h.run(h.tool(name).call(control, h.session, h.next_query()))
    assert ok["ok"] is True, ok
    if name != "recall_memory":
        assert h.state() != before  # the positive control writes


@pytest.mark.parametrize("eid", ["ep_\ud800", "ep_" + "x" * 300, "ep_a\x00", "ep_a\n"])
def test_a_malformed_or_overlong_id_names_no_memory(h: Harness, eid: str) -> None:
    """The forget tool, the console and the engine answer "no such memory", never a backend failure;
    the real id right after is forgotten (positive control)."""
    from pages.router import handle

    before = h.state()
    out = h.run(h.tool("forget").call({"episode_id": eid}, h.session, h.next_query()))
    assert out["ok"] is False, out
    assert out["error"] == error_text(LtmError("", key="error.not_found", id=eid.strip()), "en_US")
    encodable(out)
    body = {"kb_id": KB, "session_name": "person_fz", "bot_uuid": BOT, "sender_id": "fz", "id": eid}
    resp = h.run(handle(h.service, PageRequest(endpoint="/episode/forget", method="POST", body=body)))
    assert resp.error and not resp.error.startswith(INTERNAL)
    replies = _command(h, f"memory forget {eid}", 2)
    assert not replies[0].startswith(INTERNAL)
    encodable([out, resp.error, replies])
    assert h.state() == before
    out = h.run(h.tool("forget").call({"episode_id": h.known_ids[0]}, h.session, h.next_query()))
    assert out["ok"] is True and h.state() != before


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"content": "a\ud800b"}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"content": "ok", "tags": ["\udfff"]}, "tags"),
        ({"content": "ok", "sender_id": "x\udfff"}, "sender_id"),
        ({"content": "ok", "id": "ep_\ud800"}, "id"),
        ({"content": "ok", "extra": {"k": "\ud800"}}, "extra"),
    ],
)
def test_hostile_text_in_an_import_is_refused_naming_the_field(h: Harness, item: dict[str, Any], field: str) -> None:
    """``!memory import l2 <json>`` with the JSON escape of a lone surrogate or NUL: the batch is
    refused naming the field (once "Something went wrong"); the cleaned item imports."""
    before = h.state()
    replies = _command(h, "memory import l2 " + json.dumps({"episodes": [item]}), 2)
    assert not replies[0].startswith(INTERNAL), replies
    assert t("cmd.transfer.item", "en_US").split("{")[0] in replies[0] and field in replies[0], replies
    encodable(replies)
    assert h.state() == before
    clean = {k: v for k, v in item.items() if k == "content"}
    clean["content"] = "clean import"
    replies = _command(h, "memory import l2 " + json.dumps({"episodes": [clean]}), 2)
    assert h.state() != before, replies


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"content": "a\ud800b", "session_name": "person_a"}, "content"),
        ({"content": "a\x00b", "session_name": "person_a"}, "content"),
        ({"content": "ok", "session_name": "person_a", "tags": ["\ud800"]}, "tags"),
        ({"content": "ok", "session_name": "person_a", "sender_id": "s\udfff"}, "sender_id"),
        ({"content": "ok", "session_name": "person_a\ud800"}, "session_name"),
        ({"content": "ok", "session_name": "person_a", "bot_uuid": "b\x00"}, "bot_uuid"),
    ],
)
def test_hostile_text_in_a_document_is_refused_naming_the_field(h: Harness, item: dict[str, Any], field: str) -> None:
    before = h.state()
    with pytest.raises(LtmError) as caught:
        h.run(h.service.ingest_document(KB, "doc-hostile", [item], ADMIN))
    for lang in ("en_US", "zh_Hans"):
        assert_clear_message(error_text(caught.value, lang), lang=lang)
    assert field in error_text(caught.value, "en_US")
    assert h.state() == before
    n = h.run(h.service.ingest_document(KB, "doc-clean", [{"content": "ok", "session_name": "person_a"}], ADMIN))
    assert n == 1 and h.state() != before


@pytest.mark.parametrize(
    ("endpoint", "extra", "field"),
    [
        ("/episode/forget", {"reason": "r\ud800"}, "reason"),
        ("/episode/archive", {"reason": "r\x00"}, "reason"),
        ("/profile/update", {"target": "session", "patch": {"add_traits": ["t\udfff"]}}, "add_traits"),
        ("/episodes/search", {"query": "seed\ud800"}, "query"),
        ("/episodes", {"sender_id": "fz\ud800"}, "sender_id"),
    ],
)
def test_hostile_text_in_a_console_body_is_refused_naming_the_field(
    h: Harness, endpoint: str, extra: dict[str, Any], field: str
) -> None:
    from pages.router import handle

    def call(fields: dict[str, Any]) -> Any:
        # the scope the tools wrote the seed facts in (the tool session names no bot)
        body = {"kb_id": KB, "session_name": "person_fz", "bot_uuid": "", "sender_id": "fz", "id": h.known_ids[-1]}
        return h.run(handle(h.service, PageRequest(endpoint=endpoint, method="POST", body={**body, **fields})))

    before = h.state()
    resp = call(extra)
    assert resp.error and not resp.error.startswith(INTERNAL), resp
    assert field in resp.error, resp.error
    encodable(resp.error)
    assert h.state() == before
    clean = json.loads(json.dumps(extra).replace("\\ud800", "").replace("\\udfff", "").replace("\\u0000", ""))
    resp = call(clean)
    assert resp.error is None, resp.error


@pytest.mark.parametrize("top_k", [NAN, INF, -INF, "Infinity", None])
def test_the_engine_reads_a_non_finite_top_k_as_the_default(h: Harness, top_k: Any) -> None:
    """Once an uncaught OverflowError for ``top_k: Infinity`` in the retrieval settings."""
    from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext

    rs = {"top_k": top_k, "session_name": "person_fz", "bot_uuid": "", "sender_id": "fz"}
    ctx = RetrievalContext(query="seed fact", knowledge_base_id=KB, collection_id=KB, retrieval_settings=rs)
    resp = h.run(component(h.ctl, "KnowledgeEngine", "memory_engine").retrieve(ctx))
    assert len(resp.results) == 3  # the default top_k (5) holds the three seed facts: positive control
    query = {**rs, "top_k": 5}
    ctx = RetrievalContext(query="seed \ud800", knowledge_base_id=KB, collection_id=KB, retrieval_settings=query)
    resp = h.run(component(h.ctl, "KnowledgeEngine", "memory_engine").retrieve(ctx))
    assert resp.results == [] and "query" in resp.metadata["error"]
