"""One version and one dependency list, stated consistently.

The version is set in ``manifest.yaml`` (what LangBot reads); ``pyproject.toml``, ``ltm.__version__``
and the top entry of ``CHANGELOG.md`` must say the same. The runtime dependencies are
``requirements.txt`` (lower bounds only) and pyproject's ``dependencies``; the dev environment is
``requirements-dev.txt`` and pyproject's ``dev`` extra, locked in ``requirements-dev.lock``, which is
what ``scripts/setup-dev`` installs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import ltm

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MANIFEST_VERSION = yaml.safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))["metadata"]["version"]


def requirement_lines(name: str) -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("-r ")]


def lock() -> dict[str, str]:
    pins = {}
    for line in requirement_lines("requirements-dev.lock"):
        name, sep, version = line.partition("==")
        assert sep and version and ";" not in line, f"not an exact pin: {line}"
        pins[canonicalize_name(name)] = version
    return pins


def changelog_top_version() -> str:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    match = re.search(r"^## (?:\[)?(\d+\.\d+\.\d+[\w.-]*)", text, flags=re.M)
    assert match, "CHANGELOG.md has no version entry"
    return match.group(1)


def test_every_stated_version_is_the_manifests() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", MANIFEST_VERSION)
    stated = {
        "pyproject.toml": PYPROJECT["project"]["version"],
        "ltm.__version__": ltm.__version__,
        "CHANGELOG.md": changelog_top_version(),
    }
    assert stated == dict.fromkeys(stated, MANIFEST_VERSION)


def test_the_changelog_reads_the_first_version_heading() -> None:
    """Positive control for the CHANGELOG parser: the first ``## <version>`` entry wins."""
    text = "# Changelog\n\n## 0.2.0 (unreleased)\n\n- x\n\n## 0.1.0\n"
    assert re.search(r"^## (?:\[)?(\d+\.\d+\.\d+[\w.-]*)", text, flags=re.M).group(1) == "0.2.0"


def test_runtime_dependencies_are_requirements_txt_lower_bounds() -> None:
    runtime = requirement_lines("requirements.txt")
    assert runtime and PYPROJECT["project"]["dependencies"] == runtime
    for line in runtime:
        specs = list(Requirement(line).specifier)
        assert specs and all(spec.operator == ">=" for spec in specs), f"{line}: lower bounds only"


def test_the_dev_extra_is_requirements_dev_txt() -> None:
    dev = requirement_lines("requirements-dev.txt")
    assert "langbot-plugin==0.7.16" in dev  # the host's SDK, pinned for the suites
    assert PYPROJECT["project"]["optional-dependencies"]["dev"] == dev
    runtime = {canonicalize_name(Requirement(line).name) for line in requirement_lines("requirements.txt")}
    assert [line for line in dev if canonicalize_name(Requirement(line).name) in runtime - {"langbot-plugin"}] == []


def test_the_lock_pins_every_requirement_within_its_bounds() -> None:
    pins = lock()
    assert pins[canonicalize_name("langbot-plugin")] == "0.7.16"
    for line in requirement_lines("requirements.txt") + requirement_lines("requirements-dev.txt"):
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements-dev.lock (run scripts/lock-dev)"
        assert req.specifier.contains(pins[name], prereleases=True), f"lock {name}=={pins[name]} outside {line}"


def test_setup_dev_installs_the_lock_and_test_checks_the_format() -> None:
    setup = (ROOT / "scripts" / "setup-dev").read_text(encoding="utf-8")
    assert re.search(r"pip\" install -q -r requirements-dev\.lock", setup)
    assert "requirements-dev.txt" not in re.sub(r"#.*", "", setup)
    assert "ruff format --check" in (ROOT / "scripts" / "test").read_text(encoding="utf-8")


def test_no_blanket_warning_filter() -> None:
    """DeprecationWarnings are shown; only narrow, commented filters for third-party modules."""
    filters = PYPROJECT["tool"]["pytest"]["ini_options"].get("filterwarnings", [])
    assert "ignore::DeprecationWarning" not in filters
    for entry in filters:
        action, _message, _category, module, *_ = [*entry.split(":"), "", "", "", ""]
        if action == "ignore":
            assert module and not module.startswith(("ltm", "components", "pages", "main")), entry
