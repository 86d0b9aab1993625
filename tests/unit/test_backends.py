"""The pure backend rules (ltm/domain/backends.py): read-back schedules, the probe's verdict, the
filter that reaches one record on every backend."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.backends import (
    DROPS_METADATA,
    KEEPS_METADATA,
    READBACK_DELAYS_S,
    file_id_where,
    metadata_verdict,
    probe_metadata,
    readback_delays,
    usable,
)
from ltm.service.settings import KbSettings


@given(
    budget=st.floats(min_value=0.0, max_value=10.0),
    first=st.floats(min_value=0.01, max_value=1.0),
    cap=st.floats(min_value=0.05, max_value=5.0),
)
def test_readback_delays_stay_within_the_budget(budget: float, first: float, cap: float) -> None:
    delays = readback_delays(budget, first_s=first, cap_s=cap)
    assert sum(delays) <= budget + 1e-6
    assert all(d > 0 for d in delays)
    assert all(d <= max(first, cap) + 1e-9 for d in delays)  # no single wait past the cap
    if budget >= first:  # positive control: a budget that fits one wait gets at least one
        assert delays


def test_the_default_schedule_outlasts_seekdb() -> None:
    assert 2.0 < sum(READBACK_DELAYS_S) < 5.0


def test_verdict_keeps_when_every_own_field_comes_back() -> None:
    sent = probe_metadata("ltmprobe_1", "r1")
    host_added = {**sent, "_langbot_instance_uuid": "i", "extra": 1}
    assert metadata_verdict(sent, host_added) == KEEPS_METADATA


def test_verdict_drops_on_what_milvus_returns() -> None:
    sent = probe_metadata("ltmprobe_1", "r1")
    milvus = {"text": sent["text"], "file_id": "ltmprobe_1", "uuid": "ltmprobe_1"}  # vdbs/milvus.py list_by_filter
    assert metadata_verdict(sent, milvus) == DROPS_METADATA
    assert metadata_verdict(sent, {**sent, "ltm_probe": "other"}) == DROPS_METADATA


def test_verdict_needs_a_field_beyond_the_kept_ones() -> None:
    with pytest.raises(ValueError):
        metadata_verdict({"text": "x", "file_id": "y", "uuid": "z"}, {"text": "x", "file_id": "y", "uuid": "z"})


@given(st.text(min_size=1, max_size=80))
def test_file_id_where_is_one_condition(file_id: str) -> None:
    where = file_id_where(file_id)
    assert where == {"file_id": {"$eq": file_id}}  # a single key: no $and a backend could drop


def test_file_id_where_refuses_empty() -> None:
    with pytest.raises(ValueError):
        file_id_where("")


def test_usable() -> None:
    assert usable(KEEPS_METADATA) and usable("") and not usable(DROPS_METADATA)


def test_kb_settings_keep_only_known_verdicts() -> None:
    assert KbSettings.from_creation("kb", {"backend": "drops_metadata"}).backend == DROPS_METADATA
    assert KbSettings.from_creation("kb", {"backend": "anything"}).backend == ""
    assert KbSettings.from_creation("kb", {}).to_dict()["backend"] == ""
