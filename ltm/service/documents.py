"""Documents: a JSON document of episodes ingested through the knowledge-base engine, and removed.

One document may reach several scopes (each item may name its own session and speaker). Its index,
plugin storage ``doc/<kb>/<document id>`` = ``{"user_keys": [...]}``, names them, so deleting the
document deletes its rows in every scope it reached. Ingest and delete are each one all-or-nothing
mutation: the index write and one write per scope are its steps.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..domain.errors import LtmError, ValidationError
from ..domain.filters import Criteria
from ..domain.models import Episode, EpisodeInput, build_episode, validate_episode_input
from ..domain.scope import Scope
from ..domain.storage_keys import l2_lock_key
from ..domain.timefields import to_iso
from . import content_gate as gate
from .episodes import Episodes
from .registry import KbRegistry
from .retire import RetireEvent
from .writes.actor import Actor
from .writes.engine import WriteEngine
from .writes.errors import backend
from .writes.plan import WriteStep
from .writes.records import user_key_scope

log = logging.getLogger(__name__)

DOC_PREFIX = "doc/"


class Documents:
    def __init__(self, writes: WriteEngine, registry: KbRegistry, episodes: Episodes) -> None:
        self.writes = writes
        self.registry = registry
        self.episodes = episodes

    def _doc_key(self, kb_id: str, document_id: str) -> str:
        return DOC_PREFIX + f"{kb_id}/{document_id}"

    async def ingest_document(self, kb_id: str, document_id: str, payload: Any, actor: Actor) -> int:
        """Import a JSON document of episodes: ``{"session_name", "bot_uuid", "episodes": [...]}``
        or a list; each episode may name its own ``session_name``/``bot_uuid``/``sender_id``.
        The whole document is validated before anything is written, and written all or nothing:
        the document's index and one upsert per scope are the steps of one mutation."""
        if isinstance(payload, list):
            payload = {"episodes": payload}
        if not isinstance(payload, dict) or not isinstance(payload.get("episodes"), list):
            raise ValidationError('expected {"episodes": [...]} or a list', key="error.document_shape")
        items = payload["episodes"]
        if not items:
            raise ValidationError("no episodes in the document", key="error.document_empty")
        plan: list[tuple[Scope, EpisodeInput, bool, list[str]]] = []
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict):
                raise ValidationError(f"episode {n}: expected an object", key="error.document_item", n=n)
            try:
                scope = await self.registry.scope_for(
                    kb_id=kb_id,
                    session_name=str(item.get("session_name") or payload.get("session_name") or ""),
                    bot_uuid=str(item.get("bot_uuid") or payload.get("bot_uuid") or ""),
                    sender_id=str(item.get("sender_id") or payload.get("sender_id") or ""),
                )
                fields = {k: v for k, v in item.items() if k not in ("session_name", "bot_uuid", "sender_id", "status")}
                fields.setdefault("source_ref", f"document:{document_id}")
                fields.pop("supersedes", None)
                shared = fields.pop("shared", False)
                if not isinstance(shared, bool):
                    raise ValidationError("shared: true or false", key="error.field_type", field="shared")
                data = validate_episode_input(fields, default_claim="unknown")
                flags = gate.screen_episode("document", data).flags  # a secret in a document is not stored
            except LtmError as exc:
                raise ValidationError(f"episode {n}: {exc.detail or exc.key}", key="error.document_item", n=n) from exc
            plan.append((scope, data, shared, flags))
        for scope, data, _shared, _flags in plan:  # tombstones refuse the whole document before anything is written
            await self.episodes.screen_statement(scope, data, actor, "document")
        by_scope: dict[str, list[Episode]] = {}
        scopes: dict[str, Scope] = {}
        for scope, data, shared, flags in plan:
            now = to_iso(self.writes.clock())
            ep = build_episode(data, scope, origin="document", timestamp=now, document_id=document_id, shared=shared)
            ep.extra = gate.with_flags(ep.extra, flags)  # instruction-like: stored marked
            by_scope.setdefault(scope.user_key, []).append(ep)
            scopes[scope.user_key] = scope
        touched = sorted(by_scope)
        key = self._doc_key(kb_id, document_id)
        operation = "document.ingest"
        async with self.writes.locks.hold_all(["doc:" + key, *(l2_lock_key(s) for s in scopes.values())]):
            old = await backend(self.writes.kv.get(key), "storage read")
            known = json.loads(old).get("user_keys", []) if old else []  # a re-ingest keeps the scopes it had
            new = json.dumps({"user_keys": sorted({*known, *touched})}).encode()
            # the index write is fenced with its first scope; a re-ingest into the same scopes leaves it
            steps = [self.writes.kv_step(scopes[touched[0]], operation, key, new, old)] if new != old else []
            for ukey in touched:
                eps = by_scope[ukey]
                audit = ([e.id for e in eps][:50], f"document {document_id}: {len(eps)} memories")
                steps += self.writes.new_row_steps(scopes[ukey], eps, operation, audit)
            await self.writes.mutate(actor, operation, steps)
        log.info("ingested document %s into %s: %d episodes, %d scopes", document_id, kb_id, len(plan), len(touched))
        return len(plan)

    async def delete_document(self, kb_id: str, document_id: str, actor: Actor) -> int:
        """Delete every episode of a document in every scope it reached, and its index: all or
        nothing (the per-scope deletes and the index delete are the steps of one mutation). The
        scopes are the ones the index names under the locks: if a concurrent ingest of the same
        document added one meanwhile, the locks are taken again for the new set."""
        key = self._doc_key(kb_id, document_id)
        raw = await backend(self.writes.kv.get(key), "storage read")
        operation = "episode.bulk_delete"
        reason = f"document {document_id} deleted"
        while raw:
            ukeys = sorted(set(json.loads(raw).get("user_keys", [])))
            scopes = [user_key_scope(kb_id, u) for u in ukeys]
            victims: dict[str, list[Episode]] = {}
            async with self.writes.locks.hold_all(["doc:" + key, *(l2_lock_key(s) for s in scopes)]):
                now = await backend(self.writes.kv.get(key), "storage read")
                if now != raw:  # changed before the locks were held: start again with what it says now
                    raw = now
                    continue
                if not scopes:  # an index naming no scope (never written so): nothing to delete but it
                    await backend(self.writes.kv.delete(key), "storage write")
                    return 0
                steps: list[WriteStep] = []
                for scope in scopes:
                    rows = await self.writes.reads.fetch(scope, Criteria(statuses=None, document_id=document_id))
                    if rows:
                        victims[scope.user_key] = rows
                        ids = [e.id for e in rows]
                        steps += self.writes.delete_steps(
                            scope, rows, operation, (ids[:50], f"deleted {len(ids)} memories")
                        )
                        steps += await self.episodes.retire.steps(
                            RetireEvent(scope, "bulk_delete", rows, actor, reason)
                        )
                steps.append(self.writes.kv_step(scopes[0], operation, key, None, raw))

                async def verify(victims: dict[str, list[Episode]] = victims, scopes: list[Scope] = scopes) -> None:
                    for scope in scopes:
                        if victims.get(scope.user_key):
                            await self.writes.verify_absent(scope, [e.id for e in victims[scope.user_key]], operation)

                await self.writes.mutate(actor, operation, steps, reason=reason, verify=verify)
            for scope in scopes:
                if victims.get(scope.user_key):
                    await self.episodes.retire.after(
                        RetireEvent(scope, "bulk_delete", victims[scope.user_key], actor, reason)
                    )
            return sum(len(v) for v in victims.values())
        return 0
