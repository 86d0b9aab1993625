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
    filter_verdict,
    host_file_id,
    metadata_verdict,
    metric_of,
    probe_metadata,
    probe_query,
    readback_delays,
    scope_tag,
    scope_tag_of,
    similarity,
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
    """Every verdict is usable since ADR 0008 (the sidecar keeps a dropping backend's scopes)."""
    assert usable(KEEPS_METADATA) and usable("") and usable(DROPS_METADATA)
    assert not usable("anything else")


def test_filter_verdict_drops_when_a_non_matching_filter_lists_rows() -> None:
    """Valkey Search returns every field but filters on file_id only: a listing filtered on a value
    the probe record does not hold returns it anyway."""
    assert filter_verdict(["ltmprobe_1"]) == DROPS_METADATA
    assert filter_verdict([]) == KEEPS_METADATA  # positive control: a filtering backend lists nothing


@given(st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=8, max_size=64))
def test_probe_query_sits_at_the_cosine_asked(raw: list[float]) -> None:
    import math

    if math.sqrt(sum(x * x for x in raw)) < 1e-3:
        return
    q = probe_query(raw, 0.6)
    n = math.sqrt(sum(x * x for x in raw))
    cos = sum(a * b for a, b in zip(q, raw, strict=True)) / n
    assert abs(math.sqrt(sum(x * x for x in q)) - 1.0) < 1e-6
    assert abs(cos - 0.6) < 1e-6


def test_metric_of_names_each_backends_answer() -> None:
    c = 0.6
    assert metric_of(2 - 2 * c, c) == "l2sq"  # Chroma's default space
    assert metric_of(1 - c, c) == "cosine"  # pgvector, Valkey Search
    assert metric_of(c, c) == "similarity"  # Milvus' COSINE metric
    for m, d in (("l2sq", 0.8), ("cosine", 0.4), ("similarity", 0.6)):
        assert abs(similarity(d, m) - c) < 1e-9


@given(
    st.text(min_size=1, max_size=80),
    st.text(min_size=1, max_size=200),
    st.text(min_size=1, max_size=300),
)
def test_host_file_id_fits_every_backend_and_names_its_scope(kb: str, user_key: str, row_id: str) -> None:
    fid = host_file_id(kb, user_key, row_id)
    assert len(fid) <= 255  # Milvus VARCHAR(255), pgvector String(255)
    assert all(c in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in fid)  # Valkey: no escape, fold, split
    assert scope_tag_of(fid) == scope_tag(kb, user_key)
    assert host_file_id(kb, user_key + "x", row_id) != fid  # another scope, another file id


def test_host_file_id_keeps_plain_ids_readable() -> None:
    fid = host_file_id("kb", "bot1:person_a", "ep_0123abcd")
    assert fid.endswith("_ep_0123abcd") and fid.startswith("ltm")
    assert scope_tag_of("ep_0123abcd") is None and scope_tag_of("ltmprobe_1") is None


def test_kb_settings_keep_only_known_verdicts() -> None:
    assert KbSettings.from_creation("kb", {"backend": "drops_metadata"}).backend == DROPS_METADATA
    assert KbSettings.from_creation("kb", {"backend": "anything"}).backend == ""
    assert KbSettings.from_creation("kb", {}).to_dict()["backend"] == ""
    kb = KbSettings.from_creation("kb", {"backend": "drops_metadata", "metric": "similarity", "probe": 2})
    assert (kb.metric, kb.probe) == ("similarity", 2)
    assert KbSettings.from_creation("kb", {"metric": "euclid"}).metric == ""
