"""Jinja2 templates for what the plugin writes: the injected memory block and the ``!memory`` replies.

The templates ship as ``*.j2`` files next to this module. An operator may replace the memory block's
template in the plugin config (``memory_block_template``); every template, shipped or not, renders in
one :class:`jinja2.sandbox.ImmutableSandboxedEnvironment` with autoescape off, because the caller has
escaped the data already. What keeps memory text data whatever a template does:

- untrusted values reach a template only as :class:`Escaped` (text the caller escaped for its
  destination). A template never sees them: it gets an opaque placeholder per value, and the escaped
  text is put in after rendering. A template can place, repeat or leave out a value; it cannot read,
  unescape, cut or transform one (a changed placeholder no longer matches, and the render is refused);
- a data template's output must hold the begin and end markers exactly once, in order, and every
  value between them;
- budgets (``docs/templates.md``): template size and loop nesting when it compiles; per render,
  operations (calls, attribute and item reads, every loop iteration and every item drawn from a
  ``range`` or a filter's result), the size of every value it builds or passes on (a string's
  characters; a list's or mapping's items and their contents together), all the text and items it
  builds added up, a wall-clock deadline, and the output's length before and after the values are
  put in. Every counted hook checks them, so no construct does unbounded work between two checks.
  A template that breaks any of them is refused, naming the limit (:data:`LIMITS`).

Refusals raise :class:`TemplateRefused` with a reason code; :func:`render_data` callers fall back to
their shipped template. Compiled templates are cached per template text (bounded): an installation's
config yields its own key, and a compiled template holds no state of a render.
"""

from __future__ import annotations

import contextvars
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, TemplateError, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.visitor import NodeTransformer

__all__ = [
    "LIMITS",
    "MAX_TEMPLATE_BYTES",
    "REFUSAL_REASONS",
    "Escaped",
    "TemplateRefused",
    "clear_operator_cache",
    "compile_operator_template",
    "operator_cache_size",
    "render_data",
    "render_shipped",
    "shipped_source",
]

TEMPLATE_DIR = Path(__file__).resolve().parent
MAX_TEMPLATE_BYTES = 4096  # an operator template, UTF-8
MAX_OUTPUT_CHARS = 16_000  # a render's own text; the values put in after it count once on top
MAX_STRING_CHARS = 16_000  # any one value a template builds or passes on (a container: its deep size)
MAX_OPERATIONS = 20_000  # calls, attribute/item reads, loop iterations and items drawn, in one render
MAX_BUILT_CHARS = 1_000_000  # every string and list a render builds, added up
MAX_RENDER_SECONDS = 1.0  # wall clock of one render, checked at every counted operation
MAX_RANGE = 1_000
MAX_INT_BITS = 4_096  # an integer a template computes (about 1,200 digits)
MAX_PRECISION = 64  # round()'s digits
LIMITS = ("operations", "value", "built", "output", "time", "depth")
REFUSAL_REASONS = ("size", "syntax", "render", "markers", "placeholder", "budget", "forbidden")
MAX_LOOP_DEPTH = 2
CACHE_SIZE = 32
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"  # private use: neutralised memory text never holds them
_FORBIDDEN_NODES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)
_SAFE_FILTERS = (
    "abs batch capitalize count d default dictsort first float groupby int items join last length list "
    "lower map max min reject rejectattr replace reverse round select selectattr slice sort string sum "
    "title trim truncate unique upper wordcount"
).split()
# Methods a template may call on a builtin value: none of them returns more than it was given.
_SAFE_METHODS = frozenset(
    "capitalize casefold count endswith find get index isalnum isalpha isdecimal isdigit islower isnumeric "
    "isspace istitle isupper items keys lower lstrip partition removeprefix removesuffix rfind rindex "
    "rpartition rsplit rstrip split splitlines startswith strip swapcase title upper values".split()
)
_BUILTIN_VALUES = (str, bytes, int, float, complex, list, tuple, dict, set, frozenset, range)
# not names a template can spell: only the compiler uses them
_ITER, _CONCAT, _SIZED = "ltm:iter", "ltm:concat", "ltm:sized"


class Escaped(str):
    """Text already escaped for where it is rendered; a template receives it as an opaque value."""


