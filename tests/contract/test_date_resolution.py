"""Relative dates resolved when a memory is written, on every engine: "Fui al dentista ayer" said
on 8 May 2023 is stored verbatim with the day it names (7 May 2023) beside it, and months later a
"when" question and a question about that day find it through that date. The positive controls:
the same words stored without a relative day (no date kept, no lift), and a question that asks
for no time (no lift)."""

from __future__ import annotations

from datetime import UTC, datetime

from ltm.domain.date_resolution import DATES_KEY
from ltm.service import MemoryService
from tests.support import ADMIN, Clock, scope_of

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
ASKED = datetime(2023, 9, 1, 10, 0, tzinfo=UTC)
DATED = "Fui al dentista ayer con mi hermana"  # "yesterday": the query-time rules read no Spanish
PLAIN = "Fui al dentista con mi hermana Ana"  # control: the same visit, no relative day


async def _scores(svc: MemoryService, scope, query: str) -> dict[str, float]:
    res = await svc.recall(scope, query, limit=10, with_profiles=False)
    return {r.episode.content: r.score for r in res.episodes}


async def test_a_when_question_finds_a_memory_through_its_resolved_date(service: MemoryService, clock: Clock) -> None:
    now = [SAID]
    clock.set(lambda: now[0])
    scope = await scope_of(service)
    dated = await service.remember(scope, {"content": DATED}, ADMIN)
    plain = await service.remember(scope, {"content": PLAIN}, ADMIN)
    # the words are kept verbatim, the day they named beside them
    assert dated.episode.content == DATED and dated.episode.extra.get(DATES_KEY) == ["day:2023-05-07"]
    assert DATES_KEY not in plain.episode.extra  # control: nothing relative, nothing kept
    stored = await service.get_episode(scope, dated.episode.id)
    assert stored.extra.get(DATES_KEY) == ["day:2023-05-07"]

    now[0] = ASKED
    when = await _scores(service, scope, "¿Cuándo fui al dentista con mi hermana?")
    other = await _scores(service, scope, "¿Fui al dentista con mi hermana?")  # control: asks for no time
    assert set(when) == set(other) == {DATED, PLAIN}
    assert when[DATED] > when[PLAIN] and other[PLAIN] > other[DATED]  # the when question turns the order
    lift = (when[DATED] / when[PLAIN]) / (other[DATED] / other[PLAIN])
    assert lift > 1.1  # the "when" boost (1 + 0.2 over the speaker's own 1 + 0.2), only for the dated memory

    # a question about that day (read in English): the dated memory fits the day, the plain one,
    # told the day after, only half
    day = await service.recall(scope, "dentist on 7 May 2023", limit=10, with_profiles=False)
    assert [r.episode.content for r in day.episodes][:1] == [DATED]


async def test_the_date_is_read_at_the_statements_own_time(fast_service: MemoryService, clock: Clock) -> None:
    clock.set(ASKED)
    scope = await scope_of(fast_service)
    r = await fast_service.remember(
        scope, {"content": "昨日、歯医者に行きました", "event_at": "2023-05-08T13:56:00Z"}, ADMIN
    )
    assert r.episode.extra.get(DATES_KEY) == ["day:2023-05-07"]  # its event time's yesterday, not today's
    r = await fast_service.remember(scope, {"content": "今日は歯医者に行きました"}, ADMIN)
    assert r.episode.extra.get(DATES_KEY) == ["day:2023-09-01"]  # no event time: when it is written
