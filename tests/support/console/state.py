"""A comparable snapshot of everything a service stores (KV + vectors), to prove "nothing written"."""

from __future__ import annotations

import json
from typing import Any

from ltm.service import MemoryService


async def stored_state(service: MemoryService) -> tuple[dict[str, bytes | None], dict[str, dict[str, Any]]]:
    kv = {k: await service.kv.get(k) for k in await service.kv.keys("")}
    rows = getattr(service.vectors, "_collections", None)
    if rows is None:  # only the numpy index exposes its rows; the console tests use it
        raise TypeError("stored_state needs a NumpyIndex-backed service")
    vectors = {
        cid: {rid: (json.dumps(r.metadata, sort_keys=True), r.document) for rid, r in coll.items()}
        for cid, coll in rows.items()
    }
    return kv, vectors
