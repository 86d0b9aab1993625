"""The memory block rendered off the event loop, and a turn's refusal of an operator's template
remembered for the health check.

An operator template renders on the renderer's own threads, never on the event loop: a render is
bounded by its budgets and deadline, and while it runs every other chat's turn goes on. One renderer
per service (:attr:`ltm.service.MemoryService.block_renderer`), made with it and closed when the
installation stops: no pool or refusal list is shared between installations of one process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..templates import CACHE_SIZE, TemplateRefused, budget
from .injection import render_block
from .template_check import refused, template_check

log = logging.getLogger(__name__)


class BlockRenderer:
    """Renders the block (the operator's template off the loop) and keeps, per template text, the
    last refusal a turn met (at most :data:`ltm.templates.CACHE_SIZE` texts, until the text
    changes or the plugin restarts)."""

    def __init__(self, workers: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ltm-template")
        self._refusals: OrderedDict[str, TemplateRefused] = OrderedDict()  # template text -> last refusal
        self._lock = threading.Lock()

    def note_refusal(self, template: str, exc: TemplateRefused) -> None:
        with self._lock:
            self._refusals[template] = exc
            self._refusals.move_to_end(template)
            while len(self._refusals) > CACHE_SIZE:
                self._refusals.popitem(last=False)

    def refusal(self, template: str) -> TemplateRefused | None:
        """How a turn last refused ``template``, or None."""
        with self._lock:
            return self._refusals.get(template)

    def render(self, payload: dict[str, Any], lang: str, template: str = "") -> str:
        """:func:`.injection.render_block`, a refusal remembered."""
        return render_block(payload, lang, template, self.note_refusal)

    async def render_async(self, payload: dict[str, Any], lang: str, template: str = "") -> str:
        """:meth:`render` with the operator's template rendered off the event loop."""
        if not template.strip():
            return render_block(payload, lang)
        job = asyncio.get_running_loop().run_in_executor(self._pool, self.render, payload, lang, template)
        try:
            return await asyncio.wait_for(job, _hard_timeout())
        except TimeoutError:
            exc = TemplateRefused("budget", "the render did not finish in time", "time")
            log.warning("memory_block_template refused (%s); the shipped template is used", exc)
            self.note_refusal(template, exc)
            return render_block(payload, lang)

    def check(self, template: str) -> tuple[str, str, dict[str, Any]]:
        """:func:`.template_check.template_check`, with the last refusal a turn met."""
        return template_check(template, self.refusal(template))

    async def check_async(self, template: str) -> tuple[str, str, dict[str, Any]]:
        """:meth:`check` off the event loop (it renders the operator's template)."""
        if not (template or "").strip():
            return self.check(template)
        job = asyncio.get_running_loop().run_in_executor(self._pool, self.check, template)
        try:
            return await asyncio.wait_for(job, _hard_timeout())
        except TimeoutError:
            return refused(TemplateRefused("budget", "the render did not finish in time", "time"))

    def close(self) -> None:
        """Stop taking renders (one running finishes on its thread; nothing waits for it)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def _hard_timeout() -> float:
    # the render's own deadline stops it; this only covers a thread that cannot reach a check
    return budget.MAX_RENDER_SECONDS * 3 + 1.0
