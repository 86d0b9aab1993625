"""The row codec (ltm.service.row_codec): what the recall index and its snapshots hold of a row."""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ltm.service.row_codec import (
    KEYS,
    NOT_HELD,
    NUMERIC,
    VECTOR_KEY,
    decode_vector,
    encode_vector,
    number,
    numeric_row,
    pack_metadata,
    unpack_metadata,
)

values = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(max_size=10)
metadata = st.dictionaries(st.sampled_from((*KEYS, *NOT_HELD, "audience", "custom")) | st.text(max_size=6), values)


def present(md: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in md.items() if v is not None}


@given(metadata)
def test_metadata_round_trip(md: dict[str, Any]) -> None:
    """Every key that is set reads back with its value, except what the index holds elsewhere (the
    vector, the repeated ids); absent and None are the same."""
    back = unpack_metadata(pack_metadata(md))
    assert present(back) == {k: v for k, v in present(md).items() if k not in NOT_HELD}
    assert set(KEYS) <= back.keys()


@given(st.lists(st.floats(width=16, allow_nan=False, allow_infinity=False), min_size=1, max_size=64))
def test_vector_round_trip(v: list[float]) -> None:
    """A float16 vector reads back exactly."""
    back = decode_vector(encode_vector(v))
    assert back is not None and back.dtype == np.dtype("<f2")
    assert back.tolist() == [float(np.float16(x)) for x in v]


@given(
    st.none()
    | st.integers()
    | st.text(max_size=40)
    | st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode())
)
def test_malformed_vectors_read_as_none(raw: Any) -> None:
    """Anything but a non-empty, even-length, finite float16 vector in base64 reads as None."""
    vec = decode_vector(raw)
    assert vec is None or (vec.size and np.isfinite(vec).all())


@given(st.dictionaries(st.sampled_from(NUMERIC), values))
def test_numeric_columns(md: dict[str, Any]) -> None:
    """A number reads as itself, anything else (a bool, text, absent) as NaN."""
    row = numeric_row(md)
    for k, got in zip(NUMERIC, row, strict=True):
        raw = md.get(k)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            assert got == float(raw)
        else:
            assert math.isnan(got) and math.isnan(number(raw))


def test_vector_key_is_not_held_in_the_metadata() -> None:
    assert VECTOR_KEY in NOT_HELD
