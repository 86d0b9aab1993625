"""What 1,000 memories would cost in LangBot's plugin storage if records and vectors lived there
(docs/decisions/0006-metadata-dropping-backends.md: full support for Milvus, pgvector, Valkey Search).

    python -m benchmarks.storage_cost [--memories 1000] [--chunk 200] [--embedder minilm|hashing] [DATA] [--out r.json]

Memories are real LoCoMo turns (``../shared/data/locomo`` by default; synthetic sentences when the
folder is absent), each built as the plugin builds an episode (``build_episode`` -> ``to_metadata``),
with a 384-dim L2-normalised vector from the offline all-MiniLM-L6-v2 the e2e stack serves (dense,
as a real embedding model's; ``--embedder hashing`` gives sparse vectors that compress unrealistically). Each
layout is serialized as plugin storage would hold it: one ``BinaryStorage`` value per chunk of
``--chunk`` records (the value column stores raw bytes; base64 is only the wire format), and the
sizes are summed:

- ``records_json``: the episode metadata only (JSON, UTF-8);
- ``records_vec_f16``: metadata plus the vector as base64 float16 (the ``vec_f16`` field rows carry today);
- ``records_vec_f32_json``: metadata plus the vector as a JSON float list (the naive layout);
- ``records_vec_f16_gzip``: the ``records_vec_f16`` chunks gzip-compressed.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import logging
import platform
import sys
from pathlib import Path
from typing import Any

from ltm.adapters.embedders import HashingEmbedder, LocalMiniLMEmbedder
from ltm.domain.models import build_episode, validate_episode_input
from ltm.domain.scope import derive_scope

from .rows import stored_row

log = logging.getLogger("benchmarks.storage_cost")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo"


def texts(folder: Path, n: int) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        for key, turns in data.items():
            if key.startswith("session_") and isinstance(turns, list):
                out.extend(str(t.get("text") or "") for t in turns if isinstance(t, dict) and t.get("text"))
        if len(out) >= n:
            break
    while len(out) < n:  # no data folder: plausible sentences of LoCoMo's median length
        out.append(f"I started volunteering at the animal shelter on weekend {len(out)} and I love it there.")
    return out[:n]


def chunked_size(rows: list[dict[str, Any]], chunk: int, compress: bool = False) -> int:
    total = 0
    for i in range(0, len(rows), chunk):
        raw = json.dumps(rows[i : i + chunk], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        total += len(gzip.compress(raw, 6)) if compress else len(raw)
    return total


async def measure(n: int, dim: int, chunk: int, folder: Path, embedder: str = "minilm") -> dict[str, Any]:
    scope = derive_scope(session_name="group_team42", bot_uuid="bot-prod", sender_id="alice", collection="kb-1")
    contents = [t[:2000] for t in texts(folder, n)]
    model = LocalMiniLMEmbedder() if embedder == "minilm" else HashingEmbedder(dim=dim)
    vectors = await model.embed(contents)
    dim = len(vectors[0])
    base, f16, f32 = [], [], []
    for text, vec in zip(contents, vectors, strict=True):
        ep = build_episode(validate_episode_input({"content": text, "tags": ["chat"]}), scope, origin="tool")
        md = {"id": ep.id, **ep.to_metadata()}
        base.append(md)
        f16.append({"id": ep.id, **stored_row(ep, vec).metadata})  # the row MemoryService.remember writes
        f32.append({**md, "vector": [round(float(x), 7) for x in vec]})
    sizes = {
        "records_json": chunked_size(base, chunk),
        "records_vec_f16": chunked_size(f16, chunk),
        "records_vec_f32_json": chunked_size(f32, chunk),
        "records_vec_f16_gzip": chunked_size(f16, chunk, compress=True),
    }
    per_1000 = {k: round(v * 1000 / n) for k, v in sizes.items()}
    return {
        "memories": n,
        "dim": dim,
        "embedder": embedder,
        "chunk": chunk,
        "mean_content_chars": round(sum(len(c) for c in contents) / n, 1),
        "bytes": sizes,
        "bytes_per_1000": per_1000,
        "keys_per_1000": -(-1000 // chunk),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    result = asyncio.run(measure(args.memories, args.dim, args.chunk, Path(args.data), args.embedder))
    for name, size in result["bytes_per_1000"].items():
        log.info("%-24s %9.1f KiB per 1,000 memories", name, size / 1024)
    log.info(
        "mean memory length %.0f characters; %d storage keys per 1,000",
        result["mean_content_chars"],
        result["keys_per_1000"],
    )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
