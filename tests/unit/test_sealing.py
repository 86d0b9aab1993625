"""The seal of one row (ltm/service/sealing.py): what it hides, what it keeps plain, and that only
the row's own key opens it."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from ltm.service.row_codec import VECTOR_KEY
from ltm.service.sealing import SEAL_KEY, SEALED, is_sealed, seal, shard_of, unseal

ROW = "ep_0123456789abcdef0123"


def _md(text: str, tags: str = '["a"]') -> dict[str, object]:
    return {
        "episode_id": ROW,
        "user_key": "u1",
        "status": "active",
        "ts": 1.5,
        "content_hash": "h",
        "text": text,
        "tags": tags,
        "source_ref": "chat:1",
        VECTOR_KEY: "AAA=",
    }


@given(st.text(max_size=300), st.text(max_size=40))
def test_a_sealed_row_hides_its_text_and_opens_with_its_own_key_only(text: str, tags: str) -> None:
    key, other = os.urandom(32), os.urandom(32)
    md = _md(text, tags)
    sealed = seal(md, ROW, key)
    assert is_sealed(sealed)
    assert all(sealed[k] == "" for k in SEALED)  # written empty: a merging store keeps no older plain value
    assert {k: sealed[k] for k in ("episode_id", "user_key", "status", "ts", "content_hash")} == {
        k: md[k] for k in ("episode_id", "user_key", "status", "ts", "content_hash")
    }  # what the store filters on stays plain
    opened = unseal(sealed, ROW, key)
    assert {k: opened.get(k) or "" for k in SEALED} == {k: md.get(k) or "" for k in SEALED}  # positive control
    assert SEAL_KEY not in opened
    for wrong_key, row in ((other, ROW), (key, "ep_other")):  # another key, or another row's blob
        assert unseal(sealed, row, wrong_key)["text"] == ""


def test_an_unsealed_row_reads_as_it_is_and_a_missing_key_keeps_the_row() -> None:
    md = _md("Alice likes tea")
    assert unseal(md, ROW, None) == md  # an older row, written before the seal
    gone = unseal(seal(md, ROW, os.urandom(32)), ROW, None)
    assert gone["text"] == "" and gone["episode_id"] == ROW and gone["status"] == "active"


def test_each_seal_is_fresh() -> None:
    key = os.urandom(32)
    assert seal(_md("x"), ROW, key)[SEAL_KEY] != seal(_md("x"), ROW, key)[SEAL_KEY]  # a new nonce each time
    assert {shard_of(f"ep_{n}") for n in range(200)} == set(range(8))


async def test_the_keyring_cache_is_bounded_and_a_dropped_ring_is_read_again() -> None:
    """The keys of every row a process read stayed in memory (180 MB at a million memories); past
    ``max_cached_keys`` the least recently used scopes' keyrings leave and are read again from
    storage when needed, with the same keys."""
    from ltm.adapters.sqlite_kv import MemoryKeyValueStore
    from ltm.service.sealing import Keyring

    kv = MemoryKeyValueStore()
    writer = Keyring(kv)
    issued = {}
    for s in range(10):
        keys, new = await writer.issue("kb", f"u{s}", [f"ep_{s}_{i}" for i in range(20)])
        assert len(new) == 20
        issued.update(keys)
    assert writer.cached_keys == 200 and writer.evictions == 0  # positive control: under the default bound

    reader = Keyring(kv, max_cached_keys=50)
    for s in range(10):
        assert await reader.key_of("kb", f"u{s}", f"ep_{s}_0") == issued[f"ep_{s}_0"]
        assert reader.cached_keys <= 50
    assert reader.evictions == 8  # two rings of 20 keys fit
    for s in range(10):  # dropped rings are read again: every key is the one issued
        for i in range(20):
            assert await reader.key_of("kb", f"u{s}", f"ep_{s}_{i}") == issued[f"ep_{s}_{i}"]
    keys, new = await reader.issue("kb", "u0", ["ep_0_0", "ep_0_new"])  # a write through a bounded cache
    assert new == ["ep_0_new"] and keys["ep_0_0"] == issued["ep_0_0"]
    assert await reader.destroy("kb", "u0", ["ep_0_new"]) == 1
    assert await Keyring(kv).key_of("kb", "u0", "ep_0_new") is None  # destroyed in storage, not only in memory
    assert reader.cached_keys <= 50
