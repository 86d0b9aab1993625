"""People's rights over their own memory (issue 35): see it, erase it, object to it.

- :meth:`People.holdings`: what the memory holds that one person said, in every chat of one bot
  (groups included) and every memory knowledge base: their speaker profiles and their episodes
  (every status), each with its id and chat; never another person's. ``!memory me`` asks it for
  the speaker, in their private chat only; the console's People panel for anyone (an admin verb).
- :meth:`People.forget_me_code` / :meth:`People.forget_me`: a short code bound to the person, valid
  :data:`FORGET_ME_TTL_S`, then :meth:`People.erase` of everything they said: episodes (through
  :func:`erase_episodes`, read back as gone from the vector store), speaker profiles, the text of
  their review candidates, the reasons of tombstones they decided or whose value is theirs (the
  hash stays: the value stays refused). Audit entries name ids and counts, never text. Memories
  other people said stay.
- :meth:`People.set_opt_out`: while a person is opted out nothing they say is stored (the gate is
  :func:`ltm.service.consent.require_consent`, asked by every write of a statement).

Scopes of a bot: in ``bot`` isolation one per knowledge base; in ``session`` isolation the sessions
of that bot the stores name (:func:`ltm.service.known_scopes.known_scopes`, at most
``MAX_SCOPES``) and the person's private chat. Each is read as the operator (every audience),
filtered to the person's own ``sender_id``.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..domain.errors import NotFoundError, ScopeError, ValidationError
from ..domain.filters import Criteria
from ..domain.keys import check_id
from ..domain.models import Episode, Profile
from ..domain.scope import Scope
from ..domain.storage_keys import audit_log_key, l1_lock_key, l2_lock_key, profile_storage_key, speaker_profile_key
from ..domain.timefields import to_iso
from ..ports import KeyValueStore
from .audit import AuditLog
from .consent import is_opted_out, optout_key
from .known_scopes import KnownScopes
from .locks import ScopeLocks
from .settings import KbSettings, Settings
from .writes import Actor, WriteEngine, WriteStep, backend, require_admin

log = logging.getLogger(__name__)

FORGET_ME_TTL_S = 300.0  # a confirmation code is valid this long
CODE_DIGITS = 6
ERASE_REASON = "erased on the person's request"


class PeopleHost(Protocol):
    """What :class:`People` uses of the service."""

    @property
    def writes(self) -> WriteEngine: ...

    async def erase_episodes(self, scope: Scope, ids: Sequence[str], actor: Actor, reason: str = "") -> int: ...

    @property
    def locks(self) -> ScopeLocks: ...

    @property
    def kv(self) -> KeyValueStore: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def audit(self) -> AuditLog: ...

    async def known_kbs(self) -> list[str]: ...

    async def kb_settings(self, kb_id: str) -> KbSettings | None: ...

    async def known_scopes(self) -> KnownScopes: ...

    async def scope_for(self, *, kb_id: str, session_name: str, bot_uuid: str, sender_id: str) -> Scope: ...

    async def fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]: ...

    async def get_profile(self, scope: Scope, kind: str, sender_id: str = "") -> Profile: ...


@dataclass
class HeldProfile:
    kb: str
    user_key: str
    profile: Profile

    def to_dict(self) -> dict[str, Any]:
        return {"kb": self.kb, "user_key": self.user_key, **self.profile.to_dict()}


@dataclass
class Holdings:
    """What the memory holds that one person said in the chats of one bot (the subject-access answer)."""

    bot_uuid: str
    sender_id: str
    episodes: list[tuple[str, Episode]] = field(default_factory=list)  # (knowledge base, episode)
    profiles: list[HeldProfile] = field(default_factory=list)
    candidates: int = 0
    opted_out: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "ltm-person/1",
            "bot_uuid": self.bot_uuid,
            "sender_id": self.sender_id,
            "opted_out": self.opted_out,
            "profiles": [p.to_dict() for p in self.profiles],
            "episodes": [
                {
                    "id": e.id,
                    "kb": kb,
                    "chat": e.session_name,
                    "status": e.status,
                    "content": e.content,
                    "recorded_at": e.timestamp,
                    "event_at": e.event_at,
                    "audience": e.audience,
                }
                for kb, e in self.episodes
            ],
            "candidates": self.candidates,
        }


@dataclass
class PersonErasure:
    """The counts of one person's erasure."""

    episodes: int = 0
    profiles: int = 0
    candidates: int = 0
    tombstones: int = 0
    audit: int = 0  # entries whose reason was removed (the event stays)
    scopes: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


async def erase_episodes(service: PeopleHost, scope: Scope, ids: list[str], actor: Actor) -> int:
    """A person's episodes in one scope through the one erase of every copy
    (:meth:`ltm.service.erasure.Erasure.erase_episodes`: forget's rule, the rows and every copy)."""
    return await service.erase_episodes(scope, ids, actor, ERASE_REASON)


