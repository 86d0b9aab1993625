"""Retention (issue 35): the plugin settings ``retention_days`` and ``audit_retention_days``, both
off (0) by default.

- ``retention_days``: an episode whose last sighting (its last restatement, ``extra.last_seen``,
  else when it was stored) is older is deleted, with the retire pipeline's writes and cascade, in
  an audited mutation by the actor ``retention`` (an operator: the setting is the operator's
  standing decision).
- ``audit_retention_days``: whole chunks of an audit log whose newest entry is older are deleted
  (:meth:`ltm.service.audit.AuditLog.drop_before`); the newest chunk and the numbering stay.

The sweep is a background job (:mod:`ltm.service.background`), so it runs inside the
installation's live calls like the other background work: :meth:`Retention.poke` (called by every
carried component call, ``components/background_calls.py``) submits it when it is due, at most once a day
(the time of the last sweep is kept in plugin storage, ``privacy/retention/last``, so a restart
does not sweep again) and checks that at most once an hour per process. The sweep stops at a
:func:`~ltm.service.background.checkpoint` between scopes when its carrier closes, and a later
call runs it again from the start (what it deleted stays deleted).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..domain.actors import Actor
from ..domain.filters import Criteria
from ..domain.keys import kb_part
from ..domain.models import Episode
from ..domain.scope import Scope, user_key_scope
from ..domain.storage_keys import parse_audit_log_key
from ..domain.timefields import to_iso, ts
from ..ports import KeyValueStore
from .audit import AuditLog
from .background import Background, checkpoint
from .settings import Settings
from .writes.errors import backend

log = logging.getLogger(__name__)

LAST_KEY = "privacy/retention/last"
SWEEP_EVERY = timedelta(days=1)
CHECK_EVERY_S = 3600.0
ACTOR = Actor(surface="retention", privilege=2, operator="retention")


class RetentionHost(Protocol):
    @property
    def kv(self) -> KeyValueStore: ...

    @property
    def audit(self) -> AuditLog: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def background(self) -> Background: ...

    async def erase_episodes(self, scope: Scope, ids: Sequence[str], actor: Actor, reason: str = "") -> int: ...

    async def known_kbs(self) -> list[str]: ...

    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]: ...


@dataclass
class Swept:
    episodes: int = 0
    audit_entries: int = 0
    ran: bool = False


def last_sighting(e: Episode) -> float:
    """When the episode was last said: its last restatement, else when it was stored."""
    return max(ts(e.timestamp, 0.0), ts(str(e.extra.get("last_seen") or ""), 0.0))


class Retention:
    def __init__(self, service: RetentionHost, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.service = service
        self.monotonic = monotonic
        self._next_check = 0.0

    def poke(self) -> asyncio.Future[Any] | None:
        """Submit the sweep when a retention setting is on and the hourly check is due (cheap: no
        I/O); its future, or None when nothing was submitted."""
        s = self.service.settings
        if not (s.retention_days or s.audit_retention_days) or self.monotonic() < self._next_check:
            return None
        self._next_check = self.monotonic() + CHECK_EVERY_S
        return self.service.background.submit("retention.sweep", self.sweep_if_due)

    async def sweep_if_due(self) -> Swept:
        raw = await backend(self.service.kv.get(LAST_KEY), "retention read")
        now = self.service.clock()
        if raw:
            last = ts(str(json.loads(raw).get("at") or ""), 0.0)
            if now.timestamp() - last < SWEEP_EVERY.total_seconds():
                return Swept()
        return await self.sweep()

    async def sweep(self) -> Swept:
        """One sweep now, whatever the time of the last one."""
        s = self.service.settings
        now = self.service.clock()
        done = Swept(ran=True)
        logs = await self.service.audit.logs()  # every scope ever written to has one
        if s.retention_days:
            cutoff = now.timestamp() - s.retention_days * 86400.0
            kbs = {kb_part(kb): kb for kb in await self.service.known_kbs()}
            for log_key in logs:
                kb_enc, user_key = parse_audit_log_key(log_key)
                kb = kbs.get(kb_enc)
                if not kb:
                    continue
                await checkpoint()
                scope = user_key_scope(kb, user_key)
                rows = await self.service.fetch(scope, Criteria(statuses=None, before_ts=cutoff))
                old = [e.id for e in rows if last_sighting(e) < cutoff]
                if old:
                    done.episodes += await self.service.erase_episodes(
                        scope, old, ACTOR, f"retention_days={s.retention_days}"
                    )
        if s.audit_retention_days:
            cutoff_iso = to_iso(now - timedelta(days=s.audit_retention_days))
            for log_key in logs:
                await checkpoint()
                done.audit_entries += await self.service.audit.drop_before(log_key, cutoff_iso)
        await backend(self.service.kv.set(LAST_KEY, json.dumps({"at": to_iso(now)}).encode()), "retention write")
        log.info("retention sweep: %d episodes, %d audit entries", done.episodes, done.audit_entries)
        return done
