"""Hypothesis drives whole command lines through ``Command._execute`` as the host does: every line,
for members and admins, ends in at least one non-empty text reply and never in an exception. Lines
mix in hostile text (lone surrogates, NUL, invisible characters, overlong ids, JSON with escaped
surrogates and non-finite numbers); every reply must be encodable as UTF-8."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.commands.render import MAX_REPLY_CHARS
from tests.reliability.test_fuzz_boundaries import NASTY
from tests.surfaces.test_command_memory import ALICE, Harness, host_harness
from tests.unit.test_command_parser import SOUP

HOSTILE = st.sampled_from(
    [
        *NASTY,
        "ep_" + "9" * 200,
        'import l2 {"episodes":[{"content":"x\\ud800"}]}',
        'import l2 [{"content":"x","importance":NaN}]',
        'import l2 [{"content":"x","importance":Infinity}]',
        "search \ud800",
        "list --page 1e999",
    ]
)
LINES = st.one_of(
    st.text(max_size=120), SOUP, st.lists(HOSTILE | st.text(max_size=8), min_size=1, max_size=5).map(" ".join)
)


async def _setup() -> Harness:
    h = await host_harness()
    for i in range(3):
        await h.remember(ALICE, "alice", f"fact {i}", tags=["t"])
    return h


def test_every_line_gets_a_clear_reply() -> None:
    """One plugin for all examples, so state accumulates as in a real chat."""
    loop = asyncio.new_event_loop()
    try:
        h = loop.run_until_complete(_setup())

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
        @given(line=LINES, privilege=st.sampled_from([1, 2]))
        def check(line: str, privilege: int) -> None:
            replies = loop.run_until_complete(h.run("memory " + line, privilege=privilege))
            assert replies and all(r.strip() for r in replies)
            assert "Traceback" not in replies[0] and "Something went wrong" not in replies[0]
            assert all(len(r) <= MAX_REPLY_CHARS for r in replies)
            for r in replies:
                r.encode("utf-8")  # the host sends the reply as UTF-8

        check()
    finally:
        loop.close()
