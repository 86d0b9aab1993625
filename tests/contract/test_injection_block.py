"""The injected block's compact shape: one array per memory, the trust mark only when it is due."""

from __future__ import annotations

import json

from ltm.domain import budget
from ltm.domain.models import Episode
from ltm.service.injection import context_payload, render_block, short_time
from ltm.service.memory_service import RecalledEpisode, RecallResult


def _ep(n: int, claim: str = "user_statement", confidence: str = "stated", **kw: str) -> RecalledEpisode:
    e = Episode(id=f"ep_{n}", content=f"memory {n}", user_key="u", scope_key="s", session_name="person_a",
                bot_uuid="b", sender_id="alice", timestamp="2024-03-01T09:30:00+00:00", claim_type=claim,
                confidence=confidence, **kw)  # fmt: skip
    return RecalledEpisode(e, 1.0)


def test_each_memory_is_one_row_and_only_unconfirmed_or_expiring_ones_carry_marks() -> None:
    res = RecallResult(None, None, [_ep(1), _ep(2, "inference", "inferred"), _ep(3, valid_until="2025-01-01")])
    block = render_block(context_payload(res, {"id": "alice", "name": ""}), "en_US")
    lines = block.split("\n")
    assert lines[1] == 'Speaking now: {"id":"alice"}'  # an empty name is left out
    rows = json.loads(lines[3])["episodes"]
    assert rows[0] == ["ep_1", "2024-03-01 09:30Z", "alice", "memory 1"]
    assert rows[1][4] == {"trust": "inferred"}
    assert rows[2][4] == {"valid_until": "2025-01-01"}
    assert "speaker" not in json.loads(lines[3])  # the speaker is on its own line, once


def test_the_block_costs_far_less_than_its_named_field_form() -> None:
    res = RecallResult(None, None, [_ep(n) for n in range(5)])
    payload = context_payload(res, {"id": "alice", "name": ""})
    block = render_block(payload, "en_US")
    named = json.dumps({"episodes": payload["episodes"]}, ensure_ascii=False, separators=(",", ":"))
    per_row = (budget.estimate_tokens(block) - budget.estimate_tokens(lines_without_rows(block))) / 5
    assert per_row < budget.estimate_tokens(named) / 5 / 2
    assert budget.estimate_tokens(block) < 200


def lines_without_rows(block: str) -> str:
    lines = block.split("\n")
    return "\n".join([*lines[:3], '{"episodes":[]}', lines[4]])


def test_short_time() -> None:
    assert short_time("2023-05-08T13:56:00+00:00") == "2023-05-08 13:56Z"
    assert short_time("2023-05-08T13:56:59Z") == "2023-05-08 13:56Z"
    assert short_time("2023-05-08T13:56:00+08:00") == "2023-05-08 13:56+08:00"
    assert short_time("sometime") == "sometime"
    assert short_time(None) == ""
