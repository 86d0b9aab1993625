"""How a template is refused: :class:`TemplateRefused` with a reason code (:data:`REFUSAL_REASONS`);
callers fall back to their shipped template."""

from __future__ import annotations

REFUSAL_REASONS = ("size", "syntax", "render", "markers", "placeholder", "budget", "forbidden")


class TemplateRefused(Exception):
    """A template that may not be used: ``reason`` is a short code (:data:`REFUSAL_REASONS`),
    ``detail`` says more, and for ``budget`` ``limit`` names the limit it hit (:data:`LIMITS`)."""

    def __init__(self, reason: str, detail: str = "", limit: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail[:200]
        self.limit = limit
