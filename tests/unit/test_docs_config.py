"""Every setting the plugin offers (manifest `spec.config`, the memory engine's creation settings) has
one row in the README's configuration tables, and the Chinese README names each."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def names(path: Path, *keys: str) -> list[str]:
    node = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key in keys:
        node = node[key]
    return [item["name"] for item in node]


PLUGIN = names(ROOT / "manifest.yaml", "spec", "config")
ENGINE = names(ROOT / "components" / "knowledge_engine" / "memory_engine.yaml", "spec", "creation_schema")


def section(title: str) -> str:
    match = re.search(rf"^## {title}\n(.*?)(?=^## )", README, flags=re.M | re.S)
    assert match, title
    return match.group(1)


def table_rows(text: str) -> list[str]:
    return re.findall(r"^\| `([a-z0-9_]+)` \|", text, flags=re.M)


def test_every_setting_has_one_row_in_the_configuration_section() -> None:
    rows = table_rows(section("Configuration"))
    assert len(PLUGIN) >= 20 and "auto_recall" in PLUGIN  # positive control: the manifest was read
    assert sorted(set(PLUGIN) | set(ENGINE)) == sorted(set(rows))
    plugin_rows = rows[: rows.index(ENGINE[0])]
    assert plugin_rows == [name for name in plugin_rows if name in PLUGIN]
    assert sorted(plugin_rows) == sorted(PLUGIN), "one row per plugin setting, none twice"


def test_each_row_says_its_default_and_meaning() -> None:
    for line in re.findall(r"^\| `[a-z0-9_]+` \|.*$", section("Configuration"), flags=re.M):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == 3 and all(cells), line


def test_the_chinese_readme_names_every_setting() -> None:
    zh = (ROOT / "readme" / "README_zh_Hans.md").read_text(encoding="utf-8")
    assert [name for name in [*PLUGIN, *ENGINE] if f"`{name}`" not in zh] == []
