"""The start of a turn's query embedding before its ``PromptPreProcessing`` hook (issue 38).

LangBot emits ``PersonMessageReceived`` for a private chat's message before its pipeline stages
run; the hook that recalls comes a stage later and first reads the query variables (one host round
trip the embedding does not need). What the plugin already knows is enough to start the embedding
of the chat's text: the text (the message's plain parts, as LangBot builds ``user_message_text``)
and the memory knowledge base that chat's last turn used (learnt by the hook; nothing is started for
a chat the plugin has not served yet). The recall then takes the started embedding
(:class:`ltm.service.prefetch.QueryEmbeddings`) instead of asking the host again; a wrong guess
costs one embedding and changes nothing else.

Where a host call may not outlive the call that makes it (an installed plugin: the SDK ends the
invocation with the handler), the message event only notes the text and the hook starts the
embedding first thing, alongside its read of the query variables. Group messages start nothing:
LangBot strips the group's trigger (a prefix, a mention) after this event, so the text differs.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from typing import Any

from langbot_plugin.api.proxies.invocation import invocation_capability

from ltm.service import neutralize

log = logging.getLogger(__name__)

CHATS = 4096  # chats whose last memory KB is remembered
NOTED = 512  # messages whose embedding waits for their hook to start it
# A diagnostics switch (``0``: never start early), e.g. to measure a turn without the head start.
ENV_SWITCH = "LTM_EARLY_QUERY_EMBEDDING"

_SKIPPED = {"Source", "At", "AtAll"}  # parts LangBot leaves out of ``user_message_text``


def plain_text(chain: Any) -> str | None:
    """The text LangBot makes of a message (its ``Plain`` parts joined); None when the message
    has parts that change it (images, files, quotes, voice), so no guess is made."""
    parts: list[str] = []
    for element in chain or ():
        kind = type(element).__name__
        if kind == "Plain":
            parts.append(str(getattr(element, "text", "") or ""))
        elif kind not in _SKIPPED:
            return None
    return "".join(parts)


class EarlyTurns:
    """Per plugin: each chat's last memory KB, and the messages whose embedding the hook starts."""

    def __init__(self, plugin: Any, chats: int = CHATS, noted: int = NOTED, enabled: bool | None = None) -> None:
        self._plugin = plugin
        self.enabled = os.environ.get(ENV_SWITCH, "1").strip() != "0" if enabled is None else enabled
        self._chats: OrderedDict[str, str] = OrderedDict()
        self._noted: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._bounds = (chats, noted)

    def learn(self, session_name: str, kb_id: str) -> None:
        """The hook resolved ``session_name``'s turn to ``kb_id`` ("" : none, forget it)."""
        if not session_name:
            return
        self._chats.pop(session_name, None)
        if kb_id:
            self._chats[session_name] = kb_id
            while len(self._chats) > self._bounds[0]:
                self._chats.popitem(last=False)

    def kb_of(self, session_name: str) -> str:
        return self._chats.get(session_name, "")

    def message(self, query_id: Any, launcher_type: str, launcher_id: Any, chain: Any) -> bool:
        """A private chat's message arrived: start (or note) its query embedding. True when started."""
        service = getattr(self._plugin, "service", None)
        kb = self.kb_of(f"{launcher_type}_{launcher_id}")
        if not (self.enabled and service is not None and kb and launcher_type == "person"):
            return False
        if not service.settings.auto_recall:
            return False
        raw = plain_text(chain)
        text = neutralize(raw) if raw else ""
        if not text.strip() or text.lstrip().startswith(("!", "！")):
            return False  # nothing to recall, or a command (the hook recalls nothing for it)
        if self._bound_to_call():
            if query_id is not None:
                self._noted[int(query_id)] = (kb, text)
                while len(self._noted) > self._bounds[1]:
                    self._noted.popitem(last=False)
            return False
        return service.registry.start_query_embedding(kb, text)

    def hook(self, query_id: Any) -> bool:
        """The turn's hook begins: start the embedding its message noted. True when started."""
        item = self._noted.pop(int(query_id), None) if query_id is not None else None
        service = getattr(self._plugin, "service", None)
        if item is None or service is None:
            return False
        return service.registry.start_query_embedding(*item)

    def _bound_to_call(self) -> bool:
        """Whether a host call made now ends with this handler's call (the installed package)."""
        try:
            return invocation_capability() is not None
        except RuntimeError:
            return True
