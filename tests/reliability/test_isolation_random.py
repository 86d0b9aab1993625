"""Randomized isolation probes on real local Chroma and Qdrant.

One store per backend is populated once (module scope) with episodes of many scopes in two memory
knowledge bases - one in ``session`` isolation, one in ``bot`` isolation - and then probed from every
scope through every read path: list, search (``service.recall``), export (``transfer.export_scope``),
bulk delete / forget / get by a foreign scope, the KnowledgeEngine's ``retrieve`` (the real plugin
component loaded through the SDK controller) and the console API (``pages.router.handle``).

A probe is one assertion "scope O does not see row r" where r belongs to another scope. Every probe
is preceded, on the same read path, by a POSITIVE CONTROL: the scope(s) that own r do see it.
Who may see what is decided by an independent model (:func:`l2_group` and :func:`can_read`), not by
the code under test.

Scopes (in each knowledge base): person and group chats, the same sender in two scopes, two
speakers of one group, the same session id on two bots, a session with no bot, ids that are
prefixes/suffixes of each other, a group and a person sharing an id, and an id that embeds the
key delimiter (``#speaker:``), ids containing ``/``, ``:``, ``%`` and their fullwidth or
percent-encoded look-alikes, a ``:`` in a bot id next to the scope it used to share a key with, the
bot id ``bot``, and two 300-character ids differing in their last character (the store refuses keys
over the host's 255 characters). In ``bot`` isolation all sessions of one bot share episodes, never
across bots. Beyond L2 rows, every listing that scans storage keys is probed too (review queue,
tombstones, consolidation proposals, profiles, injection snapshots, fences, known spaces).
Under ``bot`` sharing, a chat reader sees a private chat's episodes only in that chat or as that
chat's person (the console, the operator, sees them all).

Probe counts with ``SEED`` (chroma + qdrant; each test asserts a minimum a little below): list
33,176 + 19,604; search 3,368 + 2,454; engine retrieve 1,945 + 1,408; export 21,112 + 12,064;
console API 37,850 + 24,017; key listings 21,262 + 21,262; bulk delete / forget / get by a foreign
scope 3,780 + 3,402 - 206,704 probes in total.
The random generator is seeded (``SEED``); a failure message names the seed, backend and query.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langbot_plugin.api.definition.components.page import PageRequest, PageResponse
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext

from ltm.adapters.embedders import HashingEmbedder
from ltm.adapters.sqlite_kv import MemoryKeyValueStore
from ltm.domain.errors import NotFoundError
from ltm.domain.filters import Criteria
from ltm.domain.scope import Scope
from ltm.domain.storage_keys import speaker_profile_key
from ltm.service import Actor, MemoryService, Settings, transfer
from ltm.service.compose import build
from ltm.service.snapshots import InjectionSnapshot
from tests.support import HostLimitedKeyValueStore, make_index, with_consolidator, with_review
from tests.support.host_runtime import FakeHostHandler
from tests.support.reliability import component, load_plugin

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEED = 6_0615
KB_SESSION = "kb-iso-session"
KB_BOT = "kb-iso-bot"
KBS = {KB_SESSION: "session", KB_BOT: "bot"}
ADMIN = Actor(surface="test", sender_id="admin", privilege=2)
_EMBEDDER = HashingEmbedder()

# (session_name, bot_uuid, sender_id): the identities written from, in each knowledge base.
IDENTS: tuple[tuple[str, str, str], ...] = (
    ("person_alice", "bot1", "alice"),
    ("person_bob", "bot1", "bob"),
    ("group_g1", "bot1", "alice"),  # the same sender as person_alice, another scope
    ("group_g1", "bot1", "carol"),  # another speaker of the same group: the same L2 scope
    ("group_alice", "bot1", "alice"),  # a group whose id equals a person's id
    ("person_alice_2", "bot1", "alice2"),  # an id that extends another id
    ("person_alice", "bot2", "alice"),  # the same session on another bot
    ("group_g1", "bot2", "bob"),
    ("person_alice", "", "alice"),  # no bot known
    ("person_alice#speaker:mallory", "bot1", "eve"),  # an id embedding a key delimiter
    ("group_g1/x", "bot1", "alice"),  # extends group_g1 at "/" (key listings scan by prefix)
    ("group_g1%2Fx", "bot1", "dan"),  # the percent-encoded look-alike of the previous
    ("group_g1:x", "bot1", "erin"),  # the key separator inside a launcher id
    ("group_g1%3Ax", "bot1", "erin"),  # ... and its escape typed as an id
    ("group_g1\uff0fx", "bot1", "fay"),  # fullwidth solidus
    ("group_g1\uff1ax", "bot1", "fay"),  # fullwidth colon
    ("person_y", "X:person_x", "y"),  # a ":" in a bot id ...
    ("person_x:person_y", "X", "y"),  # ... and the scope that used to share its key
    ("person_alice", "bot", "alice"),  # a bot id spelled like the bot-wide key's prefix
    ("person_" + "7" * 300, "bot1", "8" * 300),  # ids far past the host's 255-character keys
    ("person_" + "7" * 299 + "8", "bot1", "8" * 299 + "7"),  # ... differing only in the last character
)
# Per backend: episodes per identity and the number of search / engine rounds. Qdrant local mode
# is a pure-Python brute force: keep its store small.
SIZES = {
    "chroma": {"ingest": 6, "search_rounds": 14, "engine_rounds": 8},
    "qdrant": {"ingest": 3, "search_rounds": 10, "engine_rounds": 6},
}
VOCAB = (
    "tea coffee berlin paris garden piano violin hiking cycling python rust novel poetry sushi ramen "
    "mountain river ocean desert winter summer autumn spring market museum concert theatre football "
    "tennis chess painting pottery camera guitar salad bread cheese apple orange lemon ginger"
).split()


def l2_group(kb: str, session: str, bot: str) -> tuple[str, ...]:
    """Who shares episodes, from the product rules alone (not from the code under test):
    session isolation -> one (bot, session); bot isolation -> one bot (a session without a bot
    falls back to itself); never across knowledge bases."""
    if KBS[kb] == "bot" and bot:
        return (kb, "bot", bot)
    return (kb, "session", bot, session)


def can_read(reader: Ident, writer: Ident, *, operator: bool = False) -> bool:
    """The read rule, from the product rules alone: within one sharing group, a chat in ``bot``
    isolation reads what was said in groups, in this chat, and in the reader's own private chat
    (``person_<sender>``); another person's private chat never. The operator reads the whole group."""
    if reader.group != writer.group:
        return False
    if operator or KBS[reader.kb] != "bot" or not reader.bot or writer.session.startswith("group_"):
        return True
    return writer.session in (reader.session, f"person_{reader.sender}")


