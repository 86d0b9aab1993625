"""LongTermMemory core: domain rules, storage ports and adapters, and the memory service.

Layering (arrows point to what a layer may import; ``docs/architecture.md`` has the exact table):
``components/`` and ``pages/`` -> ``ltm.service`` (the package: its ``__all__`` is the public API)
and ``ltm.i18n``, nothing else of ours; ``ltm.service`` -> ``ltm.domain``, ``ltm.ports``,
``ltm.templates``, ``ltm.i18n``; ``ltm.domain`` -> nothing of ours; ``ltm.adapters`` ->
``ltm.ports`` + ``ltm.domain``; only ``main.py`` (and the CLI, ``ltm.standalone``) joins the
adapters to the service.
"""

__version__ = "0.1.0"
