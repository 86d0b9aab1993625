"""MemoryService: the one object every surface (tools, listener, command, engine, console) calls.

Every verb exists once here. Every L2 read, search, list, count, export and delete is filtered by
:func:`ltm.domain.scope.scope_filter`; every mutation is serialized per scope and audited.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from ..domain import budget as budget_rules
from ..domain import ranking, timewindow
from ..domain.errors import BackendError, ConflictError, MemoryError_, NotFoundError, ScopeError, ValidationError
from ..domain.models import (
    Episode,
    EpisodeInput,
    Profile,
    apply_profile_patch,
    build_episode,
    validate_episode_input,
    validate_profile_patch,
)
from ..domain.scope import (
    ACTIVE,
    STATUSES,
    Criteria,
    Scope,
    derive_scope,
    matches,
    scope_filter,
    session_profile_key,
    speaker_profile_key,
)
from ..domain.timefields import now_utc, parse_instant, to_iso
from ..ports import Embedder, KeyValueStore, VectorIndex, VectorRecord
from .audit import AuditEntry, AuditLog
from .lexical_cache import LexicalCache
from .locks import ScopeLocks
from .settings import KbSettings, Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

KB_PREFIX = "kb/"
PROFILE_PREFIX = "profile/"
INJECT_PREFIX = "inject/"
DOC_PREFIX = "doc/"
LIST_PAGE = 200


@dataclass(frozen=True)
class Actor:
    """Who asked: the surface, the speaker, the query and the host privilege (2 = admin)."""

    surface: str
    sender_id: str = ""
    query_id: int | None = None
    privilege: int = 1


@dataclass
class RecalledEpisode:
    episode: Episode
    score: float

    def to_public(self) -> dict[str, Any]:
        e = self.episode
        return {
            "id": e.id,
            "content": e.content,
            "sender_id": e.sender_id,
            "timestamp": e.timestamp,
            "event_at": e.event_at,
            "valid_from": e.valid_from,
            "valid_until": e.valid_until,
            "claim_type": e.claim_type,
            "confidence": e.confidence,
            "importance": e.importance,
            "tags": e.tags,
            "source_ref": e.source_ref,
            "score": round(self.score, 4),
        }


@dataclass
class RecallResult:
    session_profile: Profile | None
    speaker_profile: Profile | None
    episodes: list[RecalledEpisode] = field(default_factory=list)
    tokens: int = 0
    window: tuple[float, float] | None = None
    candidates: int = 0


@dataclass
class EpisodePage:
    items: list[Episode]
    page: int
    page_size: int
    has_more: bool


def _profile_key(key: str) -> str:
    return PROFILE_PREFIX + key


class MemoryService:
    def __init__(
        self,
        kv: KeyValueStore,
        vectors: VectorIndex,
        embedder_for: Callable[[str, KbSettings], Embedder],
        settings: Callable[[], Settings] = Settings,
        clock: Callable[[], datetime] = now_utc,
    ) -> None:
        self.kv = kv
        self.vectors = vectors
        self._embedder_for = embedder_for
        self._settings = settings
        self.clock = clock
        self.locks = ScopeLocks()
        self.audit = AuditLog(kv)
        self.lexical = LexicalCache(vectors)
        self._kb_cache: dict[str, KbSettings | None] = {}

    # ------------------------------------------------------------------ settings & KBs
    @property
    def settings(self) -> Settings:
        return self._settings()

    async def register_kb(self, kb_id: str, creation: dict[str, Any] | None) -> KbSettings:
        if not kb_id:
            raise ValidationError("knowledge base id required", key="error.kb_missing")
        kb = KbSettings.from_creation(kb_id, creation)
        async with self.locks.hold("install"):
            await self.kv.set(KB_PREFIX + kb_id, json.dumps(kb.to_dict()).encode())
            self._kb_cache[kb_id] = kb
        log.info("memory knowledge base registered: %s (isolation=%s)", kb_id, kb.isolation)
        return kb

    async def unregister_kb(self, kb_id: str) -> None:
        async with self.locks.hold("install"):
            await self.kv.delete(KB_PREFIX + kb_id)
            self._kb_cache.pop(kb_id, None)
        self.lexical.invalidate(kb_id)
        try:
            await self.vectors.drop_collection(kb_id)
        except Exception as exc:  # the host may already have removed the KB row
            log.warning("dropping vectors of deleted knowledge base %s failed: %s", kb_id, exc)
        log.info("memory knowledge base unregistered: %s", kb_id)

    async def kb_settings(self, kb_id: str) -> KbSettings | None:
        if not kb_id:
            return None
        if kb_id in self._kb_cache:
            return self._kb_cache[kb_id]
        raw = await self.kv.get(KB_PREFIX + kb_id)
        kb = KbSettings.from_creation(kb_id, json.loads(raw)) if raw else None
        self._kb_cache[kb_id] = kb
        return kb

    async def known_kbs(self) -> list[str]:
        return sorted(k[len(KB_PREFIX) :] for k in await self.kv.keys(KB_PREFIX))

    async def resolve_kb(self, pipeline_kbs: Sequence[str] = ()) -> str:
        """The memory KB for a query: the first of ours on the pipeline, else the configured one,
        else the only one registered. Empty string when there is none (profiles still work)."""
        for kb in pipeline_kbs:
            if await self.kb_settings(str(kb)):
                return str(kb)
        configured = self.settings.memory_kb
        if configured and await self.kb_settings(configured):
            return configured
        known = await self.known_kbs()
        return known[0] if len(known) == 1 else ""

    async def scope_for(
        self,
        *,
        kb_id: str,
        session_name: str | None = None,
        launcher_type: str | None = None,
        launcher_id: str | None = None,
        bot_uuid: str | None = None,
        sender_id: str | None = None,
    ) -> Scope:
        kb = await self.kb_settings(kb_id) if kb_id else None
        return derive_scope(
            session_name=session_name,
            launcher_type=launcher_type,
            launcher_id=launcher_id,
            bot_uuid=bot_uuid,
            isolation=kb.isolation if kb else "session",
            collection=kb_id if kb else "",
            sender_id=sender_id,
        )

    async def _embedder(self, scope: Scope) -> Embedder:
        kb = await self.kb_settings(scope.collection)
        if kb is None:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")
        return self._embedder_for(scope.collection, kb)

    @staticmethod
    def _need_l2(scope: Scope) -> None:
        if not scope.collection:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")

    async def _backend(self, aw: Awaitable[T], what: str) -> T:
        try:
            return await aw
        except MemoryError_:
            raise
        except Exception as exc:
            log.warning("%s failed: %s", what, exc)
            raise BackendError(f"{what}: {exc}", key="error.backend", what=what) from exc

    async def _audit(
        self, scope: Scope, actor: Actor, operation: str, targets: Sequence[str], summary: str, reason: str = ""
    ) -> None:
        await self.audit.append(
            AuditEntry(
                seq=0,
                at=to_iso(self.clock()),
                operation=operation,
                targets=list(targets),
                scope_key=scope.scope_key,
                user_key=scope.user_key,
                sender=actor.sender_id,
                surface=actor.surface,
                query_id=actor.query_id,
                summary=summary,
                reason=reason,
            )
        )

    # ------------------------------------------------------------------ L1 profiles
    def _profile_keys(self, scope: Scope, kind: str, sender_id: str = "") -> str:
        if kind == "session":
            return session_profile_key(scope)
        if kind == "speaker":
            if not sender_id:
                raise ValidationError("speaker profile needs a sender id", key="error.no_sender")
            return speaker_profile_key(scope, sender_id)
        raise ValidationError("target: session or speaker", key="error.profile_target", value=str(kind))

    async def get_profile(self, scope: Scope, kind: str, sender_id: str = "") -> Profile:
        key = self._profile_keys(scope, kind, sender_id)
        raw = await self._backend(self.kv.get(_profile_key(key)), "profile read")
        data = json.loads(raw) if raw else {}
        return Profile.from_dict(data, kind, key)

    async def update_profile(self, scope: Scope, patch_raw: dict[str, Any], actor: Actor) -> Profile:
        raw = dict(patch_raw or {})
        target = raw.get("target") or "speaker"
        patch = validate_profile_patch(raw)
        sender = scope.sender_id or actor.sender_id
        key = self._profile_keys(scope, str(target), sender)
        s = self.settings
        async with self.locks.hold("l1:" + key):
            current = await self.get_profile(scope, str(target), sender)
            updated = apply_profile_patch(
                current,
                patch,
                max_traits=s.max_profile_traits,
                max_preferences=s.max_profile_preferences,
                updated_at=to_iso(self.clock()),
            )
            payload = json.dumps(updated.to_dict(), ensure_ascii=False).encode("utf-8")
            await self._backend(self.kv.set(_profile_key(key), payload), "profile write")
            await self._audit(scope, actor, "profile.update", [key], f"{target} profile updated")
        log.info("profile updated: %s", key)
        return updated

    async def speaker_profiles(self, scope: Scope) -> list[Profile]:
        prefix = _profile_key(f"{scope.user_key}#speaker:")
        out = []
        for k in sorted(await self.kv.keys(prefix)):
            raw = await self.kv.get(k)
            if raw:
                out.append(Profile.from_dict(json.loads(raw), "speaker", k[len(PROFILE_PREFIX) :]))
        return out

    # ------------------------------------------------------------------ L2 writes
    async def _upsert(self, scope: Scope, episodes: Sequence[Episode]) -> None:
        embedder = await self._embedder(scope)
        vectors = await self._backend(embedder.embed([e.content for e in episodes]), "embedding")
        if len(vectors) != len(episodes):
            raise BackendError("embedding count mismatch", key="error.backend", what="embedding")
        records = [
            VectorRecord(id=e.id, vector=list(v), metadata=e.to_metadata(), document=e.content)
            for e, v in zip(episodes, vectors, strict=True)
        ]
        await self._backend(self.vectors.upsert(scope.collection, records), "vector write")
        for r in records:
            self.lexical.on_upsert(scope.collection, scope.user_key, r.id, r.document, r.metadata)

    def _l2_lock(self, scope: Scope) -> str:
        return f"l2:{scope.collection}:{scope.user_key}"

    async def remember(
        self, scope: Scope, raw: dict[str, Any], actor: Actor, *, origin: str = "tool"
    ) -> tuple[Episode, list[Episode]]:
        """Store one episode; optional ``supersedes`` ids (active, same scope, same speaker) become
        superseded in the same vector write. Returns (new episode, superseded episodes)."""
        self._need_l2(scope)
        data = validate_episode_input(raw)
        if data.status != "active":
            raise ValidationError("new memories are active", key="error.status", value=data.status)
        async with self.locks.hold(self._l2_lock(scope)):
            targets = await self._check_supersede_targets(scope, data)
            episode = build_episode(data, scope, origin=origin, timestamp=to_iso(self.clock()))
            retired = [t.retagged(status="superseded", superseded_by=episode.id) for t in targets]
            await self._upsert(scope, [episode, *retired])
            summary = f"remembered {episode.id}" + (
                f", superseding {', '.join(t.id for t in targets)}" if targets else ""
            )
            await self._audit(scope, actor, "episode.remember", [episode.id, *[t.id for t in targets]], summary)
        log.info("remember: %s in %s (supersedes %d)", episode.id, scope.user_key, len(targets))
        return episode, retired

    async def _check_supersede_targets(self, scope: Scope, data: EpisodeInput) -> list[Episode]:
        if not data.supersedes:
            return []
        found = {e.id: e for e in await self._fetch(scope, Criteria(statuses=None, ids=tuple(data.supersedes)))}
        out = []
        for sid in data.supersedes:
            ep = found.get(sid)
            if ep is None:
                raise NotFoundError(f"no memory {sid} in this scope", key="error.supersede_missing", id=sid)
            if ep.status != "active":
                raise ConflictError(f"{sid} is {ep.status}", key="error.supersede_status", id=sid, status=ep.status)
            if ep.sender_id != scope.sender_id:
                raise ConflictError(f"{sid} belongs to another speaker", key="error.supersede_speaker", id=sid)
            out.append(ep)
        return out

    async def _fetch(self, scope: Scope, criteria: Criteria, limit: int = 10_000) -> list[Episode]:
        """Read matching episodes page by page (bounded by ``limit``)."""
        self._need_l2(scope)
        where = scope_filter(scope.user_key, criteria)
        out: list[Episode] = []
        offset = 0
        while len(out) < limit:
            page = await self._backend(self.vectors.list(scope.collection, where, LIST_PAGE, offset), "vector list")
            out.extend(Episode.from_metadata(i.metadata, i.id) for i in page.items)
            if len(page.items) < LIST_PAGE:
                break
            offset += LIST_PAGE
        return out[:limit]

    async def get_episode(self, scope: Scope, episode_id: str) -> Episode:
        found = await self._fetch(scope, Criteria(statuses=None, ids=(str(episode_id),)), limit=1)
        if not found:
            raise NotFoundError(f"no memory {episode_id} in this scope", key="error.not_found", id=episode_id)
        return found[0]

    async def list_episodes(
        self,
        scope: Scope,
        *,
        statuses: Sequence[str] | None = ACTIVE,
        page: int = 1,
        page_size: int = 10,
        sender_id: str | None = None,
    ) -> EpisodePage:
        """A page of episodes, newest first. Pages through the backend; never loads other scopes."""
        page = max(1, int(page))
        page_size = max(1, min(100, int(page_size)))
        crit = Criteria(statuses=tuple(statuses) if statuses else None, sender_id=sender_id)
        rows = await self._fetch(scope, crit)
        rows.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        start = (page - 1) * page_size
        return EpisodePage(rows[start : start + page_size], page, page_size, len(rows) > start + page_size)

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for e in await self._fetch(scope, Criteria(statuses=None)):
            counts[e.status] = counts.get(e.status, 0) + 1
        return counts

    async def forget(self, scope: Scope, episode_id: str, actor: Actor, reason: str = "") -> Episode:
        """Delete one episode of this scope from the vector index, verified by reading back."""
        self._need_l2(scope)
        async with self.locks.hold(self._l2_lock(scope)):
            episode = await self.get_episode(scope, episode_id)
            where = scope_filter(scope.user_key, Criteria(statuses=None, ids=(episode.id,)))
            await self._backend(self.vectors.delete(scope.collection, where), "vector delete")
            if await self._fetch(scope, Criteria(statuses=None, ids=(episode.id,)), limit=1):
                raise BackendError("the record is still present after delete", key="error.delete_unverified")
            self.lexical.on_delete(scope.collection, scope.user_key, episode.id)
            await self._audit(scope, actor, "episode.forget", [episode.id], f"forgot {episode.id}", reason)
        log.info("forget: %s in %s", episode.id, scope.user_key)
        return episode

    async def set_status(self, scope: Scope, episode_id: str, status: str, actor: Actor, reason: str = "") -> Episode:
        """Archive or restore (lifecycle change; the row keeps its own scope keys)."""
        if status not in ("archived", "active"):
            raise ValidationError("status: archived or active", key="error.status", value=status)
        self._need_l2(scope)
        async with self.locks.hold(self._l2_lock(scope)):
            episode = await self.get_episode(scope, episode_id)
            if status == "archived" and episode.status != "active":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="error.archive_status", status=episode.status
                )
            if status == "active" and episode.status != "archived":
                raise ConflictError(
                    f"{episode.id} is {episode.status}", key="error.restore_status", status=episode.status
                )
            updated = episode.retagged(status=status)
            await self._upsert(scope, [updated])
            op = "episode.archive" if status == "archived" else "episode.restore"
            await self._audit(scope, actor, op, [episode.id], f"{op.split('.')[1]} {episode.id}", reason)
        log.info("status %s -> %s in %s", episode.id, status, scope.user_key)
        return updated

    async def bulk_delete(self, scope: Scope, criteria: Criteria, actor: Actor, reason: str = "", tag: str = "") -> int:
        """Delete every episode of this scope matching ``criteria`` (and ``tag``); returns the count
        that was present before and is gone after (read back)."""
        self._need_l2(scope)
        async with self.locks.hold(self._l2_lock(scope)):
            victims = [e for e in await self._fetch(scope, criteria) if not tag or tag in e.tags]
            ids = [e.id for e in victims]
            for i in range(0, len(ids), 100):
                chunk = tuple(ids[i : i + 100])
                where = scope_filter(scope.user_key, Criteria(statuses=None, ids=chunk))
                await self._backend(self.vectors.delete(scope.collection, where), "vector delete")
            remaining = set()
            for i in range(0, len(ids), 100):
                chunk = tuple(ids[i : i + 100])
                remaining |= {e.id for e in await self._fetch(scope, Criteria(statuses=None, ids=chunk))}
            for rid in ids:
                self.lexical.on_delete(scope.collection, scope.user_key, rid)
            deleted = len(ids) - len(remaining)
            if ids:
                await self._audit(scope, actor, "episode.bulk_delete", ids[:50], f"deleted {deleted} memories", reason)
        log.info("bulk delete in %s: %d", scope.user_key, deleted)
        return deleted

    # ------------------------------------------------------------------ documents (engine ingest)
    async def ingest_document(self, kb_id: str, document_id: str, payload: Any, actor: Actor) -> int:
        """Import a JSON document of episodes: ``{"session_name", "bot_uuid", "episodes": [...]}``
        or a list; each episode may name its own ``session_name``/``bot_uuid``/``sender_id``.
        The whole document is validated before anything is written."""
        if isinstance(payload, list):
            payload = {"episodes": payload}
        if not isinstance(payload, dict) or not isinstance(payload.get("episodes"), list):
            raise ValidationError('expected {"episodes": [...]} or a list', key="error.document_shape")
        items = payload["episodes"]
        if not items:
            raise ValidationError("no episodes in the document", key="error.document_empty")
        plan: list[tuple[Scope, EpisodeInput]] = []
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict):
                raise ValidationError(f"episode {n}: expected an object", key="error.document_item", n=n)
            try:
                scope = await self.scope_for(
                    kb_id=kb_id,
                    session_name=str(item.get("session_name") or payload.get("session_name") or ""),
                    bot_uuid=str(item.get("bot_uuid") or payload.get("bot_uuid") or ""),
                    sender_id=str(item.get("sender_id") or payload.get("sender_id") or ""),
                )
                fields = {k: v for k, v in item.items() if k not in ("session_name", "bot_uuid", "sender_id", "status")}
                fields.setdefault("source_ref", f"document:{document_id}")
                fields.pop("supersedes", None)
                data = validate_episode_input(fields, default_claim="unknown")
            except MemoryError_ as exc:
                raise ValidationError(f"episode {n}: {exc.detail or exc.key}", key="error.document_item", n=n) from exc
            plan.append((scope, data))
        by_scope: dict[str, list[Episode]] = {}
        scopes: dict[str, Scope] = {}
        for scope, data in plan:
            ep = build_episode(data, scope, origin="document", timestamp=to_iso(self.clock()), document_id=document_id)
            by_scope.setdefault(scope.user_key, []).append(ep)
            scopes[scope.user_key] = scope
        touched = sorted(by_scope)
        await self.kv.set(DOC_PREFIX + f"{kb_id}/{document_id}", json.dumps({"user_keys": touched}).encode())
        for ukey, eps in by_scope.items():
            scope = scopes[ukey]
            async with self.locks.hold(self._l2_lock(scope)):
                await self._upsert(scope, eps)
                await self._audit(
                    scope,
                    actor,
                    "document.ingest",
                    [e.id for e in eps][:50],
                    f"document {document_id}: {len(eps)} memories",
                )
        log.info("ingested document %s into %s: %d episodes, %d scopes", document_id, kb_id, len(plan), len(touched))
        return len(plan)

    async def delete_document(self, kb_id: str, document_id: str, actor: Actor) -> int:
        raw = await self.kv.get(DOC_PREFIX + f"{kb_id}/{document_id}")
        if not raw:
            return 0
        total = 0
        for ukey in json.loads(raw).get("user_keys", []):
            scope = Scope(
                session_name="",
                bot_uuid="",
                isolation="",
                session_key=ukey,
                scope_key=ukey,
                user_key=ukey,
                collection=kb_id,
            )
            total += await self.bulk_delete(
                scope, Criteria(statuses=None, document_id=document_id), actor, reason=f"document {document_id} deleted"
            )
        await self.kv.delete(DOC_PREFIX + f"{kb_id}/{document_id}")
        return total

    # ------------------------------------------------------------------ recall
    async def recall(
        self,
        scope: Scope,
        query: str,
        *,
        limit: int | None = None,
        speaker_id: str | None = None,
        only_speaker: bool = False,
        time_from: str | None = None,
        time_until: str | None = None,
        as_of: str | None = None,
        with_profiles: bool = True,
        budget_tokens: int | None = None,
        parse_window: bool = True,
    ) -> RecallResult:
        """Profiles + ranked active episodes of this scope for ``query``."""
        s = self.settings
        now = self.clock()
        speaker = speaker_id if speaker_id is not None else scope.sender_id
        prof_task = (
            asyncio.gather(
                self.get_profile(scope, "session"),
                self.get_profile(scope, "speaker", speaker) if speaker else _none(),
            )
            if with_profiles
            else None
        )
        episodes: list[RecalledEpisode] = []
        tokens = 0
        window: tuple[float, float] | None = None
        n_candidates = 0
        if scope.collection and query.strip():
            kb = await self.kb_settings(scope.collection)
            k = (
                limit
                if limit is not None
                else (kb.auto_recall_top_k if kb and kb.auto_recall_top_k else s.auto_recall_top_k)
            )
            k = max(0, min(50, int(k)))
            if t0 := (parse_instant(time_from, "time_from").timestamp() if time_from else None):
                window = (t0, float("inf"))
            if time_until:
                t1 = parse_instant(time_until, "time_until").timestamp()
                window = (window[0] if window else 0.0, t1)
            if window is None and parse_window:
                window = timewindow.parse_time_window(query, now)
            as_of_ts = parse_instant(as_of, "as_of").timestamp() if as_of else now.timestamp()
            crit = Criteria(
                statuses=ACTIVE,
                as_of_ts=as_of_ts,
                sender_id=speaker if only_speaker and speaker else None,
                event_from_ts=window[0] if window and window[0] > 0 else None,
                event_until_ts=window[1] if window and window[1] != float("inf") else None,
            )
            if k > 0:
                episodes, n_candidates = await self._ranked(scope, kb, query, crit, k, speaker, now)
                budget = budget_tokens if budget_tokens is not None else s.recall_token_budget
                keep = budget_rules.fit_budget([(r.episode.id, r.episode.content, r.score) for r in episodes], budget)
                kept = set(keep)
                episodes = [r for r in episodes if r.episode.id in kept]
                tokens = sum(budget_rules.estimate_tokens(r.episode.content) for r in episodes)
        session_profile = speaker_profile = None
        if prof_task is not None:
            session_profile, speaker_profile = await prof_task
        log.info(
            "recall in %s: %d episodes (%d candidates)", scope.user_key or scope.scope_key, len(episodes), n_candidates
        )
        return RecallResult(session_profile, speaker_profile, episodes, tokens, window, n_candidates)

    async def _ranked(
        self, scope: Scope, kb: KbSettings | None, query: str, crit: Criteria, k: int, speaker: str, now: datetime
    ) -> tuple[list[RecalledEpisode], int]:
        where = scope_filter(scope.user_key, crit)
        pool = max(4 * k, 40)
        strategy = kb.retrieval_strategy if kb else "hybrid"
        cands: dict[str, ranking.Candidate] = {}

        async def vector_leg() -> None:
            embedder = await self._embedder(scope)
            qv = (await self._backend(embedder.embed([query]), "embedding"))[0]
            hits = await self._backend(self.vectors.search(scope.collection, qv, pool, where), "vector search")
            for h in hits:
                cands[h.id] = ranking.Candidate(
                    id=h.id,
                    text=str(h.metadata.get("text") or ""),
                    metadata=h.metadata,
                    vector_sim=h.similarity,
                    lexical=None,
                )

        async def lexical_leg() -> list[tuple[str, float, dict[str, Any]]]:
            idx = await self._backend(
                self.lexical.get(scope.collection, scope.user_key, self.settings.lexical_max_docs), "lexical index"
            )
            out = []
            for rid, score in idx.bm25.search(query, pool * 3):
                md = idx.metadata.get(rid)
                if md is not None and matches(md, where):
                    out.append((rid, score, md))
                if len(out) >= pool:
                    break
            return out

        legs: list[Awaitable[Any]] = []
        if strategy in ("hybrid", "vector"):
            legs.append(vector_leg())
        if strategy in ("hybrid", "lexical"):
            legs.append(lexical_leg())
        results = await asyncio.gather(*legs)
        lex_hits = results[-1] if strategy in ("hybrid", "lexical") else []
        for rid, score, md in lex_hits:
            if rid in cands:
                cands[rid].lexical = score
            else:
                cands[rid] = ranking.Candidate(
                    id=rid, text=str(md.get("text") or ""), metadata=md, vector_sim=None, lexical=score
                )
        hl = (
            kb.recency_half_life_days
            if kb and kb.recency_half_life_days is not None
            else self.settings.recency_half_life_days
        )
        ranked = ranking.rank(
            list(cands.values()),
            query=query,
            now_ts=now.timestamp(),
            speaker_id=speaker or None,
            settings=ranking.RankSettings(half_life_days=hl),
        )
        out = [RecalledEpisode(Episode.from_metadata(c.metadata, c.id), score) for c, score in ranked[:k]]
        return out, len(cands)

    # ------------------------------------------------------------------ injection snapshot
    async def save_injection(self, scope: Scope, snapshot: dict[str, Any]) -> None:
        await self.kv.set(INJECT_PREFIX + scope.scope_key, json.dumps(snapshot, ensure_ascii=False).encode("utf-8"))

    async def last_injection(self, scope: Scope) -> dict[str, Any] | None:
        raw = await self.kv.get(INJECT_PREFIX + scope.scope_key)
        return json.loads(raw) if raw else None


async def _none() -> None:
    return None
