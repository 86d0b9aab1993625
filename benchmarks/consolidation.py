"""What a reviewed summary does to the injected memory block: its size and the facts it carries.

    python -m benchmarks.consolidation [--out r.json]

Per topic, one scope holds six related memories of one speaker (written with
``MemoryService.remember``). The injected block of a turn about that topic is rendered as the
listener renders it (``recall`` with the default top-k and token budget, ``context_payload``,
``render_block``) before consolidation - the baseline, measured in the same run - and after a
reviewed summary was applied (``Consolidator.preview`` + ``run``, a scripted model that writes the
hand-made summary of the topic and cites every source). Reported: the token estimate of the block
(``estimate_tokens``, the budget's estimator), the episodes in it, and the share of the topic's
facts (one keyword each) that the block carries.

Realism: the summaries are hand-written, the embedder is the hashing test embedder and the index the
numpy scan; the numbers show what replacing the sources does to the block, not how good a real
model's summary is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import re
import sys
from pathlib import Path
from typing import Any

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.numpy_index import NumpyIndex
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.budget import estimate_tokens
from ltm.service import Actor, MemoryService
from ltm.service.compose import build
from ltm.service.consolidation import ConsolidationSettings, Consolidator
from ltm.service.injection import context_payload, render_block

from . import git_commit

KB = "kb-bench"
ADMIN = Actor(surface="benchmark", sender_id="admin", privilege=2)

TOPICS: dict[str, dict[str, Any]] = {
    "coffee": {
        "query": "how do I take my coffee?",
        "sources": [
            "Ursula drinks her coffee black",
            "Ursula has her first coffee every morning at 7",
            "Ursula's favourite coffee shop is Blue Bottle on Main Street",
            "Ursula buys Ethiopian coffee beans",
            "Ursula grinds her coffee beans by hand",
            "Ursula stopped putting sugar in her coffee in 2023",
        ],
        "summary": "Ursula drinks black coffee without sugar (since 2023), first at 7 every morning, from "
        "Ethiopian beans she grinds by hand; her favourite coffee shop is Blue Bottle on Main Street.",
        "facts": ["black", "7", "Blue Bottle", "Ethiopian", "by hand", "sugar"],
    },
    "work": {
        "query": "what do you know about my job?",
        "sources": [
            "Ursula works as a nurse at St Mary's hospital",
            "Ursula's job has night shifts on Fridays",
            "Ursula's manager at work is called Dana",
            "Ursula cycles to work along the river",
            "Ursula's work team has twelve nurses",
            "Ursula wants to study for a master's degree next to her job",
        ],
        "summary": "Ursula works as a nurse at St Mary's hospital in a team of twelve nurses managed by "
        "Dana, with Friday night shifts; she cycles to work along the river and wants a master's degree.",
        "facts": ["St Mary", "Friday", "Dana", "cycles", "twelve", "master"],
    },
    "travel": {
        "query": "where am I travelling this year?",
        "sources": [
            "Ursula is travelling to Lisbon in May",
            "Ursula booked the Lisbon flight with TAP",
            "Ursula travels with her sister Mia",
            "Ursula's travel budget is 1200 euros",
            "Ursula wants to see the Alfama district when travelling",
            "Ursula is afraid of travelling by boat",
        ],
        "summary": "Ursula travels to Lisbon in May with her sister Mia on a TAP flight, with a 1200 euro "
        "budget; she wants to see Alfama and is afraid of boats.",
        "facts": ["Lisbon", "TAP", "Mia", "1200", "Alfama", "boat"],
    },
}


def _model(summary: str) -> Any:
    class Model:  # a ChatModel that cites every memory it was given
        async def complete(self, model_uuid: str, system: str, user: str, timeout: float) -> str:
            ids = sorted(set(re.findall(r"ep_[0-9a-f]{20}", user)))
            return json.dumps({"summary": summary, "cited_ids": ids})

    return Model()


def _block(result: Any) -> tuple[str, list[str]]:
    payload = context_payload(result, {"id": "u1", "name": "Ursula"})
    return render_block(payload, "en_US"), [e["id"] for e in payload["episodes"]]


def _carried(block: str, facts: list[str]) -> float:
    return round(sum(f in block for f in facts) / len(facts), 3)


async def run_topic(name: str, topic: dict[str, Any]) -> dict[str, Any]:
    emb = HashingEmbedder()
    consolidation = ConsolidationSettings(enabled=True, model_uuid="bench", min_age_days=0)
    svc = MemoryService(
        kv=MemoryKeyValueStore(),
        vectors=NumpyIndex(),
        embedder_for=lambda c, kb: emb,
        consolidator=lambda s: Consolidator(s, _model(topic["summary"]), settings=lambda: consolidation),
    )
    await svc.register_kb(KB, {"embedding_model": "hash"})
    scope = await svc.scope_for(kb_id=KB, session_name=f"person_{name}", bot_uuid="bot", sender_id="u1")
    for text in topic["sources"]:
        await svc.remember(scope, {"content": text}, ADMIN)
    cons = build(svc).consolidator
    assert cons is not None
    before, ids_before = _block(await svc.recall(scope, topic["query"]))
    preview = await cons.preview(scope, ADMIN)
    if preview.proposal is None:
        raise RuntimeError(f"{name}: no proposal ({preview.draft_error})")
    await cons.run(scope, ADMIN, preview.proposal.id)
    after, ids_after = _block(await svc.recall(scope, topic["query"]))
    return {
        "topic": name,
        "sources": len(topic["sources"]),
        "tokens_before": estimate_tokens(before),
        "tokens_after": estimate_tokens(after),
        "episodes_before": len(ids_before),
        "episodes_after": len(ids_after),
        "facts_before": _carried(before, topic["facts"]),
        "facts_after": _carried(after, topic["facts"]),
    }


async def run() -> dict[str, Any]:
    rows = [await run_topic(name, topic) for name, topic in TOPICS.items()]
    n = len(rows)
    return {
        "injected_tokens_before": round(sum(r["tokens_before"] for r in rows) / n, 1),
        "injected_tokens_after": round(sum(r["tokens_after"] for r in rows) / n, 1),
        "facts_carried_before": round(sum(r["facts_before"] for r in rows) / n, 3),
        "facts_carried_after": round(sum(r["facts_after"] for r in rows) / n, 3),
        "topics": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    report = asyncio.run(run())
    doc = {
        "benchmark": "consolidation",
        **git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **report,
    }
    print(f"{'topic':<8} {'tokens':>15} {'episodes':>10} {'facts':>13}")
    for r in report["topics"]:
        print(
            f"{r['topic']:<8} {r['tokens_before']:>6} -> {r['tokens_after']:<6} "
            f"{r['episodes_before']:>3} -> {r['episodes_after']:<3} {r['facts_before']:>5} -> {r['facts_after']:<5}"
        )
    print(
        f"mean: injected block {report['injected_tokens_before']} -> {report['injected_tokens_after']} tokens, "
        f"facts carried {report['facts_carried_before']} -> {report['facts_carried_after']}"
    )
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
