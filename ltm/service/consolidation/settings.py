"""The ``consolidation_*`` items of the plugin config, read per call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..settings import bool_setting, int_setting


@dataclass(frozen=True)
class ConsolidationSettings:
    """``consolidation_*`` items of the plugin config."""

    enabled: bool = False
    model_uuid: str = ""
    min_age_days: int = 7
    max_candidates: int = 20
    # Reserved: consolidation never changes profiles in this version (a profile item has no lineage,
    # so it could not be removed when its source is forgotten). Read and shown, nothing more.
    apply_profile_updates: bool = False

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> ConsolidationSettings:
        c = dict(config or {})
        return cls(
            enabled=bool_setting(c.get("consolidation_enabled"), False),
            model_uuid=str(c.get("consolidation_model_uuid") or "").strip(),
            min_age_days=int_setting(c.get("consolidation_min_age_days"), 7, 0, 3650),
            max_candidates=int_setting(c.get("consolidation_max_candidates"), 20, 1, 100),
            apply_profile_updates=bool_setting(c.get("consolidation_apply_profile_updates"), False),
        )
