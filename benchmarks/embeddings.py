"""The benchmarks' text -> vector cache: embeds each text once per run and keeps an ``.npz`` file
of earlier runs' vectors (a cache, never a result)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("benchmarks.embeddings")

__all__ = ["Embeddings", "make_embedder"]


class Embeddings:
    """Embeds texts once per run (texts repeat across variants) and returns float32 matrices."""

    def __init__(
        self, embedder: Any | None = None, kind: str = "minilm", cache_file: Path | None = None, name: str = ""
    ) -> None:
        self.name = name  # the cache file is only read back for the same name
        if embedder is None:
            embedder, self.name = make_embedder(kind)
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.cache_file = cache_file
        self._loaded = 0
        if cache_file is not None and cache_file.is_file():
            self._load(cache_file)

    def _load(self, path: Path) -> None:
        """Vectors of an earlier run with the same embedder (a cache, never a result)."""
        with np.load(path, allow_pickle=False) as data:
            if str(data["name"]) != self.name:
                log.warning("embedding cache %s is for %s, not %s: ignored", path, data["name"], self.name)
                return
            for text, vec in zip(data["texts"].tolist(), data["vectors"], strict=True):
                self._cache[str(text)] = np.asarray(vec, dtype=np.float32)
        self._loaded = len(self._cache)

    def cached(self, text: str) -> bool:
        return text in self._cache

    def save(self) -> None:
        """Write the cache file when new texts were embedded."""
        if self.cache_file is None or len(self._cache) == self._loaded:
            return
        texts = list(self._cache)
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_file.open("wb") as fh:
            np.savez(
                fh, name=np.asarray(self.name), texts=np.asarray(texts), vectors=np.vstack(list(self._cache.values()))
            )
        self._loaded = len(texts)

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            t0 = time.perf_counter()
            if hasattr(self.embedder, "embed_sync"):
                vecs = np.asarray(self.embedder.embed_sync(todo), dtype=np.float32)
            elif hasattr(self.embedder, "embed_one"):
                vecs = np.asarray([self.embedder.embed_one(t) for t in todo], dtype=np.float32)
            else:
                vecs = np.asarray(asyncio.run(self.embedder.embed(todo)), dtype=np.float32)
            self.seconds += time.perf_counter() - t0
            for t, v in zip(todo, vecs, strict=True):
                self._cache[t] = np.asarray(v, dtype=np.float32)
        if not texts:
            return np.zeros((0, 384), np.float32)
        return np.vstack([self._cache[t] for t in texts])


def make_embedder(kind: str = "minilm") -> tuple[Any, str]:
    """The plugin's local embedder (all-MiniLM-L6-v2, int8 ONNX), as the plugin loads it; ``hashing``
    is the lexical stand-in for smoke tests (its numbers mean nothing)."""
    from ltm.adapters.embedders import HashingEmbedder, LocalMiniLMEmbedder

    if kind == "hashing":
        return HashingEmbedder(), "ltm.adapters.embedders.HashingEmbedder (smoke test only)"
    emb = LocalMiniLMEmbedder()
    return emb, f"ltm.adapters.embedders.LocalMiniLMEmbedder ({getattr(emb, 'name', 'all-MiniLM-L6-v2')})"
