"""Benchmarks of the LongTermMemory plugin: ``python -m benchmarks.locomo`` and ``python -m benchmarks.latency``.

See ``benchmarks/README.md``. Benchmarks may print their tables to stdout; they never write into
the data folder they read.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def git_commit() -> dict[str, object]:
    """The repository's HEAD commit and whether the work tree differs from it."""

    def _git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {"git_commit": commit or None, "git_dirty": dirty if commit else None}


def sha256_files(paths: list[Path]) -> str:
    """One digest over the files' names and bytes, in the given order."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode("utf-8") + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()
