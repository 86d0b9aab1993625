"""The write contract: who writes (:mod:`.actor`), what a write expects (:mod:`.expectations`),
the reader (:mod:`.reads`), fences (:mod:`.fences`), the journal and recovery (:mod:`.journal`),
the plan a verb builds and commits once (:mod:`.plan`) and the engine that runs it
(:mod:`.engine`). The public names are handed on here."""

from .actor import Actor, caller_of, require_admin
from .engine import DELETE_BATCH, WriteEngine
from .errors import backend, need_l2
from .expectations import (
    EpisodeGone,
    EpisodeIs,
    Expectation,
    KvAbsent,
    KvCites,
    KvHolds,
    KvListHas,
    KvListLacks,
    episodes_are,
    expectation_of,
)
from .fences import Fences
from .journal import JOURNAL_PREFIX, Journal
from .plan import Plan, PlanError, WriteStep
from .reads import Reader
from .records import hash_bytes, scope_of_record, user_key_scope
from .stores import Stores

__all__ = [
    "DELETE_BATCH",
    "JOURNAL_PREFIX",
    "Actor",
    "EpisodeGone",
    "EpisodeIs",
    "Expectation",
    "Fences",
    "Journal",
    "KvAbsent",
    "KvCites",
    "KvHolds",
    "KvListHas",
    "KvListLacks",
    "Plan",
    "PlanError",
    "Reader",
    "Stores",
    "WriteEngine",
    "WriteStep",
    "backend",
    "caller_of",
    "episodes_are",
    "expectation_of",
    "hash_bytes",
    "need_l2",
    "require_admin",
    "scope_of_record",
    "user_key_scope",
]
