"""What the parts of the review queue share: JSON records in plugin storage, under the service's locks."""

from __future__ import annotations

import json
from typing import Any

from ...domain.errors import ValidationError
from ...domain.keys import kb_part
from ...domain.scope import Scope
from ...domain.storage_keys import candidate_key, parse_storage_key, review_base, tombstone_key
from ...domain.text import MAX_REASON
from ...domain.timefields import to_iso
from ..neighbours import ReviewHost
from ..writes.errors import backend


def clean_reason(reason: str) -> str:
    if not isinstance(reason, str):
        raise ValidationError("reason: text", key="error.field_type", field="reason")
    return " ".join(reason.split())[:MAX_REASON]


class ReviewPart:
    """A part of the review queue over one service: its storage keys and JSON reads and writes."""

    def __init__(self, service: ReviewHost) -> None:
        self.service = service
        self.locks = service.locks  # the same locks as the service's writes it fences with

    def _now(self) -> str:
        return to_iso(self.service.clock())

    @staticmethod
    def _base(scope: Scope) -> str:
        return review_base(scope)

    def _rkey(self, scope: Scope, cid: str) -> str:
        return candidate_key(scope, f"r/{cid}")

    def _tkey(self, scope: Scope, tid: str) -> str:
        return tombstone_key(scope, tid)

    async def _delete_kb_records(self, prefix: str, layout: str, kb_id: str) -> int:
        """Delete every record of ``layout`` stored under ``prefix`` for the knowledge base ``kb_id``;
        how many went."""
        kv, gone = self.service.kv, 0
        for key in await kv.keys(f"{prefix}{kb_part(kb_id)}/"):
            parsed = parse_storage_key(key)
            if parsed is None or parsed.layout != layout or parsed.kb != kb_part(kb_id):
                continue  # a key of another knowledge base that merely starts like this one
            await kv.delete(key)
            gone += 1
        return gone

    async def _read(self, key: str) -> Any:
        raw = await backend(self.service.kv.get(key), "review read")
        return json.loads(raw) if raw else None

    @staticmethod
    def _bytes(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
