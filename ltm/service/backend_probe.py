"""Does the vector backend behind a memory KB keep metadata? One probe record answers it.

The host does not say which vector database it runs (``vdb.use``), and the metadata-dropping ones
(Milvus, pgvector, Valkey Search) drop filters with only a WARNING in LangBot's log. So the plugin
writes one probe record, with the KB's own embedding model (on Milvus the first write fixes the
collection's dimension: written first, it is the right one, where a first search would make it
1536), lists it back by ``file_id`` (waiting for it within the read-back bound) and compares the
metadata that came back. The record is removed by ``file_id``, which every backend keeps.
"""

from __future__ import annotations

import logging
import uuid

from ..domain.backends import KEEPS_METADATA, PROBE_TEXT, file_id_where, metadata_verdict, probe_metadata
from ..ports import Embedder, VectorIndex, VectorRecord
from .readback import read_until

log = logging.getLogger(__name__)


async def probe_backend(vectors: VectorIndex, embedder: Embedder, collection: str, delays: tuple[float, ...]) -> str:
    """The backend's verdict (``keeps_metadata`` / ``drops_metadata``), or "" when the probe was
    inconclusive (its record never listed, a backend error): the caller asks again later."""
    if getattr(vectors, "keeps_metadata", False):  # a local engine the plugin drives itself
        return KEEPS_METADATA
    run = uuid.uuid4().hex[:12]
    probe_id = f"ltmprobe_{run}"
    sent = probe_metadata(probe_id, run)
    where = file_id_where(probe_id)
    written = False
    try:
        vecs = await embedder.embed([PROBE_TEXT])
        await vectors.upsert(collection, [VectorRecord(id=probe_id, vector=list(vecs[0]), metadata=sent)])
        written = True

        async def listed() -> dict | None:
            page = await vectors.list(collection, where, 5, 0)
            return next((dict(i.metadata) for i in page.items if i.id == probe_id), None)

        returned, seen = await read_until(listed, lambda md: md is not None, delays)
        if not seen or returned is None:
            log.warning("backend probe on %s: its record was not listed; verdict unknown", collection)
            return ""
        verdict = metadata_verdict(sent, returned)
        log.info("backend probe on %s: %s", collection, verdict)
        return verdict
    except Exception as exc:  # the verdict stays unknown; the verbs report their own errors
        log.warning("backend probe on %s failed: %s", collection, exc)
        return ""
    finally:
        if written:
            try:
                await vectors.delete(collection, where)
            except Exception as exc:
                log.warning("backend probe cleanup on %s failed: %s", collection, exc)
