"""The memory block injected into the system prompt: delimited, escaped, budgeted data.

Memory text is untrusted. It is serialised as JSON (quotes and backslashes escaped) with ``<``,
``>`` and ``&`` written as ``\\u003c``/``\\u003e``/``\\u0026``, between fixed markers, after a header
that tells the model the content is data. A memory cannot close the block or pose as an instruction.

Before that, every string of the payload is neutralised (:func:`ltm.domain.text.neutralize`): no
zero-width or direction-changing character, no raw line or paragraph separator, and a look-alike of
``<``/``>`` (e.g. the full-width ``＜/ltm-memory-data＞``) is escaped like the real one. The stored
records are not changed; only what the model is shown.

The block is compact (it is paid for on every turn): each episode is one JSON array
``[id, when, speaker, text]`` whose column names the header gives once, ``when`` to the minute,
and a fifth element ``{"trust": ..., "valid_until": ...}`` only when the memory is not confirmed
or expires. The ``_ltm_context`` query variable (:func:`context_payload`) keeps the named fields.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..domain.models import Profile
from ..domain.text import neutralize_data
from ..domain.trust import is_marked, trust_label
from ..i18n import t
from .memory_service import RecallResult

BEGIN = "<ltm-memory-data>"
END = "</ltm-memory-data>"


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
    return out


def context_payload(result: RecallResult, speaker: dict[str, str]) -> dict[str, Any]:
    """The ``_ltm_context`` query variable and the body of the injected block (neutralised)."""
    payload = {
        "speaker": speaker,
        "session_profile": _profile_view(result.session_profile),
        "speaker_profile": _profile_view(result.speaker_profile),
        "episodes": [
            {
                "id": r.episode.id,
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


def _episode_row(e: dict[str, Any]) -> list[Any]:
    row: list[Any] = [e.get("id"), short_time(e.get("when")), e.get("speaker"), e.get("content")]
    marks = {k: e[k] for k in ("trust", "valid_until") if e.get(k)}
    return [*row, marks] if marks else row


def render_block(payload: dict[str, Any], lang: str) -> str:
    body: dict[str, Any] = {k: payload[k] for k in ("session_profile", "speaker_profile") if payload.get(k)}
    if payload.get("episodes"):
        body["episodes"] = [_episode_row(e) for e in payload["episodes"]]
    speaker = {k: v for k, v in (payload.get("speaker") or {}).items() if v}
    who = escape_json(speaker)
    return "\n".join([t("inject.header", lang), t("inject.speaker", lang, speaker=who), BEGIN, escape_json(body), END])


def has_content(payload: dict[str, Any]) -> bool:
    return bool(payload.get("session_profile") or payload.get("speaker_profile") or payload.get("episodes"))
