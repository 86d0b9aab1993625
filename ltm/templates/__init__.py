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
- budgets: template size, loop nesting, operations (calls, attribute and item reads, ``range``
  items), string sizes and the output length. A template that breaks any of them is refused.

Refusals raise :class:`TemplateRefused` with a reason code; :func:`render_data` callers fall back to
their shipped template. Compiled templates are cached per template text (bounded): an installation's
config yields its own key, and a compiled template holds no state of a render.
"""

from __future__ import annotations

import contextvars
import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, TemplateError, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

__all__ = [
    "MAX_TEMPLATE_BYTES",
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
MAX_OUTPUT_CHARS = 16_000  # one render (the memory block is a few hundred tokens)
MAX_STRING_CHARS = 16_000  # any string a template builds or passes on
MAX_OPERATIONS = 20_000  # calls, attribute/item reads and range items in one render
MAX_RANGE = 1_000
MAX_LOOP_DEPTH = 2
CACHE_SIZE = 32
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"  # private use: neutralised memory text never holds them
_FORBIDDEN_NODES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)
_SAFE_FILTERS = (
    "abs batch capitalize count d default dictsort first float groupby int items join last length list "
    "lower map max min reject rejectattr replace reverse round select selectattr slice sort string sum "
    "title trim truncate unique upper wordcount"
).split()


class Escaped(str):
    """Text already escaped for where it is rendered; a template receives it as an opaque value."""


class TemplateRefused(Exception):
    """A template that may not be used: ``reason`` is a short code (``size``, ``syntax``, ``render``,
    ``markers``, ``placeholder``, ``budget``, ``forbidden``), ``detail`` says more."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail[:200]


class _BudgetError(SecurityError):
    """A budget of :data:`MAX_OPERATIONS`, :data:`MAX_STRING_CHARS` or :data:`MAX_RANGE` was broken."""


_budget: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("ltm_template_budget", default=None)


def _tick(n: int = 1) -> None:
    left = _budget.get()
    if left is None:
        return
    left[0] -= n
    if left[0] < 0:
        raise _BudgetError("the template exceeded its operation budget")


def _check_size(value: Any) -> Any:
    if isinstance(value, str | list | tuple | dict) and len(value) > MAX_STRING_CHARS:
        raise _BudgetError("the template built a value larger than its budget")
    return value


def _bounded_range(*args: int) -> Iterator[int]:
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise _BudgetError(f"range larger than {MAX_RANGE}")
    for i in rng:
        _tick()
        yield i


def _bounded_filter(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        _tick()
        for a in (*args, *kwargs.values()):
            _check_size(a)
        if name == "replace" and len(args) >= 3:
            s, old, new = (str(x) for x in args[:3])
            grows = (s.count(old) if old else len(s) + 1) * max(0, len(new) - len(old))
            if len(s) + grows > MAX_STRING_CHARS:
                raise _BudgetError("replace would build a value larger than its budget")
        return _check_size(fn(*args, **kwargs))

    for attr in ("jinja_pass_arg",):  # keep how Jinja passes the environment/context to a filter
        if hasattr(fn, attr):
            setattr(run, attr, getattr(fn, attr))
    return run


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "//", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        if operator == "*" and isinstance(right, int) and isinstance(left, str | list | tuple):
            if len(left) * max(0, right) > MAX_STRING_CHARS:
                raise _BudgetError("repetition larger than its budget")
        if operator == "*" and isinstance(left, int) and isinstance(right, str | list | tuple):
            if len(right) * max(0, left) > MAX_STRING_CHARS:
                raise _BudgetError("repetition larger than its budget")
        if operator == "**" and (abs(float(right)) > 64 or abs(float(left)) > 1e6):
            raise _BudgetError("power larger than its budget")
        if operator == "%" and isinstance(left, str):
            raise SecurityError("printf-style formatting is not available")
        return _check_size(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _tick()
        for a in (*args, *kwargs.values()):
            _check_size(a)
        if getattr(__obj, "__name__", "") == "format" and isinstance(getattr(__obj, "__self__", None), str):
            raise SecurityError("str.format is not available")
        return _check_size(super().call(__context, __obj, *args, **kwargs))

    def getattr(self, obj: Any, attribute: str) -> Any:
        _tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _tick()
        return super().getitem(obj, argument)


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


def _generate(template: Any, context: Mapping[str, Any]) -> str:
    token = _budget.set([MAX_OPERATIONS])
    out: list[str] = []
    size = 0
    try:
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise TemplateRefused("budget", f"output longer than {MAX_OUTPUT_CHARS} characters")
            out.append(chunk)
    except TemplateRefused:
        raise
    except _BudgetError as exc:
        raise TemplateRefused("budget", str(exc)) from exc
    except SecurityError as exc:
        raise TemplateRefused("forbidden", str(exc)) from exc
    except RecursionError as exc:
        raise TemplateRefused("budget", "recursion too deep") from exc
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
    return "".join(out)


@lru_cache(maxsize=CACHE_SIZE)
def _shipped_template(name: str) -> Any:
    return _SHIPPED.get_template(name)


def shipped_template(name: str) -> Any:
    """A compiled shipped template by file name."""
    return _shipped_template(name)


def render_shipped(name: str, context: Mapping[str, Any]) -> str:
    """Render a shipped (trusted) layout template whose context the caller already neutralised."""
    return _generate(_shipped_template(name), dict(context))
