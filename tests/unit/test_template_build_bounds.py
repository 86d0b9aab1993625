"""Budgets before the work (issue 34, finding 4): every template construct that builds a string or
a list sizes it *before* building it. Each test bounds the memory the render allocated (the
tracemalloc peak of the render, in process), not only that it was refused: a check made after the
value was built refuses it too, but only after the allocation. Each attack has a control near the
limit that renders."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltm import templates
from ltm.templates import Escaped, TemplateRefused, compile_operator_template, render_data

B, E = "<data>", "</data>"
# What a render may hold at once within its budgets is about a megabyte (the built budget is
# 1,000,000 characters); every attack below would allocate at least 50 MB unchecked.
PEAK_BYTES = 8 * 1024 * 1024
L = "{% set l = [''] * 15000 %}"  # a list of 15,000 empty strings: as long as it is written out


@pytest.fixture(autouse=True)
def _no_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The size limits under test, not the wall clock of a loaded machine (tracemalloc slows every
    allocation), must stop these renders; the deadline has its own test."""
    monkeypatch.setattr(templates.budget, "MAX_RENDER_SECONDS", 60.0)


@contextmanager
def traced() -> Iterator[list[int]]:
    """The peak of the memory allocated in the block (``got[0]``, bytes)."""
    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    got = [0]
    try:
        yield got
    finally:
        got[0] = tracemalloc.get_traced_memory()[1] - base
        if not was:
            tracemalloc.stop()


def render(source: str, values: dict[str, str] | None = None) -> tuple[str | TemplateRefused, int]:
    """The render's output or refusal, and the peak memory it allocated (compiled outside the trace)."""
    template = compile_operator_template(source)
    ctx = {k: Escaped(v) for k, v in (values or {}).items()}
    with traced() as peak:
        try:
            out: str | TemplateRefused = render_data(template, ctx, B, E)
        except TemplateRefused as exc:
            out = exc
    return out, peak[0]


def refused_small(source: str, limit: str = "value", reason: str = "budget") -> None:
    got, peak = render(source)
    assert isinstance(got, TemplateRefused), got[:80] if isinstance(got, str) else got
    assert (got.reason, got.limit if reason == "budget" else "") == (reason, limit if reason == "budget" else ""), got
    assert peak < PEAK_BYTES, f"{peak / 1e6:.1f} MB allocated before the refusal"


def renders(source: str, expected: str) -> None:
    got, peak = render(source)
    assert got == B + expected + E, got
    assert peak < PEAK_BYTES


# --- repetition: each direction has its own test ----------------------------------------------


def test_int_times_str_is_sized_before_it_is_built() -> None:
    refused_small('<data>{{ 60000000 * "x" }}</data>')
    refused_small("<data>{{ (60000000 * 'x')|length }}</data>")
    renders("<data>{{ 3 * 'ab' }}</data>", "ababab")  # control
    renders("<data>{{ (16000 * 'x')|length }}</data>", "16000")  # control: exactly the value limit


def test_str_times_int_is_sized_before_it_is_built() -> None:
    refused_small('<data>{{ "x" * 60000000 }}</data>')
    refused_small("<data>{{ ('x' * 60000000)|length }}</data>")
    renders("<data>{{ 'ab' * 3 }}</data>", "ababab")  # control
    renders("<data>{{ ('x' * 16000)|length }}</data>", "16000")  # control


def test_int_times_list_is_sized_before_it_is_built() -> None:
    refused_small("<data>{{ (8000000 * [1])|length }}</data>")
    refused_small(L + "<data>{{ (5000 * [l])|length }}</data>")  # deep: each item is a long list
    renders("<data>{{ (3 * [1, 2])|length }}</data>", "6")  # control


def test_list_times_int_is_sized_before_it_is_built() -> None:
    refused_small("<data>{{ ([1] * 8000000)|length }}</data>")
    refused_small(L + "<data>{{ ([l] * 5000)|length }}</data>")
    refused_small(L + "<data>{{ ([l] + [l])|length }}</data>")  # a sum of two long lists
    renders("<data>{{ ([1, 2] * 3)|length }}</data>", "6")  # control
    renders("<data>{{ ([''] * 15000)|length }}</data>", "15000")  # control: empty items, at the limit


# --- replace: the evaluation context comes first ------------------------------------------------


