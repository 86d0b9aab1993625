"""KnowledgeEngine: memory KBs. Retrieval honours the session identity the host passes in
``retrieval_settings`` and never returns records of another scope or a non-active status. A chat
whose turn the listener's memory block already served gets no second copy (see ``ltm.service.served_turns``)."""

from __future__ import annotations

import json
import logging
from typing import Any

from langbot_plugin.api.definition.components.knowledge_engine.engine import (
    KnowledgeEngine,
    KnowledgeEngineCapability,
)
from langbot_plugin.api.entities.builtin.provider.message import ContentElement
from langbot_plugin.api.entities.builtin.rag.context import (
    RetrievalContext,
    RetrievalResponse,
    RetrievalResultEntry,
)
from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus
from langbot_plugin.api.entities.builtin.rag.models import IngestionContext, IngestionResult

from components.background_calls import OPERATOR_GRACE_S, runs_background_work
from ltm.i18n import error_text
from ltm.service import Actor, LtmError, identity, neutralize, neutralize_data

log = logging.getLogger(__name__)
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024


class MemoryEngine(KnowledgeEngine):
    @classmethod
    def get_capabilities(cls) -> list[str]:
        return [KnowledgeEngineCapability.DOC_INGESTION]

    @runs_background_work(OPERATOR_GRACE_S)
    async def on_knowledge_base_create(self, kb_id: str, config: dict) -> None:
        await self.plugin.service.register_kb(kb_id, config)

    @runs_background_work(OPERATOR_GRACE_S)
    async def on_knowledge_base_delete(self, kb_id: str) -> None:
        await self.plugin.installation.delete_kb(kb_id)

    async def _ensure_kb(self, kb_id: str, creation: dict[str, Any] | None) -> None:
        service = self.plugin.service
        if kb_id and await service.kb_settings(kb_id) is None and creation:
            await service.register_kb(kb_id, creation)

    async def retrieve(self, context: RetrievalContext) -> RetrievalResponse:
        kb_id = context.get_collection_id()
        rs = dict(context.retrieval_settings or {})
        session_name = str(rs.get("session_name") or "")
        served = getattr(self.plugin, "served_turns", None)
        who = identity(kb_id, session_name, str(rs.get("bot_uuid") or ""), str(rs.get("sender_id") or ""))
        if session_name and served is not None and served.served(who):
            # The listener's memory block already carries this turn's memories (escaped, trust-marked).
            # Answered from the in-process mark alone: no storage read, and no background work
            # carried (this call is on the reply's path).
            log.info("engine retrieve for %s: served by the memory block this turn", session_name)
            return RetrievalResponse(results=[], total_found=0, metadata={"reason": "served by the memory block"})
        return await self._retrieve(context, kb_id, rs, session_name)

    @runs_background_work()
    async def _retrieve(
        self, context: RetrievalContext, kb_id: str, rs: dict[str, Any], session_name: str
    ) -> RetrievalResponse:
        service = self.plugin.service
        await self._ensure_kb(kb_id, context.creation_settings)
        if not session_name or not context.query.strip():
            log.info("engine retrieve without session identity: returning nothing")
            return RetrievalResponse(results=[], total_found=0, metadata={"reason": "no session identity"})
        try:
            top_k = max(1, min(50, int(rs.get("top_k") or 5)))
        except (TypeError, ValueError, OverflowError):  # NaN and the infinities too
            top_k = 5
        try:
            scope = await service.scope_for(
                kb_id=kb_id,
                session_name=session_name,
                bot_uuid=str(rs.get("bot_uuid") or ""),
                sender_id=str(rs.get("sender_id") or ""),
            )
            result = await service.recall(scope, context.query, limit=top_k, with_profiles=False, budget_tokens=100000)
        except LtmError as exc:
            log.warning("engine retrieve refused: %s", exc)
            return RetrievalResponse(results=[], total_found=0, metadata={"error": error_text(exc)})
        # What the host retrieves goes to a model: neutralised as the injected block is.
        entries = [
            RetrievalResultEntry(
                id=r.episode.id,
                content=[ContentElement.from_text(neutralize(r.episode.content))],
                metadata=neutralize_data(r.to_public()),
                distance=max(0.0, 1.0 - r.score),
                score=r.score,
            )
            for r in result.episodes
        ]
        log.info("engine retrieve in %s: %d results", scope.user_key, len(entries))
        return RetrievalResponse(results=entries, total_found=len(entries), metadata={"user_key": scope.user_key})

    @runs_background_work(OPERATOR_GRACE_S)
    async def ingest(self, context: IngestionContext) -> IngestionResult:
        meta = context.file_object.metadata
        kb_id = context.get_collection_id() if hasattr(context, "get_collection_id") else context.knowledge_base_id
        await self._ensure_kb(kb_id, context.creation_settings)
        try:
            if meta.file_size > MAX_DOCUMENT_BYTES:
                raise ValueError(f"document larger than {MAX_DOCUMENT_BYTES} bytes")
            raw = await self.plugin.get_knowledge_file_stream(context.file_object.storage_path)
            payload = json.loads(raw.decode("utf-8"))
            n = await self.plugin.service.ingest_document(kb_id, meta.document_id, payload, Actor(surface="engine"))
        except (ValueError, UnicodeDecodeError) as exc:
            return IngestionResult(document_id=meta.document_id, status=DocumentStatus.FAILED, error_message=str(exc))
        except LtmError as exc:
            return IngestionResult(
                document_id=meta.document_id, status=DocumentStatus.FAILED, error_message=error_text(exc)
            )
        return IngestionResult(document_id=meta.document_id, status=DocumentStatus.COMPLETED, chunks_created=n)

    @runs_background_work(OPERATOR_GRACE_S)
    async def delete_document(self, kb_id: str, document_id: str) -> bool:
        n = await self.plugin.service.delete_document(kb_id, document_id, Actor(surface="engine"))
        log.info("document %s deleted from %s: %d memories removed", document_id, kb_id, n)
        return True
