"""The one list of vector engines the tests run against (add a backend here, not in each test file)."""

from __future__ import annotations

# The embedded engines (in-process, real libraries).
ENGINES: tuple[str, ...] = ("numpy", "chroma", "qdrant")
# LangBot's vector stores that drop metadata (Milvus, pgvector, Valkey Search), each through the
# fake host answering like its adapter (tests/support/host_runtime.py): the plugin serves them
# through the sidecar (ltm/service/sidecar.py, ADR 0008).
DROPPING_HOSTS: tuple[str, ...] = ("milvus", "pgvector", "valkey")
# The embedded engines plus LangBot's own vector store through the fake host runtime: its default
# Chroma ("host") and the metadata-dropping ones.
ENGINES_WITH_HOST: tuple[str, ...] = (*ENGINES, "host", *DROPPING_HOSTS)
