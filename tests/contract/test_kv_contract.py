"""One contract for every KeyValueStore: in-memory dict, SQLite, and the host's plugin storage
(real ``BasePlugin`` SDK calls over the fake LangBot host)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError

from ltm.adapters.host_kv import HostKeyValueStore, is_missing_key_error
from ltm.adapters.sqlite_kv import MemoryKeyValueStore, SqliteKeyValueStore
from ltm.ports import KeyValueStore
from tests.support.host_runtime import FakeHostHandler, make_plugin

STORES = ("memory", "sqlite", "host")


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[KeyValueStore]:
    if request.param == "memory":
        yield MemoryKeyValueStore()
    elif request.param == "sqlite":
        kv = SqliteKeyValueStore(tmp_path / "kv" / "store.db")
        yield kv
        kv.close()
    else:
        yield HostKeyValueStore(make_plugin(FakeHostHandler()))


class TestKeyValueContract:
    async def test_missing_key_reads_none(self, store: KeyValueStore) -> None:
        assert isinstance(store, KeyValueStore)
        assert await store.get("nope") is None

    async def test_set_get_overwrite(self, store: KeyValueStore) -> None:
        await store.set("k", b"one")
        assert await store.get("k") == b"one"
        await store.set("k", b"two")
        assert await store.get("k") == b"two"

    async def test_binary_and_unicode_values_round_trip(self, store: KeyValueStore) -> None:
        blob = bytes(range(256)) + "记忆 🧠".encode()
        await store.set("profile:记忆", blob)
        assert await store.get("profile:记忆") == blob
        await store.set("empty", b"")
        assert await store.get("empty") == b""

    async def test_delete_then_missing_and_delete_is_idempotent(self, store: KeyValueStore) -> None:
        await store.set("gone", b"x")
        assert await store.get("gone") == b"x"  # positive control
        await store.delete("gone")
        assert await store.get("gone") is None
        await store.delete("gone")
        assert "gone" not in await store.keys()

    async def test_keys_filter_by_prefix_sorted(self, store: KeyValueStore) -> None:
        for key in ("p:b", "p:a", "q:a", "p", "pa"):
            await store.set(key, b"1")
        assert await store.keys("p:") == ["p:a", "p:b"]
        assert await store.keys() == ["p", "p:a", "p:b", "pa", "q:a"]
        assert await store.keys("zzz") == []

    async def test_prefix_with_like_metacharacters_is_literal(self, store: KeyValueStore) -> None:
        for key in ("a%b", "a_b", "axb"):
            await store.set(key, b"1")
        assert await store.keys("a%") == ["a%b"]
        assert await store.keys("a_") == ["a_b"]

    async def test_rejects_non_bytes(self, store: KeyValueStore) -> None:
        with pytest.raises(TypeError):
            await store.set("k", "text")  # type: ignore[arg-type]

    async def test_concurrent_writes_are_all_kept(self, store: KeyValueStore) -> None:
        await asyncio.gather(*(store.set(f"c:{i:02d}", str(i).encode()) for i in range(20)))
        assert await store.keys("c:") == [f"c:{i:02d}" for i in range(20)]


async def test_sqlite_persists_across_reopen(tmp_path: Any) -> None:
    kv = SqliteKeyValueStore(tmp_path / "p.db")
    await kv.set("k", b"v")
    kv.close()
    again = SqliteKeyValueStore(tmp_path / "p.db")
    assert await again.get("k") == b"v"
    again.close()


class TestHostKeyValueErrors:
    """Only the host's "Storage with key X not found" refusal reads as missing."""

    async def test_missing_key_error_shape_from_the_host(self) -> None:
        plugin = make_plugin(FakeHostHandler())
        with pytest.raises(ActionCallError, match="Storage with key k1 not found") as info:
            await plugin.get_plugin_storage("k1")
        assert is_missing_key_error(info.value, "k1")
        assert not is_missing_key_error(info.value, "k")

    @pytest.mark.parametrize(
        "message",
        [
            "ActionCallError: Storage with key other not found",  # a different key
            "ActionCallError: Binary storage value exceeds the 10485760-byte limit",
            "Connection closed",
        ],
    )
    async def test_other_read_failures_are_not_empty(self, message: str) -> None:
        fake = FakeHostHandler()
        kv = HostKeyValueStore(make_plugin(fake))
        await kv.set("k", b"v")
        fake.fail_next(A.GET_PLUGIN_STORAGE, ActionCallError(message))
        with pytest.raises(ActionCallError):
            await kv.get("k")
        assert await kv.get("k") == b"v"

    async def test_unwrapped_error_message_is_also_recognised(self) -> None:
        kv = HostKeyValueStore(make_plugin(FakeHostHandler(wrap_errors=False)))
        assert await kv.get("missing") is None

    async def test_write_failures_propagate(self) -> None:
        fake = FakeHostHandler()
        kv = HostKeyValueStore(make_plugin(fake))
        fake.fail_next(A.SET_PLUGIN_STORAGE)
        with pytest.raises(ActionCallError):
            await kv.set("k", b"v")
        assert await kv.get("k") is None