def test_replace_is_sized_from_its_real_arguments() -> None:
    refused_small("<data>{{ ('x' * 15000)|replace('', 'y' * 4000) }}</data>")
    refused_small("<data>{{ ('x' * 15000)|replace(old='', new='y' * 4000) }}</data>")  # by keyword
    refused_small("<data>{{ ('x' * 15000)|replace('x', 'y' * 4000) }}</data>")
    # controls: a count bounds the growth; a replace that stays under the limit renders
    renders("<data>{{ ('x' * 15000)|replace('', 'y', 3)|length }}</data>", "15003")
    renders("<data>{{ ('x' * 8000)|replace('x', 'yy')|length }}</data>", "16000")
    renders("<data>{{ 'Hello World'|replace('Hello', 'Goodbye') }}</data>", "Goodbye World")


# --- joins, concatenation, text of a container --------------------------------------------------


def test_joins_are_sized_with_their_items_and_separators() -> None:
    refused_small(L + "<data>{{ ([l] * 300)|join|length }}</data>")  # items each written out long
    refused_small("<data>{{ ('x' * 9000)|list|join('y' * 3)|length }}</data>")  # the separators
    renders("<data>{{ ('x' * 4000)|list|join('y')|length }}</data>", "7999")  # control
    renders("<data>{{ ['a', 'b', 'c']|join(', ') }}</data>", "a, b, c")  # control


def test_concatenation_is_sized_before_its_parts_are_written_out() -> None:
    refused_small(L + "{% set m = [l] * 300 %}<data>{{ (m ~ 'x')|length }}</data>")
    refused_small("{% set s = 'x' * 15000 %}<data>{{ (s ~ s ~ s)|length }}</data>")
    renders("<data>{{ ('x' * 8000 ~ 'y' * 8000)|length }}</data>", "16000")  # control


def test_a_container_written_out_is_sized_first() -> None:
    refused_small(L + "{% set m = [l] * 300 %}<data>{{ m|string|length }}</data>")
    refused_small(L + "{% set m = [l] * 300 %}<data>{{ m }}</data>")
    renders("<data>{{ [1, 2]|string }}</data>", "[1, 2]")  # control


def test_format_and_percent_are_refused_before_they_pad() -> None:
    refused_small("<data>{{ '%0999999999d' % 1 }}</data>", reason="forbidden")
    refused_small("<data>{{ '{:>999999999}'.format(1) }}</data>", reason="forbidden")
    refused_small("<data>{{ '{x:>999999999}'.format_map({'x': 1}) }}</data>", reason="forbidden")
    renders("<data>{{ 7 % 3 }}</data>", "1")  # control: % on numbers is arithmetic


# --- property: any construct at any size builds nothing large ----------------------------------

CONSTRUCTS = [
    "{{ (N * 'x')|length }}", "{{ ('x' * N)|length }}", "{{ (N * [0])|length }}", "{{ ([0] * N)|length }}",
    "{{ ('x' * (N % 16001))|replace('', 'yz')|length }}", "{{ ('ab' * (N % 8001))|replace('a', 'x' * 50)|length }}",
    "{{ ('x' * (N % 16001))|list|join('--')|length }}", "{{ ([''] * (N % 16001)) * 2 }}",
    "{% set l = [''] * (N % 16001) %}{{ ([l] * 40)|join|length }}",
    "{{ (('x' * (N % 16001)) ~ ('y' * (N % 9000)))|length }}",
    "{% set l = [''] * (N % 16001) %}{{ ([l, l, l]|string)|length }}", "{{ ((N % 16001) * ['ab'])|join('x')|length }}",
]  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CONSTRUCTS), st.one_of(st.integers(0, 20_000), st.integers(0, 10**9)))
def test_any_construct_at_any_size_builds_nothing_large(construct: str, n: int) -> None:
    got, peak = render("<data>" + construct.replace("N", str(n)) + "</data>")
    assert isinstance(got, str) or got.reason in ("budget", "render"), got
    assert peak < PEAK_BYTES, f"{construct} with N={n}: {peak / 1e6:.1f} MB"
    if isinstance(got, str):
        assert len(got) <= templates.MAX_OUTPUT_CHARS


@pytest.mark.parametrize("n", [0, 1, 15_999, 16_000])
def test_controls_constructs_at_their_limits_render(n: int) -> None:
    got, _ = render("<data>{{ (N * 'x')|length }} {{ ('x' * N)|length }}</data>".replace("N", str(n)))
    assert got == f"<data>{n} {n}</data>"
