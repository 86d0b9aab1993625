"""The review queue: value tombstones, candidates, and the guard and resolver over them."""

from .candidates import (
    ACCEPTED,
    CANDIDATE_STATUSES,
    CONFLICT,
    OPEN,
    PENDING,
    REJECTED,
    Candidate,
    CandidatePage,
    CandidateStore,
)
from .queue import Decision, ExtractReport, ReviewQueue, ReviewSettings
from .tombstones import Tombstone, TombstoneBook, forget_tombstone_id

__all__ = [
    "ACCEPTED",
    "CANDIDATE_STATUSES",
    "CONFLICT",
    "OPEN",
    "PENDING",
    "REJECTED",
    "Candidate",
    "CandidatePage",
    "CandidateStore",
    "Decision",
    "ExtractReport",
    "ReviewQueue",
    "ReviewSettings",
    "Tombstone",
    "TombstoneBook",
    "forget_tombstone_id",
]
