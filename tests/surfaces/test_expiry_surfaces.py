"""Facts that expire, as people and the model hear it: the ``remember`` tool's result and the
``!memory candidate accept`` reply say when a memory's own words end it, in the reply's language; a
durable statement's reply says nothing of the kind (the control). A candidate's words are read at
the time it was said, not when it is reviewed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from components.tools.remember import Remember
from ltm.i18n import t
from tests.support import Clock
from tests.surfaces.test_review_surfaces import ON, world

WED = datetime(2026, 3, 11, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("lang", ["en_US", "zh_Hans", "ja_JP"])
async def test_the_tool_result_says_when_it_expires(lang: str) -> None:
    w = await world({"language": lang}, clock=lambda: WED)
    bounded = await w.tool(Remember, {"content": "I'm in Osaka this week"})
    assert bounded["ok"] and bounded["valid_until"] == "2026-03-16T00:00:00Z"
    assert bounded["expires"] == t("tool.remember.expires", lang, until="2026-03-16T00:00:00Z", words="this week")
    durable = await w.tool(Remember, {"content": "I play the piano"})
    assert durable["ok"] and "expires" not in durable and "valid_until" not in durable  # control
    own = await w.tool(Remember, {"content": "I'm in Kyoto this week", "valid_until": "2026-04-01T00:00:00Z"})
    assert own["ok"] and "expires" not in own  # the caller's end is its own, not the words'


async def test_an_accepted_candidate_expires_and_the_reply_says_so() -> None:
    clock = Clock(WED)
    w = await world(ON, clock=clock)
    await w.responded("I am working from home this week. I like tea.")
    scope = await w.scope()
    by = {c.content: c.id for c in (await w.review.list(scope)).items}
    trip = next(cid for text, cid in by.items() if "home" in text)
    piano = next(cid for text, cid in by.items() if "tea" in text)
    clock.set(WED + timedelta(days=6))  # reviewed the next Tuesday: read as said, on Wednesday
    reply = await w.run(f"memory candidate accept {trip}")
    assert "Accepted" in reply and 'Expires 2026-03-16 00:00 UTC (the memory says "this week")' in reply
    episode = (await w.review.get(scope, trip)).result_id
    assert (await w.service.get_episode(scope, episode)).valid_until == "2026-03-16T00:00:00Z"
    control = await w.run(f"memory candidate accept {piano}")
    assert "Accepted" in control and "Expires" not in control
