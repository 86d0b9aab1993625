"""Template budgets that cannot be walked around (issue 28, item 2).

Each greedy construct below stayed inside the old limits (4 KB source, 20,000 counted operations,
16,000 characters) and still exhausted the plugin. Each runs in a subprocess with a memory cap
and a timeout, so a regression fails the test instead of hanging or killing the suite; each has a
control near the same limit that renders."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltm import templates
from ltm.templates import Escaped, TemplateRefused, compile_operator_template, render_data

ROOT = Path(__file__).resolve().parents[2]
B, E = "<data>", "</data>"
GUARD_SECONDS = 60  # the 2-core test machine is shared: generous, but a hang still ends
PEAK_MB = 250  # the child's peak memory: an interpreter with Jinja is ~40 MB

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    import ltm.templates.budget
    from ltm.templates import Escaped, TemplateRefused, compile_operator_template, render_data
    # The limit under test, not the wall clock of a loaded machine, must stop these renders
    # (the deadline has its own test).
    ltm.templates.budget.MAX_RENDER_SECONDS = 20.0
    results = []
    for case in json.loads(sys.stdin.read()):
        ctx = {k: Escaped(v) for k, v in case["values"].items()}
        started = time.perf_counter()
        try:
            out = render_data(compile_operator_template(case["source"]), ctx, "<data>", "</data>")
            res = {"ok": True, "chars": len(out)}
        except TemplateRefused as exc:
            res = {"ok": False, "reason": exc.reason, "limit": getattr(exc, "limit", ""), "detail": exc.detail}
        except BaseException as exc:  # what reached the caller: the property forbids it
            res = {"ok": False, "reason": "raised " + type(exc).__name__, "limit": ""}
        res["seconds"] = time.perf_counter() - started
        # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a large pytest
        # process would report its parent's peak
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
        res["peak_mb"] = int(hwm[0].split()[1]) // 1024 if hwm else 0
        results.append(res)
    sys.stdout.write(json.dumps(results))
    """
)


