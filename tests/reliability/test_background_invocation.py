"""Background work under the SDK's invocation scope, the way the installed package runs.

When LangBot runs the plugin from its ``.lbpkg`` the runtime sends an ``InstallationBinding`` with every
action and the SDK runs the action inside ``bind_invocation`` (``cli/run/handler.py
action_invocation_scope``); the invocation is marked inactive when the action ends, and every host call
made afterwards from a task the action started fails (``RuntimeError: ... invocation has ended``). These
tests run the plugin under that scope: the SDK's own ``PluginRuntimeHandler.action_invocation_scope``
(dedicated path: the first ``INITIALIZE_PLUGIN`` binds the worker; shared path: ``ATTACH_PLUGIN_SLOT``
and a slot per installation) and the SDK's own ``bind_invocation``, over the host fake. They show that
the journal recovery started by ``initialize`` and the recall snapshot a write schedules reach the host
(carried by a live call, ``ltm/service/background.py``), and that a revoked installation's work stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest
from langbot_plugin.api.entities.builtin.provider.session import Session
from langbot_plugin.api.proxies.invocation import current_invocation
from langbot_plugin.cli.run.handler import PluginRuntimeHandler
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction as A
from langbot_plugin.entities.io.actions.enums import RuntimeToPluginAction as R
from langbot_plugin.entities.io.context import InstallationBinding

from ltm.service import index_snapshot
from ltm.service.writes import JOURNAL_PREFIX
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import ROOT, component

BOT = "bot-installed"
SESSION = Session(launcher_type="person", launcher_id="u1", sender_id="u1", bot_uuid=BOT)
KB = "kb-installed"
VARS = {"launcher_type": "person", "launcher_id": "u1", "sender_id": "u1"}


class InstalledHost(FakeHostHandler):
    """The host fake plus the SDK worker's invocation scope: ``action_invocation_scope`` is the SDK's own
    method (``PluginRuntimeHandler``), run over this handler's binding and shared slots."""

    action_invocation_scope = PluginRuntimeHandler.action_invocation_scope

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._bound_action_context: InstallationBinding | None = None  # what Handler.__init__ sets
        self._slot_containers: dict[str, Any] = {}  # PluginRuntimeHandler's shared slots
        self.plugin_container: Any = None

    @contextlib.contextmanager
    def action(self, name: R, binding: InstallationBinding) -> Iterator[None]:
        """One runtime-to-plugin action: the scope the SDK's dispatcher enters around its handler."""
        with self.action_invocation_scope(name.value, binding):
            yield


def make_binding(fake: FakeHostHandler, n: int = 1) -> InstallationBinding:
    return InstallationBinding(
        instance_uuid=fake.instance_uuid,
        workspace_uuid=f"00000000-0000-4000-8000-00000000000{n}",
        installation_uuid=f"20000000-0000-4000-8000-00000000000{n}",
        runtime_revision=1,
        artifact_digest="1" * 64,
    )


async def controller(fake: InstalledHost) -> Any:
    """The plugin as the runtime loads it (manifest, components, controller), not yet initialized."""
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
    finally:
        os.chdir(cwd)
    ctl.handler = fake
    fake.plugin_container = ctl.plugin_container
    return ctl


async def start_dedicated(fake: InstalledHost, binding: InstallationBinding, config: dict[str, Any]) -> Any:
    """A dedicated worker of an installed package: ``INITIALIZE_PLUGIN`` arrives with the binding."""
    ctl = await controller(fake)
    with fake.action(R.INITIALIZE_PLUGIN, binding):
        await ctl.initialize({"enabled": True, "priority": 0, "plugin_config": config})
    return ctl


def journal_keys(store: dict[str, bytes]) -> list[str]:
    return [k for k in store if k.startswith(JOURNAL_PREFIX)]


def snapshot_keys(store: dict[str, bytes]) -> list[str]:
    return [k for k in store if k.startswith(index_snapshot.PREFIX) and k.endswith("/snap")]


async def remember(ctl: Any, fake: InstalledHost, binding: InstallationBinding, text: str) -> dict[str, Any]:
    with fake.action(R.CALL_TOOL, binding):
        return await component(ctl, "Tool", "remember").call({"content": text}, SESSION, 1)


