"""The one list of vector engines the tests run against (add a backend here, not in each test file)."""

from __future__ import annotations

# The embedded engines (in-process, real libraries).
ENGINES: tuple[str, ...] = ("numpy", "chroma", "qdrant")
# The embedded engines plus LangBot's own vector store through the fake host runtime.
ENGINES_WITH_HOST: tuple[str, ...] = (*ENGINES, "host")