@dataclass(frozen=True)
class Ident:
    kb: str
    session: str
    bot: str
    sender: str

    @property
    def group(self) -> tuple[str, ...]:
        return l2_group(self.kb, self.session, self.bot)

    def label(self) -> str:
        return f"{self.kb}|{self.bot or '-'}|{self.session}|{self.sender}"


@dataclass
class Row:
    id: str
    ident: Ident
    content: str
    token: str  # a word no other row has
    tag: str  # a tag no other identity has
    status: str = "active"


@dataclass
class World:
    backend: str
    service: MemoryService
    idents: list[Ident]
    scopes: dict[Ident, Scope]
    rows: dict[str, Row] = field(default_factory=dict)

    def rng(self, purpose: str) -> random.Random:
        return random.Random(SEED + zlib.crc32(f"{self.backend}/{purpose}".encode()))

    def owners(self, row: Row, operator: bool = False) -> list[Ident]:
        return [i for i in self.idents if can_read(i, row.ident, operator=operator)]

    def foreign(self, row: Row, operator: bool = False) -> list[Ident]:
        return [i for i in self.idents if not can_read(i, row.ident, operator=operator)]

    def readable(self, ident: Ident, rid: str, operator: bool = False) -> bool:
        return can_read(ident, self.rows[rid].ident, operator=operator)


def _unique_words(rng: random.Random, n: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(4)))
    return sorted(out)


def _settings() -> Settings:
    return Settings(max_profile_traits=200)


