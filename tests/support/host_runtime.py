"""A fake LangBot host behind the real SDK: ``FakeHostHandler``.

Install it as ``plugin.plugin_runtime_handler`` of a real ``BasePlugin`` (see :func:`make_plugin`)
or pass it as ``plugin_runtime_handler`` of an ``EventContextProxy`` / ``ExecuteContextProxy``.
Every host call of the SDK proxies then lands in :meth:`FakeHostHandler.call_action`, with the
request ``data`` the proxies really send (``langbot_plugin/api/proxies/langbot_api.py`` and
``query_based_api.py`` of langbot-plugin 0.7.16) and a response of the shape they unwrap.

Behaviour follows LangBot host 4.11.2 (shared/reference/langbot-host-4.11.md, "host ref"; SDK
facts from shared/reference/langbot-plugin-sdk.md, "SDK ref"), read in the host source
``langbot/pkg/plugin/handler.py`` and the runtime ``langbot_plugin/runtime/io/handler.py``:

- Errors: the host answers ``ActionResponse.error(msg)``; the plugin runtime re-raises it as
  ``ActionCallError(msg)``, its action dispatcher formats that as ``"ActionCallError: <msg>"``
  and the plugin's SDK raises ``ActionCallError("ActionCallError: <msg>")``. Host-side Python
  exceptions (e.g. ``KeyError`` of ``get_query_var``) become ``"ActionCallError: KeyError: 'k'"``.
  ``wrap_errors=False`` drops the runtime prefix.
- Invocations: like the SDK's ``Handler.call_action``, a call made under an ended invocation is
  refused, and so is an answer that arrives after the invocation ended (the host applied it).
- Requests and responses are JSON round-tripped (the wire is JSON): tuples become lists and a
  non-JSON value (a numpy float, bytes) fails as ``ActionCallError("TypeError: ...")``.
- Vectors are kept in a real ``chromadb`` in-memory store, one collection per knowledge base,
  named like the host does (``lb_<uuid5(instance:workspace:kb)>``), in Chroma's **default space,
  squared L2** (host ref §4: identical vector 0.0). Filters are handed to Chroma verbatim, so its
  validation errors are the real ones.
- ``vdb="milvus"`` instead answers like the host's Milvus (``pkg/vector/vdbs/milvus.py``): a record
  keeps only ``text``, ``file_id`` and the chunk ``uuid``, and an insert lacking one of them is
  refused (seen on Milvus Lite); a filter goes through a port of ``filter_utils.normalize_filter`` +
  ``strip_unsupported_fields`` (any other field, ``$and`` included, is dropped), a delete whose
  filter became empty is skipped (0); the first call on a KB creates its collection, with the
  vectors' dimension on an insert and 1536 on anything else (search, list, delete), and a vector
  of another dimension is refused. A search reports the cosine similarity as its distance.
- ``vdb="pgvector"`` answers like ``pkg/vector/vdbs/pgvector_db.py`` + ``vector/mgr.py``: the three
  columns ``text`` (the document when the metadata has none), ``file_id``, ``chunk_uuid`` (each
  ``''`` when absent), the same filter stripping; the KB's dimension is fixed by its first upsert
  and must be one of ``allowed_dimensions`` (384, 512, 768, 1024, 1536, 3072); a search before any
  upsert fails; ids must be unique within an upsert; listings are ordered by id with an exact
  total; a search reports the cosine distance; a delete by filter returns the row count.
- ``vdb="valkey"`` answers like ``pkg/vector/vdbs/valkey_search.py``: the whole metadata is kept
  (``metadata_json``) and returned, but the only filterable field is the ``file_id`` TAG (case
  folded, split on commas; ``$eq``/``$ne``/``$in``/``$nin``; a range on it is an error); no index
  before the first upsert (search and list answer empty); listings come in an order of the
  index's own; a search reports the cosine distance.
  On these three, vectors are kept in plain dicts (``dropping_rows``), ranked by cosine here.
- ``search_visible_after_s`` delays what vector search sees (SeekDB: a new vector is found only
  0.1-2 s after its write) while listing sees a write at once, as on SeekDB.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import math
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

import chromadb
import chromadb.errors
from langbot_plugin.api.definition.plugin import BasePlugin
from langbot_plugin.api.proxies.invocation import current_binding, invocation_capability
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError
from langbot_plugin.runtime.io.handler import Handler

from ltm.adapters.embedders import HashingEmbedder

logger = logging.getLogger(__name__)

HOST_VERSION = "v4.11.2"
# plugin/handler.py _HOST_RESERVED_QUERY_VAR_PREFIXES / _KEYS (host ref §1).
RESERVED_VAR_PREFIXES = (
    "_host_",
    "_pipeline_bound_",
    "_pipeline_mcp_",
    "_monitoring_",
    "_sandbox_",
    "_authorized",
    "_permission",
)
RESERVED_VAR_KEYS = frozenset({"_activated_skills", "_fallback_model_uuids", "_routed_by_rule"})
MAX_STORAGE_VALUE_BYTES = 10 * 1024 * 1024  # plugin.binary_storage.max_value_bytes default (SDK ref §4.1)
MAX_STORAGE_KEY_CHARS = 255  # BinaryStorage.key is String(255): enforced on PostgreSQL deployments
HOST_METADATA_KEYS = ("_langbot_instance_uuid", "_langbot_workspace_uuid", "_langbot_knowledge_base_uuid")
# pkg/vector/vdbs/milvus.py: the only stored fields, the alias of the chunk uuid, the default dimension
MILVUS_FIELDS = frozenset({"text", "file_id", "chunk_uuid"})
MILVUS_ALIASES = {"uuid": "chunk_uuid"}
MILVUS_DEFAULT_DIM = 1536
FILTER_OPS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"})  # filter_utils.SUPPORTED_OPS
# the fields each metadata-dropping backend filters on, and its aliases (vdbs/*.py)
DROPPING_FIELDS: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "milvus": (MILVUS_FIELDS, MILVUS_ALIASES),
    "pgvector": (frozenset({"text", "file_id", "chunk_uuid"}), {"uuid": "chunk_uuid"}),
    "valkey": (frozenset({"file_id"}), {}),  # _SUPPORTED_FILTER_FIELDS: the file_id TAG only
}
VDBS = ("chroma", *DROPPING_FIELDS)
PG_ALLOWED_DIMS = (384, 512, 768, 1024, 1536, 3072)  # pgvector_db.DEFAULT_ALLOWED_DIMENSIONS

Responder = Callable[[str, list[dict[str, Any]], list[dict[str, Any]]], "str | dict[str, Any]"]


class _HostError(Exception):
    """A refusal the host answers with ``ActionResponse.error(message)``."""


class FakeQuery:
    """One pipeline query: its variables, bot and pipeline knowledge bases."""

    def __init__(self, variables: dict[str, Any], bot_uuid: str, pipeline_kbs: list[str]) -> None:
        self.variables = variables
        self.bot_uuid = bot_uuid
        self.pipeline_kbs = pipeline_kbs
        self.replies: list[dict[str, Any]] = []


class FakeHostHandler(Handler):
    """Reproduces the host's answers to the plugin-to-runtime actions this plugin uses.

    Test helpers: :meth:`add_knowledge_base`, :meth:`add_query`, :meth:`add_embedding_model`,
    :meth:`fail_next`; state: ``storage``, ``workspace_storage``, ``queries``, ``calls``.
    An action the fake does not implement raises ``AssertionError`` (a call that must not happen).
    """

    def __init__(  # noqa: D107 - deliberately skips Handler.__init__ (no connection)
        self,
        *,
        embedder: Any | None = None,
        llm_responder: Responder | None = None,
        wrap_errors: bool = True,
        instance_uuid: str | None = None,
        workspace_uuid: str | None = None,
        bots: list[str] | None = None,
        vdb: str = "chroma",
        search_visible_after_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        any_kb: bool = False,
    ) -> None:
        if vdb not in VDBS:
            raise ValueError(f"unknown vdb {vdb!r}")
        self.vdb = vdb
        self.any_kb = any_kb  # every collection id is a knowledge base (added on first use)
        self.pg_allowed_dims = PG_ALLOWED_DIMS
        self.pg_dims: dict[str, int] = {}  # kb -> knowledge_bases.embedding_dimension
        self.valkey_dims: dict[str, int] = {}  # kb -> the dimension its FT index was created with
        # kb -> id -> (vector, the row as the backend stores it): Milvus, pgvector, Valkey Search
        self.dropping_rows: dict[str, dict[str, tuple[list[float], dict[str, Any]]]] = {}
        self.search_visible_after_s = search_visible_after_s
        self.clock = clock
        self._written_at: dict[tuple[str, str], float] = {}  # (kb, id) -> when upserted
        self.milvus_dims: dict[str, int] = {}  # kb -> the dimension its Milvus collection was created with
        self.instance_uuid = instance_uuid or str(uuid.uuid4())
        self.workspace_uuid = workspace_uuid or str(uuid.uuid4())
        self.wrap_errors = wrap_errors
        # pgvector accepts only its allowed dimensions: its default embedder is 384-wide
        self.embedder = embedder or HashingEmbedder(dim=384 if vdb == "pgvector" else 64)
        self.embedding_models: dict[str, Any] = {}  # empty: any uuid uses self.embedder
        self.llm_responder = llm_responder
        self.bots = list(bots or ["fake-bot"])
        self.storage: dict[str, bytes] = {}
        self.installation_storage: dict[str, dict[str, bytes]] = {}  # shared runtime: per installation
        self.workspace_storage: dict[str, bytes] = {}
        self.knowledge_bases: dict[str, dict[str, Any]] = {}
        self.queries: dict[int, FakeQuery] = {}
        self.calls: list[tuple[A, dict[str, Any]]] = []
        self._faults: dict[A, deque[BaseException]] = defaultdict(deque)
        self._chroma = chromadb.EphemeralClient()  # one store per process: names are per-instance
        self._collections: dict[str, Any] = {}
        self._handlers: dict[A, Callable[[dict[str, Any]], Any]] = self._action_table()
        self.holds: list[tuple[A, Callable[[dict[str, Any]], bool], asyncio.Event]] = []

    # ------------------------------------------------------------------ test helpers

    def add_knowledge_base(
        self, kb_id: str, *, name: str | None = None, description: str = "", collection_id: str | None = None
    ) -> str:
        """Register a knowledge base: vector actions on unknown ids fail like the host's."""
        self.knowledge_bases[kb_id] = {
            "uuid": kb_id,
            "name": name or f"kb {kb_id}",
            "description": description,
            "collection_id": collection_id or kb_id,
        }
        return kb_id

    def remove_knowledge_base(self, kb_id: str) -> None:
        """The KB row disappears; like the host (host ref §3) its vectors are not deleted."""
        self.knowledge_bases.pop(kb_id, None)

    def add_query(
        self,
        query_id: int,
        variables: dict[str, Any] | None = None,
        *,
        bot_uuid: str = "fake-bot",
        pipeline_kbs: list[str] | None = None,
    ) -> FakeQuery:
        query = FakeQuery(dict(variables or {}), bot_uuid, list(pipeline_kbs or []))
        self.queries[query_id] = query
        return query

    def add_embedding_model(self, model_uuid: str, embedder: Any | None = None) -> None:
        """Once any model is registered, unknown model uuids fail like the host's."""
        self.embedding_models[model_uuid] = embedder or self.embedder

    def hold(self, action: A, when: Callable[[dict[str, Any]], bool]) -> asyncio.Event:
        """Hold the answers to ``action`` calls for which ``when(data)`` holds until the returned
        event is set (a store held shut)."""
        gate = asyncio.Event()
        self.holds.append((action, when, gate))
        return gate

    def fail_next(self, action: A, exc: BaseException | None = None) -> None:
        """Raise ``exc`` (default: an ``ActionCallError``) on the next call of ``action``."""
        self._faults[action].append(exc or ActionCallError(self._wrap("injected failure")))

    def calls_of(self, action: A) -> list[dict[str, Any]]:
        return [data for act, data in self.calls if act is action]

    def vector_rows(self, kb_id: str) -> dict[str, Any]:
        """Raw stored rows of a knowledge base (ids, metadatas, documents), for assertions; on a
        metadata-dropping backend the metadata it returns."""
        if self.vdb != "chroma":
            rows = self.dropping_rows.get(self._resolve_kb(kb_id), {})
            mds = [self._dropping_metadata(stored) for _, stored in rows.values()]
            docs = [
                stored.get("document") if self.vdb == "valkey" else md["text"]
                for (_, stored), md in zip(rows.values(), mds, strict=True)
            ]
            return {"ids": list(rows), "metadatas": mds, "documents": docs}
        col = self._collection(self._resolve_kb(kb_id))
        return col.get(include=["metadatas", "documents"])

    # ------------------------------------------------------------------ the seam

    async def call_action(self, action: A, data: dict[str, Any], timeout: float | None = None, **kw: Any) -> dict:
        # the SDK's Handler.call_action: an ended invocation refuses the call, and the answer too
        # (re-checked after the host answered, wrapped as "ActionCallError: RuntimeError: ...")
        invocation = invocation_capability(self)
        result = await self._answer(action, data)
        if invocation is not None and not invocation.active:
            raise ActionCallError("RuntimeError: Plugin invocation has ended")
        return result

    async def _answer(self, action: A, data: dict[str, Any]) -> dict:
        payload = self._wire(data)
        self.calls.append((action, payload))
        for held, when, gate in self.holds:
            if held == action and when(payload):
                await gate.wait()
        if self._faults.get(action):
            raise self._faults[action].popleft()
        handler = self._handlers.get(action)
        if handler is None:
            raise AssertionError(f"FakeHostHandler: action {getattr(action, 'value', action)!r} is not faked")
        try:
            result = handler(payload)
            if hasattr(result, "__await__"):
                result = await result
        except _HostError as exc:
            raise ActionCallError(self._wrap(str(exc))) from None
        except (KeyError, ValueError, TypeError) as exc:  # host-side exception -> "<Class>: <msg>"
            raise ActionCallError(self._wrap(f"{exc.__class__.__name__}: {exc}")) from None
        return self._wire(result)

    async def call_action_generator(self, action: A, data: dict[str, Any], timeout: float | None = None, **kw: Any):
        raise AssertionError(f"FakeHostHandler: streaming action {action.value!r} is not faked")
        yield {}  # pragma: no cover

    def _wrap(self, message: str) -> str:
        return f"ActionCallError: {message}" if self.wrap_errors else message

    @staticmethod
    def _wire(value: Any) -> Any:
        try:
            return json.loads(json.dumps(value, ensure_ascii=False))
        except (TypeError, ValueError) as exc:
            raise ActionCallError(f"{exc.__class__.__name__}: {exc}") from None

    def _action_table(self) -> dict[A, Callable[[dict[str, Any]], Any]]:
        return {
            A.GET_LANGBOT_VERSION: lambda d: {"version": HOST_VERSION, "api_features": ["llm.reasoning_level"]},
            A.GET_BOTS: lambda d: {"bots": list(self.bots)},
            A.SET_PLUGIN_STORAGE: lambda d: self._storage_set(self.plugin_store(), d),
            A.GET_PLUGIN_STORAGE: lambda d: self._storage_get(self.plugin_store(), d),
            A.GET_PLUGIN_STORAGE_KEYS: lambda d: {"keys": list(self.plugin_store())},
            A.DELETE_PLUGIN_STORAGE: lambda d: self._storage_delete(self.plugin_store(), d),
            A.SET_WORKSPACE_STORAGE: lambda d: self._storage_set(self.workspace_storage, d),
            A.GET_WORKSPACE_STORAGE: lambda d: self._storage_get(self.workspace_storage, d),
            A.GET_WORKSPACE_STORAGE_KEYS: lambda d: {"keys": list(self.workspace_storage)},
            A.DELETE_WORKSPACE_STORAGE: lambda d: self._storage_delete(self.workspace_storage, d),
            A.VECTOR_UPSERT: self._vector_upsert,
            A.VECTOR_SEARCH: self._vector_search,
            A.VECTOR_LIST: self._vector_list,
            A.VECTOR_DELETE: self._vector_delete,
            A.INVOKE_EMBEDDING: self._invoke_embedding,
            A.INVOKE_LLM: self._invoke_llm,
            A.LIST_KNOWLEDGE_BASES: lambda d: {"knowledge_bases": [self._kb_info(k) for k in self.knowledge_bases]},
            A.LIST_PIPELINE_KNOWLEDGE_BASES: self._list_pipeline_kbs,
            A.GET_QUERY_VAR: self._get_query_var,
            A.GET_QUERY_VARS: lambda d: {"vars": self._query(d).variables},
            A.SET_QUERY_VAR: self._set_query_var,
            A.GET_BOT_UUID: lambda d: {"bot_uuid": self._query(d).bot_uuid},
            A.REPLY_MESSAGE: self._reply,
            A.CREATE_NEW_CONVERSATION: lambda d: (self._query(d), {})[1],
        }

    # ------------------------------------------------------------------ storage (SDK ref §4.1)

    def plugin_store(self) -> dict[str, bytes]:
        """The plugin storage of the calling installation. A shared runtime sends each call with
        its invocation's installation binding, and the host keeps plugin storage per installation;
        without a binding (the dedicated runtime, and most tests) it is ``storage``."""
        binding = current_binding(self)
        if binding is None:
            return self.storage
        return self.installation_storage.setdefault(binding.installation_uuid, {})

    @staticmethod
    def _check_key(key: Any) -> str:
        if not isinstance(key, str) or not key:
            raise _HostError("Storage owner and key are required")  # storage/mgr.py canonical key
        if len(key) > MAX_STORAGE_KEY_CHARS:
            raise _HostError(f"Storage key longer than {MAX_STORAGE_KEY_CHARS} characters")
        return key

    def _storage_set(self, store: dict[str, bytes], data: dict[str, Any]) -> dict[str, Any]:
        key = self._check_key(data["key"])
        value = base64.b64decode(data["value_base64"])
        if len(value) > MAX_STORAGE_VALUE_BYTES:
            raise _HostError(f"Binary storage value exceeds limit ({len(value)} > {MAX_STORAGE_VALUE_BYTES} bytes)")
        store[key] = value
        return {}

    def _storage_get(self, store: dict[str, bytes], data: dict[str, Any]) -> dict[str, Any]:
        key = self._check_key(data["key"])
        if key not in store:
            raise _HostError(f"Storage with key {key} not found")  # SDK ref §4.1, gotcha 5
        return {"value_base64": base64.b64encode(store[key]).decode("ascii")}

    def _storage_delete(self, store: dict[str, bytes], data: dict[str, Any]) -> dict[str, Any]:
        store.pop(self._check_key(data["key"]), None)  # deleting a missing key succeeds
        return {}

    # ------------------------------------------------------------------ vectors (host ref §4)

    def _resolve_kb(self, collection_id: Any) -> str:
        for kb_id, info in self.knowledge_bases.items():
            if collection_id in (kb_id, info["collection_id"]):
                return kb_id
        if self.any_kb and isinstance(collection_id, str) and collection_id:
            return self.add_knowledge_base(collection_id)
        # host ref §4 "unknown collection_id"
        raise _HostError(
            f"[VectorStoreError/WorkspaceNotFoundError] [collection_id={collection_id}] Knowledge base not found"
        )

    def _physical_name(self, kb_id: str) -> str:
        key = f"langbot:knowledge-vector:{self.instance_uuid}:{self.workspace_uuid}:{kb_id}"
        return "lb_" + uuid.uuid5(uuid.NAMESPACE_URL, key).hex

    def _collection(self, kb_id: str) -> Any:
        # The host calls get_or_create_collection(name) with Chroma's defaults: space = squared L2.
        # embedding_function=None here only avoids loading the default ONNX embedder; vectors are
        # always supplied, so results are identical.
        name = self._physical_name(kb_id)
        if name not in self._collections:
            self._collections[name] = self._chroma.get_or_create_collection(name, embedding_function=None)
        return self._collections[name]

    def close(self) -> None:
        """Drop this fake's collections from the process-wide in-memory Chroma store."""
        for name in list(self._collections):
            try:
                self._chroma.delete_collection(name)
            except chromadb.errors.NotFoundError:
                pass
        self._collections.clear()

    @staticmethod
    def _vector_error(collection_id: str, exc: Exception) -> _HostError:
        # plugin/handler.py _make_rag_error_response
        return _HostError(f"[VectorStoreError/{type(exc).__name__}] [collection_id={collection_id}] {exc}")

    def _vector_upsert(self, data: dict[str, Any]) -> dict[str, Any]:
        cid, vectors, ids = data["collection_id"], data["vectors"], data["ids"]
        metadata, documents = data.get("metadata"), data.get("documents")
        if len(vectors) != len(ids):
            raise _HostError("vectors and ids must have same length")
        if metadata and len(metadata) != len(vectors):
            raise _HostError("metadata must match vectors length")
        if documents and len(documents) != len(vectors):
            raise _HostError("documents must match vectors length")
        kb_id = self._resolve_kb(cid)
        # vector/mgr.py upsert: host keys are added to every record's metadata (host ref §4).
        scoped = [
            {
                **item,
                "_langbot_instance_uuid": self.instance_uuid,
                "_langbot_workspace_uuid": self.workspace_uuid,
                "_langbot_knowledge_base_uuid": kb_id,
            }
            for item in (metadata or [{} for _ in vectors])
        ]
        if self.vdb != "chroma":
            return self._dropping_upsert(cid, kb_id, vectors, ids, scoped, documents)
        kwargs: dict[str, Any] = {"ids": ids, "embeddings": vectors, "metadatas": scoped}
        if documents is not None:
            kwargs["documents"] = documents
        if not vectors:
            return {}
        try:
            self._collection(kb_id).upsert(**kwargs)  # Chroma merges metadata on upsert
        except (ValueError, TypeError, chromadb.errors.ChromaError) as exc:
            raise self._vector_error(cid, exc) from None
        self._written(kb_id, ids)
        return {}

    def _written(self, kb_id: str, ids: list[str]) -> None:
        now = self.clock()
        for i in ids:
            self._written_at[(kb_id, i)] = now

    # ------------------------------------------------------------------ Milvus, pgvector, Valkey Search
    # pkg/vector/vdbs/milvus.py, pgvector_db.py, valkey_search.py: each row is kept as the backend
    # keeps it (a stored dict), filters go through a port of filter_utils.normalize_filter +
    # strip_unsupported_fields and the backend's own comparison, searches rank by cosine here.

    def _dropping_upsert(
        self,
        cid: str,
        kb_id: str,
        vectors: list[list[float]],
        ids: list[str],
        scoped: list[dict[str, Any]],
        documents: list[str] | None,
    ) -> dict[str, Any]:
        if not vectors:
            return {}
        if self.vdb == "milvus":
            self._milvus_dim(cid, kb_id, len(vectors[0]))  # created before the insert is checked
            for vec in vectors:
                self._milvus_check_dim(cid, kb_id, vec)
            for item in scoped:  # every schema field is required
                for key, fld in (("text", "text"), ("file_id", "file_id"), ("uuid", "chunk_uuid")):
                    if key not in item:
                        raise _HostError(
                            f"[VectorStoreError/DataNotMatchException] [collection_id={cid}] <DataNotMatchException: "
                            f"(code=1, message=Insert missed an field `{fld}` to collection without set "
                            "nullable==true or set default_value)>"
                        )
        elif self.vdb == "pgvector":
            dim = len(vectors[0])
            if dim not in self.pg_allowed_dims:
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] "
                    f"Embedding dimension {dim} is not enabled for this deployment"
                )
            have = self.pg_dims.setdefault(kb_id, dim)  # knowledge_bases.embedding_dimension, set once
            if have != dim:
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] "
                    f"Knowledge base embedding dimension is {have}, not {dim}"
                )
            if len(set(ids)) != len(ids) or any(not isinstance(i, str) or not i.strip() for i in ids):
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] "
                    "pgvector vector IDs must be unique non-empty strings per upsert"
                )
        else:  # valkey: the index is created with the first vectors' dimension
            dim = len(vectors[0])
            if any(len(v) != dim for v in vectors[1:]):
                raise _HostError(f"[VectorStoreError/ValueError] [collection_id={cid}] mixed dimensions")
            self.valkey_dims.setdefault(kb_id, dim)
        rows = self.dropping_rows.setdefault(kb_id, {})
        for n, (rid, vec, item) in enumerate(zip(ids, vectors, scoped, strict=True)):
            doc = documents[n] if documents is not None and n < len(documents) else None
            if self.vdb == "milvus":  # add_embeddings: text, file_id, uuid as chunk_uuid; all else lost
                stored = {"text": item["text"], "file_id": item["file_id"], "chunk_uuid": item["uuid"]}
            elif self.vdb == "pgvector":  # the three columns; a missing one is ''
                stored = {
                    "text": item.get("text", doc or ""),
                    "file_id": item.get("file_id", ""),
                    "chunk_uuid": item.get("uuid", item.get("chunk_uuid", "")),
                }
            else:  # valkey: metadata_json verbatim, the file_id tag (encoded), the document
                stored = {"metadata_json": json.dumps(item, ensure_ascii=False), "document": doc}
                if item.get("file_id") is not None:
                    stored["file_id"] = str(item["file_id"])
            rows[str(rid).strip() if self.vdb == "pgvector" else rid] = (list(map(float, vec)), stored)
        self._written(kb_id, ids)
        return {}

    def _milvus_dim(self, cid: str, kb_id: str, dim: int | None = None) -> int:
        """``_get_or_create_collection_internal``: the first call creates the collection, with the
        dimension of the inserted vectors, or 1536 when the call has none (search, list, delete)."""
        if kb_id not in self.milvus_dims:
            self.milvus_dims[kb_id] = dim or MILVUS_DEFAULT_DIM
        return self.milvus_dims[kb_id]

    def _milvus_check_dim(self, cid: str, kb_id: str, vector: list[float]) -> None:
        want = self.milvus_dims[kb_id]
        if len(vector) != want:
            raise _HostError(
                f"[VectorStoreError/MilvusException] [collection_id={cid}] "
                f"the dim ({len(vector)}) of field data(vector) is not equal to schema dim ({want}): "
                f"expected dim {want}, got {len(vector)}"
            )

    def _kept_triples(self, cid: str, filters: dict[str, Any] | None) -> list[tuple[str, str, Any]]:
        """``normalize_filter`` + ``strip_unsupported_fields`` of the backend: the conditions it keeps."""
        triples: list[tuple[str, str, Any]] = []
        for fld, cond in (filters or {}).items():  # normalize_filter
            if isinstance(cond, dict):
                for op, value in cond.items():
                    if op not in FILTER_OPS:
                        raise self._vector_error(cid, ValueError(f"Unsupported filter operator: {op}"))
                    triples.append((fld, op, value))
            else:
                triples.append((fld, "$eq", cond))  # a bare value, "$and": [...] included
        fields, aliases = DROPPING_FIELDS[self.vdb]
        kept = []
        for fld, op, value in triples:  # strip_unsupported_fields: dropped with a WARNING only
            resolved = aliases.get(fld, fld)
            if resolved in fields:
                if self.vdb == "valkey" and op in ("$gt", "$gte", "$lt", "$lte"):
                    # _triples_to_ft: float(value), then a numeric range on a TAG field
                    try:
                        float(value)
                    except (TypeError, ValueError) as exc:
                        raise self._vector_error(cid, exc) from None
                    raise self._vector_error(cid, ValueError(f"Invalid range query on TAG field @{resolved}"))
                kept.append((resolved, op, value))
            else:
                logger.warning("Filter field %r is not supported by this backend and will be ignored", fld)
        return kept

    def _stored_match(self, stored: dict[str, Any], triples: list[tuple[str, str, Any]]) -> bool:
        for fld, op, value in triples:
            if self.vdb == "valkey":  # a TAG field: case folded, split on ',', trimmed
                raw = stored.get(fld)
                tags = {t.strip().lower() for t in str(raw).split(",")} if raw is not None else set()
                wanted = {str(v).strip().lower() for v in (value if op in ("$in", "$nin") else [value])}
                hit = bool(tags & wanted)
                ok = hit if op in ("$eq", "$in") else not hit
            else:
                got = stored.get(fld)
                ok = _compare(op, got, value)
            if not ok:
                return False
        return True

    def _dropping_metadata(self, stored: dict[str, Any]) -> dict[str, Any]:
        if self.vdb == "valkey":
            try:
                return json.loads(stored.get("metadata_json") or "{}")
            except ValueError:
                return {}
        return {
            "text": stored.get("text", ""),
            "file_id": stored.get("file_id", ""),
            "uuid": stored.get("chunk_uuid", ""),
        }

    def _dropping_selected(self, cid: str, kb_id: str, filters: dict[str, Any] | None) -> list[str]:
        rows = self.dropping_rows.get(kb_id, {})
        triples = self._kept_triples(cid, filters)
        ids = [rid for rid, (_, stored) in rows.items() if self._stored_match(stored, triples)]
        if self.vdb == "pgvector":
            return sorted(ids)  # ORDER BY vector_id
        if self.vdb == "valkey":  # FT.SEARCH without SORTBY: an order of its own, not insertion
            return sorted(ids, key=lambda i: hashlib.sha1(i.encode()).hexdigest())
        return ids  # Milvus query: primary-key order within a segment (insertion here)

    def _vector_search(self, data: dict[str, Any]) -> dict[str, Any]:
        cid = data["collection_id"]
        kb_id = self._resolve_kb(cid)
        filters = data.get("filters")
        search_type = data.get("search_type", "vector")
        if self.vdb != "chroma":
            return {"results": self._dropping_search(cid, kb_id, data, filters, search_type)}
        col = self._collection(kb_id)
        hidden = self._hidden_count(kb_id)
        try:
            if search_type == "full_text":
                return {"results": self._full_text(col, data, filters)}
            if search_type != "vector":
                raise AssertionError(f"FakeHostHandler: search_type {search_type!r} is not faked")
            kwargs: dict[str, Any] = {
                "query_embeddings": data["query_vector"],
                "n_results": data["top_k"] + hidden,
                "include": ["metadatas", "distances", "documents"],
            }
            if filters:  # passed verbatim: two top-level keys fail in Chroma (host ref §4)
                kwargs["where"] = filters
            res = col.query(**kwargs)
        except (ValueError, TypeError, chromadb.errors.ChromaError) as exc:
            raise self._vector_error(cid, exc) from None
        ids = res["ids"][0] if res["ids"] else []
        found = [
            (i, d, m)
            for i, d, m in zip(ids, res["distances"][0], res["metadatas"][0], strict=True)
            if self._visible_to_search(kb_id, i)
        ][: data["top_k"]]
        # Results carry id, distance (squared L2) and metadata; no document text (host ref §4).
        return {"results": [{"id": i, "distance": d, "metadata": m or {}} for i, d, m in found]}

    def _dropping_search(
        self, cid: str, kb_id: str, data: dict[str, Any], filters: dict[str, Any] | None, search_type: str
    ) -> list[dict[str, Any]]:
        if search_type != "vector":
            raise AssertionError(f"FakeHostHandler: search_type {search_type!r} is not faked on {self.vdb}")
        query = [float(x) for x in data["query_vector"]]
        top_k = int(data["top_k"])
        if self.vdb == "milvus":
            self._milvus_dim(cid, kb_id)  # a search before any insert creates the collection: 1536
            self._milvus_check_dim(cid, kb_id, query)
        elif self.vdb == "pgvector":
            have = self.pg_dims.get(kb_id)
            if have is None:
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] "
                    "Knowledge base has no selected pgvector embedding dimension"
                )
            if have != len(query):
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] "
                    f"Knowledge base embedding dimension is {have}, not {len(query)}"
                )
            if top_k <= 0:
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] pgvector search limit must be positive"
                )
        elif kb_id not in self.valkey_dims:
            return []  # no index yet: an empty answer
        rows = self.dropping_rows.get(kb_id, {})
        scored = []
        for rid in self._dropping_selected(cid, kb_id, filters):
            if not self._visible_to_search(kb_id, rid):
                continue
            vec, stored = rows[rid]
            scored.append((1.0 - _cosine(query, vec), rid, stored))
        scored.sort(key=lambda t: (t[0], t[1]))
        out = []
        for dist, rid, stored in scored[:top_k]:
            # Milvus' COSINE metric reports the similarity; pgvector and Valkey the cosine distance
            reported = 1.0 - dist if self.vdb == "milvus" else dist
            out.append({"id": rid, "distance": reported, "metadata": self._dropping_metadata(stored)})
        return out

    def _visible_to_search(self, kb_id: str, record_id: str) -> bool:
        written = self._written_at.get((kb_id, record_id))
        return written is None or self.clock() >= written + self.search_visible_after_s

    def _hidden_count(self, kb_id: str) -> int:
        if self.search_visible_after_s <= 0:
            return 0
        return sum(1 for (kb, rid) in list(self._written_at) if kb == kb_id and not self._visible_to_search(kb, rid))

    @staticmethod
    def _full_text(col: Any, data: dict[str, Any], filters: dict[str, Any] | None) -> list[dict[str, Any]]:
        text = data.get("query_text") or ""
        if not text:
            return []
        kwargs: dict[str, Any] = {
            "where_document": {"$contains": text},
            "include": ["metadatas"],
            "limit": data["top_k"],
        }
        if filters:
            kwargs["where"] = filters
        res = col.get(**kwargs)
        return [
            {"id": i, "distance": 0.0, "metadata": m or {}} for i, m in zip(res["ids"], res["metadatas"], strict=True)
        ]

    def _vector_list(self, data: dict[str, Any]) -> dict[str, Any]:
        cid = data["collection_id"]
        kb_id = self._resolve_kb(cid)
        filters = data.get("filters")
        if self.vdb != "chroma":
            return self._dropping_list(cid, kb_id, filters, data)
        col = self._collection(kb_id)
        kwargs: dict[str, Any] = {
            "include": ["metadatas", "documents"],
            "limit": data.get("limit", 20),
            "offset": data.get("offset", 0),
        }
        if filters:
            kwargs["where"] = filters
        try:
            res = col.get(**kwargs)
            total = -1 if filters else col.count()  # filtered total is -1 (host ref §4)
        except (ValueError, TypeError, chromadb.errors.ChromaError) as exc:
            raise self._vector_error(cid, exc) from None
        items = [
            {"id": i, "document": doc, "metadata": md or {}}
            for i, doc, md in zip(res["ids"], res["documents"], res["metadatas"], strict=True)
        ]
        return {"items": items, "total": total}

    def _dropping_list(
        self, cid: str, kb_id: str, filters: dict[str, Any] | None, data: dict[str, Any]
    ) -> dict[str, Any]:
        limit, offset = int(data.get("limit", 20)), int(data.get("offset", 0))
        if self.vdb == "milvus":
            self._milvus_dim(cid, kb_id)  # listing a new KB creates its collection too: 1536
        elif self.vdb == "pgvector":
            if limit <= 0 or offset < 0:
                raise _HostError(
                    f"[VectorStoreError/ValueError] [collection_id={cid}] "
                    "pgvector pagination requires limit > 0 and offset >= 0"
                )
        elif kb_id not in self.valkey_dims:
            return {"items": [], "total": 0}
        ids = self._dropping_selected(cid, kb_id, filters)
        rows = self.dropping_rows.get(kb_id, {})
        items = []
        for rid in ids[offset : offset + limit]:
            stored = rows[rid][1]
            md = self._dropping_metadata(stored)
            document = stored.get("document") if self.vdb == "valkey" else md["text"]
            items.append({"id": rid, "document": document, "metadata": md})
        return {"items": items, "total": len(ids)}  # count(*) / COUNT / FT.SEARCH total: exact

    def _vector_delete(self, data: dict[str, Any]) -> dict[str, Any]:
        cid = data["collection_id"]
        kb_id = self._resolve_kb(cid)
        file_ids, filters = data.get("file_ids"), data.get("filters")
        if self.vdb != "chroma":
            return self._dropping_delete(cid, kb_id, file_ids, filters)
        col = self._collection(kb_id)
        count = 0
        try:
            if file_ids:
                for file_id in file_ids:
                    col.delete(where={"file_id": file_id})
                count = len(file_ids)  # len(file_ids), not the number removed (host ref §4)
            elif filters:
                col.delete(where=filters)
                count = 0  # ChromaVectorDatabase.delete_by_filter always returns 0 (host ref §4)
        except (ValueError, TypeError, chromadb.errors.ChromaError) as exc:
            raise self._vector_error(cid, exc) from None
        return {"count": count}

    def _dropping_delete(
        self, cid: str, kb_id: str, file_ids: list[str] | None, filters: dict[str, Any] | None
    ) -> dict[str, Any]:
        if self.vdb == "milvus":
            self._milvus_dim(cid, kb_id)
        if self.vdb == "valkey" and kb_id not in self.valkey_dims:
            return {"count": 0}  # "collection not found for deletion"
        rows = self.dropping_rows.get(kb_id, {})
        if file_ids:
            for file_id in file_ids:  # delete_by_file_id, one per id
                for rid in self._dropping_selected(cid, kb_id, {"file_id": {"$eq": file_id}}):
                    rows.pop(rid, None)
            return {"count": len(file_ids)}  # len(file_ids), not the number removed
        if not filters:
            return {"count": 0}
        if not self._kept_triples(cid, filters):  # "filter produced no usable conditions, skipping"
            logger.warning("%s delete_by_filter on %s: the filter kept nothing, skipping", self.vdb, cid)
            return {"count": 0}
        victims = self._dropping_selected(cid, kb_id, filters)
        for rid in victims:
            rows.pop(rid, None)
        # Milvus returns 0; pgvector the row count; Valkey the keys deleted
        return {"count": 0 if self.vdb == "milvus" else len(victims)}

    # ------------------------------------------------------------------ models

    async def _invoke_embedding(self, data: dict[str, Any]) -> dict[str, Any]:
        model = data["embedding_model_uuid"]
        if self.embedding_models and model not in self.embedding_models:
            raise _HostError(f"Embedding model with embedding_model_uuid {model} not found")
        embedder = self.embedding_models.get(model, self.embedder)
        return {"vectors": await embedder.embed(list(data["texts"]))}

    def _invoke_llm(self, data: dict[str, Any]) -> dict[str, Any]:
        model = data["llm_model_uuid"]
        if self.llm_responder is None:
            raise _HostError(f"LLM model with llm_model_uuid {model} not found")
        answer = self.llm_responder(model, data["messages"], data.get("funcs") or [])
        message = {"role": "assistant", "content": answer} if isinstance(answer, str) else answer
        return {"message": message, "usage": None}

    # ------------------------------------------------------------------ knowledge bases / queries

    def _kb_info(self, kb_id: str) -> dict[str, Any]:
        info = self.knowledge_bases[kb_id]
        return {"uuid": info["uuid"], "name": info["name"], "description": info["description"]}

    def _query(self, data: dict[str, Any]) -> FakeQuery:
        query = self.queries.get(data.get("query_id"))  # type: ignore[arg-type]
        if query is None:
            raise _HostError(f"Query with query_id {data.get('query_id')} not found")
        return query

    def _list_pipeline_kbs(self, data: dict[str, Any]) -> dict[str, Any]:
        # host: the query variable _knowledge_base_uuids when set (a listener may have edited it),
        # else the runner's configured KBs (plugin/handler.py _get_pipeline_knowledge_base_uuids)
        query = self._query(data)
        if "_knowledge_base_uuids" in query.variables:
            uuids = [str(k) for k in query.variables["_knowledge_base_uuids"] or [] if k]
        else:
            uuids = list(query.pipeline_kbs)
        return {"knowledge_bases": [self._kb_info(k) for k in uuids if k in self.knowledge_bases]}

    def _get_query_var(self, data: dict[str, Any]) -> dict[str, Any]:
        # host: query.variables[key] -> a missing key is a KeyError (SDK ref §4.2)
        return {"value": self._query(data).variables[data["key"]]}

    def _set_query_var(self, data: dict[str, Any]) -> dict[str, Any]:
        query = self._query(data)
        key = data["key"]
        if not isinstance(key, str) or not key:
            raise _HostError("Query variable key must be a non-empty string")
        if key in RESERVED_VAR_KEYS or key.startswith(RESERVED_VAR_PREFIXES):
            raise _HostError(f"Query variable {key!r} is reserved for LangBot Host")
        query.variables[key] = data["value"]
        return {}

    def _reply(self, data: dict[str, Any]) -> dict[str, Any]:
        self._query(data).replies.append(
            {"message_chain": data["message_chain"], "quote_origin": data.get("quote_origin", False)}
        )
        return {}


def _compare(op: str, got: Any, value: Any) -> bool:
    """A Milvus expression / SQL comparison of a stored column (absent: nothing matches a range)."""
    if op == "$eq":
        return bool(got == value)
    if op == "$ne":
        return bool(got != value)
    if op == "$in":
        return got in value
    if op == "$nin":
        return got not in value
    if got is None:
        return False
    return bool({"$gt": got > value, "$gte": got >= value, "$lt": got < value, "$lte": got <= value}[op])


def _cosine(a: list[float], b: list[float]) -> float:
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(x * x for x in b)) or 1.0
    return sum(x * y for x, y in zip(a, b, strict=False)) / (na * nb)


class _FakePlugin(BasePlugin):
    """A bare plugin: the real SDK proxy methods over a fake host."""


def make_plugin(handler: FakeHostHandler | None = None, config: dict[str, Any] | None = None) -> BasePlugin:
    """A real ``BasePlugin`` whose ``plugin_runtime_handler`` is ``handler`` (a new fake if None)."""
    plugin = _FakePlugin()
    plugin.plugin_runtime_handler = handler or FakeHostHandler()
    plugin.config = dict(config or {})
    return plugin
