"""The stored row of an episode, for the benchmarks that seed a store directly.

``benchmarks.latency`` writes 1k-100k episodes straight into the vector store (remembering each
through ``MemoryService.remember`` would take far longer than the measurement), and
``benchmarks.storage_cost`` sizes the rows plugin storage would hold. Both build the row
:func:`stored_row` builds, from the product's own :meth:`Episode.to_metadata` and
:func:`encode_vector`; ``tests/unit/test_benchmark_rows.py`` checks it is the row
``MemoryService.remember`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ltm.domain.models import Episode
from ltm.ports import VectorRecord
from ltm.service.recall_index import VECTOR_KEY, encode_vector

__all__ = ["stored_row"]


def stored_row(episode: Episode, vector: Sequence[float]) -> VectorRecord:
    """The vector-store row of ``episode``: its metadata with the vector riding along as float16
    (the recall index is built from one paged list), its content as the document."""
    metadata = {**episode.to_metadata(), VECTOR_KEY: encode_vector(vector)}
    return VectorRecord(id=episode.id, vector=list(vector), metadata=metadata, document=episode.content)