async def recall(ctl: Any, fake: InstalledHost, binding: InstallationBinding | None, query: str) -> list[str]:
    """``recall_memory``: builds the chat's recall index, whose snapshot is then due."""
    with fake.action(R.CALL_TOOL, binding) if binding is not None else contextlib.nullcontext():
        res = await component(ctl, "Tool", "recall_memory").call({"query": query}, SESSION, 1)
    return [e["content"] for e in res["episodes"]]


async def setup_kb(ctl: Any, fake: InstalledHost, binding: InstallationBinding) -> None:
    fake.add_knowledge_base(KB)
    fake.add_query(1, VARS, bot_uuid=BOT, pipeline_kbs=[KB])
    with fake.action(R.ON_KB_CREATE, binding):
        await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})


async def leave_journal_open(fake: InstalledHost, binding: InstallationBinding) -> dict[str, bytes]:
    """A remember whose journal entry the host refuses to close (its delete answers an error): the
    memory is stored and acknowledged, the entry stays for the next start's recovery."""
    ctl = await start_dedicated(fake, binding, {})
    await setup_kb(ctl, fake, binding)
    store = fake.installation_storage[binding.installation_uuid]
    real = fake.call_action

    async def refuse_journal_close(action: A, data: dict[str, Any], *a: Any, **kw: Any) -> dict:
        if action is A.DELETE_PLUGIN_STORAGE and str(data.get("key", "")).startswith(JOURNAL_PREFIX):
            from langbot_plugin.entities.io.errors import ActionCallError

            raise ActionCallError("ActionCallError: refused")
        return await real(action, data, *a, **kw)

    fake.call_action = refuse_journal_close  # type: ignore[method-assign]
    try:
        out = await remember(ctl, fake, binding, "My bike is the green one")
    finally:
        del fake.call_action
    assert out["ok"], out
    assert journal_keys(store), "the refused close must leave the journal entry open"
    return store


# ---------------------------------------------------------------------------------------- dedicated


async def test_installed_restart_settles_the_journal_left_open(caplog: pytest.LogCaptureFixture) -> None:
    fake = InstalledHost(bots=[BOT])
    binding = make_binding(fake)
    store = await leave_journal_open(fake, binding)

    # the plugin restarts (a config change starts a new worker): the same storage, a new process
    fresh = InstalledHost(bots=[BOT], instance_uuid=fake.instance_uuid, workspace_uuid=fake.workspace_uuid)
    fresh.installation_storage, fresh.knowledge_bases = fake.installation_storage, fake.knowledge_bases
    fresh._chroma, fresh._collections = fake._chroma, fake._collections  # the host's vector store stays
    with caplog.at_level(logging.WARNING):
        ctl = await start_dedicated(fresh, binding, {})
        await asyncio.sleep(0.3)  # past the end of INITIALIZE_PLUGIN: only carried work can reach the host
    assert not journal_keys(store), f"journal left open after the restart: {journal_keys(store)}"
    assert "recovery of half-finished operations failed" not in caplog.text
    assert "(episode.remember): applied" in caplog.text  # completed: its audit entry was owed
    # the settled operation was audited once by recovery, and the memory answers
    fresh.add_query(1, VARS, bot_uuid=BOT, pipeline_kbs=[KB])
    assert await recall(ctl, fresh, binding, "bike") == ["My bike is the green one"]


async def test_installed_write_writes_its_recall_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    fake = InstalledHost(bots=[BOT])
    binding = make_binding(fake)
    ctl = await start_dedicated(fake, binding, {})
    await setup_kb(ctl, fake, binding)
    store = fake.installation_storage[binding.installation_uuid]
    with fake.action(R.CALL_TOOL, binding):
        plugin = component(ctl, "Tool", "remember").plugin
        plugin.service.writes.index.snapshot_delay = 0.05
    with caplog.at_level(logging.WARNING):
        assert (await remember(ctl, fake, binding, "I park on level 3"))["ok"]
        assert await recall(ctl, fake, binding, "park") == ["I park on level 3"]
        await asyncio.sleep(0.3)  # longer than the snapshot delay
    assert "invocation has ended" not in caplog.text, caplog.text
    assert snapshot_keys(store), f"no recall snapshot written: {sorted(store)}"


