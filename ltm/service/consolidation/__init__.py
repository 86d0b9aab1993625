"""Consolidation: preview cleanup candidates, store a reviewed one-use summary proposal, run it.

The parts: :mod:`.settings` (the config), :mod:`.proposals` (the proposal records), :mod:`.run`
(:class:`Consolidator`: preview, run, discard and the cascades of the retire pipeline).
"""

from .proposals import MAX_PENDING_PER_SCOPE, PREFIX, PROPOSAL_TTL_DAYS, RECORD_FORMAT, Proposal, ProposalStore
from .run import (
    DRAFT_KB_DELETED,
    DRAFT_MODEL_FAILED,
    DRAFT_MODEL_TIMEOUT,
    DRAFT_NO_MODEL,
    DRAFT_NO_SOURCES,
    DRAFT_SOURCES_CHANGED,
    STALE_REASONS,
    SUMMARY_TIMEOUT_S,
    Consolidator,
    Preview,
    RunResult,
)
from .settings import ConsolidationSettings

__all__ = [
    "DRAFT_KB_DELETED",
    "DRAFT_MODEL_FAILED",
    "DRAFT_MODEL_TIMEOUT",
    "DRAFT_NO_MODEL",
    "DRAFT_NO_SOURCES",
    "DRAFT_SOURCES_CHANGED",
    "MAX_PENDING_PER_SCOPE",
    "PREFIX",
    "PROPOSAL_TTL_DAYS",
    "RECORD_FORMAT",
    "STALE_REASONS",
    "SUMMARY_TIMEOUT_S",
    "ConsolidationSettings",
    "Consolidator",
    "Preview",
    "Proposal",
    "ProposalStore",
    "RunResult",
]
