"""The Chroma clients a test opens, closed when the test (or its module's fixtures) end.

chromadb 1.5 keeps the system behind every client (its SQLite, segments and worker threads: about
5 MB and 7 threads each) in a process-wide table until the client is closed, and nothing closes the
client of a ``ChromaIndex`` (the plugin keeps its index for the life of the process). A suite that
opens several hundred of them held them all to the end. ``tests/conftest.py`` wraps the two client
factories the plugin and the fake host call (``chromadb.PersistentClient``, ``EphemeralClient``) so
that each test's clients are closed after it; a client opened at import time stays open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import chromadb

_FACTORIES = ("PersistentClient", "EphemeralClient")
_opened: list[Any] = []


def _recording(factory: Callable[..., Any]) -> Callable[..., Any]:
    def open_client(*args: Any, **kwargs: Any) -> Any:
        client = factory(*args, **kwargs)
        _opened.append(client)
        return client

    open_client.__wrapped__ = factory  # type: ignore[attr-defined]
    return open_client


def record_clients() -> None:
    """From now on, remember every client the factories return (idempotent)."""
    for name in _FACTORIES:
        factory = getattr(chromadb, name)
        if not hasattr(factory, "__wrapped__"):
            setattr(chromadb, name, _recording(factory))


def opened() -> int:
    """A mark: how many clients were opened so far (for :func:`close_since`)."""
    return len(_opened)


def close_since(mark: int) -> None:
    """Close the clients opened after ``mark`` (``close`` is idempotent; the in-memory system that
    ``EphemeralClient``s share stops, with its collections, when its last client is closed)."""
    newer, _opened[mark:] = _opened[mark:], []
    for client in reversed(newer):
        client.close()


@contextmanager
def closed_after() -> Iterator[None]:
    """Close the clients opened inside the block when it ends."""
    mark = opened()
    try:
        yield
    finally:
        close_since(mark)
