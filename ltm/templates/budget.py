"""The budgets of one template render (``docs/templates.md``): operations, the size of every value a
template builds or passes on, all the text it builds added up, a wall-clock deadline, and the output's
length. Every counted hook of the sandbox (:mod:`.sandbox`) calls into here, so no construct does
unbounded work between two checks; a broken budget raises :class:`BudgetError` naming the limit
(:data:`LIMITS`). The state of one render lives in a context variable (:func:`render_budget`):
renders on other threads or tasks never share it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jinja2.sandbox import SecurityError

MAX_OUTPUT_CHARS = 16_000  # a render's own text; the values put in after it count once on top
MAX_STRING_CHARS = 16_000  # any one value a template builds or passes on (a container: its deep size)
MAX_OPERATIONS = 20_000  # calls, attribute/item reads, loop iterations and items drawn, in one render
MAX_BUILT_CHARS = 1_000_000  # every string and list a render builds, added up
MAX_RENDER_SECONDS = 1.0  # wall clock of one render, checked at every counted operation
MAX_RANGE = 1_000
MAX_INT_BITS = 4_096  # an integer a template computes (about 1,200 digits)
MAX_PRECISION = 64  # round()'s digits
LIMITS = ("operations", "value", "built", "output", "time", "depth")


class BudgetError(SecurityError):
    """One of the render's budgets (``limit``, one of :data:`LIMITS`) was broken."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class _Render:
    """What is left of one render's budgets (one per render, in a context variable: renders on other
    threads or tasks never share it)."""

    __slots__ = ("built", "deadline", "ops", "value_limit", "weights")

    def __init__(self, trusted: bool = False) -> None:
        self.ops = MAX_OPERATIONS
        # a shipped layout gets stored text itself, bounded by the service (a page of memories)
        self.value_limit = MAX_BUILT_CHARS if trusted else MAX_STRING_CHARS
        self.built = MAX_BUILT_CHARS * (10 if trusted else 1)
        self.deadline = time.monotonic() + MAX_RENDER_SECONDS
        # id -> (value, deep size): each container is measured once per render; holding the value
        # keeps its id from being reused while the render lasts
        self.weights: dict[int, tuple[Any, int]] = {}


_budget: contextvars.ContextVar[_Render | None] = contextvars.ContextVar("ltm_template_budget", default=None)


@contextlib.contextmanager
def render_budget(trusted: bool = False) -> Iterator[None]:
    """The budgets of one render, in force while the block runs (``trusted``: a shipped layout,
    whose values the service bounds)."""
    token = _budget.set(_Render(trusted))
    try:
        yield
    finally:
        _budget.reset(token)


def tick(n: int = 1) -> None:
    state = _budget.get()
    if state is None:
        return  # compile-time constant folding: bounded by the template's size
    state.ops -= n
    if state.ops < 0:
        raise BudgetError("operations", f"more than {MAX_OPERATIONS} operations")
    if time.monotonic() > state.deadline:
        raise BudgetError("time", f"longer than {MAX_RENDER_SECONDS:g} s")


