"""Adapters: implementations of :mod:`ltm.ports` over real engines and the LangBot host.

Names are imported lazily so that importing this package never pulls in an optional engine
(``chromadb``, ``qdrant_client``, ``onnxruntime``): the plugin's production environment installs
only ``langbot-plugin`` and ``numpy``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "ChromaIndex": "chroma_index",
    "QdrantIndex": "qdrant_index",
    "HostVectorIndex": "host_index",
    "NumpyIndex": "numpy_index",
    "HostKeyValueStore": "host_kv",
    "SqliteKeyValueStore": "sqlite_kv",
    "MemoryKeyValueStore": "sqlite_kv",
    "HashingEmbedder": "embedders",
    "LocalMiniLMEmbedder": "embedders",
    "HostEmbedder": "embedders",
    "HostChatModel": "host_chat",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return __all__
