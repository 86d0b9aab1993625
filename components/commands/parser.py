"""The ``!memory`` command line: tokenizer (quotes, ``--flags``) and typed arguments. Pure.

The host hands a command over as ``command_text`` (the message without the prefix character) and
as ``params = command_text.split(' ')``: no quoting, and two spaces give an empty parameter. So the
command parses ``command_text`` itself, here.

Tokenizer rules:

- Tokens are separated by any Unicode whitespace (the ideographic space included).
- ``"..."`` and ``“...”`` quote; inside them ``\\"`` and ``\\\\`` are escapes. A quoted part joins the
  text around it (``--reason="a b"`` is one token). Single quotes are ordinary characters, so
  ``don't`` needs no quoting.
- An unquoted token starting with ``--`` is a flag: ``--name value`` or ``--name=value``; a lone
  ``--`` ends the flags.

``import l2 <json>`` takes the rest of the line verbatim (the JSON is not tokenized).

Every failure is a :class:`ParseError` carrying a locale key; nothing else escapes :func:`parse`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ltm.service import ACTIVE, STATUSES, LtmError, is_record_id, listed_statuses, parse_instant, requires_admin, to_iso

ROOT = "memory"
MAX_LINE_CHARS = 1_000_000
MAX_QUERY_CHARS = 500
MAX_REASON_CHARS = 500
MAX_VALUE_CHARS = 256
MAX_PAGE = 100_000

QUOTES = {'"': '"', "\u201c": "\u201d"}  # "..." and “...”
BOOL, VALUE = "bool", "value"


class ParseError(Exception):
    """A malformed command line. ``key`` is a locale key, ``args`` its arguments."""

    def __init__(self, key: str, **args: Any) -> None:
        super().__init__(key)
        self.key = key
        self.params = args


@dataclass(frozen=True)
class Token:
    """A token, its span in the line, and whether it starts with a quote."""

    value: str
    start: int
    end: int
    quoted: bool = False

    @property
    def is_flag(self) -> bool:
        return not self.quoted and self.value.startswith("--")


@dataclass(frozen=True)
class Parsed:
    """A typed ``!memory`` request. Fields a verb does not use keep their defaults; of the four ids,
    only the one its row's ``target`` names is set."""

    verb: str  # "summary" for the bare command, else one of VERBS
    action: str = ""  # export: "l1" | "l2"; audit: "page" | "export"; help: the topic verb
    page: int = 1
    episode_id: str = ""
    candidate_id: str = ""
    tombstone_id: str = ""
    proposal_id: str = ""
    query: str = ""
    statuses: tuple[str, ...] | None = None
    speaker: str | None = None
    tag: str | None = None
    before: str | None = None  # ISO-8601 UTC
    before_ts: float | None = None
    reason: str = ""
    payload: Any = None
    never: bool = False  # forget --never: a tombstone on the value
    all_statuses: bool = False  # candidates --all-statuses
    as_of: str | None = None  # search/list --as-of: ISO-8601 UTC
    as_of_ts: float | None = None
    code: str = ""  # forget-me confirm <code>

    @property
    def policy_verb(self) -> str:
        """The verb name of the privilege policy (``ltm.domain.privilege.POLICY``), from the verb table."""
        row = ROW_OF.get(self.verb)
        return row.policy_verb(self.action) if row is not None else self.verb


