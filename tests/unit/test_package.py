"""`lbp build` (through scripts/build-package) ships the plugin without tests, benchmarks or caches."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_package_contents(tmp_path: Path) -> None:
    out = (
        subprocess.run(
            [str(ROOT / "scripts" / "build-package"), str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        manifest = yaml.safe_load(zf.read("manifest.yaml"))
    assert "main.py" in names and "components/pages/console.html" in names and "ltm/service/memory_service.py" in names
    assert "locales/zh_Hans/LC_MESSAGES/core.po" in names
    assert "ltm/templates/memory_block.j2" in names and "ltm/templates/__init__.py" in names
    bad = [
        n
        for n in names
        if n.startswith(("tests/", "benchmarks/", "e2e/", "scripts/", ".venv"))
        or "__pycache__" in n
        or n.endswith(".pyc")
    ]
    assert bad == []
    assert manifest["spec"]["pages"][0]["id"] == "console"
    assert "langbot-plugin==" not in (ROOT / "requirements.txt").read_text()
