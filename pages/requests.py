"""Reading console request bodies: typed fields with clear refusals, and the scope of a request.

Every field is checked before any service call, so a malformed body is refused with a message and
nothing is written. The scope is always derived on the server with ``service.scope_for`` from the
identity fields (kb_id, session_name, bot_uuid, sender_id); keys a client sends (``user_key``,
``scope_key``, ``isolation``...) are never read.
"""

from __future__ import annotations

from typing import Any

from ltm.service import MAX_ID_CHARS, MemoryService, Scope, is_record_id, parse_instant, to_iso, unstorable

MAX_TEXT = 256
MAX_QUERY = 500
MAX_PAGE = 100_000


class BadRequest(Exception):
    """A malformed request: refused before any service call. Carries a console message key."""

    def __init__(self, key: str, **args: Any) -> None:
        super().__init__(key)
        self.key = key
        self.params = args


class Body:
    """Typed access to a JSON object body."""

    def __init__(self, raw: Any) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise BadRequest("err.body")
        self.raw: dict[str, Any] = raw

    def text(self, name: str, *, required: bool = False, max_len: int = MAX_TEXT, default: str = "") -> str:
        v = self.raw.get(name)
        if v is None or v == "":
            if required:
                raise BadRequest("err.field_required", field=name)
            return default
        if not isinstance(v, str) or unstorable(v):  # a lone surrogate would also break the refusal's echo
            raise BadRequest("err.field_text", field=name)
        v = v.strip()
        if len(v) > max_len:
            raise BadRequest("err.field_long", field=name, limit=max_len)
        if required and not v:
            raise BadRequest("err.field_required", field=name)
        return v

    def integer(self, name: str, default: int, lo: int, hi: int) -> int:
        v = self.raw.get(name)
        if v is None or v == "":
            return default
        if isinstance(v, bool):
            raise BadRequest("err.field_int", field=name)
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, str) and v.strip().lstrip("-").isdigit() and len(v.strip()) <= 12:
            v = int(v.strip())
        if not isinstance(v, int):
            raise BadRequest("err.field_int", field=name)
        if v < lo or v > hi:
            raise BadRequest("err.field_range", field=name, lo=lo, hi=hi)
        return v

    def choice(self, name: str, choices: tuple[str, ...], default: str) -> str:
        v = self.raw.get(name)
        if v is None or v == "":
            return default
        if not isinstance(v, str) or v not in choices:
            raise BadRequest("err.field_choice", field=name, choices=", ".join(choices))
        return v

    def boolean(self, name: str, default: bool) -> bool:
        v = self.raw.get(name)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise BadRequest("err.field_bool", field=name)
        return v

    def instant(self, name: str) -> str | None:
        """An optional ISO-8601 instant with timezone, normalised to UTC (service errors propagate)."""
        v = self.raw.get(name)
        if v is None or v == "":
            return None
        if not isinstance(v, str) or len(v) > 64:
            raise BadRequest("err.field_text", field=name)
        return to_iso(parse_instant(v, name))

    def episode_id(self, name: str = "id") -> str:
        v = self.raw.get(name)
        if not isinstance(v, str) or not is_record_id(v):
            raise BadRequest("err.episode_id", field=name)
        return v

    def obj(self, name: str) -> dict[str, Any]:
        v = self.raw.get(name)
        if not isinstance(v, dict):
            raise BadRequest("err.field_object", field=name)
        return v


def scope_fields(body: Body) -> Body:
    """The identity fields of a request: ``body.scope`` when present, else the body itself."""
    if "scope" in body.raw:
        inner = body.raw["scope"]
        if not isinstance(inner, dict):
            raise BadRequest("err.scope_shape")
        return Body(inner)
    return body


async def scope_of(service: MemoryService, body: Body, *, speaker: str | None = None) -> Scope:
    """Derive the request's scope on the server (never from client-sent keys).

    ``kb_id`` may be empty (profiles only); a non-empty one must be a registered memory knowledge
    base. ``speaker`` overrides the scope's sender (used when editing one speaker's profile).
    """
    f = scope_fields(body)
    kb_id = f.text("kb_id")
    # ids are validated and encoded by derive_scope, like on every other surface
    session_name = f.text("session_name", required=True, max_len=MAX_ID_CHARS + 8)
    bot_uuid = f.text("bot_uuid", max_len=MAX_ID_CHARS)
    sender_id = f.text("sender_id", max_len=MAX_ID_CHARS) if speaker is None else speaker
    if kb_id and kb_id not in await service.known_kbs():  # no lookup that would cache a stranger's id
        raise BadRequest("err.kb_unknown", kb=kb_id)
    scope = await service.scope_for(kb_id=kb_id, session_name=session_name, bot_uuid=bot_uuid, sender_id=sender_id)
    return scope.as_operator()  # the console is the operator's page: it reads every audience
