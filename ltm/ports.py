"""Storage and model ports: the small protocols the service depends on. Adapters implement them.

Filters passed to :class:`VectorIndex` are always built by :func:`ltm.domain.filters.scope_filter`
(Chroma-style dicts); adapters translate them with :func:`ltm.domain.filters.filter_conditions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# The host calls of one listener turn: the listener sets a counter, each host adapter notes its
# calls (a context variable reaches every task the turn gathers; other work sees None).
HOST_CALLS: ContextVar[list[int] | None] = ContextVar("ltm_host_calls", default=None)


def note_host_call(n: int = 1) -> None:
    box = HOST_CALLS.get()
    if box is not None:
        box[0] += n


@dataclass
class VectorRecord:
    id: str
    vector: list[float]
    metadata: dict[str, Any]
    document: str = ""


@dataclass
class VectorHit:
    """A search hit. ``similarity`` is cosine-like (higher is closer); ``distance`` is raw."""

    id: str
    metadata: dict[str, Any]
    similarity: float
    distance: float = 0.0


@dataclass
class VectorItem:
    id: str
    metadata: dict[str, Any]
    document: str = ""


@dataclass
class ListPage:
    items: list[VectorItem] = field(default_factory=list)
    total: int = -1  # -1 = unknown (the host's Chroma returns -1 for filtered lists)


@runtime_checkable
class VectorIndex(Protocol):
    """A metadata-filtered vector store addressed by collection id. An adapter whose engine is
    known to keep metadata sets ``keeps_metadata = True``; the host's backend is probed instead
    (:mod:`ltm.service.backend_probe`)."""

    name: str

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records (by id), vector, metadata and document together."""

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        """Nearest records among those matching ``where``, best first."""

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        """A page of records matching ``where`` in a stable order."""

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        """Delete every record matching ``where``. Backends' returned counts are not trusted:
        callers verify by reading back."""

    async def drop_collection(self, collection: str) -> None:
        """Remove a whole collection (knowledge base deleted)."""


@runtime_checkable
class KeyValueStore(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def set(self, key: str, value: bytes) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def keys(self, prefix: str = "") -> list[str]: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of a fixed dimension."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query (a cross-encoder): ``{index, relevance_score}`` items,
    higher is more relevant; it may score only some of the documents."""

    async def rerank(self, query: str, documents: Sequence[str], timeout: float) -> list[dict[str, Any]]: ...


# The longest one model call may take (candidate extraction, a consolidation summary); past it
# the caller gives up and changes nothing.
MODEL_TIMEOUT_S = 30.0


@runtime_checkable
class ChatModel(Protocol):
    """One bounded chat completion: a system prompt and a user message in, the reply text out
    (the host applies ``timeout``). Raises on failure."""

    async def complete(self, model_uuid: str, system: str, user: str, timeout: float) -> str: ...


class WriteOutcomeUnknown(Exception):
    """A write was dispatched to the backend and its outcome is unknown (timeout after dispatch,
    lost connection, cancellation after dispatch). Adapters raise it; the service fences the scope."""


UNKNOWN_OUTCOME_ERRORS = ("ActionCallTimeoutError", "ConnectionClosedError")
# The SDK checks its invocation again after the host answered (``Handler.call_action``), so this
# error can follow a write the host applied (host-facts.md).
ENDED_INVOCATION = "invocation has ended"


def is_unknown_outcome(exc: BaseException) -> bool:
    """Whether a failed write may nevertheless have been applied.

    Timeouts and lost connections of the LangBot runtime (``ActionCallTimeoutError``,
    ``ConnectionClosedError``) are recognised by name so that the service layer stays free of the
    SDK; an authoritative error answer (``ActionCallError``) is deterministic and returns False,
    except the SDK's "invocation has ended", which it also raises after the host answered.
    """
    if isinstance(exc, (WriteOutcomeUnknown, TimeoutError, ConnectionError)):
        return True
    if ENDED_INVOCATION in str(exc):
        return True
    return any(cls.__name__ in UNKNOWN_OUTCOME_ERRORS for cls in type(exc).__mro__)


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to the host is gone: in LangBot's debug mode a plugin
    restart reconnects inside the same process, and a timer of the previous instance then meets
    its closed connection (``ConnectionClosedError``, recognised by name like above)."""
    seen: BaseException | None = exc
    for _ in range(5):  # the error itself or what an adapter wrapped
        if seen is None:
            break
        if isinstance(seen, ConnectionError) or any(c.__name__ == "ConnectionClosedError" for c in type(seen).__mro__):
            return True
        seen = seen.__cause__
    return False
