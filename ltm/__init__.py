"""LongTermMemory core: domain rules, storage ports and adapters, and the memory service.

Layering (arrows point to what a layer may import):
``components/`` and ``pages/`` -> ``ltm.service`` -> ``ltm.domain`` -> (nothing of ours);
``ltm.service`` -> ``ltm.ports``; ``ltm.adapters`` -> ``ltm.ports`` + ``ltm.domain``.
"""

__version__ = "0.1.0"
