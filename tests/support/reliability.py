"""Shared helpers of the reliability suites.

- :class:`FaultyHost`: the faithful fake LangBot host (:class:`tests.fakes.FakeHostHandler`) with a
  programmable fault at the n-th host call: raised before the host applies the call, or after it
  applied it (a timeout / lost connection / cancellation whose outcome the plugin cannot know).
- :func:`host_service`: a :class:`MemoryService` over the REAL host adapters (``HostKeyValueStore``,
  ``HostVectorIndex``, ``HostEmbedder``) of a real ``BasePlugin`` talking to that fake host. A
  "restart" is simply a second :func:`host_service` over the same fake host.
- :func:`data_state`: what the user's data looks like (vector rows + plugin storage), without the
  bookkeeping keys (audit, journal, fence), for before/after comparisons.
- Deterministic ids and clock (:class:`Determinism`) so that two runs of the same write produce the
  same state and a faulted run can be compared with a clean one.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.errors import ActionCallError, ActionCallTimeoutError, ConnectionClosedError

from ltm.adapters.embedders import HostEmbedder
from ltm.adapters.host_index import HostVectorIndex, strip_host_keys
from ltm.adapters.host_kv import HostKeyValueStore
from ltm.domain import models
from ltm.domain.backends import host_file_id
from ltm.i18n import catalog
from ltm.service import MemoryService, Settings
from ltm.service.sealing import SEAL_PREFIX, is_sealed, unseal
from ltm.service.sidecar import SIDE_PREFIX, merge_scope, side_prefix
from ltm.service.writes import DELETE_BATCH
from tests.support import seal_keys
from tests.support.host_runtime import FakeHostHandler, make_plugin

KB = "kb-rel"
EMBEDDING_MODEL = "emb-rel"
BOOKKEEPING_PREFIXES = ("audit/", "journal/", "fence/", "recall/")  # recall/: index snapshots and stamps
DATA_WRITE_ACTIONS = (A.VECTOR_UPSERT, A.VECTOR_DELETE, A.SET_PLUGIN_STORAGE, A.DELETE_PLUGIN_STORAGE)

# --------------------------------------------------------------------------------------------
# faults
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One injected failure. ``applied``: the host applied the call before the failure surfaced."""

    name: str
    applied: bool
    unknown: bool  # the plugin cannot know whether the call took effect

    def exception(self) -> BaseException:
        kind = self.name.split("_")[0]
        if kind == "timeout":
            return ActionCallTimeoutError("Action call timed out (injected)")
        if kind == "cancel":
            return asyncio.CancelledError()
        if kind == "connection":
            return ConnectionClosedError("Connection closed (injected)")
        return ActionCallError("ActionCallError: injected failure")


TIMEOUT_BEFORE = Fault("timeout_before", applied=False, unknown=True)
TIMEOUT_AFTER = Fault("timeout_after", applied=True, unknown=True)
CANCEL_BEFORE = Fault("cancel_before", applied=False, unknown=True)
CANCEL_AFTER = Fault("cancel_after", applied=True, unknown=True)
CONNECTION_BEFORE = Fault("connection_before", applied=False, unknown=True)
CONNECTION_AFTER = Fault("connection_after", applied=True, unknown=True)
ERROR_ANSWER = Fault("error_answer", applied=False, unknown=False)
ALL_FAULTS: tuple[Fault, ...] = (
    TIMEOUT_BEFORE,
    TIMEOUT_AFTER,
    CANCEL_BEFORE,
    CANCEL_AFTER,
    CONNECTION_BEFORE,
    CONNECTION_AFTER,
    ERROR_ANSWER,
)