async def _populate(backend: str, tmp: Path) -> World:
    svc = MemoryService(
        kv=HostLimitedKeyValueStore(),  # refuses keys over the host's 255 characters
        vectors=make_index(backend, tmp),
        embedder_for=lambda c, kb: _EMBEDDER,
        settings=_settings,
    )
    for kb, iso in KBS.items():
        await svc.register_kb(kb, {"embedding_model": "hash", "isolation": iso})
    idents = [Ident(kb, s, b, u) for kb in KBS for (s, b, u) in IDENTS]
    scopes = {
        i: await svc.scope_for(kb_id=i.kb, session_name=i.session, bot_uuid=i.bot, sender_id=i.sender) for i in idents
    }
    world = World(backend, svc, idents, scopes)
    rng = world.rng("populate")
    n_ingest = SIZES[backend]["ingest"]
    words = iter(_unique_words(rng, len(idents) * (n_ingest + 4) + 8))
    tags = {i: f"tag{n:02d}" for n, i in enumerate(idents)}
    # 1) a document per knowledge base with episodes of every identity (one upsert per scope)
    for kb in KBS:
        planned: list[tuple[Ident, str, str]] = []
        items = []
        for ident in (i for i in idents if i.kb == kb):
            for _ in range(n_ingest):
                token = next(words)
                content = f"{token} " + " ".join(rng.sample(VOCAB, 4))
                planned.append((ident, token, content))
                items.append(
                    {
                        "session_name": ident.session,
                        "bot_uuid": ident.bot,
                        "sender_id": ident.sender,
                        "content": content,
                        "tags": [tags[ident], "common"],
                    }
                )
        await svc.ingest_document(kb, f"doc-{kb}", {"episodes": items}, ADMIN)
        listed: dict[str, str] = {}
        for ident in (i for i in idents if i.kb == kb):
            n = 1
            while True:
                page = await svc.list_episodes(scopes[ident], statuses=None, page=n, page_size=100)
                listed.update({e.content: e.id for e in page.items})
                if not page.has_more:
                    break
                n += 1
        for ident, token, content in planned:
            rid = listed[content]
            world.rows[rid] = Row(rid, ident, content, token, tags[ident])
    # 2) through remember: one plain episode and one that supersedes an ingested one; 3) archive one
    for ident in idents:
        scope = scopes[ident]
        token = next(words)
        ep, _ = await svc.remember(
            scope, {"content": f"{token} remembered {rng.choice(VOCAB)}", "tags": [tags[ident], "common"]}, ADMIN
        )
        world.rows[ep.id] = Row(ep.id, ident, ep.content, token, tags[ident])
        mine = [r for r in world.rows.values() if r.ident == ident and r.status == "active" and r.id != ep.id]
        old, to_archive = mine[0], mine[1]
        token = next(words)
        new, retired = await svc.remember(
            scope,
            {
                "content": f"{token} corrected {rng.choice(VOCAB)}",
                "tags": [tags[ident], "common"],
                "supersedes": [old.id],
            },
            ADMIN,
        )
        assert [r.id for r in retired] == [old.id]
        old.status = "superseded"
        world.rows[new.id] = Row(new.id, ident, new.content, token, tags[ident])
        await svc.set_status(scope, to_archive.id, "archived", ADMIN)
        to_archive.status = "archived"
    # the probes read as a restarted process does: each scope's first read loads its index from the
    # snapshot this process leaves in storage
    for scope in scopes.values():
        await svc.scope_index(scope)
    assert await svc.index.flush_snapshots() > 0
    # a restarted process: a new service over the same stores
    world.service = MemoryService(kv=svc.kv, vectors=svc.vectors, embedder_for=svc.embedder_for, settings=_settings)
    return world


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["chroma", "qdrant"])
async def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    w = await _populate(request.param, tmp_path_factory.mktemp(f"iso-{request.param}"))
    yield w
    close = getattr(w.service.vectors, "close", None)
    if close:
        close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine_plugin() -> AsyncIterator[Any]:
    fake = FakeHostHandler(bots=["bot1", "bot2"])
    ctl = await load_plugin(fake)
    yield component(ctl, "KnowledgeEngine", "memory_engine")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _check_partition(
    world: World,
    seen: dict[Ident, set[str]],
    candidates: list[str],
    surface: str,
    *,
    context: str = "",
    operator: bool = False,
) -> int:
    """Positive controls first (each candidate row is seen by every identity that may read it), then
    the probes (no other identity sees it). Returns the number of probes."""
    where = f"[seed={SEED} backend={world.backend} surface={surface} {context}]"
    for rid in candidates:
        row = world.rows[rid]
        for owner in world.owners(row, operator):
            assert rid in seen[owner], f"positive control failed {where}: {owner.label()} does not see {rid}"
    probes = 0
    for rid in candidates:
        row = world.rows[rid]
        for other in world.foreign(row, operator):
            assert rid not in seen[other], f"LEAK {where}: {other.label()} sees {rid} of {row.ident.label()}"
            probes += 1
    # and nothing unknown or foreign at all, whatever was asked
    for ident, ids in seen.items():
        for rid in ids:
            assert rid in world.rows, f"{where}: {ident.label()} got an unknown row {rid}"
            assert world.readable(ident, rid, operator), f"LEAK {where}: {ident.label()} got {rid}"
    return probes


async def _list_all(world: World, ident: Ident, rng: random.Random, statuses: tuple[str, ...] | None) -> set[str]:
    size = rng.randint(1, 100)
    out: set[str] = set()
    page = 1
    while True:
        p = await world.service.list_episodes(world.scopes[ident], statuses=statuses, page=page, page_size=size)
        out |= {e.id for e in p.items}
        if not p.has_more:
            return out
        page += 1


# --------------------------------------------------------------------------------------------
# probes
# --------------------------------------------------------------------------------------------


async def test_list_isolation_probes(world: World) -> None:
    """List (every status and active only, random page sizes, random sender filter): >= 30,000 probes
    on chroma, >= 17,000 on qdrant (measured with SEED: 33,176 and 19,604)."""
    rng = world.rng("list")
    probes = 0
    for round_no in range(2):
        seen = {i: await _list_all(world, i, rng, None) for i in world.idents}
        probes += _check_partition(world, seen, list(world.rows), "list", context=f"round={round_no}")
    # default listing: active only, still never foreign
    seen = {i: await _list_all(world, i, rng, ("active",)) for i in world.idents}
    active = [r.id for r in world.rows.values() if r.status == "active"]
    probes += _check_partition(world, seen, active, "list(active)")
    for ident in world.idents:
        assert not any(world.rows[r].status != "active" for r in seen[ident]), "default list returned a non-active row"
    # a sender filter narrows inside the scope; a foreign sender name never opens another scope
    for ident in world.idents:
        sender = rng.choice([i.sender for i in world.idents])
        p = await world.service.list_episodes(world.scopes[ident], statuses=None, page_size=100, sender_id=sender)
        for e in p.items:
            assert world.readable(ident, e.id) and world.rows[e.id].ident.sender == sender
    assert probes >= (30_000 if world.backend == "chroma" else 17_000), probes


async def _search_rounds(world: World, rounds: int, purpose: str, run: Any, operator: bool = False) -> int:
    """Each round: one active target row from each of several groups, queried by their unique
    words from every identity. Positive: the targets' own groups find them. Probe: no one else does.
    A non-active target is included too: nobody finds it (the owner lists it: positive control)."""
    rng = world.rng(purpose)
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in world.rows.values():
        groups.setdefault(r.ident.group, []).append(r)
    probes = 0
    for round_no in range(rounds):
        picked = rng.sample(sorted(groups), k=min(5, len(groups)))
        targets = [rng.choice([r for r in groups[g] if r.status == "active"]) for g in picked]
        dormant = rng.choice([r for r in world.rows.values() if r.status != "active"])
        words = [t.token for t in targets] + [dormant.token]
        rng.shuffle(words)
        query = " ".join(words)
        seen = {i: set(await run(i, query)) for i in world.idents}
        probes += _check_partition(
            world,
            seen,
            [t.id for t in targets],
            purpose,
            context=f"round={round_no} query={query!r}",
            operator=operator,
        )
        owner_list = await _list_all(world, dormant.ident, rng, None)
        assert dormant.id in owner_list, "positive control: the owner lists its archived row"
        for ident in world.idents:
            assert dormant.id not in seen[ident], f"{purpose}: a {dormant.status} row was returned to {ident.label()}"
            probes += 1
    return probes


