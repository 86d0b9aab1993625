"""Test support: a MemoryService over real engines (numpy, Chroma, Qdrant local) with a
deterministic embedder, and scope helpers."""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from ltm.adapters.embedders import HashingEmbedder  # noqa: E402
from ltm.adapters.numpy_index import NumpyIndex  # noqa: E402
from ltm.adapters.sqlite_kv import MemoryKeyValueStore  # noqa: E402
from ltm.domain.scope import Scope
from ltm.domain.storage_keys import audit_log_key, owned_keys
from ltm.domain.timefields import now_utc
from ltm.ports import ListPage, VectorHit, VectorRecord  # noqa: E402
from ltm.service import Actor, MemoryService, Settings  # noqa: E402
from ltm.service.registry import EmbedderFor  # noqa: E402
from ltm.service.sealing import SEAL_PREFIX  # noqa: E402
from ltm.service.writes import DELETE_BATCH  # noqa: E402
from tests.support.backends import DROPPING_HOSTS  # noqa: E402

KB = "kb-test"
ADMIN = Actor(surface="test", sender_id="admin", privilege=2)


class HostLimitedKeyValueStore(MemoryKeyValueStore):
    """The in-memory store with the host's storage-key rule (``BinaryStorage.key`` is String(255),
    see tests/fakes/host_runtime.py): a longer key is refused on every call, as the fake host does."""

    async def get(self, key: str) -> bytes | None:
        return await super().get(_host_key(key))

    async def set(self, key: str, value: bytes) -> None:
        await super().set(_host_key(key), value)

    async def delete(self, key: str) -> None:
        await super().delete(_host_key(key))


def _host_key(key: str) -> str:
    from tests.support.host_runtime import MAX_STORAGE_KEY_CHARS

    if isinstance(key, str) and len(key) > MAX_STORAGE_KEY_CHARS:
        raise RuntimeError(f"Storage key longer than {MAX_STORAGE_KEY_CHARS} characters")
    return key


class DelegatingIndex:
    """A VectorIndex that passes every call to ``inner``: test wrappers override what they change."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "index")
        # a wrapper of a local engine keeps its metadata too: no backend probe at registration
        self.keeps_metadata = bool(getattr(inner, "keeps_metadata", False))

    async def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        await self.inner.upsert(collection, records)

    async def delete(self, collection: str, where: dict[str, Any]) -> None:
        await self.inner.delete(collection, where)

    async def search(
        self, collection: str, vector: Sequence[float], top_k: int, where: dict[str, Any]
    ) -> list[VectorHit]:
        return await self.inner.search(collection, vector, top_k, where)

    async def list(self, collection: str, where: dict[str, Any], limit: int, offset: int) -> ListPage:
        return await self.inner.list(collection, where, limit, offset)

    async def drop_collection(self, collection: str) -> None:
        await self.inner.drop_collection(collection)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


def make_index(kind: str, tmp: Path) -> Any:
    if kind == "numpy":
        return NumpyIndex()
    if kind == "chroma":
        from ltm.adapters.chroma_index import ChromaIndex

        return ChromaIndex(str(tmp / f"chroma-{uuid.uuid4().hex[:6]}"))
    if kind == "qdrant":
        from ltm.adapters.qdrant_index import QdrantIndex

        return QdrantIndex(str(tmp / f"qdrant-{uuid.uuid4().hex[:6]}"))
    if kind in DROPPING_HOSTS:
        return dropping_host_index(kind)
    raise ValueError(kind)


def dropping_host_index(vdb: str) -> Any:
    """The host adapter over a fake LangBot whose vector store drops metadata like ``vdb``'s adapter
    (any collection id is a knowledge base). The service's backend probe finds it dropping and
    serves it through the sidecar. pgvector also accepts the test embedders' sizes (64, 256)."""
    from ltm.adapters.host_index import HostVectorIndex

    from .host_runtime import PG_ALLOWED_DIMS, FakeHostHandler, make_plugin

    fake = FakeHostHandler(vdb=vdb, any_kb=True)
    fake.pg_allowed_dims = (*PG_ALLOWED_DIMS, 64, 256)
    index = HostVectorIndex(make_plugin(fake))
    index.fake = fake  # type: ignore[attr-defined]
    index.close = fake.close  # type: ignore[attr-defined]
    return index


