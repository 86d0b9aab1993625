"""One time formatter for every ``!memory`` reply: the consolidation preview shows a validity the
way the episode lines do."""

from __future__ import annotations

from types import SimpleNamespace

from components.commands import consolidate, render


def test_date_text_normalises_instants_and_quotes_the_rest() -> None:
    assert render.date_text("2024-05-01T10:00:00+02:00") == "2024-05-01 08:00 UTC"
    assert render.date_text("2024-05-01T08:00:00Z") == "2024-05-01 08:00 UTC"
    assert render.date_text(None) == "-" and render.date_text("") == "-"
    assert render.date_text("2024-05-01") == "2024-05-01"  # a bare date is shown as it is
    assert render.date_text("soon\n@all <b>") == "soon \uff20all \u2039b\u203a"  # untrusted: one line, no markup


def test_consolidation_preview_uses_the_same_formatter() -> None:
    prop = SimpleNamespace(
        id="cp_1", summary="s", valid_from="2024-05-01T10:00:00+02:00", valid_until="2024-06-01T00:00:00Z"
    )
    preview = SimpleNamespace(
        enabled=True, model_configured=True, candidates=[], proposal=prop, sources=[], draft_error="",
        skipped_long=0, apply_profile_updates=False,
    )  # fmt: skip
    text = "\n".join(consolidate.render_preview("en_US", preview))  # type: ignore[arg-type]
    assert render.date_text(prop.valid_from) in text and render.date_text(prop.valid_until) in text
    assert "2024-05-01T10:00:00+02:00" not in text  # control: not the raw stored string
