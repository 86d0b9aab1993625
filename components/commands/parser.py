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
from dataclasses import dataclass, field
from typing import Any

from ltm.domain.errors import MemoryError_
from ltm.domain.models import is_record_id
from ltm.domain.scope import STATUSES
from ltm.domain.timefields import parse_instant, to_iso

ROOT = "memory"
MAX_LINE_CHARS = 1_000_000
MAX_QUERY_CHARS = 500
MAX_REASON_CHARS = 500
MAX_VALUE_CHARS = 256
MAX_PAGE = 100_000

QUOTES = {'"': '"', "\u201c": "\u201d"}  # "..." and “...”
BOOL, VALUE = "bool", "value"

VERBS: tuple[str, ...] = (
    "help",
    "profile",
    "list",
    "search",
    "show",
    "forget",
    "superseded",
    "archived",
    "archive",
    "restore",
    "export",
    "import",
    "delete",
    "audit",
    "health",
    "candidates",
    "candidate",
    "tombstones",
    "tombstone",
    "confirm",
    "consolidate",
)


class ParseError(Exception):
    """A malformed command line. ``key`` is a locale key, ``args`` its arguments."""

    def __init__(self, key: str, **args: Any) -> None:
        super().__init__(key)
        self.key = key
        self.args_ = args


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
    """A typed ``!memory`` request. Fields a verb does not use keep their defaults."""

    verb: str  # "summary" for the bare command, else one of VERBS
    action: str = ""  # export: "l1" | "l2"; audit: "page" | "export"; help: the topic verb
    page: int = 1
    episode_id: str = ""
    query: str = ""
    statuses: tuple[str, ...] | None = None
    include_superseded: bool = False
    include_archived: bool = False
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
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_verb(self) -> str:
        """The verb name of the privilege policy (``ltm.domain.privilege.POLICY``)."""
        if self.verb == "audit" and self.action == "export":
            return "audit.export"
        return self.verb


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
    except MemoryError_ as exc:
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
# the verbs
# --------------------------------------------------------------------------------------------

REASON_FLAG = {"reason": VALUE}


def _reason(flags: dict[str, Any]) -> str:
    return parse_value(flags.get("reason", ""), "reason", MAX_REASON_CHARS)


