"""A :class:`~ltm.ports.ChatModel` over the LangBot host's ``invoke_llm`` (SDK §4.1).

The reply's ``content`` may be a string or a list of content elements; the text parts are joined.
Tool calls are never offered (``funcs=[]``), so a reply is text or nothing.
"""

from __future__ import annotations

from typing import Any

from langbot_plugin.api.entities.builtin.provider.message import Message

from ..ports import note_host_call


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def message_text(message: Any) -> str:
    """The text of a provider ``Message`` (or its dict form): a string, or the ``text`` parts of a
    content-element list joined. Anything else (a tool call, an image) yields ``""``."""
    content = _field(message, "content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [_field(e, "text") for e in content if _field(e, "type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


class HostChatModel:
    """Invokes a workspace LLM by UUID through the plugin's host connection."""

    name = "host"

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin

    async def complete(self, model_uuid: str, system: str, user: str, timeout: float) -> str:
        messages = [Message(role="system", content=system), Message(role="user", content=user)]
        note_host_call()
        reply = await self._plugin.invoke_llm(model_uuid, messages, [], {}, timeout)
        return message_text(reply)
