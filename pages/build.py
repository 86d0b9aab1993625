"""Assemble the Memory Console's served page from its sources.

LangBot's dashboard fetches ``components/pages/console.html`` and shows it from a ``blob:`` URL,
rewriting only the page SDK's ``<script src>``: any other relative URL never loads. So the served
file is one self-contained document built from readable parts:

- ``pages/web/console.html.j2``: the markup, a jinja2 template;
- ``pages/web/console.css``: the styles, inlined in ``<style>``;
- ``pages/web/js/NN-*.js``: the script's modules in file-name order, inlined in one ``<script>``
  inside one strict-mode function scope;
- ``pages/i18n/<locale>.json``: every catalog, inlined as one JSON data block the script reads.

``python -m pages.build`` writes the page; ``--check`` exits 1 when the committed page differs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import jinja2

from ltm.i18n import CONSOLE, CONSOLE_DIR

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "pages" / "web"
TARGET = ROOT / "components" / "pages" / "console.html"

SCRIPT_HEAD = """/*
 * Memory Console (LongTermMemory plugin page). Built by `python -m pages.build` from pages/web/js/.
 *
 * Talks to the plugin only through the LangBot page SDK (`langbot.api`), which the host forwards to
 * the page component's handle_api. Every request carries the selected memory space
 * ({kb_id, session_name, bot_uuid, sender_id}); the server derives the keys itself.
 *
 * Stored text is data: everything from the server is rendered with textContent / text nodes, never
 * parsed as markup, and attributes are set one by one (no inline handlers).
 */
(function () {
  'use strict';

"""
SCRIPT_TAIL = "})();"


class BuildError(ValueError):
    """A source would break the inlined page (e.g. it closes its own <script> or <style>)."""


def catalogs() -> dict[str, dict[str, str]]:
    """Every console catalog, as the runtime reads it (``ltm.i18n.CONSOLE``)."""
    return {p.stem: CONSOLE.catalog(p.stem) for p in sorted(CONSOLE_DIR.glob("*.json"))}


def script() -> str:
    parts = [p.read_text(encoding="utf-8").rstrip() + "\n" for p in sorted((WEB / "js").glob("*.js"))]
    return SCRIPT_HEAD + "\n".join(parts) + SCRIPT_TAIL


def inline_safe(name: str, text: str, closing: str) -> str:
    if closing in text.lower() or "<!--" in text:
        raise BuildError(f"{name} contains {closing!r} or '<!--' and cannot be inlined")
    return text


def json_block(data: object) -> str:
    # Inside <script type="application/json"> only "</" could end the element early: escape every "<".
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")


def build() -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(WEB)),
        autoescape=False,  # the parts are code, checked by inline_safe, not text to escape
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    page = env.get_template("console.html.j2").render(
        css=inline_safe("console.css", (WEB / "console.css").read_text(encoding="utf-8").rstrip(), "</style"),
        script=inline_safe("console script", script(), "</script"),
        catalogs=json_block(catalogs()),
    )
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build components/pages/console.html from pages/web/.")
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed page is not the build")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    page = build()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if args.check:
        if current != page:
            log.error("%s is not what `python -m pages.build` produces: run it and commit the result", TARGET)
            return 1
        return 0
    if current != page:
        TARGET.write_text(page, encoding="utf-8")
        log.info("wrote %s (%d bytes)", TARGET.relative_to(ROOT), len(page.encode("utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
