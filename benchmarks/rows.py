"""The stored row of an episode, for the benchmarks that seed a store directly.

``benchmarks.latency`` writes up to a million episodes straight into the vector store (remembering
each through ``MemoryService.remember`` would take far longer than the measurement), and
``benchmarks.storage_cost`` sizes the rows plugin storage would hold. Both write the row the write
engine writes, built by the service's own :func:`ltm.service.row_codec.stored_record` (re-exported
here as :func:`stored_row`); ``tests/unit/test_benchmark_rows.py`` checks it is the row
``MemoryService.remember`` writes.
"""

from __future__ import annotations

from ltm.service.row_codec import stored_record as stored_row

__all__ = ["stored_row"]