@dataclass(frozen=True)
class HostCall:
    """One host call as recorded by the fake, classified for the fault matrix."""

    index: int
    action: A
    key: str  # storage key for storage actions, else ""

    @property
    def is_write(self) -> bool:
        return self.action in DATA_WRITE_ACTIONS

    @property
    def is_bookkeeping(self) -> bool:
        return bool(self.key) and self.key.startswith(BOOKKEEPING_PREFIXES)

    @property
    def is_data_write(self) -> bool:
        # a seal key is no memory: a key without its row is inert, and the key of a deleted row
        # whose destruction failed is destroyed before the next write (ltm/service/sealing.py), so
        # an unknown outcome there needs no fence; the rows it opens are compared instead
        # the sidecar's compaction (shard values written, deltas deleted) reads the same whatever
        # part of it ran (ltm/service/sidecar.py); a write's own metadata is the delta it sets
        if self.key.startswith(SIDE_PREFIX) and not (
            self.action is A.SET_PLUGIN_STORAGE and self.key.rsplit("/", 1)[-1].startswith("d")
        ):
            return False
        return self.is_write and not self.is_bookkeeping and not self.key.startswith(SEAL_PREFIX)

    def label(self) -> str:
        key = self.key.split("/")[0] + "/" if self.key else ""
        return f"#{self.index}:{self.action.value}{'(' + key + ')' if key else ''}"


def classify(calls: list[tuple[A, dict[str, Any]]]) -> list[HostCall]:
    return [HostCall(i, act, str(data.get("key") or "")) for i, (act, data) in enumerate(calls)]


class FaultyHost(FakeHostHandler):
    """:class:`FakeHostHandler` with one armed fault at the ``index``-th call after :meth:`arm`."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._armed: tuple[int, Fault] | None = None
        self._armed_action: tuple[A, Fault] | None = None
        self._seen = 0
        self.fired: tuple[A, dict[str, Any], Fault] | None = None
        self.pause: Callable[[A, dict[str, Any]], Any] | None = None

    def arm(self, index: int, fault: Fault) -> None:
        """Fail the ``index``-th host call from now on (0 = the next one)."""
        self._armed, self._armed_action, self._seen, self.fired = (index, fault), None, 0, None

    def arm_action(self, action: A, fault: Fault) -> None:
        """Fail the next call of ``action``."""
        self._armed, self._armed_action, self.fired = None, (action, fault), None

    def disarm(self) -> None:
        self._armed = self._armed_action = None

    async def call_action(self, action: A, data: dict[str, Any], timeout: float | None = None, **kw: Any) -> dict:
        if self.pause is not None:
            await self.pause(action, data)
        fault: Fault | None = None
        if self._armed is not None:
            n, self._seen = self._seen, self._seen + 1
            if n == self._armed[0]:
                fault, self._armed = self._armed[1], None
        elif self._armed_action is not None and self._armed_action[0] is action:
            fault, self._armed_action = self._armed_action[1], None
        if fault is None:
            return await super().call_action(action, data, timeout, **kw)
        self.fired = (action, data, fault)
        if fault.applied:
            await super().call_action(action, data, timeout, **kw)
        else:
            self.calls.append((action, self._wire(data)))
        raise fault.exception()

    def close(self) -> None:
        """Drop this fake's collections from the process-wide in-memory Chroma."""
        for kb_id in list(self.knowledge_bases):
            try:
                self._chroma.delete_collection(self._physical_name(kb_id))
            except Exception:  # noqa: BLE001 - never created
                pass


# --------------------------------------------------------------------------------------------
# services over the host adapters
# --------------------------------------------------------------------------------------------