async def build_service(
    kind: str,
    tmp: Path,
    settings: Callable[[], Settings] = Settings,
    isolation: str = "session",
    *,
    vectors: Callable[[Any], Any] | None = None,
    kv: Callable[[Any], Any] | None = None,
    embedder_for: Callable[[EmbedderFor], EmbedderFor] | None = None,
    delete_batch: int = DELETE_BATCH,
    clock: Callable[[], datetime] | None = None,
    monotonic: Callable[[], float] | None = None,
    review: Callable[[MemoryService], Any] | None = None,
    consolidator: Callable[[MemoryService], Any] | None = None,
) -> MemoryService:
    """A service on a real engine (``kind``) with the test KB registered. ``vectors``, ``kv`` and
    ``embedder_for`` wrap the part they name before anything is built over it (a store that lags or
    fails, a counting embedder): the parts are joined once, so a wrapper is given here, never
    swapped in later. ``clock`` (a :class:`Clock` the test moves), ``monotonic`` (the seconds the
    recall index's refresh and the people's codes age by), ``review`` and ``consolidator``
    (factories of the neighbours whose rules join the writes: :func:`with_review`,
    :func:`with_consolidator`) are given to the constructor the same way."""
    emb = HashingEmbedder()
    index = make_index(kind, tmp)
    store = HostLimitedKeyValueStore()

    def plain(c: str, kb: Any) -> Any:
        return emb

    svc = MemoryService(
        kv=kv(store) if kv is not None else store,
        vectors=vectors(index) if vectors is not None else index,
        embedder_for=embedder_for(plain) if embedder_for is not None else plain,
        settings=settings,
        clock=clock if clock is not None else now_utc,
        delete_batch=delete_batch,
        **({"monotonic": monotonic} if monotonic is not None else {}),
        review=review,
        consolidator=consolidator,
    )
    await svc.register_kb(KB, {"embedding_model": "hash", "isolation": isolation})
    return svc


def seal_keys(storage: dict[str, bytes]) -> dict[str, bytes]:
    """Every row's seal key held in plugin storage (ltm/service/sealing.py): row id -> key."""
    out: dict[str, bytes] = {}
    for k, v in storage.items():
        if k.startswith(SEAL_PREFIX):
            out.update({rid: base64.b64decode(b64) for rid, b64 in json.loads(v).items()})
    return out


def restarted(
    svc: MemoryService,
    settings: Callable[[], Settings] = Settings,
    *,
    clock: Callable[[], datetime] | None = None,
    review: Callable[[MemoryService], Any] | None = None,
    consolidator: Callable[[MemoryService], Any] | None = None,
) -> MemoryService:
    """A new process over ``svc``'s stores: nothing in memory carries over (indexes, caches), and
    it is made with the clock and neighbours given here (none by default), as a restart would be."""
    return MemoryService(
        kv=svc.kv,
        vectors=svc.vectors,
        embedder_for=svc.embedder_for,
        settings=settings,
        clock=clock if clock is not None else now_utc,
        delete_batch=svc.delete_batch,
        review=review,
        consolidator=consolidator,
    )


async def scope_of(
    svc: MemoryService, session: str = "person_alice", sender: str = "alice", bot: str = "bot1"
) -> Scope:
    return await svc.scope_for(kb_id=KB, session_name=session, bot_uuid=bot, sender_id=sender)


async def stored_audit_entries(svc: MemoryService, scope: Scope) -> list[dict[str, Any]]:
    """Every stored audit entry of a scope's log, read from the chunks themselves (orphans included)."""
    out: list[dict[str, Any]] = []
    for key in owned_keys(scope, await svc.kv.keys(f"audit/{audit_log_key(scope)}/c/")):
        raw = await svc.kv.get(key)
        out.extend(json.loads(raw) if raw else [])
    return out


def with_review(*args: Any, **kwargs: Any) -> Callable[[MemoryService], Any]:
    """The factory of a review queue (``ReviewQueue(service, *args, **kwargs)``): given to the
    service's constructor (``build_service(review=)``), its guard and tombstone book join the writes."""
    from ltm.service.review import ReviewQueue

    return lambda svc: ReviewQueue(svc, *args, **kwargs)


def with_consolidator(*args: Any, **kwargs: Any) -> Callable[[MemoryService], Any]:
    """The factory of a consolidator (``Consolidator(service, *args, **kwargs)``): given to the
    service's constructor (``build_service(consolidator=)``), it joins the retire pipeline."""
    from ltm.service.consolidation import Consolidator

    return lambda svc: Consolidator(svc, *args, **kwargs)


class Clock:
    """A clock a test moves: given to the service at construction (``build_service(clock=)``), every
    part reads it at use. Starts at ``start`` (a callable or an instant; now by default)."""

    def __init__(self, start: Callable[[], datetime] | datetime | None = None) -> None:
        self.now: Callable[[], datetime] = now_utc
        if start is not None:
            self.set(start)

    def __call__(self) -> datetime:
        return self.now()

    def set(self, now: Callable[[], datetime] | datetime) -> None:
        """From now on the time is ``now`` (an instant, or a callable read at each use)."""
        self.now = now if callable(now) else (lambda: now)
