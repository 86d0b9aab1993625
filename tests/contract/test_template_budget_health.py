"""An operator template over budget: the turn renders off the event loop, falls back to the shipped
block, and the health check names the limit it hit, in every language (issue 28, item 2)."""

from __future__ import annotations

import asyncio
import time

import pytest

from ltm import templates
from ltm.domain.models import Episode
from ltm.i18n import LANGUAGES, t
from ltm.service.block_renderer import BlockRenderer
from ltm.service.injection import context_payload, render_block
from ltm.service.memory_service import RecalledEpisode, RecallResult
from ltm.service.template_check import template_check

# 10^12 iterations once the range and operation limits are lifted: only the deadline can end it
SLOW = "{{ begin }}{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}{{ end }}"
# renders over the health check's sample (short memories), breaks the output cap on a long one
REPEATS = "{{ begin }}{% for e in episodes[:1] %}{% for i in range(10) %}{{ e.text }}{% endfor %}{% endfor %}{{ end }}"


def _payload(texts: list[str]) -> dict:
    eps = [
        RecalledEpisode(
            Episode(id=f"ep_{i}", content=x, user_key="u", scope_key="s", session_name="person_m", bot_uuid="b",
                    sender_id="m", timestamp="2025-01-01T00:00:00Z"),
            0.9,
        )
        for i, x in enumerate(texts)
    ]  # fmt: skip
    return context_payload(RecallResult(None, None, eps), {"id": "m", "name": ""})


async def test_a_slow_template_renders_off_the_loop_and_other_chats_keep_going(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(templates.budget, "MAX_OPERATIONS", 10**13)  # only the deadline can stop it now
    monkeypatch.setattr(templates.budget, "MAX_RANGE", 10**6)
    monkeypatch.setattr(templates.budget, "MAX_RENDER_SECONDS", 0.2)
    payload = _payload(["tea at nine"])
    beats = 0
    done = asyncio.Event()

    async def other_chat() -> None:
        nonlocal beats
        while not done.is_set():
            await asyncio.sleep(0.01)
            beats += 1

    ticker = asyncio.create_task(other_chat())
    started = time.perf_counter()
    renderer = BlockRenderer()
    block = await renderer.render_async(payload, "en_US", SLOW)
    elapsed = time.perf_counter() - started
    done.set()
    await ticker
    assert block == render_block(payload, "en_US")  # the shipped block, whole
    # the deadline ended it (a consequence, not a speed figure), and the event loop served another
    # chat while the template rendered: at least one tick, however loaded the machine is
    assert elapsed >= 0.2 and beats >= 1, (elapsed, beats)
    seen = renderer.refusal(SLOW)
    assert seen is not None and (seen.reason, seen.limit) == ("budget", "time")
    # control: a template within budget renders off the loop too, as itself
    fine = "MEMO\n{{ begin }}{% for e in episodes %}{{ e.text }}{% endfor %}{{ end }}"
    assert (await renderer.render_async(payload, "en_US", fine)).startswith("MEMO\n")
    assert renderer.refusal(fine) is None


def test_the_health_check_names_the_limit_a_sample_render_hit() -> None:
    over = "{{ begin }}{% for e in episodes %}{% for i in range(40) %}{{ e.text }}{% endfor %}{% endfor %}{{ end }}"
    verdict, key, args = template_check(over)
    assert (verdict, key, args["reason"], args["limit"]) == ("amber", "health.template_refused", "budget", "output")
    assert args["note"] == "health.template_limit.output"
    verdict, key, args = template_check(REPEATS)
    assert (verdict, key) == ("green", "health.template_ok")  # control: the same shape, fewer repeats


def test_a_turn_over_budget_falls_back_and_the_health_check_reports_it() -> None:
    short, long = _payload(["tea"]), _payload(["m" * 2000])
    renderer = BlockRenderer()
    assert renderer.render(short, "en_US", REPEATS).count('"tea"') == 10  # control: renders as itself
    assert renderer.refusal(REPEATS) is None
    assert renderer.render(long, "en_US", REPEATS) == render_block(long, "en_US")  # over the cap: shipped
    seen = renderer.refusal(REPEATS)
    assert seen is not None and seen.limit == "output"
    assert template_check(REPEATS)[:2] == ("green", "health.template_ok")  # control: the sample alone renders
    verdict, key, args = renderer.check(REPEATS)
    assert (verdict, key, args["limit"], args["note"]) == (
        "amber",
        "health.template_refused",
        "output",
        "health.template_limit.output",
    )


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_limit_is_named_in_every_language(lang: str) -> None:
    texts = {limit: t(f"health.template_limit.{limit}", lang) for limit in templates.LIMITS}
    assert all(text != f"health.template_limit.{limit}" for limit, text in texts.items()), texts
    assert len(set(texts.values())) == len(texts)  # six different sentences
    if lang != "en_US":
        assert all(texts[x] != t(f"health.template_limit.{x}", "en_US") for x in texts)  # translated