# --------------------------------------------------------------------------------------------
# tokenizer
# --------------------------------------------------------------------------------------------


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens (see the module docstring). Raises :class:`ParseError`."""
    if not isinstance(text, str):
        raise ParseError("cmd.parse.empty")
    if len(text) > MAX_LINE_CHARS:
        raise ParseError("cmd.parse.too_long", limit=MAX_LINE_CHARS)
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        buf: list[str] = []
        quoted = text[i] in QUOTES  # "--x" in quotes is text, not a flag
        while i < n and not text[i].isspace():
            ch = text[i]
            if ch in QUOTES:
                close = QUOTES[ch]
                i += 1
                while True:
                    if i >= n:
                        raise ParseError("cmd.parse.unterminated_quote", position=start + 1)
                    c = text[i]
                    if c == "\\" and i + 1 < n and text[i + 1] in ('"', "\\", close):
                        buf.append(text[i + 1])
                        i += 2
                        continue
                    if c == close:
                        i += 1
                        break
                    buf.append(c)
                    i += 1
                continue
            buf.append(ch)
            i += 1
        tokens.append(Token("".join(buf), start, i, quoted))
    return tokens


# --------------------------------------------------------------------------------------------
# flags and typed values
# --------------------------------------------------------------------------------------------


def split_flags(tokens: list[Token], spec: dict[str, str], verb: str) -> tuple[list[Token], dict[str, Any]]:
    """Separate positionals from ``--flags`` declared in ``spec`` (name -> BOOL | VALUE)."""
    positionals: list[Token] = []
    flags: dict[str, Any] = {}
    i = 0
    only_positionals = False
    while i < len(tokens):
        tok = tokens[i]
        if only_positionals or not tok.is_flag:
            positionals.append(tok)
            i += 1
            continue
        if tok.value == "--":
            only_positionals = True
            i += 1
            continue
        name, eq, inline = tok.value[2:].partition("=")
        name = name.lower()
        if name not in spec:
            raise ParseError("cmd.parse.unknown_flag", flag="--" + _clip(name, 40), verb=verb)
        if name in flags:
            raise ParseError("cmd.parse.flag_repeated", flag="--" + name)
        if spec[name] == BOOL:
            if eq:
                raise ParseError("cmd.parse.flag_no_value", flag="--" + name)
            flags[name] = True
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(tokens) or tokens[i + 1].is_flag:
                raise ParseError("cmd.parse.flag_value", flag="--" + name)
            value = tokens[i + 1].value
            i += 2
        if not value.strip():
            raise ParseError("cmd.parse.flag_value", flag="--" + name)
        flags[name] = value.strip()
    return positionals, flags


def _clip(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "\u2026"


def parse_page(tok: Token | None) -> int:
    if tok is None:
        return 1
    raw = tok.value.strip()
    if not raw.isascii() or not raw.isdigit():
        raise ParseError("cmd.parse.bad_page", value=_clip(raw, 40))
    page = int(raw)
    if page < 1 or page > MAX_PAGE:
        raise ParseError("cmd.parse.bad_page", value=_clip(raw, 40))
    return page


def parse_id(tok: Token) -> str:
    raw = tok.value.strip()
    if not is_record_id(raw):
        raise ParseError("cmd.parse.bad_id", value=_clip(raw, 40))
    return raw


def parse_statuses(raw: str) -> tuple[str, ...] | None:
    """``active,archived`` -> a tuple; ``all`` -> None (every status)."""
    parts = [p.strip().lower() for p in raw.split(",") if p.strip()]
    if not parts:
        raise ParseError("cmd.parse.bad_status", value="", allowed=", ".join(STATUSES))
    if parts == ["all"]:
        return None
    out: list[str] = []
    for p in parts:
        if p not in STATUSES:
            raise ParseError("cmd.parse.bad_status", value=_clip(p, 40), allowed=", ".join(STATUSES))
        if p not in out:
            out.append(p)
    return tuple(out)


def parse_value(raw: str, flag: str, limit: int = MAX_VALUE_CHARS) -> str:
    v = raw.strip()
    if len(v) > limit:
        raise ParseError("cmd.parse.value_long", flag="--" + flag, limit=limit)
    return v


def parse_time(raw: str, flag: str) -> tuple[str, float]:
    try:
        dt = parse_instant(raw, flag)
    except LtmError as exc:
        raise ParseError("cmd.parse.bad_time", flag="--" + flag, value=_clip(raw, 40)) from exc
    return to_iso(dt), dt.timestamp()


def _take_as_of(tokens: list[Token]) -> tuple[list[Token], str | None]:
    """Pull ``--as-of <instant>`` / ``--as-of=<instant>`` (unquoted, once) out of free text."""
    words: list[Token] = []
    value: str | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, inline = tok.value.partition("=")
        if tok.is_flag and name.lower() == "--as-of":
            if value is not None:
                raise ParseError("cmd.parse.flag_repeated", flag="--as-of")
            if eq:
                value = inline
            elif i + 1 < len(tokens) and not tokens[i + 1].is_flag:
                value = tokens[i + 1].value
                i += 1
            else:
                value = ""
            if not value.strip():
                raise ParseError("cmd.parse.flag_value", flag="--as-of")
        else:
            words.append(tok)
        i += 1
    return words, value


def _no_more(positionals: list[Token], verb: str) -> None:
    if positionals:
        raise ParseError("cmd.parse.extra_args", verb=verb, value=_clip(positionals[0].value, 40))


def _one_id(positionals: list[Token], verb: str) -> str:
    if not positionals:
        raise ParseError("cmd.parse.id_missing", verb=verb)
    if len(positionals) > 1:
        if verb == "forget":
            raise ParseError("cmd.parse.forget_one")
        raise ParseError("cmd.parse.extra_args", verb=verb, value=_clip(positionals[1].value, 40))
    return parse_id(positionals[0])


def _optional_page(positionals: list[Token], verb: str) -> int:
    if len(positionals) > 1:
        raise ParseError("cmd.parse.extra_args", verb=verb, value=_clip(positionals[1].value, 40))
    return parse_page(positionals[0] if positionals else None)


# --------------------------------------------------------------------------------------------
# the verbs: one row each
# --------------------------------------------------------------------------------------------

REASON_FLAG = {"reason": VALUE}


def _reason(flags: dict[str, Any]) -> str:
    return parse_value(flags.get("reason", ""), "reason", MAX_REASON_CHARS)


@dataclass(frozen=True)
class Line:
    """What an argument shape reads: the verb's row, its positionals and flags, the raw line."""

    spec: VerbSpec
    positionals: list[Token]
    flags: dict[str, Any]
    text: str
    rest: list[Token]  # the tokens after the verb, flags not split (free-text shapes)