class Determinism:
    """A fixed clock and episode ids from a counter: two runs of one write produce one state."""

    def __init__(self, start: datetime | None = None) -> None:
        self.start = start or datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
        self.reset()

    def reset(self, phase: str = "run") -> None:
        """Restart the id counter; ids of different phases (seeding, the write) never collide."""
        self._phase = phase
        self._ids = itertools.count(1)

    def clock(self) -> datetime:
        return self.start

    def new_id(self) -> str:
        return f"ep_{self._phase}{next(self._ids):012d}"

    def new_candidate_id(self) -> str:
        return f"cand_{(0xA if self._phase == 'run' else 0xB):x}{next(self._ids):019x}"

    @contextmanager
    def patched(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[Determinism]:
        monkeypatch.setattr(models, "new_episode_id", self.new_id)
        from ltm.service import transfer
        from ltm.service.review import candidates

        monkeypatch.setattr(transfer, "new_episode_id", self.new_id)
        monkeypatch.setattr(candidates, "new_candidate_id", self.new_candidate_id)
        yield self


def host_service(
    fake: FakeHostHandler,
    settings: Callable[[], Settings] = Settings,
    clock: Callable[[], datetime] | None = None,
    *,
    delete_batch: int = DELETE_BATCH,
    review: Callable[[MemoryService], Any] | None = None,
    consolidator: Callable[[MemoryService], Any] | None = None,
) -> MemoryService:
    """A MemoryService over the real host adapters of a real BasePlugin talking to ``fake``, made
    with the neighbours ``review`` and ``consolidator`` make (none without)."""
    plugin = make_plugin(fake)
    kwargs: dict[str, Any] = {"clock": clock} if clock else {}
    svc = MemoryService(
        delete_batch=delete_batch,
        kv=HostKeyValueStore(plugin),
        vectors=HostVectorIndex(plugin),
        embedder_for=lambda collection, kb: HostEmbedder(plugin, kb.embedding_model),
        settings=settings,
        review=review,
        consolidator=consolidator,
        **kwargs,
    )
    # recall snapshots are written on a timer, in the background: the host calls a test enumerates
    # must not depend on how long it ran (snapshots: tests/contract/test_index_snapshot.py)
    svc.index.snapshot_delay = 3600.0
    return svc


async def host_env(
    *,
    isolation: str = "session",
    settings: Callable[[], Settings] = Settings,
    clock: Callable[[], datetime] | None = None,
    kbs: tuple[str, ...] = (KB,),
) -> tuple[FaultyHost, MemoryService]:
    fake = FaultyHost(bots=["bot1", "bot2"])
    svc = host_service(fake, settings, clock)
    for kb in kbs:
        fake.add_knowledge_base(kb)
        await svc.register_kb(kb, {"embedding_model": EMBEDDING_MODEL, "isolation": isolation})
    return fake, svc


def data_state(fake: FakeHostHandler, kbs: tuple[str, ...] = (KB,)) -> dict[str, Any]:
    """Vector rows (metadata without host keys, document) + plugin storage without bookkeeping. On a
    metadata-dropping backend the rows are what the sidecar serves: those whose metadata is stored
    and whose vector the host holds under the file id naming their scope (ADR 0008), opened."""
    vectors: dict[str, Any] = {}
    keys = seal_keys(fake.storage)
    if fake.vdb != "chroma":
        return {"vectors": _sidecar_rows(fake, kbs, keys), "storage": _data_storage(fake)}
    for kb in kbs:
        rows = fake.vector_rows(kb)
        for rid, md, doc in zip(rows["ids"], rows["metadatas"], rows["documents"], strict=True):
            md = strip_host_keys(md)
            if is_sealed(md):  # compared opened: each seal is fresh; a row whose key is gone opens empty
                rid_ = str(md.get("episode_id") or rid)
                md = unseal(md, rid_, keys.get(rid_))
            vectors[f"{kb}/{rid}"] = (tuple(sorted(md.items())), doc)
    return {"vectors": vectors, "storage": _data_storage(fake)}


def _data_storage(fake: FakeHostHandler) -> dict[str, bytes]:
    # the seal keys are compared through the rows they open (a new row's key is inert until
    # written), the sidecar's values through the rows they describe
    return {
        k: v
        for k, v in fake.storage.items()
        if not k.startswith(BOOKKEEPING_PREFIXES) and not k.startswith((SEAL_PREFIX, SIDE_PREFIX))
    }


def _sidecar_rows(fake: FakeHostHandler, kbs: tuple[str, ...], keys: dict[str, bytes]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kb in kbs:
        held = {str(md.get("file_id")): rid for rid, md in zip(*_ids_mds(fake, kb), strict=True)}
        scopes: dict[str, dict[str, bytes | None]] = {}
        for key, raw in fake.storage.items():
            if key.startswith(side_prefix(kb)):
                scopes.setdefault(key.rsplit("/", 1)[0], {})[key] = raw
        for values in scopes.values():
            user_key, shards, _, _ = merge_scope(values)
            for rid, entry in ((rid, e) for shard in shards for rid, e in shard.items()):
                if held.get(host_file_id(kb, user_key, rid)) != rid:
                    continue  # no vector on the host: not a row
                md = unseal(dict(entry["m"]), rid, keys.get(rid)) if is_sealed(entry["m"]) else dict(entry["m"])
                out[f"{kb}/{rid}"] = (tuple(sorted(md.items())), str(entry.get("d") or ""))
    return out


def _ids_mds(fake: FakeHostHandler, kb: str) -> tuple[list[str], list[dict[str, Any]]]:
    if kb not in fake.knowledge_bases:
        return [], []
    rows = fake.vector_rows(kb)
    return rows["ids"], rows["metadatas"]


def full_storage(fake: FakeHostHandler) -> dict[str, bytes]:
    return dict(fake.storage)


def describe_diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    """A short human description of what differs between two :func:`data_state` snapshots."""
    out = []
    for part in ("vectors", "storage"):
        ka, kb = set(a[part]), set(b[part])
        if ka - kb:
            out.append(f"{part} only in first: {sorted(ka - kb)[:5]}")
        if kb - ka:
            out.append(f"{part} only in second: {sorted(kb - ka)[:5]}")
        changed = sorted(k for k in ka & kb if a[part][k] != b[part][k])
        if changed:
            out.append(f"{part} changed: {changed[:5]}")
    return "; ".join(out) or "identical"


# --------------------------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_KEY_LIKE = re.compile(r"^[a-z_]+(\.[a-z_]+)+$")


def assert_clear_message(text: Any, *, lang: str = "en_US") -> None:
    """A user-facing error: non-empty text, translated (not a bare locale key), fully formatted,
    never a traceback or a Python exception repr."""
    assert isinstance(text, str) and text.strip(), f"empty error message: {text!r}"
    assert "Traceback" not in text and 'File "' not in text, text
    assert not _KEY_LIKE.match(text.strip()), f"untranslated message key: {text!r}"
    assert text.strip() not in catalog(lang), f"untranslated message key: {text!r}"
    assert not _PLACEHOLDER.search(text), f"unformatted placeholder in {text!r}"


# --------------------------------------------------------------------------------------------
# the whole plugin, loaded by the SDK's own discovery and controller (as tests/test_plugin_smoke.py)
# --------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


async def load_plugin(fake: FakeHostHandler, config: dict[str, Any] | None = None) -> Any:
    """The plugin as the runtime loads it: manifest, component discovery, pages, controller."""
    from langbot_plugin.cli.run.controller import PluginRuntimeController
    from langbot_plugin.cli.utils.page_components import discover_plugin_components, populate_plugin_pages
    from langbot_plugin.utils.discover.engine import ComponentDiscoveryEngine

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        engine = ComponentDiscoveryEngine()
        manifest = engine.load_component_manifest(path="manifest.yaml", owner="builtin", no_save=True)
        comps = discover_plugin_components(manifest, engine)
        populate_plugin_pages(manifest, comps)
        ctl = PluginRuntimeController(manifest, comps, stdio=True, ws_debug_url="")
        ctl.handler = fake
        await ctl.initialize({"enabled": True, "priority": 0, "plugin_config": config or {}})
    finally:
        os.chdir(cwd)
    return ctl


def component(ctl: Any, kind: str, name: str) -> Any:
    for c in ctl.plugin_container.components:
        if c.manifest.kind == kind and c.manifest.metadata.name == name:
            return c.component_instance
    raise KeyError((kind, name))
