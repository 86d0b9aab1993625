"""The Jinja environment every template renders in: an immutable sandbox with autoescape off (the
caller escaped the data already), a short list of filters and builtin methods, no recursion, no
printf-style formatting, and every construct the sandbox cannot intercept (loops, ``~``, literals,
``{% set %}`` blocks) routed through the counted hooks of :mod:`.budget`.
"""

from __future__ import annotations

from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.visitor import NodeTransformer

from .budget import (
    MAX_INT_BITS,
    BudgetError,
    bounded_filter,
    bounded_range,
    concat,
    finalize,
    ints,
    iterate,
    materialise,
    produced,
    repeated,
    tick,
    value_limit,
    weight,
)

MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"  # private use: neutralised memory text never holds them
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


class _Counting(NodeTransformer):
    """Routes what the sandbox cannot intercept through counted hooks: every ``{% for %}`` draws
    from :func:`iterate`, every ``~`` is :func:`concat`, and every list, tuple or dict literal and
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


class Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "//", "%"})

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        if any(loop.recursive for loop in tree.find_all(nodes.For)):
            raise SecurityError("recursive loops are not available")
        counted = _Counting().visit(tree)
        counted.set_environment(self)
        return counted

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        tick()
        # each direction of a repetition is sized before it is built: str * int and int * str
        if operator == "*" and repeated(left, right) > value_limit():
            raise BudgetError("value", "repetition larger than its budget")
        if operator == "*" and repeated(right, left) > value_limit():
            raise BudgetError("value", "repetition larger than its budget")
        if operator in ("*", "+") and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            if weight(left) + weight(right) > value_limit():
                raise BudgetError("value", "a sum larger than its budget")
        if operator == "*" and ints((left, right)) == [left, right]:
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise BudgetError("value", f"an integer larger than {MAX_INT_BITS} bits")
        if operator == "**" and (abs(float(right)) > 64 or abs(float(left)) > 1e6):
            raise BudgetError("value", "power larger than its budget")
        if operator == "%" and isinstance(left, str):
            raise SecurityError("printf-style formatting is not available")
        return produced(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        tick()
        args = tuple(materialise(a) for a in args)
        kwargs = {k: materialise(v) for k, v in kwargs.items()}
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, _BUILTIN_VALUES) and getattr(__obj, "__name__", "") not in _SAFE_METHODS:
            # str.format, center, join, translate, to_bytes...: each can build far more than it is given
            raise SecurityError(f"{type(owner).__name__}.{getattr(__obj, '__name__', '?')} is not available")
        return produced(super().call(__context, __obj, *args, **kwargs))

    def getattr(self, obj: Any, attribute: str) -> Any:
        tick()
        _no_format(obj, attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        tick()
        _no_format(obj, argument)
        got = super().getitem(obj, argument)
        return produced(got) if isinstance(argument, slice) else got  # a slice is a new value


def _no_format(obj: Any, name: Any) -> None:
    # the sandbox hands out str.format/format_map wrapped (no longer a bound method): a format spec
    # can pad a value to any width, so they are refused by name
    if isinstance(obj, str) and name in ("format", "format_map"):
        raise SecurityError("str.format is not available")


def environment(loader: FileSystemLoader | None) -> Sandbox:
    env = Sandbox(
        loader=loader,
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters = {name: bounded_filter(env.filters[name], name) for name in _SAFE_FILTERS}
    env.filters[_ITER] = iterate
    env.filters[_CONCAT] = concat
    env.filters[_SIZED] = produced
    env.finalize = finalize
    env.globals = {"range": bounded_range}
    return env