Shape = Callable[[Line], dict[str, Any]]


@dataclass(frozen=True)
class VerbSpec:
    """One verb of the command tree.

    ``shape`` reads the arguments into :class:`Parsed` fields; an id it reads goes to the field of
    ``target``. ``flags`` are the ``--flags`` the verb takes (``None``: free text, no flag split).
    Who may run a verb is the privilege policy's (``ltm.domain.privilege.POLICY`` by
    :attr:`Parsed.policy_verb`), not this table's: :attr:`admin_only` only reads it."""

    name: str
    shape: Shape
    flags: dict[str, str] | None = field(default_factory=dict)
    target: str = ""  # one of TARGETS, or "" when the verb names no record
    actions: tuple[str, ...] = ()  # the first positional's choices, when the verb has sub-actions
    policy: dict[str, str] = field(default_factory=dict)  # action -> policy verb, when not the name
    typed: bool = True  # False: not typed as a word (``summary`` is the bare ``!memory``)
    handler: str | None = None  # the MemoryCommand method; None: ``_do_<name>``; "": the entry point answers

    @property
    def admin_only(self) -> bool:
        return requires_admin(self.name)

    @property
    def handler_name(self) -> str:
        return f"_do_{self.name.replace('-', '_')}" if self.handler is None else self.handler

    def policy_verb(self, action: str = "") -> str:
        return self.policy.get(action, self.name)


def _no_args(ln: Line) -> dict[str, Any]:
    _no_more(ln.positionals, ln.spec.name)
    return {}


