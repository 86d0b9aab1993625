"""Trust axes of an episode, as shown to people and models. Pure.

``claim_type`` says where a memory came from (the user said it, the model inferred it, unknown);
the confidence class is capped by that grounding (``models.default_confidence``). Recall never
raises it; only a person's explicit confirmation (``MemoryService.confirm_episode``) sets
``confirmed``. :func:`trust_label` is the one mapping every surface shows.
"""

from __future__ import annotations

MARKED: tuple[str, ...] = ("inferred", "unconfirmed")


def trust_label(claim_type: str, confidence: str) -> str:
    """``confirmed`` | ``stated`` | ``inferred`` | ``unconfirmed``."""
    if confidence == "confirmed":
        return "confirmed"
    if claim_type == "inference" or confidence == "inferred":
        return "inferred"
    if claim_type == "user_statement" and confidence == "stated":
        return "stated"
    return "unconfirmed"


def is_marked(claim_type: str, confidence: str) -> bool:
    """Whether recall output and the injected block must flag the memory as not confirmed."""
    return trust_label(claim_type, confidence) in MARKED