async def test_search_isolation_probes(world: World) -> None:
    """service.recall (hybrid: vector + lexical legs): >= 3,000 probes on chroma, >= 2,200 on qdrant
    (measured: 3,368 and 2,454)."""

    async def run(ident: Ident, query: str) -> list[str]:
        res = await world.service.recall(
            world.scopes[ident], query, limit=12, with_profiles=False, budget_tokens=100000
        )
        return [r.episode.id for r in res.episodes]

    probes = await _search_rounds(world, SIZES[world.backend]["search_rounds"], "search", run)
    assert probes >= (3_000 if world.backend == "chroma" else 2_200), probes
    assert world.service.index.snapshot_counts["used"] > 0  # positive control: scopes came from snapshots


async def test_engine_retrieve_isolation_probes(world: World, engine_plugin: Any) -> None:
    """KnowledgeEngine.retrieve of the loaded plugin over this store: >= 1,700 probes on chroma,
    >= 1,250 on qdrant (measured: 1,945 and 1,408). Retrieval without a session identity returns nothing."""
    engine_plugin.plugin.adopt(build(world.service))

    async def run(ident: Ident, query: str) -> list[str]:
        resp = await engine_plugin.retrieve(
            RetrievalContext(
                query=query,
                knowledge_base_id=ident.kb,
                collection_id=ident.kb,
                retrieval_settings={
                    "top_k": 12,
                    "session_name": ident.session,
                    "bot_uuid": ident.bot,
                    "sender_id": ident.sender,
                },
            )
        )
        return [r.id for r in resp.results]

    probes = await _search_rounds(world, SIZES[world.backend]["engine_rounds"], "engine", run)
    some = next(iter(world.rows.values()))
    for kb in KBS:
        anonymous = await engine_plugin.retrieve(
            RetrievalContext(query=some.token, knowledge_base_id=kb, collection_id=kb, retrieval_settings={"top_k": 50})
        )
        assert anonymous.results == []
    assert probes >= (1_700 if world.backend == "chroma" else 1_250), probes


async def test_export_isolation_probes(world: World) -> None:
    """transfer.export_scope (L2 every status, then active only and paged): >= 19,000 probes on
    chroma, >= 11,000 on qdrant (measured: 21,112 and 12,064)."""
    seen: dict[Ident, set[str]] = {}
    for ident in world.idents:
        doc = await transfer.export_scope(world.service, world.scopes[ident], ADMIN, layer="l2")
        seen[ident] = {e["id"] for e in doc["episodes"]}
        for e in doc["episodes"]:
            assert e["user_key"] == world.scopes[ident].user_key
    probes = _check_partition(world, seen, list(world.rows), "export")
    # the same again with the active-only export and a paged export
    rng = world.rng("export")
    seen = {}
    for ident in world.idents:
        size = rng.randint(1, 7)
        ids: set[str] = set()
        page, pages = 1, 1
        while page <= pages:
            doc = await transfer.export_scope(
                world.service, world.scopes[ident], ADMIN, layer="l2", statuses=("active",), page=page, page_size=size
            )
            pages = doc["pages"]
            ids |= {e["id"] for e in doc["episodes"]}
            page += 1
        seen[ident] = ids
    active = [r.id for r in world.rows.values() if r.status == "active"]
    probes += _check_partition(world, seen, active, "export(active, paged)")
    assert probes >= (19_000 if world.backend == "chroma" else 11_000), probes


async def _console(world: World, endpoint: str, body: dict[str, Any]) -> PageResponse:
    from pages.router import handle

    return await handle(world.service, PageRequest(endpoint=endpoint, method="POST", body=body))


def _scope_body(ident: Ident, **extra: Any) -> dict[str, Any]:
    return {"kb_id": ident.kb, "session_name": ident.session, "bot_uuid": ident.bot, "sender_id": ident.sender, **extra}