def _page_only(ln: Line) -> dict[str, Any]:
    return {"page": _optional_page(ln.positionals, ln.spec.name)}


def _candidates(ln: Line) -> dict[str, Any]:
    return {"page": _optional_page(ln.positionals, ln.spec.name), "all_statuses": bool(ln.flags.get("all-statuses"))}


def _status_page(ln: Line) -> dict[str, Any]:
    return {"page": _optional_page(ln.positionals, ln.spec.name), "statuses": (ln.spec.name,)}


def _one_record(ln: Line) -> dict[str, Any]:
    out: dict[str, Any] = {"id": _one_id(ln.positionals, ln.spec.name)}
    if "reason" in (ln.spec.flags or {}):
        out["reason"] = _reason(ln.flags)
    if "never" in (ln.spec.flags or {}):
        out["never"] = bool(ln.flags.get("never"))
    return out


_BAD_ACTION = {"candidate": "cmd.parse.candidate_action", "tombstone": "cmd.parse.tombstone_action"}


def _action_record(ln: Line) -> dict[str, Any]:
    """``candidate accept|reject <id> [reason ...]``, ``tombstone lift <id> [reason ...]``."""
    verb, pos = ln.spec.name, ln.positionals
    action = pos[0].value.lower() if pos and not pos[0].quoted else ""
    if action not in ln.spec.actions:
        raise ParseError(_BAD_ACTION[verb], value=_clip(pos[0].value, 40) if pos else "")
    if len(pos) < 2:
        raise ParseError("cmd.parse.id_missing", verb=f"{verb} {action}")
    said = " ".join(t.value for t in pos[2:]).strip()
    if said and "reason" in ln.flags:
        raise ParseError("cmd.parse.reason_twice")
    reason = parse_value(said, "reason", MAX_REASON_CHARS) if said else _reason(ln.flags)
    return {"action": action, "id": parse_id(pos[1]), "reason": reason}


def _help(ln: Line) -> dict[str, Any]:
    pos = ln.positionals
    topic = pos[0].value.lower() if pos else ""
    if len(pos) > 1:
        raise ParseError("cmd.parse.extra_args", verb=ln.spec.name, value=_clip(pos[1].value, 40))
    if topic and topic not in VERBS:
        raise ParseError("cmd.parse.unknown_verb", verb=_clip(topic, 40))
    return {"action": topic}


def _search(ln: Line) -> dict[str, Any]:
    # Free text: the only flag is --as-of (anywhere, unquoted); other words, quotes only group.
    words, as_of_raw = _take_as_of(ln.rest)
    query = " ".join(t.value for t in words).strip()
    if not query:
        raise ParseError("cmd.parse.query_missing")
    if len(query) > MAX_QUERY_CHARS:
        raise ParseError("cmd.parse.query_long", limit=MAX_QUERY_CHARS)
    as_of, as_of_ts = parse_time(as_of_raw, "as-of") if as_of_raw is not None else (None, None)
    return {"query": query, "as_of": as_of, "as_of_ts": as_of_ts}


def _list(ln: Line) -> dict[str, Any]:
    flags = ln.flags
    page = _optional_page(ln.positionals, ln.spec.name)
    as_of, as_of_ts = parse_time(flags["as-of"], "as-of") if "as-of" in flags else (None, None)
    if "status" in flags:
        if flags.get("include-superseded") or flags.get("include-archived"):
            raise ParseError("cmd.parse.status_conflict")
        chosen: tuple[str, ...] | None = parse_statuses(flags["status"])
    else:
        # the default and the include flags as typed; the domain owns the as-of rule
        chosen = listed_statuses(
            ACTIVE,
            as_of=bool(as_of),
            include_superseded=bool(flags.get("include-superseded")),
            include_archived=bool(flags.get("include-archived")),
        )
    return {"page": page, "statuses": chosen, "as_of": as_of, "as_of_ts": as_of_ts}


