"""Rendering a compiled template over data it may place but never read: every :class:`Escaped` value
becomes an opaque placeholder, the escaped text is put back after rendering, and a data template's
output must keep the begin and end markers once each, in order, with every value between them.
A render runs within the budgets of :mod:`.budget`; whatever goes wrong is a :class:`TemplateRefused`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

from jinja2.sandbox import SecurityError

from . import budget
from .budget import BudgetError, render_budget, tick
from .loading import shipped_template
from .refusal import TemplateRefused
from .sandbox import MARK_CLOSE, MARK_OPEN


class Escaped(str):
    """Text already escaped for where it is rendered; a template receives it as an opaque value."""


def generate(template: Any, context: Mapping[str, Any], trusted: bool = False) -> str:
    out: list[str] = []
    size = 0
    try:
        with render_budget(trusted):
            for chunk in template.generate(**context):
                size += len(chunk)
                if size > budget.MAX_OUTPUT_CHARS:
                    too_long = f"output longer than {budget.MAX_OUTPUT_CHARS} characters"
                    raise TemplateRefused("budget", too_long, "output")
                tick()  # the deadline holds between chunks of plain text too
                out.append(chunk)
    except TemplateRefused:
        raise
    except BudgetError as exc:
        raise TemplateRefused("budget", str(exc), exc.limit) from exc
    except SecurityError as exc:
        raise TemplateRefused("forbidden", str(exc)) from exc
    except RecursionError as exc:
        raise TemplateRefused("budget", "recursion too deep", "depth") from exc
    except MemoryError as exc:
        raise TemplateRefused("budget", "out of memory", "value") from exc
    except Exception as exc:  # an operator's template may fail in any way Jinja or Python can
        raise TemplateRefused("render", f"{type(exc).__name__}: {exc}") from exc
    return "".join(out)


def _hide(value: Any, nonce: str, values: list[str]) -> Any:
    """``value`` with every non-empty :class:`Escaped` replaced by an opaque placeholder."""
    if isinstance(value, Escaped):
        if not value:
            return ""
        values.append(str(value))
        return f"{MARK_OPEN}{nonce}{len(values) - 1:x}{MARK_CLOSE}"
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
    text = generate(template, hidden)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise TemplateRefused("markers", "the output must hold the begin and end markers once each, in order")
    inside_from, inside_to = text.index(begin) + len(begin), text.index(end)
    pattern = re.compile(re.escape(MARK_OPEN + nonce) + "([0-9a-f]+)" + re.escape(MARK_CLOSE))
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
    if any(mark in piece for piece in out[::2] for mark in (MARK_OPEN, MARK_CLOSE)):
        raise TemplateRefused("placeholder", "a memory value was cut or changed")
    # the values count once on top of the template's own text: a value repeated is refused here
    cap = budget.MAX_OUTPUT_CHARS + sum(len(v) for v in values)
    size = sum(len(piece) for piece in out)
    if size > cap:
        raise TemplateRefused("budget", f"the block is {size} characters with its values, more than {cap}", "output")
    return "".join(out)


def render_shipped(name: str, context: Mapping[str, Any]) -> str:
    """Render a shipped (trusted) layout template whose context the caller already neutralised."""
    return generate(shipped_template(name), dict(context), trusted=True)
