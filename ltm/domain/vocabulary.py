"""Status vocabulary and the listing defaults: which statuses a listing reads, and the catalog key
each status is shown with. Surfaces render these; they do not decide them."""

from __future__ import annotations

from collections.abc import Sequence

from .filters import ACTIVE, AS_OF_STATUSES, STATUSES

# The status a listing reads by default and shows without a mark.
DEFAULT_STATUS = "active"
# A review candidate's statuses (the queue's own names) and the one an unknown status reads as.
CANDIDATE_STATUSES: tuple[str, ...] = ("pending", "conflict", "accepted", "rejected")
DEFAULT_CANDIDATE_STATUS = "pending"

STATUS_KEYS: dict[str, str] = {s: f"cmd.status.{s}" for s in STATUSES}
CANDIDATE_STATUS_KEYS: dict[str, str] = {s: f"cmd.cand.status_{s}" for s in CANDIDATE_STATUSES}


def status_key(status: str) -> str:
    """The catalog key of an episode status (an unknown one keeps the same key shape)."""
    return STATUS_KEYS.get(status, f"cmd.status.{status}")


def candidate_status_key(status: str) -> str:
    """The catalog key of a candidate status; an unknown status reads as pending."""
    return CANDIDATE_STATUS_KEYS.get(status, CANDIDATE_STATUS_KEYS[DEFAULT_CANDIDATE_STATUS])


def listed_statuses(
    statuses: Sequence[str] | None,
    *,
    as_of: bool,
    include_superseded: bool = False,
    include_archived: bool = False,
) -> tuple[str, ...] | None:
    """The statuses a listing reads. ``None`` is every status; an explicit choice other than the
    default is kept. The default (active) as of a date means what was true then: active and
    superseded. The include flags widen the default (superseded is already in an as-of one)."""
    if statuses is None:
        return None
    if tuple(statuses) != ACTIVE:
        return tuple(statuses)
    chosen = AS_OF_STATUSES if as_of else ACTIVE
    if include_superseded and not as_of:
        chosen += ("superseded",)
    if include_archived:
        chosen += ("archived",)
    return chosen