def _consolidate(ln: Line) -> dict[str, Any]:
    """``consolidate preview`` | ``consolidate run [proposal_id]``."""
    pos = ln.positionals
    action = pos[0].value.lower() if pos and not pos[0].quoted else ""
    if action not in ln.spec.actions or (action == "preview" and len(pos) > 1) or len(pos) > 2:
        raise ParseError("cmd.parse.consolidate_action", value=_clip(pos[0].value, 40) if pos else "")
    return {"action": action, "id": pos[1].value if len(pos) == 2 else ""}


def _export(ln: Line) -> dict[str, Any]:
    pos, flags = ln.positionals, ln.flags
    layer = pos[0].value.lower() if pos else "l1"
    if layer not in ln.spec.actions:
        raise ParseError("cmd.parse.bad_layer", value=_clip(pos[0].value, 40))
    if len(pos) > 1:
        raise ParseError("cmd.parse.extra_args", verb=ln.spec.name, value=_clip(pos[1].value, 40))
    if layer == "l1" and ("status" in flags or "page" in flags):
        raise ParseError("cmd.parse.l1_flags")
    statuses = parse_statuses(flags["status"]) if "status" in flags else None
    page = parse_page(Token(flags["page"], 0, 0)) if "page" in flags else 1
    return {"action": layer, "statuses": statuses, "page": page}


def _import(ln: Line) -> dict[str, Any]:
    """``import l2 <json>``: the rest of the line, verbatim."""
    rest = ln.rest
    if not rest or rest[0].quoted or rest[0].value.lower() not in ln.spec.actions:
        raise ParseError("cmd.parse.import_layer")
    raw = ln.text[rest[0].end :].strip()
    if not raw:
        raise ParseError("cmd.parse.import_missing")
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", 0)
        col = getattr(exc, "colno", 0)
        raise ParseError("cmd.parse.import_json", line=line, column=col) from None
    return {"action": "l2", "payload": payload}


DELETE_FILTERS = ("speaker", "tag", "before", "status")


def _delete(ln: Line) -> dict[str, Any]:
    flags = ln.flags
    if ln.positionals:
        raise ParseError("cmd.parse.delete_positional")
    if not any(k in flags for k in DELETE_FILTERS):
        raise ParseError("cmd.parse.delete_filter")
    before, before_ts = parse_time(flags["before"], "before") if "before" in flags else (None, None)
    return {
        "speaker": parse_value(flags["speaker"], "speaker") if "speaker" in flags else None,
        "tag": parse_value(flags["tag"], "tag") if "tag" in flags else None,
        "before": before,
        "before_ts": before_ts,
        "statuses": parse_statuses(flags["status"]) if "status" in flags else None,
        "reason": _reason(flags),
    }


def _audit(ln: Line) -> dict[str, Any]:
    pos = ln.positionals
    if pos and not pos[0].quoted and pos[0].value.lower() == "export":
        return {"action": "export", "page": _optional_page(pos[1:], ln.spec.name)}
    return {"action": "page", "page": _optional_page(pos, ln.spec.name)}


MAX_CODE_CHARS = 16


def _forget_me(ln: Line) -> dict[str, Any]:
    """``forget-me`` (asks for a code) | ``forget-me confirm <code>``."""
    pos = ln.positionals
    if not pos:
        return {}
    action = pos[0].value.lower() if not pos[0].quoted else ""
    if action not in ln.spec.actions or len(pos) != 2 or len(pos[1].value) > MAX_CODE_CHARS:
        raise ParseError("cmd.parse.forget_me_usage")
    return {"action": action, "code": pos[1].value.strip()}


EPISODE, CANDIDATE, TOMBSTONE, PROPOSAL = "episode", "candidate", "tombstone", "proposal"
TARGETS: tuple[str, ...] = (EPISODE, CANDIDATE, TOMBSTONE, PROPOSAL)

