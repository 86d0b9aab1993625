"""The memory service's public API: every name a surface (``components/``, ``pages/``) uses.

Every verb exists once, on :class:`MemoryService` (the façade) or on the installation's review
queue and consolidator, and every surface calls it there. Besides the verbs, a surface renders what
they return and words what they refuse, so the value types, errors and pure rules it renders with
are named here too: a surface imports ``ltm.service`` and ``ltm.i18n`` and nothing else of ours
(``tests/unit/test_surface_api.py`` holds the surfaces to it and pins this list: a name added or
removed fails it until the test says so too).
"""

from ..domain.consolidation import MAX_SOURCE_CHARS, PROPOSAL_ID_RE
from ..domain.episode_views import console_view
from ..domain.errors import FencedError, LtmError, NotFoundError, PermissionDenied, ScopeError, ValidationError
from ..domain.filters import ACTIVE, STATUSES, Criteria
from ..domain.keys import MAX_ID_CHARS
from ..domain.ledger import TurnUsage
from ..domain.models import SETTABLE_FIELDS, Episode, Profile, bounded_int, is_record_id
from ..domain.privilege import can_run, is_admin, matrix, requires_admin, rule_for
from ..domain.scope import Scope, derive_scope
from ..domain.storage_keys import scope_fence_keys, speaker_profile_key
from ..domain.text import MAX_REASON, neutralize, neutralize_data, unstorable
from ..domain.timefields import minute_text, parse_instant, to_iso
from ..domain.trace import RecallTrace, TraceRow
from ..domain.trust import trust_label
from ..domain.vocabulary import DEFAULT_STATUS, candidate_status_key, listed_statuses, status_key
from ..ports import HOST_CALLS, note_host_call
from ..templates import render_shipped
from .background import CHAT_GRACE_S, OPERATOR_GRACE_S
from .backup import MAX_CHUNK_LINES as BACKUP_MAX_CHUNK_LINES
from .backup import MAX_LINE_CHARS as BACKUP_MAX_LINE_CHARS
from .backup import RestoreReport
from .chat_turn import Injection
from .consolidation import Consolidator, Preview, RunResult
from .episodes import EXPIRES_BY
from .health import HealthReport, explain
from .memory_service import Actor, MemoryService, Overview, RecalledEpisode, RecallResult, RetireEvent, Settings
from .people import FORGET_ME_TTL_S, Holdings, PersonErasure
from .prefetch import TURN_TIMES, note_time
from .review import Candidate, ExtractReport, ReviewQueue, forget_tombstone_id
from .served_turns import ServedTurns, identity
from .snapshots import InjectionSnapshot
from .transfer import ImportReport

__all__ = [
    # moving a whole installation (ltm-backup/1)
    "BACKUP_MAX_CHUNK_LINES",
    "BACKUP_MAX_LINE_CHARS",
    "RestoreReport",
    # the façade, its caller and its settings
    "Actor",
    "MemoryService",
    "Settings",
    # the installation's other verb owners
    "Consolidator",
    "ReviewQueue",
    "forget_tombstone_id",
    # what the verbs return
    "Candidate",
    "Episode",
    "ExtractReport",
    "HealthReport",
    "Holdings",
    "ImportReport",
    "Injection",
    "InjectionSnapshot",
    "Overview",
    "PersonErasure",
    "Preview",
    "Profile",
    "RecallResult",
    "RecallTrace",
    "RecalledEpisode",
    "RetireEvent",
    "RunResult",
    "ServedTurns",
    "TraceRow",
    "TurnUsage",
    "console_view",
    "explain",
    "identity",
    # what they refuse with
    "FencedError",
    "LtmError",
    "NotFoundError",
    "PermissionDenied",
    "ScopeError",
    "ValidationError",
    # scopes and the criteria of a bulk verb
    "Criteria",
    "Scope",
    "derive_scope",
    "scope_fence_keys",
    "speaker_profile_key",
    # the privilege policy (a surface words a refusal before the verb refuses)
    "can_run",
    "is_admin",
    "matrix",
    "requires_admin",
    "rule_for",
    # the vocabulary and limits a surface checks input against and renders with
    "ACTIVE",
    "DEFAULT_STATUS",
    "EXPIRES_BY",
    "FORGET_ME_TTL_S",
    "MAX_ID_CHARS",
    "MAX_REASON",
    "MAX_SOURCE_CHARS",
    "PROPOSAL_ID_RE",
    "SETTABLE_FIELDS",
    "STATUSES",
    "bounded_int",
    "candidate_status_key",
    "is_record_id",
    "listed_statuses",
    "status_key",
    "trust_label",
    # untrusted text stays data where a surface shows it; instants as the service reads them
    "neutralize",
    "neutralize_data",
    "minute_text",
    "parse_instant",
    "render_shipped",
    "to_iso",
    "unstorable",
    # the installation's live calls (components/background_calls.py) and the host calls a turn counts
    "CHAT_GRACE_S",
    "HOST_CALLS",
    "TURN_TIMES",
    "OPERATOR_GRACE_S",
    "note_host_call",
    "note_time",
]