async def test_console_isolation_probes(world: World) -> None:
    """The console API (pages/router.handle) - /episodes (every status, paged), /export (L2),
    /episodes/search, /overview counts, /audit/export targets, /episode and the mutations
    /episode/{archive,restore,forget} with a foreign id: >= 34,000 probes on chroma, >= 21,500 on
    qdrant (measured: 37,850 and 24,017); refused requests change nothing."""
    rng = world.rng("console")
    probes = 0
    # /episodes, every status, random page size, paged to the end
    seen: dict[Ident, set[str]] = {}
    for ident in world.idents:
        ids: set[str] = set()
        page, size = 1, rng.randint(1, 100)
        while True:
            r = await _console(world, "/episodes", _scope_body(ident, status="all", page=page, page_size=size))
            assert r.error is None, r.error
            ids |= {e["id"] for e in r.data["items"]}
            if not r.data["has_more"]:
                break
            page += 1
        seen[ident] = ids
    probes += _check_partition(world, seen, list(world.rows), "console /episodes", operator=True)
    # /export (L2, every status)
    seen = {}
    for ident in world.idents:
        r = await _console(world, "/export", _scope_body(ident, layer="l2", status="all"))
        assert r.error is None, r.error
        seen[ident] = {e["id"] for e in r.data["document"]["episodes"]}
    probes += _check_partition(world, seen, list(world.rows), "console /export", operator=True)
    # /overview: the counts are exactly the group's rows by status (positive control), never more
    for ident in world.idents:
        r = await _console(world, "/overview", _scope_body(ident))
        assert r.error is None, r.error
        mine = [x for x in world.rows.values() if x.ident.group == ident.group]
        want = {st: sum(1 for x in mine if x.status == st) for st in ("active", "superseded", "archived")}
        assert {k: r.data["counts"][k] for k in want} == want, ident.label()
    # /audit/export: no entry names a row of another conversation or of another knowledge base (the
    # log is per knowledge base and user key, see test_audit_log_is_per_knowledge_base).
    for ident in world.idents:
        r = await _console(world, "/audit/export", _scope_body(ident))
        assert r.error is None, r.error
        named = {t for e in r.data["entries"] for t in e.get("targets", []) if t in world.rows}
        assert any(world.readable(ident, rid, True) for rid in named), f"positive control: {ident.label()}"
        for rid in named:
            assert world.readable(ident, rid, True), f"LEAK: {ident.label()}'s audit names {rid}"
        probes += sum(1 for x in world.rows.values() if x.ident.group != ident.group)

    # /episodes/search
    async def run(ident: Ident, query: str) -> list[str]:
        r = await _console(world, "/episodes/search", _scope_body(ident, query=query, page_size=12))
        assert r.error is None, r.error
        return [e["id"] for e in r.data["items"]]

    probes += await _search_rounds(world, 4 if world.backend == "chroma" else 3, "console search", run, operator=True)
    # /episode and the mutations with a foreign id are refused; with an own id /episode works
    before = {i: await _list_all(world, i, rng, None) for i in world.idents}
    for ident in world.idents:
        own = rng.choice([x for x in world.rows.values() if x.ident.group == ident.group])
        r = await _console(world, "/episode", _scope_body(ident, id=own.id))
        assert r.error is None and r.data["id"] == own.id
        foreign = [x for x in world.rows.values() if x.ident.group != ident.group]
        for x in rng.sample(foreign, k=4):
            for endpoint in ("/episode", "/episode/archive", "/episode/restore", "/episode/forget"):
                r = await _console(world, endpoint, _scope_body(ident, id=x.id, reason="probe"))
                assert r.error and r.data is None, f"{endpoint} of a foreign id answered {r.data!r}"
                probes += 1
    after = {i: await _list_all(world, i, rng, None) for i in world.idents}
    assert after == before, "a refused console mutation changed the store"
    assert probes >= (34_000 if world.backend == "chroma" else 21_500), probes