class People:
    """The people's-rights verbs over one service; ``review`` (candidates, tombstones), when the
    service has a review queue, is given at construction."""

    def __init__(self, service: PeopleHost, clock: Callable[[], float] = time.monotonic, *, review: Any = None) -> None:
        self.service = service
        self.review = review  # the review queue, when there is one
        self._codes: dict[tuple[str, str], tuple[str, float]] = {}
        self.clock = clock  # monotonic seconds: the codes' lifetime (a test moves it)

    # ------------------------------------------------------------------ who asks
    @staticmethod
    def _self_of(scope: Scope, actor: Actor) -> str:
        """The person a self-service verb is about: the speaker, who must be the one asking."""
        sender = str(actor.sender_id or "")
        if not sender or sender != scope.sender_id:
            raise ScopeError("no sender id", key="privacy.error.no_sender")
        return sender

    # ------------------------------------------------------------------ scopes of a bot
    async def scopes_of(self, bot_uuid: str, sender_id: str) -> list[Scope]:
        """Every memory scope of ``bot_uuid`` a person's statements can be in, read as the operator."""
        svc = self.service
        sessions: list[str] | None = None
        out: dict[tuple[str, str], Scope] = {}
        for kb in await svc.known_kbs():
            ks = await svc.kb_settings(kb)
            if ks is None:
                continue
            names = [f"person_{sender_id}"]
            if ks.isolation != "bot":
                if sessions is None:
                    known = await svc.known_scopes()
                    sessions = [s.session_name for s in known.scopes if s.bot_uuid == bot_uuid]
                names += sessions
            for name in dict.fromkeys(names):
                try:
                    scope = await svc.scope_for(kb_id=kb, session_name=name, bot_uuid=bot_uuid, sender_id=sender_id)
                except ScopeError:  # a malformed or foreign session name the stores keep
                    continue
                out.setdefault((scope.collection, scope.user_key), scope.as_operator())
        return list(out.values())

    # ------------------------------------------------------------------ reading
    async def _holdings(self, bot_uuid: str, sender_id: str) -> Holdings:
        held = Holdings(bot_uuid, sender_id, opted_out=await is_opted_out(self.service.kv, bot_uuid, sender_id))
        for scope in await self.scopes_of(bot_uuid, sender_id):
            rows = await self.service.fetch(scope, Criteria(statuses=None, sender_id=sender_id))
            held.episodes += [(scope.collection, e) for e in rows if e.sender_id == sender_id]
            seen = {p.profile.key for p in held.profiles}  # bot isolation: one profile for every KB
            if speaker_profile_key(scope, sender_id) not in seen and await self._stored(scope, sender_id):
                profile = await self.service.get_profile(scope, "speaker", sender_id)
                held.profiles.append(HeldProfile(scope.collection, scope.user_key, profile))
            if self.review is not None:
                cands = await self.review.candidates.person_candidates(scope, sender_id)
                held.candidates += sum(1 for c in cands if c.content)  # an erased one keeps no text
        held.episodes.sort(key=lambda ke: (ke[1].timestamp, ke[1].id), reverse=True)
        return held

    async def _stored(self, scope: Scope, sender_id: str) -> bool:
        key = profile_storage_key(speaker_profile_key(scope, sender_id))
        return await backend(self.service.kv.get(key), "profile read") is not None

    async def holdings(self, scope: Scope, actor: Actor) -> Holdings:
        """``!memory me``: what the memory holds that the speaker said, in every chat of this bot.
        Only in the speaker's private chat (a chat reply is seen by the whole chat)."""
        sender = self._self_of(scope, actor)
        if scope.launcher != "person":
            raise ScopeError("ask in a private chat", key="privacy.me.private_only")
        return await self._holdings(scope.bot_uuid, sender)

    async def person(self, bot_uuid: str, sender_id: str, actor: Actor) -> Holdings:
        """The console's People panel: the same listing for any person of a bot. A memory admin's verb."""
        require_admin("people", actor, self.service.settings)
        sender = check_id(sender_id, "sender_id", required=True)
        return await self._holdings(check_id(bot_uuid, "bot_uuid"), sender)

    # ------------------------------------------------------------------ erasing
    def forget_me_code(self, scope: Scope, actor: Actor) -> str:
        """A fresh confirmation code for the speaker's erasure (replaces an earlier one)."""
        sender = self._self_of(scope, actor)
        code = "".join(secrets.choice("0123456789") for _ in range(CODE_DIGITS))
        self._codes[(scope.bot_uuid, sender)] = (code, self.clock() + FORGET_ME_TTL_S)
        return code

    async def forget_me(self, scope: Scope, actor: Actor, code: str) -> PersonErasure:
        """The speaker's erasure, with the code :meth:`forget_me_code` gave them (used once)."""
        sender = self._self_of(scope, actor)
        want = self._codes.get((scope.bot_uuid, sender))
        given = str(code or "").strip()
        if want is None or want[1] < self.clock() or not hmac.compare_digest(want[0], given):
            if want is not None and want[1] < self.clock():
                self._codes.pop((scope.bot_uuid, sender), None)
            raise ValidationError("no valid code", key="privacy.forget_me.bad_code")
        self._codes.pop((scope.bot_uuid, sender), None)
        return await self.erase(scope.bot_uuid, sender, actor)

    async def erase_person(self, bot_uuid: str, sender_id: str, actor: Actor) -> PersonErasure:
        """The console's erase of one person: the same erasure, audited as the operator. An admin's verb."""
        require_admin("people.erase", actor, self.service.settings)
        return await self.erase(check_id(bot_uuid, "bot_uuid"), check_id(sender_id, "sender_id", required=True), actor)

    async def erase(self, bot_uuid: str, sender_id: str, actor: Actor) -> PersonErasure:
        """Everything ``sender_id`` said in the chats of ``bot_uuid`` (see the module docstring)."""
        if not sender_id:
            raise NotFoundError("no person", key="privacy.error.no_sender")
        done = PersonErasure()
        for scope in await self.scopes_of(bot_uuid, sender_id):
            done.scopes += 1
            rows = await self.service.fetch(scope, Criteria(statuses=None, sender_id=sender_id))
            ids = [e.id for e in rows if e.sender_id == sender_id]
            if ids:
                done.episodes += await erase_episodes(self.service, scope, ids, actor)
            done.profiles += await self._erase_profile(scope, sender_id, actor)
            if self.review is not None:
                cands, tombs = await self._erase_review(scope, sender_id, actor)
                done.candidates += cands
                done.tombstones += tombs
            done.audit += await self.service.audit.scrub_sender(audit_log_key(scope), sender_id)
        log.info(
            "erased a person of bot %s: %d episodes, %d profiles, %d candidates, %d tombstones in %d scopes",
            bot_uuid,
            done.episodes,
            done.profiles,
            done.candidates,
            done.tombstones,
            done.scopes,
        )
        return done

    async def _erase_profile(self, scope: Scope, sender_id: str, actor: Actor) -> int:
        key = speaker_profile_key(scope, sender_id)
        skey, lock = profile_storage_key(key), l1_lock_key(key)
        async with self.service.locks.hold(lock):
            old = await backend(self.service.kv.get(skey), "profile read")
            if old is None:
                return 0
            step = self.service.writes.kv_step(
                scope, "profile.erase", skey, None, old, audit=([key], "speaker profile erased"), lock_key=lock
            )
            await self.service.writes.mutate(actor, "profile.erase", [step], reason=ERASE_REASON)
        return 1

    async def _erase_review(self, scope: Scope, sender_id: str, actor: Actor) -> tuple[int, int]:
        if not scope.collection:
            return 0, 0
        async with self.service.locks.hold(l2_lock_key(scope)):
            cand_steps, cands = await self.review.candidates.erase_person_steps(scope, sender_id)
            tomb_steps: list[WriteStep] = await self.review.tombstones.scrub_person_steps(scope, sender_id)
            steps = cand_steps + tomb_steps
            if steps:
                await self.service.writes.mutate(actor, "person.erase", steps, reason=ERASE_REASON)
        return cands, len(tomb_steps)

    # ------------------------------------------------------------------ objecting
    async def opted_out(self, scope: Scope, actor: Actor) -> bool:
        return await is_opted_out(self.service.kv, scope.bot_uuid, self._self_of(scope, actor))

    async def set_opt_out(self, scope: Scope, actor: Actor, out: bool) -> bool:
        """The speaker opts out (``out``) of, or back into, memory in every chat of this bot.
        Audited in the chat where they asked; returns whether anything changed."""
        sender = self._self_of(scope, actor)
        key = optout_key(scope.bot_uuid, sender)
        lock = l1_lock_key(speaker_profile_key(scope, sender))  # the person's own records' lock
        operation = "privacy.optout" if out else "privacy.optin"
        async with self.service.locks.hold(lock):
            old = await backend(self.service.kv.get(key), "consent read")
            if (old is not None) == out:
                return False
            record = {"sender_id": sender, "bot_uuid": scope.bot_uuid, "at": to_iso(self.service.writes.clock())}
            new = json.dumps(record).encode("utf-8") if out else None
            audit = ([], "opted out of memory" if out else "opted back into memory")
            step = self.service.writes.kv_step(scope, operation, key, new, old, audit=audit, lock_key=lock)
            await self.service.writes.mutate(actor, operation, [step])
        log.info("%s in %s", operation, scope.scope_key)
        return True