# The one verb table: parsing (shape, flags, target, actions), the policy verb, the handler and,
# by its order, the order of ``!memory help``. A new verb is one row here (plus its handler,
# catalog entries and policy rule; tests/surfaces/test_command_verbs.py fails on a missing one).
VERB_TABLE: tuple[VerbSpec, ...] = (
    VerbSpec("summary", _no_args, typed=False),
    VerbSpec("profile", _no_args),
    VerbSpec("list", _list, {"include-superseded": BOOL, "include-archived": BOOL, "status": VALUE, "as-of": VALUE}),
    VerbSpec("search", _search, None),
    VerbSpec("why", _search, None),
    VerbSpec("show", _one_record, target=EPISODE),
    VerbSpec("superseded", _status_page),
    VerbSpec("archived", _status_page),
    VerbSpec("forget", _one_record, {**REASON_FLAG, "never": BOOL}, target=EPISODE),
    VerbSpec("archive", _one_record, REASON_FLAG, target=EPISODE),
    VerbSpec("restore", _one_record, REASON_FLAG, target=EPISODE),
    VerbSpec("delete", _delete, {**dict.fromkeys(DELETE_FILTERS, VALUE), **REASON_FLAG}),
    VerbSpec("export", _export, {"status": VALUE, "page": VALUE}, actions=("l1", "l2")),
    VerbSpec("import", _import, None, actions=("l2",)),
    VerbSpec("audit", _audit, actions=("page", "export"), policy={"export": "audit.export"}),
    VerbSpec("health", _no_args),
    VerbSpec("candidates", _candidates, {"all-statuses": BOOL}),
    VerbSpec("candidate", _action_record, REASON_FLAG, target=CANDIDATE, actions=("accept", "reject")),
    VerbSpec("tombstones", _page_only),
    VerbSpec("tombstone", _action_record, REASON_FLAG, target=TOMBSTONE, actions=("lift",)),
    VerbSpec("confirm", _one_record, REASON_FLAG, target=EPISODE),
    VerbSpec("consolidate", _consolidate, target=PROPOSAL, actions=("preview", "run")),
    # people's rights (issue 35): about the speaker only
    VerbSpec("me", _page_only),
    VerbSpec("forget-me", _forget_me, actions=("confirm",)),
    VerbSpec("optout", _no_args),
    VerbSpec("optin", _no_args),
    VerbSpec("help", _help, handler=""),  # answered before the scope is derived
)
ROW_OF: dict[str, VerbSpec] = {s.name: s for s in VERB_TABLE}
HELP_ORDER: tuple[str, ...] = tuple(ROW_OF)
SPECS: tuple[VerbSpec, ...] = tuple(s for s in VERB_TABLE if s.typed)  # the words a line can start with
SPEC_OF: dict[str, VerbSpec] = {s.name: s for s in SPECS}
VERBS: tuple[str, ...] = tuple(SPEC_OF)


def parse(text: str, root: str = ROOT) -> Parsed:
    """Parse a whole ``command_text`` (``memory list 2``); the root word is optional."""
    text = text if isinstance(text, str) else ""
    tokens = tokenize(text)
    if tokens and not tokens[0].quoted and tokens[0].value.lower() == root.lower():
        tokens = tokens[1:]
    if not tokens:
        return Parsed(verb="summary")
    head, rest = tokens[0], tokens[1:]
    spec = SPEC_OF.get(head.value.lower())
    if spec is None:
        raise ParseError("cmd.parse.unknown_verb", verb=_clip(head.value, 40))
    if spec.flags is None:
        positionals, flags = [], {}
    else:
        positionals, flags = split_flags(rest, spec.flags, spec.name)
    fields = spec.shape(Line(spec, positionals, flags, text, rest))
    record = fields.pop("id", "")
    if record:
        fields[f"{spec.target}_id"] = record
    return Parsed(verb=spec.name, **fields)
