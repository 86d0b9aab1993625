"""``python -m pages.move_cli restore``'s summary says what the content gate did on the way in
(records changed, credential values redacted, profile values refused, records flagged), counted
once: from the restore pass, not again from the read-back pass, which reports the same chunk."""

from __future__ import annotations

import json
from typing import Any

from ltm.service import backup as bk
from pages.move_cli import restore_lines


def test_the_summary_counts_the_gates_work_once() -> None:
    lines = [
        json.dumps({"format": bk.FORMAT, "kbs": [{"id": "kb-1"}]}),
        bk.record_line("kv", "", "alice", "profile/alice#session", "{}"),
        json.dumps({"end": True, "counts": {"kv": 1}, "digest": "x"}),
    ]
    report = bk.RestoreReport(gated=1, redacted=2, refused=1, flagged=1)
    report.written["kv"] = 1
    readback = bk.RestoreReport(gated=1, redacted=2, refused=1, flagged=1)
    readback.verified["kv"] = 1
    sent: list[tuple[str, Any]] = []

    def call(endpoint: str, body: dict[str, Any]) -> Any:
        sent.append((endpoint, body.get("verify")))
        if endpoint == "/restore/check":
            return {"counts": {"kv": 1}, "records": 1}
        return (readback if body.get("verify") else report).to_dict()

    out = restore_lines(call, lines, chunk=10)
    assert out["ok"] and out["written"]["kv"] == 1 and out["verified"]["kv"] == 1
    assert {k: out[k] for k in ("gated", "redacted", "refused", "flagged")} == {
        "gated": 1,
        "redacted": 2,
        "refused": 1,
        "flagged": 1,
    }
    assert sent == [("/restore/check", None), ("/restore", None), ("/restore", True)]
