"""A :class:`~ltm.ports.KeyValueStore` over the LangBot plugin storage (SDK §4.1).

The host has no "missing -> default": ``get_plugin_storage`` of an unknown key fails with
``ActionCallError`` whose message contains ``Storage with key <key> not found`` (the runtime
prefixes the class name: ``"ActionCallError: Storage with key k not found"``). Only that case
reads as ``None``; every other error propagates (a failed read is not an empty value).
``get_plugin_storage_keys`` has no prefix filter, so :meth:`keys` filters locally.

The runtime logs every such refusal as a warning, and absence is normal here (a chat's first turn,
an empty fence): so the store lists the keys once and then answers a read of a key it knows is
absent without asking the host. The index only ever errs towards asking: a key is added before it
is written and dropped only after a confirmed delete or a "not found" answer. It is exact for the
one plugin process that owns this storage; a write by anything else is seen after a restart.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langbot_plugin.entities.io.errors import ActionCallError

logger = logging.getLogger(__name__)


def is_missing_key_error(exc: BaseException, key: str) -> bool:
    """True only for the host's "Storage with key <key> not found" refusal."""
    return isinstance(exc, ActionCallError) and f"Storage with key {key} not found" in str(exc)


class HostKeyValueStore:
    """Plugin-scoped key-value storage of the LangBot host (values are bytes)."""

    name = "host"

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin
        self._present: set[str] | None = None  # keys that may exist; None until the first listing
        self._loading = asyncio.Lock()

    async def _index(self) -> set[str] | None:
        if self._present is not None:
            return self._present
        async with self._loading:
            if self._present is None:
                try:
                    listed = await self._plugin.get_plugin_storage_keys()
                except Exception:  # no index yet: every read asks the host, and the next read tries again
                    logger.warning("plugin storage keys could not be listed; reads ask the host", exc_info=True)
                    return None
                self._present = set(listed)
        return self._present

    async def get(self, key: str) -> bytes | None:
        present = await self._index()
        if present is not None and key not in present:
            return None
        try:
            return await self._plugin.get_plugin_storage(key)
        except ActionCallError as exc:
            if is_missing_key_error(exc, key):
                if present is not None:
                    present.discard(key)
                return None
            raise

    async def set(self, key: str, value: bytes) -> None:
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"value for {key!r} must be bytes, got {type(value).__name__}")
        present = await self._index()
        if present is not None:
            present.add(key)  # before the write: a write whose outcome is unknown may have landed
        await self._plugin.set_plugin_storage(key, bytes(value))

    async def delete(self, key: str) -> None:
        await self._plugin.delete_plugin_storage(key)
        if self._present is not None:
            self._present.discard(key)

    async def keys(self, prefix: str = "") -> list[str]:
        keys = await self._plugin.get_plugin_storage_keys()
        if self._present is not None:
            self._present.update(keys)
        return sorted(k for k in keys if k.startswith(prefix))
