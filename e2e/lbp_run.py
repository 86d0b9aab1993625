"""``lbp run`` for the e2e stack, with the SDK's hot reloader switched off unless ``--hot-reload`` is given.

Why: in debug mode ``lbp run`` watches its whole working directory recursively (watchdog) and, on any
``.py`` change, re-imports *every* module whose file lies under that directory. Run from this repository's
root, that includes ``.venv``/``.venv-host`` site-packages (numpy, pydantic, the SDK itself): the reload
fails ("Failed to hot reload: … validation errors") and leaves the plugin half-initialised, and the
LangBot data dir under ``.run/`` overflows the inotify queue. An e2e run must not depend on whether
someone saves a file meanwhile, so the stack starts plugins through this module.

Usage (cwd = the plugin directory): ``python -m e2e.lbp_run [--hot-reload] [lbp run options]``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any

logger = logging.getLogger("e2e.lbp_run")


class _DisabledHotReloader:
    """Drop-in for ``langbot_plugin.cli.run.hotreload.HotReloader`` that never watches anything."""

    def __init__(self, watch_path: str, on_reload_callback: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.watch_path = watch_path

    def start(self) -> None:
        logger.info("hot reload disabled for the e2e stack (restart the stack to pick up code changes)")

    def stop(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--hot-reload" in args:
        args.remove("--hot-reload")
    else:
        from langbot_plugin.cli.run import controller

        controller.HotReloader = _DisabledHotReloader  # type: ignore[assignment, misc]
    from langbot_plugin.cli import main as lbp_main

    sys.argv = ["lbp", "run", *args]
    result = lbp_main()
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
