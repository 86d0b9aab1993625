"""The memory block injected into the system prompt: delimited, escaped, budgeted data.

Memory text is untrusted. It is serialised as JSON (quotes and backslashes escaped) with ``<``,
``>`` and ``&`` written as ``\\u003c``/``\\u003e``/``\\u0026``, between fixed markers, after a header
that tells the model the content is data. A memory cannot close the block or pose as an instruction.

Before that, every string of the payload is neutralised (:func:`ltm.domain.text.neutralize`): no
zero-width or direction-changing character, no raw line or paragraph separator, and a look-alike of
``<``/``>`` (e.g. the full-width ``＜/ltm-memory-data＞``) is escaped like the real one. The stored
records are not changed; only what the model is shown.

The block is compact (it is paid for on every turn): one row per episode, ``id|when|speaker|text``
with the column names given once in the header; the id is the short one the tools accept
(:mod:`ltm.domain.refs`), ``when`` is to the minute for recent rows and the date for older ones,
and the trust and validity marks follow only when due. The ``_ltm_context`` query variable
(:func:`context_payload`) keeps the named fields and the whole ids.

This module builds the block; :mod:`.block_renderer` renders it off the event loop and remembers a
turn's refusal of an operator's template, and :mod:`.template_check` is the health check of one.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ..domain.errors import ValidationError
from ..domain.instructions import INSTRUCTION_LIKE, is_instruction_like
from ..domain.models import Episode, Profile
from ..domain.refs import fold_repeats
from ..domain.text import neutralize_data
from ..domain.timefields import parse_instant
from ..domain.trust import is_marked, trust_label
from ..i18n import t
from ..templates import Escaped, TemplateRefused, compile_operator_template, render_data, shipped_template
from .content_gate import prompt_profile
from .recall import RecallResult

log = logging.getLogger(__name__)

BEGIN = "<ltm-memory-data>"
END = "</ltm-memory-data>"
SHIPPED_BLOCK = "memory_block.j2"
OnRefused = Callable[[str, TemplateRefused], None]  # (template text, why it was refused)


def _profile_view(p: Profile | None) -> dict[str, Any] | None:
    if p is None or p.is_empty():
        return None
    out: dict[str, Any] = {}
    if p.name:
        out["name"] = p.name
    if p.traits:
        out["traits"] = p.traits
    if p.preferences:
        out["preferences"] = p.preferences
    if p.notes:
        out["notes"] = p.notes
    # a value stored before the content gate: its secrets redacted, an instruction left out
    return prompt_profile(out) or None


def marked_instruction(episode: Episode) -> bool:
    """Whether the block marks this memory as instruction-like: an admin accepted it with the mark
    (``extra["flags"]``), or its text reads as one (a row stored by an older build, an import, a
    document, a service without a review queue)."""
    flags = episode.extra.get("flags") if isinstance(episode.extra, dict) else None
    return (isinstance(flags, list) and INSTRUCTION_LIKE in flags) or is_instruction_like(episode.content)


def context_payload(result: RecallResult, speaker: dict[str, str]) -> dict[str, Any]:
    """The ``_ltm_context`` query variable and the body of the injected block (neutralised)."""
    payload = {
        "speaker": speaker,
        "session_profile": _profile_view(result.session_profile),
        "speaker_profile": _profile_view(result.speaker_profile),
        "at": result.at,
        "episodes": [
            {
                "id": r.episode.id,
                "ref": result.refs.get(r.episode.id, r.episode.id),
                "content": r.episode.content,
                "speaker": r.episode.sender_id,
                "when": r.episode.event_at or r.episode.timestamp,
                "claim": r.episode.claim_type,
                "confidence": r.episode.confidence,
                **(
                    {"trust": trust_label(r.episode.claim_type, r.episode.confidence)}
                    if is_marked(r.episode.claim_type, r.episode.confidence)
                    else {}
                ),
                **({"valid_until": r.episode.valid_until} if r.episode.valid_until else {}),
                **({"instruction_like": True} if marked_instruction(r.episode) else {}),
            }
            for r in result.episodes
        ],
    }
    return neutralize_data(payload)


def escape_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def short_time(value: Any) -> str:
    """``2023-05-08T13:56:00+00:00`` -> ``2023-05-08 13:56Z`` (another offset is kept); anything
    unparsable is returned as it is."""
    raw = str(value or "")
    try:
        at = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return raw
    text = at.isoformat(sep=" ", timespec="minutes")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


DATE_ONLY_AFTER = timedelta(days=2)
_BARE = re.compile(r"[A-Za-z0-9_.:@+-]{1,80}")
_WHEN = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(Z|[+-]\d{2}:\d{2})?)?")


def _token(value: Any) -> Escaped:
    """An id-like value: bare when it is a plain token (``ep_1a2b``, ``10000001``), else a JSON string."""
    text = str(value or "")
    return Escaped(text if _BARE.fullmatch(text) else escape_json(text) if text else "")


def when_text(value: Any, now: Any = None) -> str:
    """A time to the minute, UTC (the header says so) without its ``Z``, another offset kept; only
    the date when it is more than :data:`DATE_ONLY_AFTER` away from ``now`` (the block's rows are
    paid for on every turn, and the minute of a days-old memory is seldom what a reply needs)."""
    text = short_time(value).removesuffix("Z")
    try:
        age = abs(parse_instant(now, "now") - parse_instant(value, "when"))
    except ValidationError:  # no instant to compare with: the time stays as it is
        return text
    return text[:10] if age > DATE_ONLY_AFTER and _WHEN.fullmatch(text) else text


def _when(value: Any, now: Any = None) -> Escaped:
    text = when_text(value, now)
    return Escaped(text if _WHEN.fullmatch(text) else escape_json(text) if text else "")


def _quoted(value: Any) -> Escaped:
    return Escaped(escape_json(value) if value not in (None, "", [], {}) else "")


def _marks(e: dict[str, Any]) -> Escaped:
    marks = {k: e[k] for k in ("trust", "valid_until") if e.get(k)}
    return Escaped(escape_json(marks) if marks else "")


def block_context(payload: dict[str, Any], lang: str) -> dict[str, Any]:
    """The variables a memory block template sees (``docs/templates.md``); every untrusted value is
    :class:`Escaped` (opaque to the template): ``payload`` is :func:`context_payload`'s neutralised one."""
    speaker = payload.get("speaker") or {}
    now = payload.get("at")
    rows = payload.get("episodes") or []
    shown = [str(e.get("ref") or e.get("id") or "") for e in rows]
    texts = [str(e.get("content") or "") for e in rows]
    folded = fold_repeats(texts, shown)
    note = t("inject.repeats", lang) if folded != texts else ""
    instruction_mark = t("inject.instruction_like", lang)
    return {
        "header": t("inject.header", lang) + (" " + note if note else ""),
        "repeats_note": note,
        "lang": lang,
        "begin": BEGIN,
        "end": END,
        "speaker": {"id": _token(speaker.get("id")), "name": _quoted(speaker.get("name"))},
        "session_profile": _quoted(payload.get("session_profile")),
        "speaker_profile": _quoted(payload.get("speaker_profile")),
        "episodes": [
            {
                "id": _token(e.get("ref") or e.get("id")),
                "full_id": _token(e.get("id")),
                "when": _when(e.get("when"), now),
                "speaker": _token(e.get("speaker")),
                "text": _quoted(text),
                "trust": str(e.get("trust") or ""),
                "instruction": instruction_mark if e.get("instruction_like") else "",
                "valid_until": _when(e.get("valid_until"), now),
                "marks": _marks(e),
            }
            for e, text in zip(rows, folded, strict=True)
        ],
    }


def render_block(payload: dict[str, Any], lang: str, template: str = "", on_refused: OnRefused | None = None) -> str:
    """The block the listener appends: the operator's ``template`` when it renders (sandboxed, over
    escaped data, markers kept, within its budgets), else the shipped one; a refused operator
    template is logged, handed to ``on_refused`` (the renderer remembers it for the health check:
    :class:`.block_renderer.BlockRenderer`), and never stops the turn."""
    context = block_context(payload, lang)
    if template.strip():
        try:
            return render_data(compile_operator_template(template), context, BEGIN, END)
        except TemplateRefused as exc:
            log.warning("memory_block_template refused (%s); the shipped template is used", exc)
            if on_refused is not None:
                on_refused(template, exc)
    return render_data(shipped_template(SHIPPED_BLOCK), context, BEGIN, END)


def has_content(payload: dict[str, Any]) -> bool:
    return bool(payload.get("session_profile") or payload.get("speaker_profile") or payload.get("episodes"))
