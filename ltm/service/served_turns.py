"""Which chats the listener's memory block has just served, so the engine does not serve them again.

A runner retrieves its knowledge bases after ``PromptPreProcessing``: when the memory KB is one of
them, the same memories would reach the model twice, once in the escaped, trust-marked block and
once as plain knowledge results. The host tells the engine the chat's identity (session, bot,
sender) but not the query, so the listener marks that identity when it has recalled for it, and
the engine's ``retrieve`` answers nothing for a marked identity within a short window. Where the
listener did not recall (auto-recall off, a command, another plugin's turn), no mark is left and
the engine serves the runner as any knowledge base would.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

WINDOW_S = 120.0
MAX_ENTRIES = 4096

Identity = tuple[str, str, str, str]


def identity(kb_id: str, session_name: str, bot_uuid: str, sender_id: str) -> Identity:
    return (str(kb_id or ""), str(session_name or ""), str(bot_uuid or ""), str(sender_id or ""))


class ServedTurns:
    """A bounded, process-local map of identity -> when the listener last recalled for it."""

    def __init__(
        self, window_s: float = WINDOW_S, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window_s = window_s
        self.max_entries = max_entries
        self._clock = clock
        self._marks: OrderedDict[Identity, float] = OrderedDict()

    def mark(self, who: Identity) -> None:
        self._marks.pop(who, None)
        self._marks[who] = self._clock()
        while len(self._marks) > self.max_entries:
            self._marks.popitem(last=False)

    def clear(self, who: Identity) -> None:
        self._marks.pop(who, None)

    def served(self, who: Identity) -> bool:
        at = self._marks.get(who)
        if at is None:
            return False
        if self._clock() - at > self.window_s:
            del self._marks[who]
            return False
        return True

    def __len__(self) -> int:
        return len(self._marks)
