"""Facts that expire, on every engine: a statement whose words bound it ("I'm in Osaka this week")
gets a ``valid_until`` at the end of that period; before it the memory is in the injected block and
in recall, after it it is gone from both but stays in the full list and in as-of answers. A durable
statement beside it is the positive control; a caller's own ``valid_until`` is never replaced. And a
stay is not a move: "staying at my parents' place until Friday" is not parked as contradicting "I
live in Tokyo", while "I moved to Osaka" still is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltm.domain.errors import ParkedError
from ltm.domain.timefields import parse_instant, to_iso
from ltm.service import MemoryService
from ltm.service.episodes import EXPIRES_BY
from ltm.service.injection import context_payload, has_content, render_block
from tests.support import ADMIN, Clock, build_service, scope_of, with_review
from tests.support.backends import ENGINES

WED = datetime(2026, 3, 11, 10, 0, tzinfo=UTC)
END_OF_WEEK = "2026-03-16T00:00:00Z"
STAY = "I'm in Osaka this week for the conference"
HOME = "I play the piano in Osaka on Sundays"


async def _block(svc: MemoryService, scope, query: str) -> str:
    res = await svc.recall(scope, query, limit=10, with_profiles=False)
    payload = context_payload(res, {"id": scope.sender_id, "name": ""})
    return render_block(payload, "en_US") if has_content(payload) else ""


async def test_an_expiring_memory_leaves_the_block_after_its_time_but_not_history(
    service: MemoryService, clock: Clock
) -> None:
    now = [WED]  # the service's clock, moved by the test
    clock.set(lambda: now[0])
    scope = await scope_of(service)
    stay = await service.remember(scope, {"content": STAY}, ADMIN)
    home = await service.remember(scope, {"content": HOME}, ADMIN)
    assert stay.episode.valid_until == END_OF_WEEK and stay.expires_by == "this week"
    assert home.episode.valid_until is None and home.expires_by == ""  # control: durable stays open

    block = await _block(service, scope, "what am I doing in Osaka")
    assert STAY in block and HOME in block  # before its time: both injected

    now[0] = parse_instant(END_OF_WEEK, "t") - timedelta(seconds=1)
    assert STAY in await _block(service, scope, "what am I doing in Osaka")  # the last second still holds

    now[0] = parse_instant(END_OF_WEEK, "t") + timedelta(minutes=1)
    block = await _block(service, scope, "what am I doing in Osaka")
    assert STAY not in block and HOME in block  # after: gone, the control stays
    recalled = await service.recall(scope, "Osaka conference", limit=10, with_profiles=False)
    assert [r.episode.id for r in recalled.episodes] == [home.episode.id]

    # history: the full list and an as-of answer still have it
    every = await service.list_episodes(scope, statuses=None, page_size=50)
    assert stay.episode.id in {e.id for e in every.items}
    then = await service.recall(scope, "Osaka conference", limit=10, with_profiles=False, as_of=to_iso(WED))
    assert stay.episode.id in {r.episode.id for r in then.episodes}
    as_of = await service.list_episodes(scope, as_of_ts=WED.timestamp(), page_size=50)
    assert stay.episode.id in {e.id for e in as_of.items}
    stored = await service.get_episode(scope, stay.episode.id)
    assert stored.status == "active" and stored.extra.get(EXPIRES_BY) == "this week"


async def test_the_statement_time_is_its_event_time(fast_service: MemoryService, clock: Clock) -> None:
    clock.set(WED)
    scope = await scope_of(fast_service)
    r = await fast_service.remember(scope, {"content": "I'm in Paris today", "event_at": "2026-03-01T08:00:00Z"}, ADMIN)
    assert r.episode.valid_until == "2026-03-02T00:00:00Z"  # that day, not the day it was written
    res = await fast_service.recall(scope, "Paris", limit=10, with_profiles=False)
    assert res.episodes == []  # already over when written: history only
    every = await fast_service.list_episodes(scope, statuses=None)
    assert [e.id for e in every.items] == [r.episode.id]


async def test_the_callers_valid_until_wins_and_imports_keep_their_fields(
    fast_service: MemoryService, clock: Clock
) -> None:
    clock.set(WED)
    scope = await scope_of(fast_service)
    own = "2026-05-01T00:00:00Z"
    r = await fast_service.remember(scope, {"content": "I'm in Rome this week", "valid_until": own}, ADMIN)
    assert r.episode.valid_until == own and r.expires_by == ""
    imp = await fast_service.remember(scope, {"content": "I'm in Oslo this week"}, ADMIN, origin="import")
    assert imp.episode.valid_until is None  # a restored record stays as it was written
    tool = await fast_service.remember(scope, {"content": "I'm in Oslo this week"}, ADMIN, origin="tool")
    assert tool.episode.valid_until == END_OF_WEEK  # control: the same words from the model expire
    late = {"content": "I'm in Bern this week", "valid_from": "2026-04-01T00:00:00Z"}
    assert (await fast_service.remember(scope, late, ADMIN)).episode.valid_until is None  # starts after


STATEMENTS = st.sampled_from(
    [
        "I'm in Tokyo this week",
        "I am staying with Ann until Friday",
        "我这几天在出差",
        "I live in Tokyo",
        "下个月之前我都吃素",
    ]
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=STATEMENTS,
    when=st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)),
    own=st.one_of(
        st.none(),
        st.datetimes(min_value=datetime(2091, 1, 1), max_value=datetime(2099, 1, 1), timezones=st.just(UTC)),
    ),
    event=st.booleans(),
)
async def test_property_never_before_the_statement_and_never_over_the_callers(
    tmp_path: Path, text: str, when: datetime, own: datetime | None, event: bool
) -> None:
    svc = await build_service("numpy", tmp_path, clock=Clock(WED))
    scope = await scope_of(svc)
    raw = {"content": text, **({"event_at": to_iso(when)} if event else {})}
    if own is not None:
        raw["valid_until"] = to_iso(own)
    ep = (await svc.remember(scope, raw, ADMIN)).episode
    said = when if event else WED
    if own is not None:
        assert ep.valid_until == to_iso(own)
    elif ep.valid_until is not None:
        assert parse_instant(ep.valid_until, "t") > said


@pytest.mark.parametrize("kind", list(ENGINES))
async def test_a_stay_is_not_a_move(tmp_path: Path, kind: str) -> None:
    service = await build_service(kind, tmp_path, clock=Clock(WED), review=with_review())
    review = service.review
    assert review is not None
    scope = await scope_of(service)
    home = await service.remember(scope, {"content": "I live in Tokyo"}, ADMIN, origin="tool")
    stay = await service.remember(
        scope, {"content": "I am staying at my parents' place until Friday"}, ADMIN, origin="tool"
    )
    assert stay.episode.valid_until == "2026-03-14T00:00:00Z"
    zh = await service.remember(scope, {"content": "我这几天在大阪出差"}, ADMIN, origin="tool")
    assert zh.episode.valid_until == "2026-03-15T00:00:00Z"
    active = {e.id for e in (await service.list_episodes(scope, page_size=50)).items}
    assert {home.episode.id, stay.episode.id, zh.episode.id} <= active
    # control: a real move still contradicts and is parked, never written
    with pytest.raises(ParkedError):
        await service.remember(scope, {"content": "I moved to Osaka"}, ADMIN, origin="tool")
    assert len((await service.list_episodes(scope, page_size=50)).items) == 3


async def test_two_stays_still_conflict_and_the_parked_one_expires_when_accepted(tmp_path: Path) -> None:
    clock = Clock(WED)
    fast_service = await build_service("numpy", tmp_path, clock=clock, review=with_review())
    review = fast_service.review
    assert review is not None
    scope = await scope_of(fast_service)
    await fast_service.remember(scope, {"content": "I am staying in Kyoto this week"}, ADMIN, origin="tool")
    with pytest.raises(ParkedError) as parked:  # two bounded statements are compared as before
        await fast_service.remember(scope, {"content": "I am staying in Nara this week"}, ADMIN, origin="tool")
    cid = parked.value.params["candidate"]
    cand = await review.get(scope, cid)
    assert cand.episode_fields.get("valid_until") is None  # the words, not a copied end, decide on accept
    clock.set(WED + timedelta(days=1))
    decision = await review.accept(scope, cid, ADMIN)
    assert decision.episode.valid_until == END_OF_WEEK and decision.episode.extra[EXPIRES_BY] == "this week"