def guarded_many(cases: list[tuple[str, dict[str, str]]]) -> list[dict]:
    """Render each ``(source, values)`` in one child process (3 GB address space, a timeout)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps([{"source": s, "values": v} for s, v in cases]),
            capture_output=True,
            text=True,
            timeout=GUARD_SECONDS,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return [{"ok": False, "reason": "timeout", "limit": "", "seconds": GUARD_SECONDS}] * len(cases)
    if done.returncode != 0 or not done.stdout:
        crash = {"ok": False, "reason": f"crashed rc={done.returncode}", "limit": "", "stderr": done.stderr[-300:]}
        return [{**crash, "seconds": 0}] * len(cases)
    return json.loads(done.stdout)


def guarded(source: str, values: dict[str, str] | None = None) -> dict:
    return guarded_many([(source, values or {})])[0]


def render(source: str, values: dict[str, str] | None = None) -> str:
    ctx = {k: Escaped(v) for k, v in (values or {}).items()}
    return render_data(compile_operator_template(source), ctx, B, E)


def refusal(source: str, values: dict[str, str] | None = None) -> TemplateRefused:
    with pytest.raises(TemplateRefused) as err:
        render(source, values)
    return err.value


def assert_stopped(got: dict, limit: str) -> None:
    assert not got["ok"] and got["reason"] == "budget" and got["limit"] == limit, got
    assert got["seconds"] < 5, got  # bounded work, even on a loaded machine
    assert got["peak_mb"] < PEAK_MB, got  # refused before the allocation, not after it


# --- loops: every iteration is counted -------------------------------------------------------


def test_nested_loops_over_a_long_string_are_counted() -> None:
    source = "{% set s = 'x' * 2000 %}<data>{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}</data>"
    assert_stopped(guarded(source), "operations")


def test_control_nested_loops_just_under_the_operation_budget_render() -> None:
    n = 139  # 139 * 139 + 139 iterations: 19,460 of 20,000
    assert n * n + n < templates.MAX_OPERATIONS
    source = f"{{% set s = 'x' * {n} %}}<data>{{% for a in s %}}{{% for b in s %}}{{% endfor %}}{{% endfor %}}ok</data>"
    assert render(source) == "<data>ok</data>"


# --- concatenation: every result is sized, and all of them together ---------------------------


def test_doubling_a_string_by_concatenation_is_stopped() -> None:
    source = "{% set a = 'x' * 1000 %}" + "{% set a = a ~ a %}" * 200 + "<data>{{ a|length }}</data>"
    assert len(source.encode()) <= templates.MAX_TEMPLATE_BYTES
    assert_stopped(guarded(source), "value")


def test_control_concatenation_up_to_the_value_limit_renders() -> None:
    source = "{% set a = 'x' * 1000 %}" + "{% set a = a ~ a %}" * 4 + "<data>{{ a|length }}</data>"
    assert render(source) == "<data>16000</data>"  # exactly MAX_STRING_CHARS


def test_many_concatenations_count_toward_one_budget_of_built_text() -> None:
    """Each result under the value limit, but a thousand of them: the characters built add up."""
    source = "{% set s = 'x' * 15000 %}<data>{% for i in range(1000) %}{% set t = s ~ i %}{% endfor %}</data>"
    assert_stopped(guarded(source), "built")
    # control: as many rounds as the budget holds
    rounds = templates.MAX_BUILT_CHARS // 15_010 - 1
    loop = f"{{% for i in range({rounds}) %}}{{% set t = s ~ i %}}{{% endfor %}}"
    assert render("{% set s = 'x' * 15000 %}<data>" + loop + "ok</data>") == "<data>ok</data>"


# --- filter results, generators included -----------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    ["([1]|batch(2000000, 0)|first)|length", "([1]|batch(2000000, 0)|list)|length",
     "(range(10)|slice(1000000000)|list)|length", "(10 ** 60)|round(0 - 10 ** 9)",
     "'x'.center(10 ** 9)|length", "'{x:>999999999}'.format_map({'x': 1})|length",
     "('x' * 16000).join('x' * 16000)|length",
     "(range(1000)|map('string')|map('replace', '', 'x' * 4000)|join)|length"],
)  # fmt: skip
def test_filter_and_method_results_are_capped(expr: str) -> None:
    got = guarded("<data>{{ " + expr + " }}</data>")
    assert not got["ok"] and got["reason"] in ("budget", "forbidden"), got
    assert got["seconds"] < 5 and got["peak_mb"] < PEAK_MB, got


def test_nested_literals_cannot_grow_a_value_for_a_comparison_to_walk() -> None:
    """Two chains of list literals, each level ten of the one below: comparing the tops would walk
    10 ** 30 pairs; a dict literal and a {% set %} block are sized the same way."""
    ten = lambda v: "[" + ",".join([v] * 10) + "]"  # noqa: E731
    levels = "".join(f"{{% set a{i + 1} = {ten(f'a{i}')} %}}{{% set b{i + 1} = {ten(f'b{i}')} %}}" for i in range(30))
    source = "{% set a0 = 'x' %}{% set b0 = 'x' %}" + levels + "<data>{{ a30 == b30 }}</data>"
    assert len(source.encode()) <= templates.MAX_TEMPLATE_BYTES
    assert_stopped(guarded(source), "value")
    dicts = "".join(f"{{% set d{i + 1} = {{1: d{i}, 2: d{i}, 3: d{i}}} %}}" for i in range(30))
    got = guarded("{% set d0 = 'x' * 100 %}" + dicts + "<data>{{ d30 == d30|list }}</data>")
    assert_stopped(got, "value")
    block = "{% set s = 'x' * 4000 %}<data>{% set t %}{{ s }}{{ s }}{{ s }}{{ s }}{{ s }}{% endset %}{{ t }}</data>"
    assert_stopped(guarded(block), "value")
    # controls: the same shapes, small
    assert render("{% set a = [1, 2] %}{% set b = [a, a] %}<data>{{ b == [[1, 2], [1, 2]] }}</data>") == (
        "<data>True</data>"
    )
    assert render("{% set t %}{{ 'x' * 3000 }}{{ 'y' * 3000 }}{% endset %}<data>{{ t|length }}</data>") == (
        "<data>6000</data>"
    )
    assert render("{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}<data></data>") == "37<data></data>"


def test_controls_filters_near_their_limits_render() -> None:
    assert render("<data>{{ ([1]|batch(15000, 0)|first)|length }}</data>") == "<data>15000</data>"
    assert render("<data>{{ (range(10)|slice(3)|list)|length }}</data>") == "<data>3</data>"
    assert render("<data>{{ 2.71828|round(2) }} {{ 'ab'.upper() }} {{ 'a b'.split()|join('-') }}</data>") == (
        "<data>2.72 AB a-b</data>"
    )
    assert render("<data>{{ (range(1000)|map('string')|join)|length }}</data>") == "<data>2890</data>"


# --- the final block, after the values are put in --------------------------------------------


def test_a_value_repeated_past_the_output_cap_is_refused_after_substitution() -> None:
    value = '"' + "m" * 1420 + '"'
    got = guarded("<data>{% for i in range(100) %}{{ v }}{% endfor %}</data>", {"v": value})
    assert_stopped(got, "output")


def test_controls_output_near_the_cap_and_large_data_shown_once_render() -> None:
    value = '"' + "m" * 1500 + '"'  # 10 x 1,502 = 15,020 characters + markers: under 16,000
    assert len(render("<data>{% for i in range(10) %}{{ v }}{% endfor %}</data>", {"v": value})) == 15_033
    # a high recall budget: 40 values of 2,000 characters, each shown once, is 80,000 characters
    values = {f"v{i}": '"' + chr(97 + i % 26) * 1998 + '"' for i in range(40)}
    body = "<data>" + "".join(f"{{{{ v{i} }}}}" for i in range(40)) + "</data>"
    assert len(render(body, values)) == 80_000 + len(B) + len(E)


# --- wall clock ------------------------------------------------------------------------------


def test_a_render_past_its_wall_clock_budget_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    source = "<data>{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}ok</data>"
    assert render(source) == "<data>ok</data>"  # control: the default budget leaves room
    monkeypatch.setattr(templates.budget, "MAX_RENDER_SECONDS", 0.0, raising=False)
    err = refusal(source)
    assert (err.reason, getattr(err, "limit", "")) == ("budget", "time")


# --- property: any small template renders within budgets or is refused; nothing else ---------

GREEDY = st.sampled_from(
    ["{{ v }}", "{{ v ~ v }}", "{% for a in w %}{% for b in w %}{{ v }}{% endfor %}{% endfor %}",
     "{% set w = w ~ w %}", "{{ [1]|batch(99999, 0)|list|length }}", "{{ (w * 2)|length }}",
     "{% for i in range(999) %}{{ v }}{% endfor %}", "{{ w|list|join(v) }}", "{{ w|replace('x', v) }}",
     "{{ range(999)|map('string')|join }}", "{{ w.center(99999)|length }}", "{{ (w|list)|slice(999)|list }}",
     "{% for i in range(99) %}{% set w = w ~ w %}{% endfor %}", "{{ 2 ** 64 * 2 ** 64 }}", "text", "\n"]
)  # fmt: skip


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(GREEDY, min_size=1, max_size=6), st.integers(0, 4000), st.integers(0, 3000)),
        min_size=10,
        max_size=10,
    )
)
def test_any_greedy_template_renders_within_budgets_or_is_refused(drawn: list[tuple[list[str], int, int]]) -> None:
    """Property: a render succeeds within its budgets or is refused; it never raises anything else
    to the caller and never returns more than the output cap (ten templates per child process)."""
    cases = [
        ("{% set w = 'x' * " + str(width) + " %}<data>" + "".join(inside) + "</data>", {"v": '"' + "v" * n + '"'})
        for inside, width, n in drawn
    ]
    for (_source, values), got in zip(cases, guarded_many(cases), strict=True):
        assert got["ok"] or got["reason"] in templates.REFUSAL_REASONS, got
        assert got["seconds"] < 5 and got["peak_mb"] < PEAK_MB, got
        if got["ok"]:
            assert got["chars"] <= templates.MAX_OUTPUT_CHARS + len(values["v"])  # each value once on top


def test_the_shipped_reply_layouts_keep_room_for_long_stored_text() -> None:
    """The reply layouts are trusted and get stored text itself (no placeholders): a page of ten
    records that carry 4,000 characters each is one value over an operator's value limit, though
    the layout shows only a line of each."""
    items = [{"head": f"row {i}", "subs": ["detail"], "content": chr(97 + i) * 4000} for i in range(10)]
    out = templates.render_shipped("replies/entries.j2", {"title": "T", "items": items, "footer": []})
    assert out.count("\n  detail") == 10 and "row 9" in out
    # control: the same list in an operator template is over its value limit
    ctx = {"items": items}
    with pytest.raises(TemplateRefused) as err:
        render_data(compile_operator_template("<data>{% for i in items %}{% endfor %}</data>"), ctx, B, E)
    assert (err.value.reason, err.value.limit) == ("budget", "value")
