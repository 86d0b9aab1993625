"""The ``!memory`` reply layouts are the shipped templates under ``ltm/templates/replies``, rendered in
the sandbox over values already cleaned: stored text that looks like template code stays text."""

from __future__ import annotations

import re
from pathlib import Path

from components.commands import render
from ltm.domain.models import Episode

ROOT = Path(__file__).resolve().parents[2]
REPLIES = ROOT / "ltm" / "templates" / "replies"


def test_every_shipped_reply_template_is_used() -> None:
    names = {p.stem for p in REPLIES.glob("*.j2")}
    used = set(re.findall(r'layout\(\s*"(\w+)"', (ROOT / "components" / "commands" / "render.py").read_text()))
    assert names and names == used, (names, used)


def test_stored_text_that_looks_like_template_code_is_shown_as_text() -> None:
    e = Episode(id="ep_1", content="{{ 7 * 7 }} {% for x in range(3) %}x{% endfor %} {{ t('cmd.help.title') }}",
                user_key="u", scope_key="s", session_name="p", bot_uuid="b", sender_id="{{ lang }}",
                timestamp="2024-03-01T09:30:00Z")  # fmt: skip
    shown = render.show("en_US", e) + "\n" + render.episode_page("en_US", "cmd.list.title", [e], 1, False, "list")
    assert "{{ 7 * 7 }}" in shown and "49" not in shown and "xxx" not in shown
    assert "{{ lang }}" in shown and "en_US" not in shown
    assert render.t("cmd.help.title", "en_US") not in shown  # the catalog call in the text was not made
