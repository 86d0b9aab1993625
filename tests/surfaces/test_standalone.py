"""Standalone CLI papercuts: common options after the subcommand, and a demo that does not pile up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ltm import standalone


def test_common_options_are_accepted_before_and_after_the_subcommand() -> None:
    before = standalone.parser().parse_args(["--session", "group_g1", "--speaker", "u9", "list"])
    after = standalone.parser().parse_args(["list", "--session", "group_g1", "--speaker", "u9"])
    assert (before.session, before.speaker) == ("group_g1", "u9")
    assert (after.session, after.speaker) == ("group_g1", "u9")


def run(tmp: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert standalone.main(["--data", str(tmp), "--embedder", "hashing", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_demo_twice_keeps_one_set_and_leaves_other_sessions_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(tmp_path, capsys, "remember", "I keep bees", "--session", "person_cli")
    for _ in range(2):
        run(tmp_path, capsys, "demo")
    demo = run(tmp_path, capsys, "list", "--all", "--session", standalone.DEMO_SESSION)
    assert sorted(i["content"] for i in demo["items"]) == [
        "I live in Paris and work as a nurse.",
        "I moved to Berlin last month.",
        "My favourite programming language is Go.",
    ]
    mine = run(tmp_path, capsys, "list", "--session", "person_cli")
    assert [i["content"] for i in mine["items"]] == ["I keep bees"]  # the demo reset touched only its own session
