"""Whether the current context holds a live host invocation (:mod:`ltm.service.background`).

The SDK binds each action of an installed package to an ``Invocation`` (``langbot_plugin.api.
proxies.invocation``) that ends with the action; debug attach (``lbp run``) binds none. This is the
one place the plugin asks the SDK about it, through the SDK's public ``current_invocation``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from langbot_plugin.api.proxies.invocation import current_invocation
except ImportError:  # an SDK without invocations: nothing is ever bound
    current_invocation = None


def invocation_probe(plugin: Any) -> Callable[[], bool | None]:
    """``live()`` for ``plugin``: ``None`` when no invocation is bound in the calling context,
    ``True`` while the bound one is active, ``False`` once it has ended."""

    def live() -> bool | None:
        if current_invocation is None:
            return None
        try:
            bound = current_invocation(getattr(plugin, "plugin_runtime_handler", None))
        except RuntimeError:  # "Plugin invocation has ended"
            return False
        return None if bound is None else True

    return live
