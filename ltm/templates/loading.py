"""Where templates come from: the shipped ``*.j2`` files next to this package, and an operator's
template text, checked (size, syntax, no ``extends``/``include``/``import``, loop nesting, no
private-use marks) and compiled once per text in a bounded cache that keeps refusals too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, TemplateError, nodes
from jinja2.sandbox import SecurityError

from .refusal import TemplateRefused
from .sandbox import MARK_CLOSE, MARK_OPEN, environment

TEMPLATE_DIR = Path(__file__).resolve().parent
MAX_TEMPLATE_BYTES = 4096  # an operator template, UTF-8
MAX_LOOP_DEPTH = 2
CACHE_SIZE = 32
_FORBIDDEN_NODES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)

_SHIPPED = environment(FileSystemLoader(str(TEMPLATE_DIR)))
_OPERATOR = environment(None)


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
    if MARK_OPEN in source or MARK_CLOSE in source:
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


@lru_cache(maxsize=CACHE_SIZE)
def _shipped_template(name: str) -> Any:
    return _SHIPPED.get_template(name)


def shipped_template(name: str) -> Any:
    """A compiled shipped template by file name."""
    return _shipped_template(name)
