"""L1 profiles: one JSON record per session and per speaker, injected in the system prompt.

A profile changes by a validated patch (:func:`ltm.domain.models.apply_profile_patch`) in one
storage write under the profile's own lock (``l1:<profile key>``), audited in its scope's log: a
:class:`ProfilePlan`, which a neighbour (the review queue) may extend before its one commit.
Who may edit which profile is :func:`ltm.domain.privilege.may_edit_profile`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ..domain import privilege as policy
from ..domain.errors import PermissionDenied, ValidationError
from ..domain.keys import key_part_value
from ..domain.models import Profile, apply_profile_patch, validate_profile_patch
from ..domain.scope import Scope
from ..domain.storage_keys import (
    PROFILE_PREFIX,
    l1_lock_key,
    parse_storage_key,
    profile_storage_key,
    scope_owns,
    session_profile_key,
    speaker_profile_key,
)
from ..domain.timefields import to_iso
from . import content_gate as gate
from .consent import require_consent
from .settings import Settings
from .writes.actor import Actor, caller_of
from .writes.engine import WriteEngine
from .writes.errors import backend
from .writes.plan import Plan, PlanError

log = logging.getLogger(__name__)


def profile_key(scope: Scope, kind: str, sender_id: str = "") -> str:
    """The key of the session profile, or of ``sender_id``'s speaker profile, of this scope."""
    if kind == "session":
        return session_profile_key(scope)
    if kind == "speaker":
        if not sender_id:
            raise ValidationError("speaker profile needs a sender id", key="error.no_sender")
        return speaker_profile_key(scope, sender_id)
    raise ValidationError("target: session or speaker", key="error.profile_target", value=str(kind))


class Profiles:
    def __init__(self, writes: WriteEngine, settings: Callable[[], Settings]) -> None:
        self.writes = writes
        self._settings = settings

    async def get_profile(self, scope: Scope, kind: str, sender_id: str = "") -> Profile:
        key = profile_key(scope, kind, sender_id)
        raw = await backend(self.writes.kv.get(profile_storage_key(key)), "profile read")
        data = json.loads(raw) if raw else {}
        profile = Profile.from_dict(data, kind, key)
        if kind == "speaker":
            profile.sender_id = sender_id
        return profile

    def plan_update(self, scope: Scope, patch_raw: dict[str, Any], actor: Actor) -> ProfilePlan:
        """The plan that applies a validated patch to a session or speaker profile (validated and
        allowed now, before any lock): see :class:`ProfilePlan`."""
        raw = dict(patch_raw or {})
        target = str(raw.get("target") or "speaker")
        patch = gate.screen_profile_patch(validate_profile_patch(raw))  # redacted, or refused
        sender = scope.sender_id or actor.sender_id
        key = profile_key(scope, target, sender)
        s = self._settings()
        members = s.members_edit_group_profile
        if not policy.may_edit_profile(
            caller_of(actor, s), target, group=scope.is_group, members_edit_group_profile=members
        ):
            raise PermissionDenied("the group profile needs a memory admin", key="policy.error.group_profile")
        return ProfilePlan(self.writes, s, scope, actor, target, key, sender, patch)

    async def update_profile(self, scope: Scope, patch_raw: dict[str, Any], actor: Actor) -> Profile:
        """Apply a validated patch to a session or speaker profile (one storage write)."""
        plan = self.plan_update(scope, patch_raw, actor)
        async with plan:
            await plan.commit()
        return plan.profile

    async def speaker_profiles(self, scope: Scope) -> list[Profile]:
        """The speaker profiles of this scope (exact owner check on every key)."""
        kv = self.writes.kv
        out = []
        for k in sorted(await kv.keys(profile_storage_key(scope.user_key + "#"))):
            parsed = parse_storage_key(k)
            if parsed is None or parsed.layout != "profile.speaker" or not scope_owns(scope, parsed):
                continue
            raw = await kv.get(k)
            if raw:
                p = Profile.from_dict(json.loads(raw), "speaker", k[len(PROFILE_PREFIX) :])
                p.sender_id = p.sender_id or key_part_value(parsed.tail) or ""
                out.append(p)
        return out


class ProfilePlan(Plan):
    """The plan of one profile update, under the profile's own lock (``async with plan:``).
    :meth:`settle` reads the profile and builds its one storage write (:attr:`profile` is the
    profile as it will be); a neighbour may add its own steps (the review queue's candidate
    record), which commit with it, all or nothing."""

    def __init__(
        self,
        writes: WriteEngine,
        settings: Settings,
        scope: Scope,
        actor: Actor,
        target: str,
        key: str,
        sender: str,
        patch: dict[str, Any],
    ) -> None:
        super().__init__(writes, actor, "profile.update", [l1_lock_key(key)])
        self.engine: WriteEngine = writes
        self.settings = settings
        self.scope, self.target, self.key, self.sender, self.patch = scope, target, key, sender, patch
        self._profile: Profile | None = None

    @property
    def profile(self) -> Profile:
        if self._profile is None:
            raise PlanError("profile.update: the plan is not settled")
        return self._profile

    async def settle(self) -> Profile:
        """Read the profile under its lock (refused when fenced) and plan its write (once)."""
        self.require_held()
        if self._profile is not None:
            return self._profile
        lock_key, skey = l1_lock_key(self.key), profile_storage_key(self.key)
        if self.target == "speaker":  # an opted-out person's profile is not updated (issue 35)
            await require_consent(self.engine.kv, self.scope.bot_uuid, self.sender)
        await self.engine.fencing.check_fence(lock_key)
        old = await backend(self.engine.kv.get(skey), "profile read")
        current = Profile.from_dict(json.loads(old) if old else {}, self.target, self.key)
        if self.target == "speaker":
            current.sender_id = self.sender  # the readable id: the key may hold a shortened one
        s = self.settings
        updated = apply_profile_patch(
            current,
            self.patch,
            max_traits=s.max_profile_traits,
            max_preferences=s.max_profile_preferences,
            updated_at=to_iso(self.engine.clock()),
        )
        scope = self.scope
        record = {**updated.to_dict(), "owner": {"session_name": scope.session_name, "bot_uuid": scope.bot_uuid}}
        payload = json.dumps(record, ensure_ascii=False).encode("utf-8")
        audit = ([self.key], f"{self.target} profile updated")
        self.add(self.engine.kv_step(scope, "profile.update", skey, payload, old, audit=audit, lock_key=lock_key))
        self._profile = updated
        return updated

    async def commit(self) -> None:
        await self.settle()
        await super().commit()
        log.info("profile updated: %s", self.key)
