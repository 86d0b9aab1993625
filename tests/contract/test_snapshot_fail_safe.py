"""Snapshots that fail safe (issue 24, finding 3): a stored recall snapshot that does not decode
completely and consistently - digest, stamp, scope, every column's type, width and count, the
packed metadata, the BM25 state - is ignored and the scope rebuilt from the host, logged once; a
recall in the restarted process answers exactly as the host would. Positive control: the
unmutated snapshot is used (no host list) and answers the same."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import marshal
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ltm.domain.filters import Criteria, scope_filter
from ltm.service import index_snapshot
from tests.contract.test_index_snapshot import LIVE, VICTIM, World, cold, ids, snapshotted
from tests.support import KB, scope_of

QUERY = "Alice green tea blue bicycle garage morning"


def _body(raw: bytes) -> list[Any]:
    return list(marshal.loads(raw[len(index_snapshot.MAGIC) + 32 :]))


def _sealed(body: list[Any]) -> bytes:
    """A record with a valid digest: what a bug or a tamper with storage access could leave."""
    data = marshal.dumps(tuple(body), index_snapshot.MARSHAL_VERSION)
    return index_snapshot.MAGIC + hashlib.sha256(data).digest() + data


def _wider(raw: bytes) -> bytes:
    return raw + raw[: len(raw) // 2]


# Targeted mutations of one field of the record (index, what it becomes from the original body).
TARGETED: dict[str, tuple[int, Any]] = {
    "numeric_three_wide": (12, lambda b: np.frombuffer(b[12], "<f8").reshape(-1, 4)[:, :3].tobytes()),
    "numeric_five_wide": (12, lambda b: np.hstack([np.frombuffer(b[12], "<f8").reshape(-1, 4)] * 2)[:, :5].tobytes()),
    "numeric_truncated": (12, lambda b: b[12][:-8]),
    "vectors_short": (10, lambda b: b[10][:-2]),
    "vectors_wider": (10, lambda b: _wider(b[10])),
    "dim_negative": (5, lambda b: -1),
    "dim_off_by_one": (5, lambda b: b[5] + 1),
    "dim_a_float": (5, lambda b: float(b[5])),
    "has_vec_two": (11, lambda b: b"\x02" * len(b[11])),
    "has_vec_short": (11, lambda b: b[11][:-1]),
    "nterms_negative": (13, lambda b: np.full(len(b[7]), -1, "<i4").tobytes()),
    "nterms_short": (13, lambda b: b[13][:-4]),
    "blob_garbage": (8, lambda b: [b"\x00garbage", *b[8][1:]]),
    "blob_short_tuple": (8, lambda b: [marshal.dumps(((None,) * 3, None)), *b[8][1:]]),
    "blob_not_bytes": (8, lambda b: ["text", *b[8][1:]]),
    "blob_int_values": (8, lambda b: [marshal.dumps((7, None)), *b[8][1:]]),
    "blobs_one_less": (8, lambda b: b[8][:-1]),
    "senders_one_more": (9, lambda b: [*b[9], "mallory"]),
    "sender_other": (9, lambda b: ["mallory", *b[9][1:]]),
    "ids_repeated": (7, lambda b: [b[7][0]] * len(b[7])),
    "ids_not_str": (7, lambda b: [1, *b[7][1:]]),
    "scope_other": (2, lambda b: b[2] + "x"),
    "collection_other": (1, lambda b: b[1] + "x"),
    "stamp_other": (3, lambda b: b[3] + "x"),
    "base_nan": (4, lambda b: float("nan")),
    "base_a_str": (4, lambda b: "yesterday"),
    "complete_an_int": (6, lambda b: 1),
    "bm25_not_a_tuple": (14, lambda b: [1, 2]),
    "bm25_extra_doc": (14, lambda b: ({**b[14][0], "ep_ghost": (("ghost",), 1)}, b[14][1], b[14][2] + 1)),
    "bm25_missing_doc": (14, lambda b: (dict(list(b[14][0].items())[1:]), b[14][1], b[14][2])),
    "bm25_posting_unknown_doc": (14, lambda b: (b[14][0], {**b[14][1], "ghost": {"ep_ghost": 1}}, b[14][2])),
    "bm25_posting_dropped": (14, lambda b: (b[14][0], dict(list(b[14][1].items())[1:]), b[14][2])),
    "bm25_total_wrong": (14, lambda b: (b[14][0], b[14][1], b[14][2] + 5)),
    "bm25_tf_zero": (
        14,
        lambda b: (b[14][0], {t: dict.fromkeys(p, 0) for t, p in b[14][1].items()}, b[14][2]),
    ),
}

ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.binary(max_size=24),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


async def _restart_with(world: World, snap_key: str, value: bytes) -> tuple[Any, Any, list[str], set[str]]:
    """A restarted process over ``value`` as the stored snapshot: its index, whether the host was
    listed, the recalled ids, and the store's active ids (the truth)."""
    await world.kv.set(snap_key, value)
    scope = await scope_of(await world.process())
    svc, idx = await cold(world, scope)
    listed = world.vectors.calls.get("list", 0)
    got = ids(await svc.recall(await scope_of(svc), QUERY, with_profiles=False))
    truth = await world.vectors.inner.list(KB, scope_filter(scope.user_key, Criteria()), 100, 0)
    return idx, listed, got, {r.id for r in truth.items}


