"""The LangBot side of consolidation: the chat model adapter and the one place that builds the
plugin's :class:`~ltm.service.consolidation.Consolidator`.

``host_chat_model(plugin, uuid)`` turns role/content dicts into SDK ``Message`` objects, calls
``plugin.invoke_llm`` (no tools, bounded timeout) and returns the answer text (``content`` may be a
string or a list of content elements: the text parts are joined).

``install_consolidation(plugin)`` is called once from ``LongTermMemory.initialize`` so the cascade
listener is registered before any memory is retired; command and console handlers reuse
``plugin.consolidator``.
"""

from __future__ import annotations

import logging
from typing import Any

from langbot_plugin.api.entities.builtin.provider.message import Message

from ltm.service.compose import wire
from ltm.service.consolidation import AnyModel, ChatModel, ConsolidationSettings, Consolidator

log = logging.getLogger(__name__)

MODEL_TIMEOUT_S = 60.0


def message_text(message: Any) -> str:
    """The text of a provider ``Message`` (or its dict form): a string, or the ``text`` parts of a
    content-element list joined. Anything else (a tool call, an image) yields ``""``."""
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for el in content:
            kind = el.get("type") if isinstance(el, dict) else getattr(el, "type", None)
            text = el.get("text") if isinstance(el, dict) else getattr(el, "text", None)
            if kind == "text" and isinstance(text, str):
                parts.append(text)
        return "".join(parts)
    return ""


def host_chat_model(plugin: Any, model_uuid: str, *, timeout: float = MODEL_TIMEOUT_S) -> ChatModel:
    """A :class:`ChatModel` over ``plugin.invoke_llm`` for the host model ``model_uuid``."""

    async def call(messages: list[dict[str, str]]) -> str:
        msgs = [Message(role=m["role"], content=m["content"]) for m in messages]
        reply = await plugin.invoke_llm(model_uuid, msgs, [], {}, timeout=timeout)
        return message_text(reply)

    return call


def _config(plugin: Any) -> dict[str, Any]:
    get = getattr(plugin, "get_config", None)
    try:
        conf = get() if callable(get) else getattr(plugin, "config", None)
    except Exception as exc:  # a broken config reads as the defaults (consolidation disabled)
        log.warning("plugin config unreadable for consolidation: %s", exc)
        return {}
    return dict(conf) if isinstance(conf, dict) else {}


def install_consolidation(plugin: Any, model: AnyModel | None = None) -> Consolidator:
    """Create ``plugin.consolidator`` over ``plugin.service`` (once). Settings are read live from
    the plugin config (``consolidation_*`` items). The model is ``model`` when given (e.g. the shared
    ``ltm.adapters.host_chat.HostChatModel(plugin)``, which main.py may import), else the host model
    of ``consolidation_model_uuid`` through :func:`host_chat_model`."""
    existing = getattr(plugin, "consolidator", None)
    if isinstance(existing, Consolidator) and existing.service is plugin.service:
        return existing
    consolidator = Consolidator(
        plugin.service,
        model,
        settings=lambda: ConsolidationSettings.from_config(_config(plugin)),
        model_for=None if model is not None else (lambda uuid: host_chat_model(plugin, uuid)),
    )
    plugin.consolidator = consolidator
    wire(plugin.service, review=getattr(plugin, "review", None), consolidator=consolidator)
    return consolidator