async def test_host_store_reads_a_known_absent_key_without_asking_the_host() -> None:
    """The runtime logs every "not found" as a warning: absent keys are answered from the key index."""
    fake = FakeHostHandler()
    fake.storage["present"] = b"v"
    store = HostKeyValueStore(make_plugin(fake))
    assert await store.get("present") == b"v"  # positive control: an existing key is read from the host
    assert [await store.get(f"absent-{i}") for i in range(5)] == [None] * 5
    reads = [d["key"] for d in fake.calls_of(A.GET_PLUGIN_STORAGE)]
    assert reads == ["present"], reads  # no host read, so no "get_plugin_storage failed" log line
    assert len(fake.calls_of(A.GET_PLUGIN_STORAGE_KEYS)) == 1  # one listing, then the index

    await store.set("new", b"n")  # written by this process: read from the host again
    assert await store.get("new") == b"n"
    await store.delete("new")
    assert await store.get("new") is None
    assert [d["key"] for d in fake.calls_of(A.GET_PLUGIN_STORAGE)] == ["present", "new"]


async def test_host_store_index_errs_towards_asking() -> None:
    fake = FakeHostHandler()
    store = HostKeyValueStore(make_plugin(fake))
    assert await store.get("k") is None
    fake.fail_next(A.SET_PLUGIN_STORAGE, ActionCallError("connection closed"))
    with pytest.raises(ActionCallError):
        await store.set("k", b"maybe")
    fake.storage["k"] = b"maybe"  # the failed write had landed after all
    assert await store.get("k") == b"maybe"
    fake.fail_next(A.DELETE_PLUGIN_STORAGE, ActionCallError("connection closed"))
    with pytest.raises(ActionCallError):
        await store.delete("k")
    assert await store.get("k") == b"maybe"  # a delete that failed keeps the key readable
    del fake.storage["k"]  # removed behind the store's back: the host's "not found" is believed
    assert await store.get("k") is None
    assert await store.get("k") is None
    assert [d["key"] for d in fake.calls_of(A.GET_PLUGIN_STORAGE)] == ["k", "k", "k"]


async def test_host_store_without_a_listing_asks_the_host_and_retries_the_listing() -> None:
    fake = FakeHostHandler()
    fake.storage["k"] = b"v"
    store = HostKeyValueStore(make_plugin(fake))
    fake.fail_next(A.GET_PLUGIN_STORAGE_KEYS, ActionCallError("busy"))
    assert await store.get("k") == b"v" and await store.get("nope") is None
    assert len(fake.calls_of(A.GET_PLUGIN_STORAGE_KEYS)) == 2  # failed once, listed on the next read


