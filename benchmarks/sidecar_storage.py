"""What 1,000 memories cost in plugin storage on a metadata-dropping vector store (ADR 0008).

    python -m benchmarks.sidecar_storage [--memories 1000] [--dim 384] [--out r.json]

The real write path: a service over the fake LangBot host answering like pgvector (keeps only
``text``, ``file_id``, ``uuid``), ``--memories`` episodes of about 80 characters written into one
chat's scope by one document ingest, then the plugin-storage values summed: the sidecar's metadata
(``side/``) as the write left it (one delta) and once folded into its 16 shards, and the seal keys
(``seal/``). What the host's store holds per row is printed too. The sealed metadata carries the
float16 vector, so the figures scale with ``--dim`` (ciphertext does not compress).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import sys
from typing import Any

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.service import Actor, MemoryService
from ltm.service.sealing import SEAL_PREFIX
from ltm.service.sidecar import SIDE_PREFIX

log = logging.getLogger("benchmarks.sidecar_storage")
KB = "kb-bench"
WORDS = "tea coffee Berlin Hamburg cello marathon sister birthday garden train novel recipe".split()


def sentence(n: int) -> str:
    """About 80 characters, different for every n."""
    w = [WORDS[(n * 7 + k * 3) % len(WORDS)] for k in range(6)]
    return f"Memory {n}: the user mentioned {w[0]}, {w[1]} and {w[2]} while talking about {w[3]} {w[4]}."


async def measure(memories: int, dim: int) -> dict[str, Any]:
    from tests.support import dropping_host_index  # the fake host: a benchmark, not the plugin

    index = dropping_host_index("pgvector")
    index.fake.pg_allowed_dims = (*index.fake.pg_allowed_dims, dim)
    kv = MemoryKeyValueStore()
    emb = HashingEmbedder(dim=dim)
    svc = MemoryService(kv=kv, vectors=index, embedder_for=lambda c, kb: emb)
    await svc.register_kb(KB, {"embedding_model": "hash"})
    items = [
        {"session_name": "person_alice", "bot_uuid": "bot1", "sender_id": "alice", "content": sentence(n)}
        for n in range(memories)
    ]
    admin = Actor(surface="test", sender_id="admin", privilege=2)
    await svc.ingest_document(KB, "doc-bench", {"episodes": items}, admin)

    async def total(prefix: str) -> tuple[int, int]:
        keys = await kv.keys(prefix)
        sizes = [len(await kv.get(k) or b"") for k in keys]
        return sum(sizes), len(keys)

    side_delta, n_delta = await total(SIDE_PREFIX)
    side = svc.sealed.inner
    for (coll, tag), held in list(side._scopes.items()):
        await side._compact(coll, tag, held)
    side_shards, n_shards = await total(SIDE_PREFIX)
    seal, n_seal = await total(SEAL_PREFIX)
    rows = index.fake.vector_rows(KB)
    host_md = sum(len(json.dumps(md)) for md in rows["metadatas"])
    per = 1000 / memories
    return {
        "memories": memories,
        "dim": dim,
        "side_bytes_per_1000_as_written": round(side_delta * per),
        "side_values_as_written": n_delta,
        "side_bytes_per_1000_folded": round(side_shards * per),
        "side_values_folded": n_shards,
        "seal_bytes_per_1000": round(seal * per),
        "seal_values": n_seal,
        "plugin_storage_bytes_per_1000": round((side_shards + seal) * per),
        "host_metadata_bytes_per_row": round(host_md / max(1, len(rows["ids"]))),
        "host_rows": len(rows["ids"]),
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(measure(args.memories, args.dim))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