@pytest.mark.parametrize("name", sorted(TARGETED))
async def test_a_malformed_snapshot_is_ignored_and_rebuilt(
    tmp_path: Path, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    world = World(tmp_path)
    a, s, eps = await snapshotted(world, LIVE, VICTIM)
    key = index_snapshot.base_key(KB, s.user_key) + "snap"
    good = await world.kv.get(key)
    assert good is not None
    want = ids(await a.recall(s, QUERY, with_profiles=False))
    assert set(want) == {e.id for e in eps}
    # positive control: the stored snapshot as written is used, with no host list, same answer
    idx, listed, got, truth = await _restart_with(world, key, good)
    assert idx.from_snapshot and listed == 0 and got == want and set(idx.pos) == truth
    field, mutate = TARGETED[name]
    body = _body(good)
    body[field] = mutate(body)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ltm.service.snapshot_flush"):
        idx, listed, got, truth = await _restart_with(world, key, _sealed(body))
    assert not idx.from_snapshot and listed >= 1, f"{name}: the malformed snapshot was used"
    assert got == want and set(idx.pos) == truth
    if name != "stamp_other":  # a snapshot of another stamp is routine (every write moves it), not a fault
        warned = [r for r in caplog.records if "ignored" in r.getMessage()]
        assert len(warned) == 1, [r.getMessage() for r in caplog.records]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.integers(1, 14),
    value=ANY_VALUE,
    flips=st.lists(st.integers(0, 10_000), max_size=3),
)
def test_any_mutated_snapshot_leaves_recall_right(field: int, value: Any, flips: list[int]) -> None:
    """Fuzz: one field of the record replaced by anything marshal can hold (sealed with a valid
    digest), or bytes of the stored value flipped (digest broken). Whatever the result, the
    restarted process's recall answers what the store holds and its index holds exactly the
    store's active rows; a value that is not used was replaced by a host listing."""

    async def run(tmp: Path) -> None:
        world = World(tmp)
        a, s, _ = await snapshotted(world, LIVE, VICTIM)
        key = index_snapshot.base_key(KB, s.user_key) + "snap"
        good = await world.kv.get(key)
        assert good is not None
        want = ids(await a.recall(s, QUERY, with_profiles=False))
        if flips:
            raw = bytearray(good)
            for f in flips:
                raw[f % len(raw)] ^= 0xFF
            mutated = bytes(raw)
        else:
            body = _body(good)
            body[field] = value
            mutated = _sealed(body)
        idx, listed, got, truth = await _restart_with(world, key, mutated)
        event(f"snapshot used: {idx.from_snapshot}")
        assert idx.from_snapshot or listed >= 1
        assert got == want and set(idx.pos) == truth

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp)))
