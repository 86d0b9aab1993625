"""Standalone mode: the memory service outside LangBot, on the embedded default.

Chroma on disk + the local all-MiniLM-L6-v2 (int8 ONNX) embedder + a SQLite key-value store, so a
person can try remember / recall / forget from a terminal and benchmarks can run without a host.

    python -m ltm.standalone remember "I moved to Berlin in May" --event-at 2024-05-01T00:00:00Z
    python -m ltm.standalone recall "where do I live?"
    python -m ltm.standalone list
    python -m ltm.standalone forget ep_...
    python -m ltm.standalone profile --set-preference language=Python
    python -m ltm.standalone demo
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from .adapters.chroma_index import ChromaIndex
from .adapters.embedders import HashingEmbedder, LocalMiniLMEmbedder
from .adapters.sqlite_kv import SqliteKeyValueStore
from .domain.errors import LtmError
from .domain.filters import Criteria
from .i18n import error_text
from .service import Actor, MemoryService, Settings
from .service.compose import build

log = logging.getLogger("ltm.standalone")
KB = "standalone-memory"
DEMO_SESSION = "person_demo"
COMMON_DEFAULTS = {"data": "data/standalone", "session": "person_cli", "speaker": "cli-user", "embedder": "minilm"}


def build_service(data_dir: Path, *, embedder: str = "minilm") -> MemoryService:
    data_dir.mkdir(parents=True, exist_ok=True)
    emb = LocalMiniLMEmbedder() if embedder == "minilm" else HashingEmbedder()
    service = MemoryService(
        kv=SqliteKeyValueStore(str(data_dir / "kv.sqlite3")),
        vectors=ChromaIndex(str(data_dir / "chroma")),
        embedder_for=lambda collection, kb: emb,
        settings=Settings,
    )
    # no review queue and no consolidation here: nothing guards a write, nothing cascades
    return build(service).service


def _out(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


async def run(args: argparse.Namespace) -> int:
    service = build_service(Path(args.data), embedder=args.embedder)
    if await service.kb_settings(KB) is None:
        await service.register_kb(KB, {"embedding_model": "local-minilm", "isolation": "session"})
    scope = await service.scope_for(kb_id=KB, session_name=args.session, bot_uuid="standalone", sender_id=args.speaker)
    actor = Actor(surface="command", sender_id=args.speaker, privilege=2)
    try:
        if args.cmd == "remember":
            raw: dict[str, Any] = {"content": args.content, "importance": args.importance, "tags": args.tag or []}
            for name in ("event_at", "valid_from", "valid_until"):
                if getattr(args, name):
                    raw[name] = getattr(args, name)
            if args.supersedes:
                raw["supersedes"] = args.supersedes
            ep, retired = await service.remember(scope, raw, actor, origin="command")
            _out({"remembered": ep.to_public(), "superseded": [r.id for r in retired]})
        elif args.cmd == "recall":
            res = await service.recall(scope, args.query, limit=args.limit)
            _out(
                {
                    "session_profile": res.session_profile.to_dict() if res.session_profile else None,
                    "speaker_profile": res.speaker_profile.to_dict() if res.speaker_profile else None,
                    "episodes": [r.to_public() for r in res.episodes],
                    "tokens": res.tokens,
                }
            )
        elif args.cmd == "list":
            page = await service.list_episodes(scope, statuses=None if args.all else ("active",), page=args.page)
            _out(
                {
                    "page": page.page,
                    "has_more": page.has_more,
                    "items": [{"id": e.id, "status": e.status, "content": e.content} for e in page.items],
                }
            )
        elif args.cmd == "forget":
            ep = await service.forget(scope, args.id, actor)
            _out({"deleted": 1, "id": ep.id})
        elif args.cmd == "profile":
            patch: dict[str, Any] = {"target": args.target}
            if args.name:
                patch["name"] = args.name
            if args.add_trait:
                patch["add_traits"] = args.add_trait
            if args.set_preference:
                patch["set_preferences"] = dict(p.split("=", 1) for p in args.set_preference if "=" in p)
            if len(patch) > 1:
                await service.update_profile(scope, patch, actor)
            prof = await service.get_profile(scope, args.target, args.speaker)
            _out(prof.to_dict())
        elif args.cmd == "demo":
            demo_scope = await service.scope_for(
                kb_id=KB, session_name=DEMO_SESSION, bot_uuid="standalone", sender_id=args.speaker
            )
            await _demo(service, demo_scope, actor)
    except LtmError as exc:
        sys.stderr.write(error_text(exc) + "\n")
        return 2
    return 0


async def _demo(service: MemoryService, scope: Any, actor: Actor) -> None:
    # The demo owns its session: a second run starts it afresh instead of adding copies.
    await service.bulk_delete(scope, Criteria(statuses=None), actor, reason="demo reset")
    first, _ = await service.remember(scope, {"content": "I live in Paris and work as a nurse."}, actor)
    await service.remember(scope, {"content": "My favourite programming language is Go."}, actor)
    await service.remember(
        scope, {"content": "I moved to Berlin last month.", "supersedes": [first.id]}, actor, origin="command"
    )
    res = await service.recall(scope, "Where does the user live?", limit=3)
    _out({"query": "Where does the user live?", "episodes": [r.to_public() for r in res.episodes]})


def parser() -> argparse.ArgumentParser:
    # The common options are accepted before or after the subcommand; after wins.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data", default=argparse.SUPPRESS, help="data folder (default data/standalone, or $LTM_DATA)")
    common.add_argument("--session", default=argparse.SUPPRESS, help="session name <launcher_type>_<launcher_id>")
    common.add_argument("--speaker", default=argparse.SUPPRESS, help="sender id (default cli-user)")
    common.add_argument("--embedder", choices=("minilm", "hashing"), default=argparse.SUPPRESS)
    p = argparse.ArgumentParser(
        prog="python -m ltm.standalone", description="LongTermMemory outside LangBot", parents=[common]
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    def cmd(name: str, **kw: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kw)

    r = cmd("remember")
    r.add_argument("content")
    r.add_argument("--importance", type=float, default=0.5)
    r.add_argument("--tag", action="append")
    r.add_argument("--event-at", dest="event_at")
    r.add_argument("--valid-from", dest="valid_from")
    r.add_argument("--valid-until", dest="valid_until")
    r.add_argument("--supersedes", action="append")
    q = cmd("recall")
    q.add_argument("query")
    q.add_argument("--limit", type=int, default=5)
    ls = cmd("list")
    ls.add_argument("--page", type=int, default=1)
    ls.add_argument("--all", action="store_true", help="include superseded and archived")
    f = cmd("forget")
    f.add_argument("id")
    pr = cmd("profile")
    pr.add_argument("--target", choices=("speaker", "session"), default="speaker")
    pr.add_argument("--name")
    pr.add_argument("--add-trait", action="append")
    pr.add_argument("--set-preference", action="append", help="key=value")
    cmd("demo", help="store three memories (one a correction) in the demo session and recall")
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = parser().parse_args(argv)
    for name, default in COMMON_DEFAULTS.items():  # not argparse defaults: a subparser would overwrite them
        if not hasattr(args, name):
            setattr(args, name, os.environ.get("LTM_DATA", default) if name == "data" else default)
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