def parse(text: str, root: str = ROOT) -> Parsed:
    """Parse a whole ``command_text`` (``memory list 2``); the root word is optional."""
    tokens = tokenize(text if isinstance(text, str) else "")
    if tokens and not tokens[0].quoted and tokens[0].value.lower() == root.lower():
        tokens = tokens[1:]
    if not tokens:
        return Parsed(verb="summary")
    head, rest = tokens[0], tokens[1:]
    verb = head.value.lower()
    if verb not in VERBS:
        raise ParseError("cmd.parse.unknown_verb", verb=_clip(head.value, 40))

    if verb == "help":
        pos, _ = split_flags(rest, {}, verb)
        topic = pos[0].value.lower() if pos else ""
        if len(pos) > 1:
            raise ParseError("cmd.parse.extra_args", verb=verb, value=_clip(pos[1].value, 40))
        if topic and topic not in VERBS:
            raise ParseError("cmd.parse.unknown_verb", verb=_clip(topic, 40))
        return Parsed(verb="help", action=topic)

    if verb in ("profile", "health"):
        pos, _ = split_flags(rest, {}, verb)
        _no_more(pos, verb)
        return Parsed(verb=verb)

    if verb == "search":
        # Free text: the only flag is --as-of (anywhere, unquoted); other words, quotes only group.
        words, as_of_raw = _take_as_of(rest)
        query = " ".join(t.value for t in words).strip()
        if not query:
            raise ParseError("cmd.parse.query_missing")
        if len(query) > MAX_QUERY_CHARS:
            raise ParseError("cmd.parse.query_long", limit=MAX_QUERY_CHARS)
        as_of, as_of_ts = parse_time(as_of_raw, "as-of") if as_of_raw is not None else (None, None)
        return Parsed(verb=verb, query=query, as_of=as_of, as_of_ts=as_of_ts)

    if verb == "list":
        spec = {"include-superseded": BOOL, "include-archived": BOOL, "status": VALUE, "as-of": VALUE}
        pos, flags = split_flags(rest, spec, verb)
        page = _optional_page(pos, verb)
        as_of, as_of_ts = parse_time(flags["as-of"], "as-of") if "as-of" in flags else (None, None)
        if "status" in flags:
            if flags.get("include-superseded") or flags.get("include-archived"):
                raise ParseError("cmd.parse.status_conflict")
            chosen: tuple[str, ...] | None = parse_statuses(flags["status"])
        else:
            # as of a date: what was true then, including what has been replaced since
            chosen = ("active", "superseded") if as_of else ("active",)
            if flags.get("include-superseded") and not as_of:
                chosen += ("superseded",)
            if flags.get("include-archived"):
                chosen += ("archived",)
        return Parsed(
            verb=verb,
            page=page,
            statuses=chosen,
            include_superseded=bool(flags.get("include-superseded")),
            include_archived=bool(flags.get("include-archived")),
            as_of=as_of,
            as_of_ts=as_of_ts,
            flags=flags,
        )

    if verb in ("superseded", "archived"):
        pos, _ = split_flags(rest, {}, verb)
        return Parsed(verb=verb, page=_optional_page(pos, verb), statuses=(verb,))

    if verb == "show":
        pos, _ = split_flags(rest, {}, verb)
        return Parsed(verb=verb, episode_id=_one_id(pos, verb))

    if verb == "forget":
        pos, flags = split_flags(rest, {**REASON_FLAG, "never": BOOL}, verb)
        return Parsed(verb=verb, episode_id=_one_id(pos, verb), reason=_reason(flags), never=bool(flags.get("never")))

    if verb in ("archive", "restore", "confirm"):
        pos, flags = split_flags(rest, REASON_FLAG, verb)
        return Parsed(verb=verb, episode_id=_one_id(pos, verb), reason=_reason(flags))

    if verb == "candidates":
        pos, flags = split_flags(rest, {"all-statuses": BOOL}, verb)
        return Parsed(verb=verb, page=_optional_page(pos, verb), all_statuses=bool(flags.get("all-statuses")))

    if verb == "consolidate":
        # consolidate preview | consolidate run [proposal_id]
        pos, _ = split_flags(rest, {}, verb)
        action = pos[0].value.lower() if pos and not pos[0].quoted else ""
        if action not in ("preview", "run") or (action == "preview" and len(pos) > 1) or len(pos) > 2:
            raise ParseError("cmd.parse.consolidate_action", value=_clip(pos[0].value, 40) if pos else "")
        return Parsed(verb=verb, action=action, episode_id=pos[1].value if len(pos) == 2 else "")

    if verb == "tombstones":
        pos, _ = split_flags(rest, {}, verb)
        return Parsed(verb=verb, page=_optional_page(pos, verb))

    if verb in ("candidate", "tombstone"):
        # candidate accept|reject <id> [reason ...]; tombstone lift <id> [reason ...]
        actions = ("accept", "reject") if verb == "candidate" else ("lift",)
        bad_action = "cmd.parse.candidate_action" if verb == "candidate" else "cmd.parse.tombstone_action"
        pos, flags = split_flags(rest, REASON_FLAG, verb)
        action = pos[0].value.lower() if pos and not pos[0].quoted else ""
        if action not in actions:
            raise ParseError(bad_action, value=_clip(pos[0].value, 40) if pos else "")
        if len(pos) < 2:
            raise ParseError("cmd.parse.id_missing", verb=f"{verb} {action}")
        said = " ".join(t.value for t in pos[2:]).strip()
        if said and "reason" in flags:
            raise ParseError("cmd.parse.reason_twice")
        reason = parse_value(said, "reason", MAX_REASON_CHARS) if said else _reason(flags)
        return Parsed(verb=verb, action=action, episode_id=parse_id(pos[1]), reason=reason)

    if verb == "export":
        pos, flags = split_flags(rest, {"status": VALUE, "page": VALUE}, verb)
        layer = pos[0].value.lower() if pos else "l1"
        if layer not in ("l1", "l2"):
            raise ParseError("cmd.parse.bad_layer", value=_clip(pos[0].value, 40))
        if len(pos) > 1:
            raise ParseError("cmd.parse.extra_args", verb=verb, value=_clip(pos[1].value, 40))
        if layer == "l1" and ("status" in flags or "page" in flags):
            raise ParseError("cmd.parse.l1_flags")
        statuses = parse_statuses(flags["status"]) if "status" in flags else None
        page = parse_page(Token(flags["page"], 0, 0)) if "page" in flags else 1
        return Parsed(verb=verb, action=layer, statuses=statuses, page=page, flags=flags)

    if verb == "import":
        if not rest or rest[0].quoted or rest[0].value.lower() != "l2":
            raise ParseError("cmd.parse.import_layer")
        raw = text[rest[0].end :].strip()
        if not raw:
            raise ParseError("cmd.parse.import_missing")
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            line = getattr(exc, "lineno", 0)
            col = getattr(exc, "colno", 0)
            raise ParseError("cmd.parse.import_json", line=line, column=col) from None
        return Parsed(verb=verb, action="l2", payload=payload)

    if verb == "delete":
        pos, flags = split_flags(
            rest, {"speaker": VALUE, "tag": VALUE, "before": VALUE, "status": VALUE, "reason": VALUE}, verb
        )
        if pos:
            raise ParseError("cmd.parse.delete_positional")
        if not any(k in flags for k in ("speaker", "tag", "before", "status")):
            raise ParseError("cmd.parse.delete_filter")
        before = before_ts = None
        if "before" in flags:
            before, before_ts = parse_time(flags["before"], "before")
        return Parsed(
            verb=verb,
            speaker=parse_value(flags["speaker"], "speaker") if "speaker" in flags else None,
            tag=parse_value(flags["tag"], "tag") if "tag" in flags else None,
            before=before,
            before_ts=before_ts,
            statuses=parse_statuses(flags["status"]) if "status" in flags else None,
            reason=_reason(flags),
            flags=flags,
        )

    # audit
    pos, _ = split_flags(rest, {}, verb)
    if pos and not pos[0].quoted and pos[0].value.lower() == "export":
        return Parsed(verb=verb, action="export", page=_optional_page(pos[1:], verb))
    return Parsed(verb=verb, action="page", page=_optional_page(pos, verb))