def weight(value: Any) -> int:
    """How big ``value`` is when written out, roughly: a string's length, an integer's digits, a
    container's items and their contents (memoised per render; stops counting past the limit)."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return 1 + value.bit_length() // 3
    if not isinstance(value, list | tuple | dict | set | frozenset):
        return 1
    state = _budget.get()
    memo = state.weights if state is not None else {}
    seen = memo.get(id(value))
    if seen is not None and seen[0] is value:
        return seen[1]
    limit = value_limit()
    total = 1
    items: Iterable[Any] = value.items() if isinstance(value, dict) else value
    for item in items:
        # every item counts at least one: a list of empty strings is as long as it is written out
        total += max(1, weight(item[0]) + weight(item[1]) if isinstance(value, dict) else weight(item))
        if total > limit:
            break  # at least this: enough to refuse it
    memo[id(value)] = (value, total)
    return total


def value_limit() -> int:
    state = _budget.get()
    return state.value_limit if state is not None else MAX_STRING_CHARS


def check_size(value: Any) -> Any:
    limit = value_limit()
    if weight(value) > limit:
        raise BudgetError("value", f"a value larger than {limit} characters")
    return value


def spend(n: int) -> None:
    state = _budget.get()
    if state is None:
        return
    state.built -= n
    if state.built < 0:
        raise BudgetError("built", f"more than {MAX_BUILT_CHARS} characters built in one render")


def produced(value: Any) -> Any:
    """A value a hook produced: counted toward the built budget, sized, and, when it is an iterator,
    drawn one counted item at a time."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        spend(len(value))
        return check_size(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise BudgetError("value", f"an integer larger than {MAX_INT_BITS} bits")
    if isinstance(value, Iterator):
        return _counted(value)
    return value


def _counted(items: Iterable[Any]) -> Iterator[Any]:
    for item in items:
        tick()
        yield check_size(item)


def materialise(value: Any) -> Any:
    """An iterator argument as a list, drawn with every item counted and the whole sized."""
    if not isinstance(value, Iterator):
        return check_size(value)
    out: list[Any] = []
    total = 1
    for item in value:
        tick()
        total += weight(item)
        if total > value_limit():
            raise BudgetError("value", f"a sequence larger than {value_limit()} characters")
        out.append(item)
    spend(len(out))
    return out


def bounded_range(*args: int) -> range:
    """``range``, at most :data:`MAX_RANGE` items; a loop over it, or a filter's result drawn from
    it, counts each item."""
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise BudgetError("value", f"range larger than {MAX_RANGE}")
    return rng


def iterate(value: Any) -> Iterator[Any]:
    """What a ``{% for %}`` loop draws from: one counted operation per iteration."""
    check_size(value)
    return _counted(value)


def concat(parts: list[Any]) -> str:
    """``a ~ b``: every part sized, and all of them together, before any is written out as text."""
    tick()
    if sum(weight(part) for part in parts) > value_limit():
        raise BudgetError("value", f"a concatenation longer than {value_limit()} characters")
    pieces: list[str] = []
    total = 0
    for part in parts:
        piece = part if isinstance(part, str) else str(part)
        total += len(piece)
        if total > value_limit():  # a container written out is longer than its weight
            raise BudgetError("value", f"a concatenation longer than {value_limit()} characters")
        pieces.append(piece)
    return produced("".join(pieces))


def repeated(seq: Any, times: Any) -> int:
    """The size ``seq * times`` would have (0 when it is not a repetition)."""
    if isinstance(times, bool) or not isinstance(times, int) or not isinstance(seq, str | list | tuple):
        return 0
    each = len(seq) if isinstance(seq, str) else weight(seq) - 1  # a container's items and contents
    return each * max(0, times)


def ints(values: Iterable[Any]) -> list[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def _check_filter_args(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The arguments that size a filter's result, checked before it runs."""
    rest = [*args[1:], *kwargs.values()]
    if name in ("batch", "slice") and any(abs(n) > value_limit() for n in ints(rest)):
        raise BudgetError("value", f"{name} larger than {value_limit()}")
    if name == "round" and any(abs(n) > MAX_PRECISION for n in ints(rest)):
        raise BudgetError("value", f"round to more than {MAX_PRECISION} digits")
    if name == "sum":  # sum(environment, iterable, attribute, start): numbers only, never list + list
        start = kwargs.get("start", args[3] if len(args) > 3 else 0)
        if not isinstance(start, int | float):
            raise SecurityError("sum adds numbers only")
    if name == "join" and len(args) >= 2:  # join(eval_ctx, value, d, attribute)
        sep = kwargs.get("d", args[2] if len(args) > 2 else "")
        value = args[1]
        count = len(value) if isinstance(value, list | tuple | dict | str) else 0
        # the items written out (their weight) and a separator between each two
        if weight(value) + weight(sep) * max(0, count - 1) > value_limit():
            raise BudgetError("value", f"a join longer than {value_limit()} characters")
    if name == "replace":  # replace(eval_ctx, s, old, new, count): the context comes first
        named = {**dict(zip(("s", "old", "new", "count"), args[1:], strict=False)), **kwargs}
        s, old, new = (str(named.get(k, "")) for k in ("s", "old", "new"))
        limit = named.get("count")
        hits = s.count(old) if old else len(s) + 1
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
            hits = min(hits, limit)
        if len(s) + hits * max(0, len(new) - len(old)) > value_limit():
            raise BudgetError("value", "replace would build a value larger than its budget")


def bounded_filter(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        tick()
        args = tuple(materialise(a) for a in args)
        kwargs = {k: materialise(v) for k, v in kwargs.items()}
        _check_filter_args(name, args, kwargs)
        return produced(fn(*args, **kwargs))

    for attr in ("jinja_pass_arg",):  # keep how Jinja passes the environment/context to a filter
        if hasattr(fn, attr):
            setattr(run, attr, getattr(fn, attr))
    return run


def finalize(value: Any) -> Any:
    """Every ``{{ }}`` output: counted and sized before Jinja writes it out as text."""
    tick()
    check_size(value)
    spend(weight(value))
    return value
