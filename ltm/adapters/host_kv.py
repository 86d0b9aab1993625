"""A :class:`~ltm.ports.KeyValueStore` over the LangBot plugin storage (SDK §4.1).

The host has no "missing -> default": ``get_plugin_storage`` of an unknown key fails with
``ActionCallError`` whose message contains ``Storage with key <key> not found`` (the runtime
prefixes the class name: ``"ActionCallError: Storage with key k not found"``). Only that case
reads as ``None``; every other error propagates (a failed read is not an empty value).
``get_plugin_storage_keys`` has no prefix filter and returns every key of the plugin.

The runtime logs every such refusal as a warning, and absence is normal here (a chat's first turn,
an empty fence): so the store lists the keys once and then answers a read of a key it knows is
absent without asking the host. The index only ever errs towards asking: a key is added before it
is written and dropped only after a confirmed delete or a "not found" answer. It is exact for the
one plugin process that owns this storage; a write by anything else is seen after a restart, or
by :meth:`keys` once the listing is older than ``ttl``. :meth:`keys` answers from the same index
(kept sorted once :meth:`keys` first asks: a prefix costs its matches, not one host listing of the
whole store per call). The listing is sorted only then, not on the first read: the first turn of a
restarted process pays for the listing it needs, not for sorting it (130,000 keys at 10,000 chats,
about 50 ms of sorting).

The listing is one host message, and LangBot's runtime refuses a message over 16 MiB
(``MAX_MESSAGE_BYTES`` of the SDK's runtime; about 15,000 chats' keys at production-length ids,
``docs/deployment.md``). A listing refused as too large is not asked for again on every read (each
attempt makes the host read and encode every key, and the refusal is deterministic): reads ask the
host directly, with one warning, and the listing is tried again after ``ttl``.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections.abc import Callable
from typing import Any

from langbot_plugin.entities.io.errors import ActionCallError

from ..ports import note_host_call

logger = logging.getLogger(__name__)


def is_missing_key_error(exc: BaseException, key: str) -> bool:
    """True only for the host's "Storage with key <key> not found" refusal."""
    return isinstance(exc, ActionCallError) and f"Storage with key {key} not found" in str(exc)


# what LangBot's runtime answers when a message is over its limit (langbot_plugin/runtime/io/connections)
_TOO_LARGE = ("byte limit", "too many WebSocket fragments")


def is_too_large_error(exc: BaseException) -> bool:
    """True for the runtime's refusal of a message over its size limit (an answer too large to send)."""
    return isinstance(exc, ActionCallError) and any(s in str(exc) for s in _TOO_LARGE)


class HostKeyValueStore:
    """Plugin-scoped key-value storage of the LangBot host (values are bytes)."""

    name = "host"

    def __init__(self, plugin: Any, *, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._plugin = plugin
        self._clock = clock  # ages of the listing
        self._present: set[str] | None = None  # keys that may exist; None until the first listing
        self._sorted: list[str] | None = None  # the same keys, sorted (for prefix listings); None: not yet
        self._listed_at = 0.0
        self._loading = asyncio.Lock()
        self.ttl = ttl  # keys() lists the host again past this age (writes made by anything else)
        self.listings = 0
        self._unlisted_until = 0.0  # a listing refused as too large: reads ask the host until then

    async def _index(self) -> set[str] | None:
        if self._present is not None:
            return self._present
        if self._clock() < self._unlisted_until:
            return None  # too many keys for one host message: not tried again on every read
        async with self._loading:
            if self._present is None and self._clock() >= self._unlisted_until:
                try:
                    await self._list()
                except Exception as exc:  # no index yet: every read asks the host
                    if is_too_large_error(exc):  # deterministic: tried again after the TTL, not on the next read
                        self._unlisted_until = self._clock() + self.ttl
                        logger.warning(
                            "plugin storage holds too many keys to list in one host message (%s); reads ask"
                            " the host, and the listing is tried again in %.0f s",
                            exc,
                            self.ttl,
                        )
                        return None
                    # the next read tries again
                    logger.warning("plugin storage keys could not be listed; reads ask the host", exc_info=True)
                    return None
        return self._present

    async def _list(self) -> None:
        note_host_call()
        listed = set(await self._plugin.get_plugin_storage_keys())
        self.listings += 1
        if self._present is not None:  # what this process knows stays (errs towards asking)
            listed |= self._present
        self._present, self._sorted, self._listed_at = listed, None, self._clock()  # sorted when keys() asks

    def _add(self, key: str) -> None:
        if self._present is not None and key not in self._present:
            self._present.add(key)
            if self._sorted is not None:
                bisect.insort(self._sorted, key)

    def _discard(self, key: str) -> None:
        if self._present is not None and key in self._present:
            self._present.discard(key)
            if self._sorted is None:
                return
            i = bisect.bisect_left(self._sorted, key)
            if i < len(self._sorted) and self._sorted[i] == key:
                del self._sorted[i]

    def known_absent(self, key: str) -> bool:
        """Whether a read of ``key`` would be answered "absent" without asking the host (the key
        index is loaded and does not hold it). False when unsure."""
        return self._present is not None and key not in self._present

    async def get(self, key: str) -> bytes | None:
        present = await self._index()
        if present is not None and key not in present:
            return None
        try:
            note_host_call()
            return await self._plugin.get_plugin_storage(key)
        except ActionCallError as exc:
            if is_missing_key_error(exc, key):
                self._discard(key)
                return None
            raise

    async def set(self, key: str, value: bytes) -> None:
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"value for {key!r} must be bytes, got {type(value).__name__}")
        await self._index()
        self._add(key)  # before the write: a write whose outcome is unknown may have landed
        note_host_call()
        await self._plugin.set_plugin_storage(key, bytes(value))

    async def delete(self, key: str) -> None:
        note_host_call()
        await self._plugin.delete_plugin_storage(key)
        self._discard(key)

    async def keys(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted, from the index (listed again past ``ttl``). A key
        whose write failed may be listed: readers treat a missing value as absent."""
        if self._present is None or self._clock() - self._listed_at > self.ttl:
            async with self._loading:
                if self._present is None or self._clock() - self._listed_at > self.ttl:
                    await self._list()
        if self._sorted is None:
            self._sorted = sorted(self._present or ())
        keys = self._sorted
        if not prefix:
            return list(keys)
        out, i = [], bisect.bisect_left(keys, prefix)
        while i < len(keys) and keys[i].startswith(prefix):  # the matches are contiguous in sorted order
            out.append(keys[i])
            i += 1
        return out
