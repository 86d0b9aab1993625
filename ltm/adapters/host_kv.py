"""A :class:`~ltm.ports.KeyValueStore` over the LangBot plugin storage (SDK §4.1).

The host has no "missing -> default": ``get_plugin_storage`` of an unknown key fails with
``ActionCallError`` whose message contains ``Storage with key <key> not found`` (the runtime
prefixes the class name: ``"ActionCallError: Storage with key k not found"``). Only that case
reads as ``None``; every other error propagates (a failed read is not an empty value).
``get_plugin_storage_keys`` has no prefix filter and returns every key of the plugin, so a listing
costs the whole store. :meth:`keys` therefore keeps the key set: listed once, kept current by this
process's own writes (the plugin's storage is its own: no other writer while it runs), re-listed
after ``ttl`` seconds and after any failed write (whose outcome may be unknown), then filtered
locally by prefix (bisect on the sorted keys: the cost is the matching keys, not the store).
"""

from __future__ import annotations

import bisect
import logging
import time
from typing import Any

from langbot_plugin.entities.io.errors import ActionCallError

logger = logging.getLogger(__name__)


def is_missing_key_error(exc: BaseException, key: str) -> bool:
    """True only for the host's "Storage with key <key> not found" refusal."""
    return isinstance(exc, ActionCallError) and f"Storage with key {key} not found" in str(exc)


class HostKeyValueStore:
    """Plugin-scoped key-value storage of the LangBot host (values are bytes)."""

    name = "host"

    def __init__(self, plugin: Any, *, ttl: float = 300.0) -> None:
        self._plugin = plugin
        self.ttl = ttl
        self._keys: list[str] | None = None  # sorted, when known
        self._listed_at = 0.0
        self._writes = 0  # bumped by every write: a listing that overlapped one is not kept
        self.listings = 0

    async def get(self, key: str) -> bytes | None:
        try:
            return await self._plugin.get_plugin_storage(key)
        except ActionCallError as exc:
            if is_missing_key_error(exc, key):
                return None
            raise

    async def set(self, key: str, value: bytes) -> None:
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"value for {key!r} must be bytes, got {type(value).__name__}")
        self._writes += 1
        try:
            await self._plugin.set_plugin_storage(key, bytes(value))
        except BaseException:
            self._keys = None
            raise
        self._known(key, True)

    async def delete(self, key: str) -> None:
        self._writes += 1
        try:
            await self._plugin.delete_plugin_storage(key)
        except BaseException:
            self._keys = None
            raise
        self._known(key, False)

    def _known(self, key: str, present: bool) -> None:
        keys = self._keys
        if keys is None:
            return
        i = bisect.bisect_left(keys, key)
        there = i < len(keys) and keys[i] == key
        if present and not there:
            keys.insert(i, key)
        elif not present and there:
            del keys[i]

    async def keys(self, prefix: str = "") -> list[str]:
        keys = self._keys
        if keys is None or time.monotonic() - self._listed_at > self.ttl:
            writes = self._writes
            listed = sorted(set(await self._plugin.get_plugin_storage_keys()))
            self.listings += 1
            if writes == self._writes:  # no write of ours overlapped the listing
                self._keys, self._listed_at = listed, time.monotonic()
            keys = listed
        if not prefix:
            return list(keys)
        out, i = [], bisect.bisect_left(keys, prefix)
        while i < len(keys) and keys[i].startswith(prefix):  # the matches are contiguous in sorted order
            out.append(keys[i])
            i += 1
        return out