async def test_profile_keys_cannot_be_forged_through_a_session_id() -> None:
    """A session id may contain the profile-key delimiter (``person_alice#speaker:mallory``):
    ``person_alice`` must still not see that scope's profiles (speaker_profiles, export L1,
    console /profiles), must not reach them through a crafted sender id, and must not list or
    clear that scope's fences. Positive control: the crafted scope sees its own profile."""
    svc = MemoryService(
        kv=MemoryKeyValueStore(),
        vectors=make_index("numpy", Path(".")),
        embedder_for=lambda c, kb: _EMBEDDER,
        settings=Settings,
    )
    await svc.register_kb(KB_SESSION, {"embedding_model": "hash", "isolation": "session"})
    p = await svc.scope_for(kb_id=KB_SESSION, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    q = await svc.scope_for(
        kb_id=KB_SESSION, session_name="person_alice#speaker:mallory", bot_uuid="bot1", sender_id="eve"
    )
    await svc.update_profile(q, {"add_traits": ["q-secret"]}, ADMIN)
    await svc.update_profile(q, {"target": "session", "add_notes": ["q-session-secret"]}, ADMIN)
    assert (await svc.get_profile(q, "speaker", "eve")).traits == ["q-secret"]  # positive control
    leaks = []
    if any("q-secret" in x.traits or "q-session-secret" in x.notes for x in await svc.speaker_profiles(p)):
        leaks.append("speaker_profiles")
    from ltm.service.transfer import export_scope

    if "q-" in json.dumps((await export_scope(svc, p, ADMIN, layer="l1"))["profiles"]):
        leaks.append("export l1")
    if (await svc.get_profile(p, "speaker", "mallory#speaker:eve")).traits:
        leaks.append("crafted sender id reads another scope's speaker profile")
    lock = "l1:" + speaker_profile_key(q, "eve")  # the real lock key
    await svc.writes.fencing.set_fence(lock, q, "profile.update", "probe")
    if await svc.clear_scope_fences(p, ADMIN):
        leaks.append("clear_scope_fences of another scope")
    assert not leaks, leaks


async def test_audit_log_is_per_knowledge_base() -> None:
    """The same conversation in two memory knowledge bases: each KB's audit shows only its own rows."""
    svc = MemoryService(
        kv=MemoryKeyValueStore(),
        vectors=make_index("numpy", Path(".")),
        embedder_for=lambda c, kb: _EMBEDDER,
        settings=Settings,
    )
    for kb in KBS:
        await svc.register_kb(kb, {"embedding_model": "hash", "isolation": "session"})
    s1 = await svc.scope_for(kb_id=KB_SESSION, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    s2 = await svc.scope_for(kb_id=KB_BOT, session_name="person_alice", bot_uuid="bot1", sender_id="alice")
    e1, _ = await svc.remember(s1, {"content": "in the first knowledge base"}, ADMIN)
    e2, _ = await svc.remember(s2, {"content": "in the second knowledge base"}, ADMIN)
    assert [e.id for e in (await svc.list_episodes(s1)).items] == [e1.id]  # L2 is per KB (positive control)
    assert [e.id for e in (await svc.list_episodes(s2)).items] == [e2.id]
    for mine, other, scope in ((e1, e2, s1), (e2, e1, s2)):
        targets = {t for e in await svc.audit.scope_export(scope) for t in e["targets"]}
        assert mine.id in targets  # positive control
        assert other.id not in targets, "the other knowledge base's operation is in this KB's audit log"
        assert await svc.audit_count(scope) == 1
        assert {e["collection"] for e in await svc.audit.scope_export(scope)} == {scope.collection}


# --------------------------------------------------------------------------------------------
# every other listing: review queue, tombstones, consolidation proposals, profiles, injection
# snapshots, fences and known spaces (keys scanned from the key-value store, owner checked exactly)
# --------------------------------------------------------------------------------------------


def profile_group(session: str, bot: str, kb: str | None = None) -> tuple[str, ...]:
    """Who shares a speaker profile (the L2 sharing without the KB: profiles are not per KB) or,
    with ``kb=None``, a session profile / injection snapshot (always per bot and session)."""
    if kb is not None and KBS[kb] == "bot" and bot:
        return ("bot", bot)
    return ("session", bot, session)


@dataclass
class Listings:
    service: MemoryService  # the plugin's graph over the world's stores: made with the two below
    review: Any
    consolidator: Any
    fenced: MemoryService  # a second service over a copy of the store, with fences written in it
    made: dict[str, dict[str, Ident]]  # listing -> item id/token -> the identity that made it


def _consolidation_answer(messages: list[dict[str, str]]) -> str:
    import re

    block = re.search(r"<SOURCES_JSON>\n(.*)\n</SOURCES_JSON>", messages[-1]["content"], re.DOTALL)
    assert block, "no data block"
    sources = json.loads(block.group(1))
    return json.dumps({"summary": "Summary of the sources.", "cited_ids": [x["id"] for x in sources]})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def listings(world: World) -> Listings:
    from ltm.domain.candidates import Proposal
    from ltm.domain.storage_keys import l2_lock_key
    from ltm.service.consolidation import ConsolidationSettings

    class Model:
        async def complete(self, model_uuid: str, system: str, user: str, timeout: float) -> str:
            return _consolidation_answer([{"role": "system", "content": system}, {"role": "user", "content": user}])

    # the plugin's graph over the world's stores: a service made with a review queue and a consolidator
    svc = MemoryService(
        kv=world.service.kv,
        vectors=world.service.vectors,
        embedder_for=world.service.embedder_for,
        settings=_settings,
        review=with_review(),
        consolidator=with_consolidator(
            Model(), settings=lambda: ConsolidationSettings(enabled=True, model_uuid="m", min_age_days=0)
        ),
    )
    review, cons = svc.review, svc.consolidator
    assert review is not None and cons is not None
    made: dict[str, dict[str, Ident]] = {
        k: {} for k in ("tombstone", "candidate", "proposal", "speaker", "session", "inject", "fence")
    }
    rng = world.rng("listings")
    words = iter(_unique_words(rng, len(world.idents) * 6))
    for ident in world.idents:
        scope = world.scopes[ident]
        tok = next(words)
        await svc.update_profile(scope, {"add_traits": [f"trait {tok}"]}, ADMIN)
        made["speaker"][tok] = ident
        tok = next(words)
        await svc.update_profile(scope, {"target": "session", "add_notes": [f"note {tok}"]}, ADMIN)
        made["session"][tok] = ident
        tok = next(words)
        snapshot = {"at": "2025-01-01T00:00:00Z", "probe": tok, "episodes": []}
        await svc.save_injection(scope, InjectionSnapshot.from_record(snapshot))
        made["inject"][tok] = ident
        text = f"I prefer {next(words)} tea."
        cand = await review.propose(scope, Proposal(text, text, "preference"), ADMIN, origin="rules")
        made["tombstone"][(await review.reject(scope, cand.id, ADMIN, "probe")).result_id] = ident
        text = f"I prefer {next(words)} coffee."
        cand = await review.propose(scope, Proposal(text, text, "preference"), ADMIN, origin="rules")
        made["candidate"][cand.id] = ident
    for ident in world.idents:  # one summary proposal per L2 group (a second preview covers the same sources)
        if any(i.group == ident.group for i in made["proposal"].values()):
            continue
        preview = await cons.preview(world.scopes[ident], ADMIN)
        if preview.proposal is not None:
            made["proposal"][preview.proposal.id] = ident
    # fences: written as records into a copy of the store (a fence comes from an unknown host
    # outcome); a fresh service over the copy lists them
    kv = HostLimitedKeyValueStore()
    for k in await svc.kv.keys(""):
        await kv.set(k, await svc.kv.get(k) or b"")
    for ident in world.idents:
        scope = world.scopes[ident]
        for lock in (l2_lock_key(scope), "l1:" + speaker_profile_key(scope, ident.sender)):
            record = {"lock_key": lock, "operation": "probe", "dispatched_at": "x", "scope": scope.describe()}
            await kv.set("fence/" + lock, json.dumps(record).encode())
            made["fence"][lock] = ident
    fenced = MemoryService(kv=kv, vectors=svc.vectors, embedder_for=lambda c, kb: _EMBEDDER, settings=Settings)
    return Listings(svc, review, cons, fenced, made)


def _check_listing(
    world: World,
    name: str,
    seen: dict[Ident, set[str]],
    group_of: Any,
    made: dict[str, Ident],
    visible: Any = None,
) -> int:
    """Positive control (every identity of the maker's group sees the item, or those ``visible``
    names: the read rule), then the probes."""
    where = f"[seed={SEED} backend={world.backend} listing={name}]"
    probes = 0
    sees = visible or (lambda ident, maker: group_of(ident) == group_of(maker))
    for item, maker in made.items():
        for ident in world.idents:
            if sees(ident, maker):
                assert item in seen[ident], f"positive control failed {where}: {ident.label()} misses {item}"
            else:
                assert item not in seen[ident], f"LEAK {where}: {ident.label()} sees {item} of {maker.label()}"
                probes += 1
    for ident, items in seen.items():
        for item in items:
            assert item in made and sees(ident, made[item]), f"LEAK {where}: {ident.label()}: {item}"
    return probes


async def test_every_key_listing_is_isolated(world: World, listings: Listings) -> None:
    """Tombstones, review candidates (open and every status), consolidation proposals, speaker and
    session profiles, injection snapshots, fences (service and console) and the known spaces: each
    identity sees exactly its group's items, with ids that contain ``/``, ``:``, ``#``, ``%``,
    look-alike characters and ids past the host's key length (>= 20,000 probes on each backend;
    measured with SEED: 21,262 on each)."""
    from pages.router import handle
    from pages.scopes import known_scopes

    svc, made = listings.service, listings.made  # the service the review queue and consolidator are of

    async def console(service: MemoryService, endpoint: str, ident: Ident, **extra: Any) -> Any:
        req = PageRequest(endpoint=endpoint, method="POST", body=_scope_body(ident, **extra))
        r = await handle(service, req, review=listings.review, consolidator=listings.consolidator)
        assert r.error is None, (endpoint, r.error)
        return r.data

    def l2(i: Ident) -> tuple[str, ...]:
        return i.group

    def session_of(i: Ident) -> tuple[str, ...]:
        return profile_group(i.session, i.bot)

    def speakers_of(i: Ident) -> tuple[str, ...]:
        return profile_group(i.session, i.bot, i.kb)

    assert len(made["proposal"]) >= len({i.group for i in world.idents}) - 2, "positive control: proposals"
    last_inject = {session_of(i): tok for tok, i in made["inject"].items()}  # the last writer of a scope wins
    injected = {tok: i for tok, i in made["inject"].items() if last_inject[session_of(i)] == tok}
    probes = 0
    for surface in ("service", "console"):
        seen: dict[str, dict[Ident, set[str]]] = {k: {} for k in made}
        for ident in world.idents:
            scope = world.scopes[ident]
            if surface == "service":
                tombstones = [t.id for t in (await listings.review.list_tombstones(scope, 1, 100))[0]]
                everything = (await listings.review.list(scope, page_size=100, all_statuses=True)).items
                candidates = [c.id for c in everything if c.status == "pending"]
                assert {c.id for c in (await listings.review.list(scope, page_size=100)).items} == set(candidates)
                proposals = [p.id for p in await listings.consolidator.list_proposals(scope)]
                traits = [t for p in await svc.speaker_profiles(scope) for t in p.traits]
                notes = (await svc.get_profile(scope, "session")).notes
                last = await svc.last_injection(scope)
                snap = last.to_record() if last is not None else {}
                fences = list(await listings.fenced.writes.fencing.scope_fences(scope))
            else:
                tombstones = [t["id"] for t in (await console(svc, "/tombstones", ident, page_size=100))["items"]]
                data = await console(svc, "/candidates", ident, page_size=100, all_statuses=True)
                candidates = [c["id"] for c in data["items"] if c["status"] == "pending"]
                proposals = [p["id"] for p in (await console(svc, "/consolidation/proposals", ident))["proposals"]]
                data = await console(svc, "/profiles", ident)
                traits = [t for p in data["speakers"] for t in p["traits"]]
                notes = data["session"]["notes"]
                snap = (await console(svc, "/injection", ident))["snapshot"] or {}
                data = await console(listings.fenced, "/diagnostics", ident)
                fences = [f["lock_key"] for f in data["fences"]["items"]]
            seen["tombstone"][ident] = set(tombstones)
            seen["candidate"][ident] = set(candidates)
            seen["proposal"][ident] = set(proposals)
            seen["speaker"][ident] = {t.removeprefix("trait ") for t in traits}
            seen["session"][ident] = {n.removeprefix("note ") for n in notes}
            seen["inject"][ident] = {str(snap["probe"])} if snap.get("probe") else set()
            seen["fence"][ident] = set(fences)
        # a chat reads a private chat's candidates, and the tombstones their rejection records (they
        # take its audience), only as the read rule says; the console reads them all
        readers = None if surface == "console" else can_read
        probes += _check_listing(world, f"{surface} tombstones", seen["tombstone"], l2, made["tombstone"], readers)
        probes += _check_listing(world, f"{surface} candidates", seen["candidate"], l2, made["candidate"], readers)
        probes += _check_listing(world, f"{surface} proposals", seen["proposal"], l2, made["proposal"])
        # a speaker listing shows every speaker of the sharing group, whoever asks
        probes += _check_listing(world, f"{surface} speaker profiles", seen["speaker"], speakers_of, made["speaker"])
        probes += _check_listing(world, f"{surface} session profiles", seen["session"], session_of, made["session"])
        probes += _check_listing(world, f"{surface} injection", seen["inject"], session_of, injected)
        fences_l2 = {k: i for k, i in made["fence"].items() if k.startswith("l2:")}
        fences_l1 = {k: i for k, i in made["fence"].items() if k.startswith("l1:")}
        seen_l2 = {i: {k for k in v if k.startswith("l2:")} for i, v in seen["fence"].items()}
        seen_l1 = {i: {k for k in v if k.startswith("l1:")} for i, v in seen["fence"].items()}
        probes += _check_listing(world, f"{surface} l2 fences", seen_l2, l2, fences_l2)
        probes += _check_listing(world, f"{surface} l1 fences", seen_l1, speakers_of, fences_l1)
    # known spaces: every identity's session is named readably, with its own speakers and no other
    known = await known_scopes(svc)
    listed = {(s["bot_uuid"], s["session_name"]): set(s["speakers"]) for s in known["scopes"]}
    senders = {i.sender for i in world.idents}
    for ident in world.idents:
        key = (ident.bot, ident.session)
        assert key in listed, f"positive control: known spaces miss {ident.label()}"
        mine = {i.sender for i in world.idents if (i.bot, i.session) == key}
        named = {s for s in mine if any(j.sender == s and KBS[j.kb] == "session" for j in world.idents)}
        assert listed[key] >= named, (ident.label(), listed[key])  # shortened sender ids named from the record
        assert not listed[key] & (senders - mine), f"LEAK known spaces: {ident.label()} lists {listed[key] - mine}"
        probes += len(senders - mine)
    assert set(listed) == {(i.bot, i.session) for i in world.idents}, "known spaces name a session nobody wrote"
    assert {b["bot_uuid"] for b in known["bots"]} == {i.bot for i in world.idents if i.bot and KBS[i.kb] == "bot"}
    assert probes >= 20_000, probes


async def test_foreign_writes_by_id_or_tag_touch_nothing(world: World) -> None:
    """bulk_delete by foreign ids and by foreign tags, forget and get of foreign ids: nothing of
    another scope is read or deleted (>= 3,400 probes on chroma, >= 3,000 on qdrant; measured 3,780
    and 3,402); then the positive control: the owner's own bulk delete with the same criteria does
    delete."""
    svc = world.service
    rng = world.rng("bulk")
    # positive control before: every row is listed by its owners
    before = {i: await _list_all(world, i, rng, None) for i in world.idents}
    _check_partition(world, before, list(world.rows), "bulk(before)")
    probes = 0
    for ident in world.idents:
        scope = world.scopes[ident]
        foreign = [r for r in world.rows.values() if not world.readable(ident, r.id)]
        sample = rng.sample(foreign, k=min(len(foreign), 60))
        n = await svc.bulk_delete(scope, Criteria(statuses=None, ids=tuple(r.id for r in sample)), ADMIN)
        assert n == 0, f"{ident.label()} deleted {n} foreign rows by id"
        probes += len(sample)
        foreign_tags = sorted(
            {r.tag for r in foreign} - {r.tag for r in world.rows.values() if world.readable(ident, r.id)}
        )
        for tag in rng.sample(foreign_tags, k=min(3, len(foreign_tags))):
            n = await svc.bulk_delete(scope, Criteria(statuses=None), ADMIN, tag=tag)
            assert n == 0, f"{ident.label()} deleted {n} rows by the foreign tag {tag}"
            probes += sum(1 for r in foreign if r.tag == tag)
        for r in rng.sample(foreign, k=3):
            with pytest.raises(NotFoundError):
                await svc.forget(scope, r.id, ADMIN)
            with pytest.raises(NotFoundError):
                await svc.get_episode(scope, r.id)
            probes += 2
    after = {i: await _list_all(world, i, rng, None) for i in world.idents}
    assert after == before, "a foreign bulk delete / forget changed the store"
    # positive control: the owner's bulk delete by its tag deletes exactly its rows of that tag
    victim = rng.choice(world.idents)
    tag = next(r.tag for r in world.rows.values() if r.ident == victim)
    expected = {r.id for r in world.rows.values() if world.readable(victim, r.id) and r.tag == tag}
    n = await svc.bulk_delete(world.scopes[victim], Criteria(statuses=None), ADMIN, tag=tag)
    assert n == len(expected) > 0
    for rid in expected:
        del world.rows[rid]
    final = {i: await _list_all(world, i, rng, None) for i in world.idents}
    for ident in world.idents:
        assert final[ident] == before[ident] - expected, f"{ident.label()}: the owner's delete touched another scope"
    assert probes >= (3_400 if world.backend == "chroma" else 3_000), probes
