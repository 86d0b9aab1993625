"""The ports of the service's neighbours: what the review queue, consolidation, transfer and the
health probe each use of the service, and nothing else.

Each neighbour is typed by its host protocol here, not by :class:`~.memory_service.MemoryService`
or the write engine, so what it may reach is written down in one place and the import graph shows
no neighbour depending on the façade. A ``MemoryService`` satisfies every host structurally;
``tests/unit/test_neighbour_ports.py`` holds each protocol equal to what its neighbour really uses
(nothing missing, nothing unused).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from ..domain.filters import Criteria
from ..domain.models import Episode, EpisodeInput, Profile
from ..domain.scope import Scope
from ..ports import KeyValueStore, VectorIndex
from .block_renderer import BlockRenderer
from .episodes import RememberPlan
from .locks import ScopeLocks
from .profiles import ProfilePlan
from .registry import EmbedderFor, KbSettings
from .settings import Settings
from .snapshots import InjectionSnapshot
from .writes.actor import Actor
from .writes.expectations import Expectation
from .writes.plan import WriteStep
from .writes.reads import Reader


class ServiceContext(Protocol):
    """The clock, settings and locks of the service (read-only: parts are joined once, at build)."""

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def locks(self) -> ScopeLocks: ...


class Mutate(Protocol):
    """The one journaled, audited mutation."""

    async def mutate(
        self,
        actor: Actor,
        operation: str,
        steps: Sequence[WriteStep],
        *,
        reason: str = "",
        verify: Callable[[], Awaitable[Any]] | None = None,
    ) -> None: ...


class Mutations(Mutate, Protocol):
    """The mutation and the storage step a neighbour's records are written with."""

    def kv_step(
        self,
        scope: Scope,
        operation: str,
        key: str,
        new: bytes | None,
        old: bytes | None,
        *,
        audit: tuple[list[str], str] | None = None,
        audit_op: str = "",
        expect: list[Expectation] | None = None,
        lock_key: str | None = None,
    ) -> WriteStep: ...


class ReviewWrites(Mutations, Protocol):
    async def kv_put(self, lock_key: str, scope: Scope, operation: str, key: str, value: bytes | None) -> None: ...


class Audited(Protocol):
    async def audit(
        self,
        scope: Scope,
        actor: Actor,
        operation: str,
        targets: Sequence[str],
        summary: str,
        reason: str = "",
        op_id: str = "",
    ) -> None: ...


class ConsolidationWrites(Mutations, Audited, Protocol):
    @property
    def kv(self) -> KeyValueStore: ...

    @property
    def locks(self) -> ScopeLocks: ...

    @property
    def reads(self) -> Reader: ...

    def rewrite_step(
        self,
        scope: Scope,
        updated: Sequence[Episode],
        originals: Sequence[Episode],
        operation: str,
        expect: list[Expectation],
        audit: tuple[list[str], str] | None,
        *,
        audit_op: str = "",
    ) -> WriteStep: ...

    def restore_step(self, scope: Scope, episodes: Sequence[Episode], cause: str, operation: str) -> WriteStep: ...


class TransferWrites(Mutate, Audited, Protocol):
    async def upsert(
        self, scope: Scope, episodes: Sequence[Episode], operation: str = "vector write", *, fence_check: bool = True
    ) -> None: ...

    def new_row_steps(
        self,
        scope: Scope,
        episodes: Sequence[Episode],
        operation: str,
        audit: tuple[list[str], str] | None,
        chunk_size: int | None = None,
    ) -> list[WriteStep]: ...


class HealthWrites(Protocol):
    @property
    def readback_delays(self) -> tuple[float, ...]: ...


class EpisodePlans(Protocol):
    def plan_remember(
        self, scope: Scope, raw: dict[str, Any], actor: Actor, *, origin: str = "tool", said_at: str | None = None
    ) -> RememberPlan: ...


class DerivedEpisodes(EpisodePlans, Protocol):
    async def delete_derived(self, scope: Scope, ids: Sequence[str], actor: Actor, reason: str) -> int: ...


class ProfilePlans(Protocol):
    def plan_update(self, scope: Scope, patch_raw: dict[str, Any], actor: Actor) -> ProfilePlan: ...


class Reads(Protocol):
    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]: ...


class Profiles(Protocol):
    async def get_profile(self, scope: Scope, kind: str, sender_id: str = "") -> Profile: ...


class Storage(Protocol):
    @property
    def kv(self) -> KeyValueStore: ...


class ReviewHost(ServiceContext, Storage, Reads, Profiles, Protocol):
    """What the review queue (queue, candidates, tombstones) uses."""

    @property
    def writes(self) -> ReviewWrites: ...

    @property
    def episodes(self) -> EpisodePlans: ...

    @property
    def profiles(self) -> ProfilePlans: ...

    async def scope_for(
        self,
        *,
        kb_id: str,
        session_name: str | None = None,
        launcher_type: str | None = None,
        launcher_id: str | None = None,
        bot_uuid: str | None = None,
        sender_id: str | None = None,
    ) -> Scope: ...


class ConsolidationHost(ServiceContext, Storage, Reads, Protocol):
    """What consolidation (the run and its proposals) uses."""

    @property
    def writes(self) -> ConsolidationWrites: ...

    @property
    def episodes(self) -> DerivedEpisodes: ...

    async def kb_settings(self, kb_id: str) -> KbSettings | None: ...


class TransferHost(ServiceContext, Reads, Profiles, Protocol):
    """What export and import use."""

    @property
    def writes(self) -> TransferWrites: ...

    async def screen_statement(self, scope: Scope, data: EpisodeInput, actor: Actor, origin: str) -> None: ...

    async def speaker_profiles(self, scope: Scope) -> list[Profile]: ...


class HealthHost(Protocol):
    """What the setup checks and the isolation probe use."""

    @property
    def settings(self) -> Settings: ...

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def embedder_for(self) -> EmbedderFor: ...

    @property
    def writes(self) -> HealthWrites: ...

    @property
    def block_renderer(self) -> BlockRenderer: ...

    async def kb_settings(self, kb_id: str) -> KbSettings | None: ...

    async def last_injection(self, scope: Scope) -> InjectionSnapshot | None: ...
