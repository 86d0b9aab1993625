"""A :class:`~ltm.ports.KeyValueStore` over the LangBot plugin storage (SDK §4.1).

The host has no "missing -> default": ``get_plugin_storage`` of an unknown key fails with
``ActionCallError`` whose message contains ``Storage with key <key> not found`` (the runtime
prefixes the class name: ``"ActionCallError: Storage with key k not found"``). Only that case
reads as ``None``; every other error propagates (a failed read is not an empty value).
``get_plugin_storage_keys`` has no prefix filter, so :meth:`keys` filters locally.
"""

from __future__ import annotations

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
        await self._plugin.set_plugin_storage(key, bytes(value))

    async def delete(self, key: str) -> None:
        await self._plugin.delete_plugin_storage(key)

    async def keys(self, prefix: str = "") -> list[str]:
        keys = await self._plugin.get_plugin_storage_keys()
        return sorted(k for k in keys if k.startswith(prefix))
