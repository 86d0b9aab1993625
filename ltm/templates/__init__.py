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

The engine is four modules, one job each: :mod:`.sandbox` (the Jinja environment and its hooks),
:mod:`.budget` (the limits of one render), :mod:`.loading` (shipped and operator templates, checked
and compiled) and :mod:`.rendering` (placeholders in, escaped values back, the markers held). This
package hands on their public names.
"""

from .budget import LIMITS, MAX_BUILT_CHARS, MAX_OPERATIONS, MAX_OUTPUT_CHARS
from .loading import (
    CACHE_SIZE,
    MAX_TEMPLATE_BYTES,
    clear_operator_cache,
    compile_operator_template,
    operator_cache_size,
    shipped_source,
    shipped_template,
)
from .refusal import REFUSAL_REASONS, TemplateRefused
from .rendering import Escaped, render_data, render_shipped

__all__ = [
    "CACHE_SIZE",
    "LIMITS",
    "MAX_BUILT_CHARS",
    "MAX_OPERATIONS",
    "MAX_OUTPUT_CHARS",
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
    "shipped_template",
]
