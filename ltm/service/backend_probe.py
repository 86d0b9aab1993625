"""Does the vector backend behind a memory KB keep metadata and filter on it? One probe record answers.

The host does not say which vector database it runs (``vdb.use``), and the metadata-dropping ones
(Milvus, pgvector, Valkey Search) drop filters with only a WARNING in LangBot's log. So the plugin
writes one probe record, with the KB's own embedding model (on Milvus the first write fixes the
collection's dimension: written first, it is the right one, where a first search would make it
1536), lists it back by ``file_id`` (waiting for it within the read-back bound) and compares:

- the metadata that came back (Milvus and pgvector return only ``text``, ``file_id``, ``uuid``);
- what a listing filtered on a field beyond ``file_id`` returns, with a value the probe record
  does not hold: nothing on a backend that filters, every record (the probe's among them) on one
  that drops the condition. Valkey Search returns the whole metadata yet filters on ``file_id``
  alone: only this check catches it;
- the distance a search reports for the probe record, queried at a known cosine: it names the
  metric the host's answers are in (squared L2, cosine distance, or Milvus' cosine similarity).

The record is removed by ``file_id``, which every backend keeps.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from ..domain.backends import (
    DROPS_METADATA,
    KEEPS_METADATA,
    PROBE_TEXT,
    file_id_where,
    filter_verdict,
    metadata_verdict,
    metric_of,
    probe_metadata,
    probe_query,
)
from ..ports import Embedder, VectorIndex, VectorRecord
from .readback import read_until

log = logging.getLogger(__name__)

PROBE_COSINE = 0.6


@dataclass(frozen=True)
class ProbeResult:
    verdict: str  # "" = inconclusive
    metric: str = ""  # "" = not measured


async def probe_backend(
    vectors: VectorIndex, embedder: Embedder, collection: str, delays: tuple[float, ...]
) -> ProbeResult:
    """The backend's verdict (``keeps_metadata`` / ``drops_metadata``) and metric, or an empty
    verdict when the probe was inconclusive (its record never listed, a backend error): the caller
    asks again later."""
    if getattr(vectors, "keeps_metadata", False):  # a local engine the plugin drives itself
        return ProbeResult(KEEPS_METADATA)
    run = uuid.uuid4().hex[:12]
    probe_id = f"ltmprobe_{run}"
    sent = probe_metadata(probe_id, run)
    where = file_id_where(probe_id)
    written = False
    try:
        vecs = await embedder.embed([PROBE_TEXT])
        vector = list(vecs[0])
        await vectors.upsert(collection, [VectorRecord(id=probe_id, vector=vector, metadata=sent)])
        written = True

        async def listed() -> dict | None:
            page = await vectors.list(collection, where, 5, 0)
            return next((dict(i.metadata) for i in page.items if i.id == probe_id), None)

        returned, seen = await read_until(listed, lambda md: md is not None, delays)
        if not seen or returned is None:
            log.warning("backend probe on %s: its record was not listed; verdict unknown", collection)
            return ProbeResult("")
        verdict = metadata_verdict(sent, returned)
        if verdict == KEEPS_METADATA:  # kept: is a filter on it honoured too?
            other = await vectors.list(collection, {"ltm_probe": {"$eq": f"not-{run}"}}, 5, 0)
            verdict = filter_verdict([i.id for i in other.items])
        metric = ""
        try:
            hits = await vectors.search(collection, probe_query(vector, PROBE_COSINE), 5, where)
            mine = next((h for h in hits if h.id == probe_id), None)
            metric = metric_of(mine.distance, PROBE_COSINE) if mine is not None else ""
        except Exception as exc:  # the metric stays unknown; the verdict stands
            log.warning("backend probe on %s: its search failed (%s); metric unknown", collection, exc)
        log.info("backend probe on %s: %s, metric %s", collection, verdict, metric or "unknown")
        if verdict == DROPS_METADATA:
            log.info("memory of %s keeps its scopes in file_id and its metadata in plugin storage", collection)
        return ProbeResult(verdict, metric)
    except Exception as exc:  # the verdict stays unknown; the verbs report their own errors
        log.warning("backend probe on %s failed: %s", collection, exc)
        return ProbeResult("")
    finally:
        if written:
            try:
                await vectors.delete(collection, where)
            except Exception as exc:
                log.warning("backend probe cleanup on %s failed: %s", collection, exc)
