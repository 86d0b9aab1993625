"""Plugin configuration, read per call (the host may change it live), with defaults and bounds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ltm.domain.backends import METRICS, VERDICTS
from ltm.i18n import normalize_lang

T = TypeVar("T")


def int_setting(raw: Any, default: int, lo: int, hi: int) -> int:
    if isinstance(raw, bool):  # a boolean is not a count
        return default
    try:
        val = int(raw)
    except (TypeError, ValueError):
        return default
    return max(lo, min(hi, val))


def float_setting(raw: Any, default: float, lo: float, hi: float) -> float:
    try:
        val = float(raw)
    except (TypeError, ValueError):
        return default
    if val != val:
        return default
    return max(lo, min(hi, val))


def bool_setting(raw: Any, default: bool) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return default


@dataclass(frozen=True)
class Settings:
    """Plugin-wide settings (``spec.config`` in manifest.yaml)."""

    language: str = "en_US"
    max_profile_traits: int = 20
    max_profile_preferences: int = 10
    auto_recall: bool = True
    auto_recall_top_k: int = 5
    recall_token_budget: int = 1500
    recency_half_life_days: float = 30.0
    inject_profiles: bool = True
    memory_block_template: str = ""  # an operator's Jinja2 block template; "" = the shipped one
    admin_sender_ids: tuple[str, ...] = ()
    members_edit_group_profile: bool = False
    memory_kb: str = ""
    lexical_max_docs: int = 5000
    recall_index_mb: int = 256  # one budget over every scope's recall index (vectors + lexical)
    recall_index_ttl_seconds: int = 120  # rebuilt in the background when older: other processes' writes
    retention_days: int = 0  # episodes not seen for this long are swept daily (0: kept; issue 35)
    audit_retention_days: int = 0  # audit entries older than this are swept daily (0: kept)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> Settings:
        c = dict(config or {})
        admins_raw = c.get("admin_sender_ids") or []
        if isinstance(admins_raw, str):
            # only the list syntax's own spaces: an id is compared exactly, so "a\xa0" stays itself
            admins_raw = [a for a in (x.strip(" \t\r\n") for x in admins_raw.split(",")) if a]
        return cls(
            language=normalize_lang(str(c.get("language") or "")),
            max_profile_traits=int_setting(c.get("max_profile_traits"), 20, 1, 200),
            max_profile_preferences=int_setting(c.get("max_profile_preferences"), 10, 1, 100),
            auto_recall=bool_setting(c.get("auto_recall"), True),
            auto_recall_top_k=int_setting(c.get("auto_recall_top_k"), 5, 0, 50),
            recall_token_budget=int_setting(c.get("recall_token_budget"), 1500, 100, 20000),
            recency_half_life_days=float_setting(c.get("recency_half_life_days"), 30.0, 0.0, 3650.0),
            inject_profiles=bool_setting(c.get("inject_profiles"), True),
            memory_block_template=str(c.get("memory_block_template") or ""),
            admin_sender_ids=tuple(str(a) for a in admins_raw if str(a).strip()),
            members_edit_group_profile=bool_setting(c.get("members_edit_group_profile"), False),
            memory_kb=str(c.get("memory_kb") or ""),
            lexical_max_docs=int_setting(c.get("lexical_max_docs"), 5000, 100, 100000),
            recall_index_mb=int_setting(c.get("recall_index_mb"), 256, 8, 16384),
            recall_index_ttl_seconds=int_setting(c.get("recall_index_ttl_seconds"), 120, 5, 86400),
            retention_days=int_setting(c.get("retention_days"), 0, 0, 36500),
            audit_retention_days=int_setting(c.get("audit_retention_days"), 0, 0, 36500),
        )


@dataclass(frozen=True)
class KbSettings:
    """Creation settings of one memory knowledge base (``creation_schema`` of the engine)."""

    kb_id: str
    embedding_model: str = ""
    isolation: str = "session"
    recency_half_life_days: float | None = None
    auto_recall_top_k: int | None = None
    retrieval_strategy: str = "hybrid"
    rerank_model: str = ""  # the host's rerank model (uuid); empty: fused order only
    rerank_timeout_s: float = 3.0  # past this the fused order is kept
    # what the backend probe found (ltm.domain.backends): "" = not known yet, "keeps_metadata",
    # "drops_metadata" (the scopes ride in file_id, the metadata in plugin storage: ADR 0008), the
    # metric of the host's search answers and the probe's version. Never taken from the host's
    # creation settings.
    backend: str = ""
    metric: str = ""
    probe: int = 0

    @classmethod
    def from_creation(cls, kb_id: str, creation: dict[str, Any] | None) -> KbSettings:
        c = dict(creation or {})
        iso = str(c.get("isolation") or "session")
        strategy = str(c.get("retrieval_strategy") or "hybrid")
        hl = c.get("recency_half_life_days")
        tk = c.get("auto_recall_top_k")
        return cls(
            kb_id=kb_id,
            embedding_model=str(c.get("embedding_model") or ""),
            isolation=iso if iso in ("session", "bot") else "session",
            recency_half_life_days=None if hl in (None, "") else float_setting(hl, 30.0, 0.0, 3650.0),
            auto_recall_top_k=None if tk in (None, "") else int_setting(tk, 5, 0, 50),
            retrieval_strategy=strategy if strategy in ("hybrid", "vector", "lexical") else "hybrid",
            rerank_model=str(c.get("rerank_model") or "").strip(),
            rerank_timeout_s=float_setting(c.get("rerank_timeout_s"), 3.0, 0.1, 30.0),
            backend=str(c.get("backend") or "") if c.get("backend") in VERDICTS else "",
            metric=str(c.get("metric") or "") if c.get("metric") in METRICS else "",
            probe=int_setting(c.get("probe"), 0, 0, 1000) if c.get("probe") not in (None, "") else 0,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedding_model": self.embedding_model,
            "isolation": self.isolation,
            "recency_half_life_days": self.recency_half_life_days,
            "auto_recall_top_k": self.auto_recall_top_k,
            "retrieval_strategy": self.retrieval_strategy,
            "rerank_model": self.rerank_model,
            "rerank_timeout_s": self.rerank_timeout_s,
            "backend": self.backend,
            "metric": self.metric,
            "probe": self.probe,
        }


class ConfigCache(Generic[T]):
    """``parse(source())``, parsed again only when the host config changed (compared by value with
    a deep copy of the last one, so an in-place edit counts): a turn reads the settings several
    times, and a dict comparison costs a fraction of a parse."""

    def __init__(self, source: Callable[[], dict[str, Any] | None], parse: Callable[[dict[str, Any] | None], T]):
        self._source = source
        self._parse = parse
        self._seen: dict[str, Any] | None = None
        self._value: T | None = None
        self.parses = 0

    def __call__(self) -> T:
        config = self._source()
        if self._value is None or config != self._seen:
            self._seen = copy.deepcopy(config)
            self._value = self._parse(config)
            self.parses += 1
        return self._value
