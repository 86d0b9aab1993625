"""Injection snapshots: what the last turn of a scope injected, kept for the console's Last Injection.

One record per scope (plugin storage :func:`ltm.domain.scope.inject_key`), overwritten each turn.
It is a record of what was shown, not memory: it is not journaled or audited.
"""

from __future__ import annotations

import json
from typing import Any

from ..domain.scope import Scope, inject_key
from .writes.engine import WriteEngine


class InjectionSnapshots:
    def __init__(self, writes: WriteEngine) -> None:
        self.writes = writes

    async def save_injection(self, scope: Scope, snapshot: dict[str, Any]) -> None:
        # the readable identity stays in the record (a very long id is shortened in the key)
        record = {**snapshot, "owner": {"session_name": scope.session_name, "bot_uuid": scope.bot_uuid}}
        await self.writes.kv.set(inject_key(scope), json.dumps(record, ensure_ascii=False).encode("utf-8"))

    async def last_injection(self, scope: Scope) -> dict[str, Any] | None:
        raw = await self.writes.kv.get(inject_key(scope))
        return json.loads(raw) if raw else None
