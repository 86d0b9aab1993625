"""Small helpers shared by the vector adapters (private to :mod:`ltm.adapters`)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

NAME_PREFIX = "ltm_"


def physical_name(collection: str) -> str:
    """Map any collection id to a name every engine accepts.

    Chroma wants 3-63 characters of ``[a-zA-Z0-9._-]`` starting and ending alphanumeric; Qdrant
    servers reject ``/`` and other path characters. ``ltm_`` + 40 hex digits of SHA-1 satisfies both
    and is stable across processes.
    """
    if not isinstance(collection, str) or not collection:
        raise ValueError("collection id must be a non-empty string")
    return NAME_PREFIX + hashlib.sha1(collection.encode("utf-8")).hexdigest()


def clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A copy without ``None`` values (Chroma drops them, Qdrant would store ``null``)."""
    return {str(k): v for k, v in metadata.items() if v is not None}


def require_where(where: dict[str, Any] | None, verb: str) -> dict[str, Any]:
    """Refuse an empty filter where it would touch every record (delete)."""
    if not where:
        raise ValueError(f"{verb} needs a non-empty filter; refusing to act on every record")
    return where


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    if size <= 0:
        raise ValueError("batch size must be positive")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def as_float_list(vector: Iterable[Any]) -> list[float]:
    """Plain Python floats (engines and JSON reject numpy scalars)."""
    return [float(x) for x in vector]


class ThreadedIndex:
    """The async ``VectorIndex`` surface over blocking ``_*_sync`` methods (embedded engines):
    each call runs in a worker thread so the plugin's event loop never blocks on the engine."""

    async def upsert(self, collection: str, records: Sequence[Any]) -> None:
        if records:
            await asyncio.to_thread(self._upsert_sync, collection, list(records))  # type: ignore[attr-defined]

    async def search(self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]) -> Any:
        return await asyncio.to_thread(self._search_sync, collection, vector, top_k, where)  # type: ignore[attr-defined]

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> Any:
        return await asyncio.to_thread(self._list_sync, collection, where, limit, offset)  # type: ignore[attr-defined]

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        require_where(where, "delete")
        await asyncio.to_thread(self._delete_sync, collection, where)  # type: ignore[attr-defined]

    async def drop_collection(self, collection: str) -> None:
        await asyncio.to_thread(self._drop_sync, collection)  # type: ignore[attr-defined]