async def test_a_positive_control_debug_attach_sends_no_binding() -> None:
    """Debug attach (``lbp run``): no binding, no invocation; background work is free, as before."""
    fake = InstalledHost(bots=[BOT])
    ctl = await controller(fake)
    await ctl.initialize({"enabled": True, "priority": 0, "plugin_config": {}})
    await setup_kb_unbound(ctl, fake)
    plugin = component(ctl, "Tool", "remember").plugin
    plugin.service.writes.index.snapshot_delay = 0.05
    out = await component(ctl, "Tool", "remember").call({"content": "I park on level 3"}, SESSION, 1)
    assert out["ok"]
    assert await recall(ctl, fake, None, "park") == ["I park on level 3"]
    await asyncio.sleep(0.3)
    assert snapshot_keys(fake.storage)


async def setup_kb_unbound(ctl: Any, fake: InstalledHost) -> None:
    fake.add_knowledge_base(KB)
    fake.add_query(1, VARS, bot_uuid=BOT, pipeline_kbs=[KB])
    await component(ctl, "KnowledgeEngine", "memory_engine").on_knowledge_base_create(KB, {"embedding_model": "e"})


# ---------------------------------------------------------------------------------------- shared slots


async def attach(ctl: Any, fake: InstalledHost, binding: InstallationBinding, config: dict[str, Any]) -> Any:
    """``ATTACH_PLUGIN_SLOT``: the SDK handler's attach path (controller ``initialize_slot``)."""
    with fake.action(R.ATTACH_PLUGIN_SLOT, binding):
        slot = await ctl.initialize_slot(binding, {"enabled": True, "priority": 0, "plugin_config": config})
    fake._slot_containers[binding.installation_uuid] = slot
    return slot


async def test_shared_slot_write_writes_its_recall_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    fake = InstalledHost(bots=[BOT])
    fake._bound_action_context = make_binding(fake, 9)  # the shared worker's own binding
    ctl = await controller(fake)
    binding = make_binding(fake, 2)
    await attach(ctl, fake, binding, {"language": "en_US"})
    await setup_kb(ctl, fake, binding)
    store = fake.installation_storage[binding.installation_uuid]
    with fake.action(R.CALL_TOOL, binding):
        component(ctl, "Tool", "remember").plugin.service.writes.index.snapshot_delay = 0.05
    with caplog.at_level(logging.WARNING):
        assert (await remember(ctl, fake, binding, "The spare key is under the mat"))["ok"]
        assert await recall(ctl, fake, binding, "spare key") == ["The spare key is under the mat"]
        await asyncio.sleep(0.3)
    assert "invocation has ended" not in caplog.text, caplog.text
    assert snapshot_keys(store), f"no recall snapshot written: {sorted(store)}"


async def test_shared_slot_revoked_installation_runs_no_more_work() -> None:
    fake = InstalledHost(bots=[BOT])
    fake._bound_action_context = make_binding(fake, 9)
    ctl = await controller(fake)
    binding = make_binding(fake, 3)
    await attach(ctl, fake, binding, {})
    await setup_kb(ctl, fake, binding)
    with fake.action(R.CALL_TOOL, binding):
        plugin = component(ctl, "Tool", "remember").plugin
        state = plugin.state()
        background = state.service.background
        ran: list[Any] = []

        async def job() -> None:
            ran.append(current_invocation(fake))

        fut = background.submit("probe", job)
    # queued under an invocation that has ended: nothing runs it outside a live call
    await asyncio.sleep(0.1)
    assert ran == [] and not fut.done()
    await plugin.on_installation_revoked(binding)  # the runtime's detach hook
    assert fut.cancelled()
    with fake.action(R.CALL_TOOL, binding):  # the installation's next call builds a fresh state
        assert plugin.state() is not state
    await asyncio.sleep(0.1)
    assert ran == []
    # positive control: the same job on a live installation runs inside that installation's call
    with fake.action(R.CALL_TOOL, binding):
        live = plugin.state().service.background
        fut2 = live.submit("probe", job)
        async with live.carrying(1.0):
            pass
    assert fut2.done() and len(ran) == 1 and ran[0] is not None and ran[0].binding == binding


def _dump(store: dict[str, bytes]) -> str:  # for failure messages
    return json.dumps(sorted(store))
