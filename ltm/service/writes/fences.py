"""Write fences: a write scope whose last write had an unknown outcome refuses further writes
until a person clears it, because a late write could still land.

A fence is plugin storage ``fence/<lock key>`` (UTF-8 JSON ``{"lock_key", "operation",
"dispatched_at", "detail", "scope"}``), loaded once per process and kept in memory after.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ...domain.errors import FencedError
from ...domain.keys import kb_part
from ...domain.scope import Scope
from ...domain.storage_keys import FENCE_PREFIX, parse_lock_key, scope_fence_keys
from ...domain.timefields import to_iso
from .actor import Actor
from .errors import backend
from .records import scope_of_record
from .stores import Stores

log = logging.getLogger(__name__)


class Fences:
    """The fenced write scopes of one installation (lock key -> fence record)."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores
        self._fences: dict[str, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ fences
    async def _load_fences(self) -> dict[str, dict[str, Any]]:
        if self._fences is None:
            fences: dict[str, dict[str, Any]] = {}
            for key in await backend(self.stores.kv.keys(FENCE_PREFIX), "storage read"):
                raw = await backend(self.stores.kv.get(key), "storage read")
                if raw:
                    fences[key[len(FENCE_PREFIX) :]] = json.loads(raw)
            self._fences = fences
        return self._fences

    async def fences(self) -> dict[str, dict[str, Any]]:
        """Every fenced write scope of this installation: lock key -> fence record."""
        return dict(await self._load_fences())

    async def fence_of(self, lock_key: str) -> dict[str, Any] | None:
        return (await self._load_fences()).get(lock_key)

    async def check_fence(self, lock_key: str) -> None:
        """Refuse a write to a fenced write scope."""
        fence = await self.fence_of(lock_key)
        if fence is not None:
            raise FencedError(
                f"writes to {lock_key} are fenced since {fence.get('dispatched_at')}",
                key="error.fenced",
                operation=str(fence.get("operation")),
                at=str(fence.get("dispatched_at")),
            )

    async def set_fence(self, lock_key: str, scope: Scope, operation: str, detail: str) -> None:
        """Fence a write scope (this process refuses at once; the record persists for the others)."""
        record = {
            "lock_key": lock_key,
            "operation": operation,
            "dispatched_at": to_iso(self.stores.clock()),
            "detail": detail[:300],
            "scope": scope.describe(),
        }
        (await self._load_fences())[lock_key] = record
        try:
            await self.stores.kv.set(FENCE_PREFIX + lock_key, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            await self.stores.audit(
                scope, Actor(surface="system"), "fence.set", [lock_key], f"fenced after {operation}", detail[:300]
            )
        except Exception as exc:  # the in-memory fence still holds for this process
            log.error("could not persist the fence of %s: %s", lock_key, exc)
        log.warning("write fence set on %s after %s: %s", lock_key, operation, detail)

    async def clear_fence(self, lock_key: str, actor: Actor, reason: str = "") -> bool:
        """Lift one fence (the console's Clear Fence). Audited. Returns whether one was set."""
        fence = await self.fence_of(lock_key)
        if fence is None:
            return False
        await self.stores.kv.delete(FENCE_PREFIX + lock_key)
        (await self._load_fences()).pop(lock_key, None)
        scope_d = dict(fence.get("scope") or {})
        if scope_d:
            scope = scope_of_record(scope_d)
            await self.stores.audit(scope, actor, "fence.clear", [lock_key], "write fence cleared", reason)
        log.info("write fence cleared on %s by %s", lock_key, actor.surface)
        return True

    async def scope_fences(self, scope: Scope) -> dict[str, dict[str, Any]]:
        """The fences that concern one scope: its L2 fence in its KB and its profiles' L1 fences."""
        fences = await self._load_fences()
        return {k: fences[k] for k in scope_fence_keys(scope, fences)}

    async def clear_scope_fences(self, scope: Scope, actor: Actor, reason: str = "") -> int:
        """Clear the L2 fence of a scope in its KB and the L1 fences of its profiles."""
        return sum([await self.clear_fence(k, actor, reason) for k in await self.scope_fences(scope)])

    async def clear_kb_fences(self, kb_id: str, actor: Actor, reason: str = "") -> int:
        kb = kb_part(kb_id)
        keys = [k for k in await self._load_fences() if (p := parse_lock_key(k)) and p.layout == "l2" and p.kb == kb]
        return sum([await self.clear_fence(k, actor, reason) for k in keys])