async def test_a_listing_too_large_for_one_host_message_is_not_asked_for_on_every_read() -> None:
    """Past LangBot's runtime message limit (16 MiB: ~15,000 chats' keys) the listing fails the same
    way every time: reads ask the host directly, and the listing is tried again after the TTL only.
    A refusal of another kind is tried again on the next read (the test above)."""
    now = {"t": 1000.0}
    fake = FakeHostHandler()
    fake.storage["k"] = b"v"
    store = HostKeyValueStore(make_plugin(fake), ttl=300, clock=lambda: now["t"])
    for _ in range(3):
        fake.fail_next(
            A.GET_PLUGIN_STORAGE_KEYS, ActionCallError("ValueError: Runtime message exceeds 16777216 byte limit")
        )
    assert [await store.get("k") for _ in range(5)] == [b"v"] * 5
    assert await store.get("nope") is None  # asked of the host: its "not found" is believed
    assert len(fake.calls_of(A.GET_PLUGIN_STORAGE_KEYS)) == 1
    assert [d["key"] for d in fake.calls_of(A.GET_PLUGIN_STORAGE)] == ["k"] * 5 + ["nope"]
    now["t"] += 301  # positive control: past the TTL the listing is tried again (refused again here)
    assert await store.get("k") == b"v"
    assert len(fake.calls_of(A.GET_PLUGIN_STORAGE_KEYS)) == 2
    now["t"] += 301
    assert await store.get("k") == b"v" and await store.get("nope") is None  # refused a third time
    now["t"] += 301  # the host holds fewer keys now: listed, and absent keys are answered from the index
    reads = len(fake.calls_of(A.GET_PLUGIN_STORAGE))
    assert await store.get("nope") is None and await store.get("nope2") is None
    assert len(fake.calls_of(A.GET_PLUGIN_STORAGE_KEYS)) == 4
    assert len(fake.calls_of(A.GET_PLUGIN_STORAGE)) == reads


class TestHostKeyListing:
    """The host lists every key of the plugin at once: the adapter lists once and keeps the set."""

    async def test_one_listing_serves_every_prefix_and_follows_own_writes(self) -> None:
        kv = HostKeyValueStore(make_plugin(FakeHostHandler()))
        for k in ("a/1", "a/2", "b/1"):
            await kv.set(k, b"x")
        assert await kv.keys("a/") == ["a/1", "a/2"]
        assert await kv.keys("b/") == ["b/1"] and await kv.keys("") == ["a/1", "a/2", "b/1"]
        await kv.set("a/0", b"y")
        await kv.delete("a/2")
        assert await kv.keys("a/") == ["a/0", "a/1"]
        assert kv.listings == 1

    async def test_a_failed_write_stays_listed_and_the_ttl_relists(self) -> None:
        fake = FakeHostHandler()
        kv = HostKeyValueStore(make_plugin(fake), ttl=3600)
        await kv.set("k/1", b"x")
        assert await kv.keys("k/") == ["k/1"] and kv.listings == 1
        kv._plugin.set_plugin_storage = _boom  # type: ignore[attr-defined]
        with pytest.raises(TimeoutError):
            await kv.set("k/2", b"x")
        assert await kv.keys("k/") == ["k/1", "k/2"]  # the failed write may have landed: listed
        assert kv.listings == 1
        fake.storage["k/3"] = b"z"  # written behind this process's back: seen after the TTL
        kv.ttl = 0
        assert "k/3" in await kv.keys("k/")
        assert kv.listings == 2

    async def test_the_first_read_lists_without_sorting_and_keys_sort_what_changed_since(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A restarted process's first read needs the key set only: the listing (130,000 keys at
        10,000 chats) is sorted when a prefix is first asked for, with the writes made meanwhile."""
        import builtins

        from ltm.adapters import host_kv

        sorts = {"n": 0}

        def counted(items: Any, **kw: Any) -> list[Any]:
            sorts["n"] += 1
            return builtins.sorted(items, **kw)

        monkeypatch.setattr(host_kv, "sorted", counted, raising=False)
        fake = FakeHostHandler()
        fake.storage.update({"c/1": b"x", "a/1": b"x", "b/1": b"x"})
        kv = HostKeyValueStore(make_plugin(fake))
        assert await kv.get("a/1") == b"x" and await kv.get("a/9") is None  # listed, answered from the set
        assert sorts["n"] == 0 and kv.listings == 1
        await kv.set("a/0", b"y")
        await kv.delete("b/1")
        assert await kv.keys("a/") == ["a/0", "a/1"]  # positive control: sorted now, with both writes
        assert await kv.keys("") == ["a/0", "a/1", "c/1"]
        assert sorts["n"] == 1
        await kv.set("a/00", b"z")  # kept sorted from here
        await kv.delete("c/1")
        assert await kv.keys("") == ["a/0", "a/00", "a/1"] and sorts["n"] == 1


async def _boom(*_: Any) -> None:
    raise TimeoutError("after dispatch")
