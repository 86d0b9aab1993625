"""One ranking candidate as the recall index hands it to ``ltm.domain.ranking`` (the unit tests' builder)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ltm.domain.ranking import Candidate

NOW = datetime(2024, 6, 30, 12, 0, tzinfo=UTC).timestamp()


def cand(
    cid: str, text: str, *, vec: float | None = 0.5, lex: float | None = 2.0, ts: float = NOW, terms: int | None = None
) -> Candidate:
    """An active memory ``cid`` said at ``ts`` with the given vector and lexical scores (``terms``: its
    distinct index terms, when the test holds the information prior fixed)."""
    meta = {
        "episode_id": cid,
        "text": text,
        "sender_id": "",
        "importance": 0.5,
        "tags": json.dumps([]),
        "status": "active",
        "ts": ts,
        "event_ts": ts,
        "valid_from_ts": 0.0,
        "valid_until_ts": 32503680000.0,
    }
    return Candidate(id=cid, text=text, metadata=meta, vector_sim=vec, lexical=lex, terms=terms)