class TemplateRefused(Exception):
    """A template that may not be used: ``reason`` is a short code (:data:`REFUSAL_REASONS`),
    ``detail`` says more, and for ``budget`` ``limit`` names the limit it hit (:data:`LIMITS`)."""

    def __init__(self, reason: str, detail: str = "", limit: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail[:200]
        self.limit = limit


class _BudgetError(SecurityError):
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


def _tick(n: int = 1) -> None:
    state = _budget.get()
    if state is None:
        return  # compile-time constant folding: bounded by the template's size
    state.ops -= n
    if state.ops < 0:
        raise _BudgetError("operations", f"more than {MAX_OPERATIONS} operations")
    if time.monotonic() > state.deadline:
        raise _BudgetError("time", f"longer than {MAX_RENDER_SECONDS:g} s")


def _weight(value: Any) -> int:
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
    limit = _value_limit()
    total = 1
    items: Iterable[Any] = value.items() if isinstance(value, dict) else value
    for item in items:
        # every item counts at least one: a list of empty strings is as long as it is written out
        total += max(1, _weight(item[0]) + _weight(item[1]) if isinstance(value, dict) else _weight(item))
        if total > limit:
            break  # at least this: enough to refuse it
    memo[id(value)] = (value, total)
    return total


def _value_limit() -> int:
    state = _budget.get()
    return state.value_limit if state is not None else MAX_STRING_CHARS


def _check_size(value: Any) -> Any:
    limit = _value_limit()
    if _weight(value) > limit:
        raise _BudgetError("value", f"a value larger than {limit} characters")
    return value


def _spend(n: int) -> None:
    state = _budget.get()
    if state is None:
        return
    state.built -= n
    if state.built < 0:
        raise _BudgetError("built", f"more than {MAX_BUILT_CHARS} characters built in one render")


def _result(value: Any) -> Any:
    """A value a hook produced: counted toward the built budget, sized, and, when it is an iterator,
    drawn one counted item at a time."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        _spend(len(value))
        return _check_size(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise _BudgetError("value", f"an integer larger than {MAX_INT_BITS} bits")
    if isinstance(value, Iterator):
        return _counted(value)
    return value


def _counted(items: Iterable[Any]) -> Iterator[Any]:
    for item in items:
        _tick()
        yield _check_size(item)


def _materialise(value: Any) -> Any:
    """An iterator argument as a list, drawn with every item counted and the whole sized."""
    if not isinstance(value, Iterator):
        return _check_size(value)
    out: list[Any] = []
    total = 1
    for item in value:
        _tick()
        total += _weight(item)
        if total > _value_limit():
            raise _BudgetError("value", f"a sequence larger than {_value_limit()} characters")
        out.append(item)
    _spend(len(out))
    return out


def _bounded_range(*args: int) -> range:
    """``range``, at most :data:`MAX_RANGE` items; a loop over it, or a filter's result drawn from
    it, counts each item."""
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise _BudgetError("value", f"range larger than {MAX_RANGE}")
    return rng


def _iterate(value: Any) -> Iterator[Any]:
    """What a ``{% for %}`` loop draws from: one counted operation per iteration."""
    _check_size(value)
    return _counted(value)


def _concat(parts: list[Any]) -> str:
    """``a ~ b``: every part sized, and all of them together, before any is written out as text."""
    _tick()
    if sum(_weight(part) for part in parts) > _value_limit():
        raise _BudgetError("value", f"a concatenation longer than {_value_limit()} characters")
    pieces: list[str] = []
    total = 0
    for part in parts:
        piece = part if isinstance(part, str) else str(part)
        total += len(piece)
        if total > _value_limit():  # a container written out is longer than its weight
            raise _BudgetError("value", f"a concatenation longer than {_value_limit()} characters")
        pieces.append(piece)
    return _result("".join(pieces))


def _repeated(seq: Any, times: Any) -> int:
    """The size ``seq * times`` would have (0 when it is not a repetition)."""
    if isinstance(times, bool) or not isinstance(times, int) or not isinstance(seq, str | list | tuple):
        return 0
    each = len(seq) if isinstance(seq, str) else _weight(seq) - 1  # a container's items and contents
    return each * max(0, times)


def _ints(values: Iterable[Any]) -> list[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def _check_filter_args(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The arguments that size a filter's result, checked before it runs."""
    rest = [*args[1:], *kwargs.values()]
    if name in ("batch", "slice") and any(abs(n) > _value_limit() for n in _ints(rest)):
        raise _BudgetError("value", f"{name} larger than {_value_limit()}")
    if name == "round" and any(abs(n) > MAX_PRECISION for n in _ints(rest)):
        raise _BudgetError("value", f"round to more than {MAX_PRECISION} digits")
    if name == "sum":  # sum(environment, iterable, attribute, start): numbers only, never list + list
        start = kwargs.get("start", args[3] if len(args) > 3 else 0)
        if not isinstance(start, int | float):
            raise SecurityError("sum adds numbers only")
    if name == "join" and len(args) >= 2:  # join(eval_ctx, value, d, attribute)
        sep = kwargs.get("d", args[2] if len(args) > 2 else "")
        value = args[1]
        count = len(value) if isinstance(value, list | tuple | dict | str) else 0
        # the items written out (their weight) and a separator between each two
        if _weight(value) + _weight(sep) * max(0, count - 1) > _value_limit():
            raise _BudgetError("value", f"a join longer than {_value_limit()} characters")
    if name == "replace":  # replace(eval_ctx, s, old, new, count): the context comes first
        named = {**dict(zip(("s", "old", "new", "count"), args[1:], strict=False)), **kwargs}
        s, old, new = (str(named.get(k, "")) for k in ("s", "old", "new"))
        limit = named.get("count")
        hits = s.count(old) if old else len(s) + 1
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
            hits = min(hits, limit)
        if len(s) + hits * max(0, len(new) - len(old)) > _value_limit():
            raise _BudgetError("value", "replace would build a value larger than its budget")


def _bounded_filter(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        _tick()
        args = tuple(_materialise(a) for a in args)
        kwargs = {k: _materialise(v) for k, v in kwargs.items()}
        _check_filter_args(name, args, kwargs)
        return _result(fn(*args, **kwargs))

    for attr in ("jinja_pass_arg",):  # keep how Jinja passes the environment/context to a filter
        if hasattr(fn, attr):
            setattr(run, attr, getattr(fn, attr))
    return run


class _Counting(NodeTransformer):
    """Routes what the sandbox cannot intercept through counted hooks: every ``{% for %}`` draws
    from :func:`_iterate`, every ``~`` is :func:`_concat`, and every list, tuple or dict literal and
    ``{% set %}`` block is sized as it is built (nested literals could otherwise grow a value
    exponentially, for a comparison or ``in`` to walk)."""

    def visit_For(self, node: nodes.For) -> nodes.Node:  # noqa: N802 (Jinja's visitor names)
        self.generic_visit(node)
        node.iter = _hook(node.iter, _ITER)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:  # noqa: N802
        self.generic_visit(node)
        return _hook(nodes.List(list(node.nodes), lineno=node.lineno), _CONCAT)

    def visit_List(self, node: nodes.List) -> nodes.Node:  # noqa: N802
        self.generic_visit(node)
        return _hook(node, _SIZED)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:  # noqa: N802
        self.generic_visit(node)
        return _hook(node, _SIZED)

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:  # noqa: N802
        self.generic_visit(node)
        return _hook(node, _SIZED) if node.ctx == "load" else node  # a store target stays a target

    def visit_AssignBlock(self, node: nodes.AssignBlock) -> nodes.Node:  # noqa: N802
        self.generic_visit(node)
        if node.filter is None:  # the block's text is joined, then passed through this hook
            node.filter = nodes.Filter(None, _SIZED, [], [], None, None, lineno=node.lineno)
        return node


def _hook(node: nodes.Expr, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


def _finalize(value: Any) -> Any:
    """Every ``{{ }}`` output: counted and sized before Jinja writes it out as text."""
    _tick()
    _check_size(value)
    _spend(_weight(value))
    return value


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "//", "%"})

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        if any(loop.recursive for loop in tree.find_all(nodes.For)):
            raise SecurityError("recursive loops are not available")
        counted = _Counting().visit(tree)
        counted.set_environment(self)
        return counted

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        # each direction of a repetition is sized before it is built: str * int and int * str
        if operator == "*" and _repeated(left, right) > _value_limit():
            raise _BudgetError("value", "repetition larger than its budget")
        if operator == "*" and _repeated(right, left) > _value_limit():
            raise _BudgetError("value", "repetition larger than its budget")
        if operator in ("*", "+") and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            if _weight(left) + _weight(right) > _value_limit():
                raise _BudgetError("value", "a sum larger than its budget")
        if operator == "*" and _ints((left, right)) == [left, right]:
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise _BudgetError("value", f"an integer larger than {MAX_INT_BITS} bits")
        if operator == "**" and (abs(float(right)) > 64 or abs(float(left)) > 1e6):
            raise _BudgetError("value", "power larger than its budget")
        if operator == "%" and isinstance(left, str):
            raise SecurityError("printf-style formatting is not available")
        return _result(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _tick()
        args = tuple(_materialise(a) for a in args)
        kwargs = {k: _materialise(v) for k, v in kwargs.items()}
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, _BUILTIN_VALUES) and getattr(__obj, "__name__", "") not in _SAFE_METHODS:
            # str.format, center, join, translate, to_bytes...: each can build far more than it is given
            raise SecurityError(f"{type(owner).__name__}.{getattr(__obj, '__name__', '?')} is not available")
        return _result(super().call(__context, __obj, *args, **kwargs))

    def getattr(self, obj: Any, attribute: str) -> Any:
        _tick()
        _no_format(obj, attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _tick()
        _no_format(obj, argument)
        got = super().getitem(obj, argument)
        return _result(got) if isinstance(argument, slice) else got  # a slice is a new value


def _no_format(obj: Any, name: Any) -> None:
    # the sandbox hands out str.format/format_map wrapped (no longer a bound method): a format spec
    # can pad a value to any width, so they are refused by name
    if isinstance(obj, str) and name in ("format", "format_map"):
        raise SecurityError("str.format is not available")


def _environment(loader: FileSystemLoader | None) -> _Sandbox:
    env = _Sandbox(
        loader=loader,
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters = {name: _bounded_filter(env.filters[name], name) for name in _SAFE_FILTERS}
    env.filters[_ITER] = _iterate
    env.filters[_CONCAT] = _concat
    env.filters[_SIZED] = _result
    env.finalize = _finalize
    env.globals = {"range": _bounded_range}
    return env


_SHIPPED = _environment(FileSystemLoader(str(TEMPLATE_DIR)))
_OPERATOR = _environment(None)


def shipped_source(name: str) -> str:
    """The text of a shipped template (``memory_block.j2``...)."""
    return (TEMPLATE_DIR / name).read_text(encoding="utf-8")


def _loop_depth(node: nodes.Node, depth: int = 0) -> int:
    here = depth + 1 if isinstance(node, nodes.For) else depth
    return max([here, *(_loop_depth(child, here) for child in node.iter_child_nodes())])


def _check_source(source: str) -> nodes.Template:
    if not isinstance(source, str):
        raise TemplateRefused("syntax", "a template is text")
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_TEMPLATE_BYTES:
        raise TemplateRefused("size", f"{size} bytes > {MAX_TEMPLATE_BYTES}")
    if _MARK_OPEN in source or _MARK_CLOSE in source:
        raise TemplateRefused("forbidden", "private-use characters U+E000/U+E001")
    try:
        tree = _OPERATOR.parse(source)
    except TemplateError as exc:
        raise TemplateRefused("syntax", str(exc)) from exc
    if any(True for _ in tree.find_all(_FORBIDDEN_NODES)):
        raise TemplateRefused("forbidden", "extends, include and import are not available")
    if _loop_depth(tree) > MAX_LOOP_DEPTH:
        raise TemplateRefused("forbidden", f"loops nested deeper than {MAX_LOOP_DEPTH}")
    return tree


@lru_cache(maxsize=CACHE_SIZE)
def _compiled(source: str) -> Any:
    """The compiled operator template of ``source``, or the refusal (cached: refused once, refused
    at every turn without parsing again)."""
    try:
        _check_source(source)
        return _OPERATOR.from_string(source)
    except TemplateRefused as exc:
        return exc
    except (TemplateError, SecurityError, RecursionError, MemoryError) as exc:
        return TemplateRefused("syntax", str(exc))


def compile_operator_template(source: str) -> Any:
    """Compile an operator's template (cached per text); :class:`TemplateRefused` when it may not be
    used."""
    got = _compiled(source)
    if isinstance(got, TemplateRefused):
        raise got
    return got


def operator_cache_size() -> int:
    """How many operator template texts are held compiled (at most :data:`CACHE_SIZE`)."""
    return _compiled.cache_info().currsize


def clear_operator_cache() -> None:
    _compiled.cache_clear()


def _generate(template: Any, context: Mapping[str, Any], trusted: bool = False) -> str:
    token = _budget.set(_Render(trusted))
    out: list[str] = []
    size = 0
    try:
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise TemplateRefused("budget", f"output longer than {MAX_OUTPUT_CHARS} characters", "output")
            _tick()  # the deadline holds between chunks of plain text too
            out.append(chunk)
    except TemplateRefused:
        raise
    except _BudgetError as exc:
        raise TemplateRefused("budget", str(exc), exc.limit) from exc
    except SecurityError as exc:
        raise TemplateRefused("forbidden", str(exc)) from exc
    except RecursionError as exc:
        raise TemplateRefused("budget", "recursion too deep", "depth") from exc
    except MemoryError as exc:
        raise TemplateRefused("budget", "out of memory", "value") from exc
    except Exception as exc:  # an operator's template may fail in any way Jinja or Python can
        raise TemplateRefused("render", f"{type(exc).__name__}: {exc}") from exc
    finally:
        _budget.reset(token)
    return "".join(out)


def _hide(value: Any, nonce: str, values: list[str]) -> Any:
    """``value`` with every non-empty :class:`Escaped` replaced by an opaque placeholder."""
    if isinstance(value, Escaped):
        if not value:
            return ""
        values.append(str(value))
        return f"{_MARK_OPEN}{nonce}{len(values) - 1:x}{_MARK_CLOSE}"
    if isinstance(value, Mapping):
        return {k: _hide(v, nonce, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hide(v, nonce, values) for v in value]
    return value


def render_data(template: Any, context: Mapping[str, Any], begin: str, end: str) -> str:
    """Render a data template: ``context``'s :class:`Escaped` values stay opaque to the template and
    must all land between ``begin`` and ``end``, which the output holds exactly once, in order.

    Raises :class:`TemplateRefused` when the template fails, breaks a budget, or its output does not
    keep that shape."""
    nonce = "v" + secrets.token_hex(4)  # a letter always: a case change can never leave a placeholder intact
    values: list[str] = []
    hidden = _hide(dict(context), nonce, values)
    if any(begin in v or end in v for v in values):  # the caller's escaping failed: keep the shape anyway
        raise TemplateRefused("markers", "a value holds a marker")
    text = _generate(template, hidden)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise TemplateRefused("markers", "the output must hold the begin and end markers once each, in order")
    inside_from, inside_to = text.index(begin) + len(begin), text.index(end)
    pattern = re.compile(re.escape(_MARK_OPEN + nonce) + "([0-9a-f]+)" + re.escape(_MARK_CLOSE))
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        index = int(m.group(1), 16)
        if index >= len(values):
            raise TemplateRefused("placeholder", "an unknown value")
        if m.start() < inside_from or m.end() > inside_to:
            raise TemplateRefused("markers", "a memory value outside the data markers")
        out.append(text[last : m.start()])
        out.append(values[index])
        last = m.end()
    out.append(text[last:])
    if any(mark in piece for piece in out[::2] for mark in (_MARK_OPEN, _MARK_CLOSE)):
        raise TemplateRefused("placeholder", "a memory value was cut or changed")
    # the values count once on top of the template's own text: a value repeated is refused here
    cap = MAX_OUTPUT_CHARS + sum(len(v) for v in values)
    size = sum(len(piece) for piece in out)
    if size > cap:
        raise TemplateRefused("budget", f"the block is {size} characters with its values, more than {cap}", "output")
    return "".join(out)


@lru_cache(maxsize=CACHE_SIZE)
def _shipped_template(name: str) -> Any:
    return _SHIPPED.get_template(name)


def shipped_template(name: str) -> Any:
    """A compiled shipped template by file name."""
    return _shipped_template(name)


def render_shipped(name: str, context: Mapping[str, Any]) -> str:
    """Render a shipped (trusted) layout template whose context the caller already neutralised."""
    return _generate(_shipped_template(name), dict(context), trusted=True)
