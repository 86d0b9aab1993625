"""Time fields: explicit ISO-8601 with a timezone, normalised to UTC. Never guessed from words."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from .errors import ValidationError

# Far bounds used as stored sentinels so that validity filters can run inside the vector store.
OPEN_START_TS = 0.0
OPEN_END_TS = 32503680000.0  # 3000-01-01T00:00:00Z

_ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})$")


def now_utc() -> datetime:
    return datetime.now(UTC)


def parse_instant(value: object, field: str) -> datetime:
    """Parse an ISO-8601 instant that names its timezone; return it in UTC.

    Accepts ``2024-05-01T10:00:00Z``, ``2024-05-01T12:00:00+02:00`` and a space instead of ``T``.
    A date without a time, a naive time or a word like "tomorrow" is refused.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError(f"{field}: a timezone is required", key="error.time_naive", field=field)
        try:
            return value.astimezone(UTC)
        except OverflowError as exc:
            raise ValidationError(f"{field}: out of range", key="error.time_format", field=field) from exc
    if not isinstance(value, str):
        raise ValidationError(f"{field}: expected an ISO-8601 string", key="error.time_format", field=field)
    text = value.strip()
    if not _ISO_RE.match(text):
        if re.match(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$", text):
            raise ValidationError(f"{field}: a timezone is required", key="error.time_naive", field=field)
        raise ValidationError(f"{field}: not an ISO-8601 instant", key="error.time_format", field=field)
    norm = text.replace(" ", "T", 1)
    if norm.endswith("Z"):
        norm = norm[:-1] + "+00:00"
    elif re.search(r"[+-]\d{4}$", norm):
        norm = norm[:-2] + ":" + norm[-2:]
    try:
        return datetime.fromisoformat(norm).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValidationError(f"{field}: {exc}", key="error.time_format", field=field) from exc


def to_iso(dt: datetime) -> str:
    """Render a UTC instant as ``YYYY-MM-DDTHH:MM:SSZ`` (microseconds kept when present)."""
    dt = dt.astimezone(UTC)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def minute_text(value: object) -> str:
    """The one way a person is shown a time: an ISO instant as ``YYYY-MM-DD HH:MM UTC`` (anything
    else is refused as :func:`parse_instant` refuses it)."""
    return parse_instant(value, "time").strftime("%Y-%m-%d %H:%M UTC")


def normalize_optional(value: object, field: str) -> str | None:
    """``None``/empty stays ``None``; anything else must be a valid instant (returned as UTC ISO)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return to_iso(parse_instant(value, field))


def check_validity(valid_from: str | None, valid_until: str | None) -> None:
    """``valid_from`` must be strictly before ``valid_until`` when both are given."""
    if (
        valid_from
        and valid_until
        and parse_instant(valid_from, "valid_from") >= parse_instant(valid_until, "valid_until")
    ):
        raise ValidationError("valid_from must be before valid_until", key="error.validity_order")


def ts(value: str | None, default: float) -> float:
    """Epoch seconds of an ISO instant, or ``default`` for an open bound."""
    if not value:
        return default
    return parse_instant(value, "time").timestamp()
