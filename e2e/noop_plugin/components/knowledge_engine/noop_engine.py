"""A knowledge engine that answers every retrieval with nothing: the host's cost of the runner's
call into a plugin knowledge base."""

from __future__ import annotations

from langbot_plugin.api.definition.components.knowledge_engine.engine import KnowledgeEngine
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext, RetrievalResponse
from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus
from langbot_plugin.api.entities.builtin.rag.models import IngestionContext, IngestionResult


class NoopEngine(KnowledgeEngine):
    @classmethod
    def get_capabilities(cls) -> list[str]:
        return []

    async def on_knowledge_base_create(self, kb_id: str, config: dict) -> None:
        return None

    async def on_knowledge_base_delete(self, kb_id: str) -> None:
        return None

    async def retrieve(self, context: RetrievalContext) -> RetrievalResponse:
        return RetrievalResponse(results=[], total_found=0, metadata={})

    async def ingest(self, context: IngestionContext) -> IngestionResult:
        return IngestionResult(document_id=context.file_object.metadata.document_id, status=DocumentStatus.FAILED)

    async def delete_document(self, kb_id: str, document_id: str) -> bool:
        return True
