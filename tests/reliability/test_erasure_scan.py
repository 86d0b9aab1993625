"""A forgotten text survives nowhere: after each deleting verb, every stored value - plugin storage
decoded the way the plugin encodes it, and the vector store's own files read raw (Chroma's
``chroma.sqlite3`` with its write-ahead log table ``embeddings_queue``, Qdrant local's storage; the
numpy engine's rows) with every sealed value opened by the keys plugin storage still holds - is
searched for the text (issue 35, findings 1 and 5; ltm/service/erasure.py, ltm/service/sealing.py).

Two controls in every case: before the verb the same scan finds the secret (in the vector store
and in the last-turn snapshots of both chats), and after it the scan still finds a memory that was
not erased, in opened form - so a scan that cannot read the store would fail, not pass."""

from __future__ import annotations

import base64
import binascii
import json
import marshal
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ltm.domain.candidates import Proposal
from ltm.domain.filters import Criteria, scope_filter
from ltm.service import Actor, index_snapshot
from ltm.service.compose import build
from ltm.service.installation import Installation
from ltm.service.review import ReviewQueue
from ltm.service.row_codec import unpack_metadata
from tests.support import ADMIN, KB, build_service, scope_of

SECRET = "Alice hid the spare key under the blue flowerpot by the door"
CONTROL = "Alice keeps her bicycle in the garden shed behind the house"
OTHER_KB = "kb-kept"
ALICE = Actor(surface="test", sender_id="alice", privilege=0)
VERBS = ("forget", "bulk_delete", "archive_then_delete", "document_delete", "erase_episodes", "kb_delete")
SEALED_VALUE = re.compile(rb"v1:([A-Za-z0-9+/=]{24,})")
# the seal's format, restated (ltm/service/sealing.py): a key per row in seal/..., "v1:" + base64 of
# a 12-byte nonce and the AES-GCM ciphertext, the row id as associated data
SEAL_PREFIX, NONCE = "seal/", 12


async def kv_views(svc: Any) -> list[str]:
    """Every plugin-storage value as the plugin decodes it: UTF-8 text, JSON re-dumped without
    escapes, a recall snapshot's marshalled record and each of its rows' packed metadata."""
    out: list[str] = []
    for key in await svc.kv.keys(""):
        raw = await svc.kv.get(key) or b""
        out.append(raw.decode("utf-8", "replace"))
        try:
            out.append(json.dumps(json.loads(raw), ensure_ascii=False))
        except ValueError:
            pass
        if raw.startswith(index_snapshot.MAGIC):
            body = marshal.loads(raw[len(index_snapshot.MAGIC) + 32 :])
            out.append(repr(body))
            out += [repr(unpack_metadata(blob)) for blob in body[8]]
    return out


async def keyring(svc: Any) -> dict[str, bytes]:
    """Every seal key plugin storage holds: row id -> key."""
    keys: dict[str, bytes] = {}
    for k in await svc.kv.keys(SEAL_PREFIX):
        for rid, b64 in json.loads(await svc.kv.get(k) or b"{}").items():
            keys[rid] = base64.b64decode(b64)
    return keys


def opened(blobs: list[bytes], keys: dict[str, bytes]) -> list[str]:
    """Each sealed value that a key still held opens, in plain text."""
    out = []
    for b64 in blobs:
        try:
            blob = base64.b64decode(b64)
        except binascii.Error:
            continue
        for rid, key in keys.items():
            try:
                out.append(AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], rid.encode()).decode("utf-8"))
            except (InvalidTag, ValueError):
                continue
    return out


def sqlite_rows(path: Path) -> list[str]:
    """Every value of every table of an SQLite file, read with sqlite3 (Chroma's embeddings_queue
    included), as text."""
    out: list[str] = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        for t in tables:
            try:
                for row in con.execute(f'select * from "{t}"'):  # noqa: S608 - table names of the file itself
                    out += [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row]
            except sqlite3.DatabaseError:
                continue
    finally:
        con.close()
    return out


async def store_views(svc: Any, kind: str, tmp: Path, user_keys: list[str]) -> tuple[list[str], list[bytes]]:
    """The vector store's content as text views and the sealed values found in it: the files
    (read raw and, for SQLite, table by table) of Chroma and Qdrant; the numpy engine's rows."""
    views: list[str] = []
    raw_all = b""
    if kind == "numpy":
        for coll in (KB, OTHER_KB):
            for uk in user_keys:
                page = await svc.vectors.list(coll, scope_filter(uk, Criteria(statuses=None)), 1000, 0)
                for item in page.items:
                    raw_all += json.dumps([item.metadata, item.document], ensure_ascii=False).encode("utf-8")
    else:
        for f in sorted(p for p in tmp.rglob("*") if p.is_file()):
            data = f.read_bytes()
            raw_all += data
            if data.startswith(b"SQLite format 3"):
                views += sqlite_rows(f)
    views.append(raw_all.decode("utf-8", "replace"))
    blobs = SEALED_VALUE.findall(raw_all) + [
        m.encode() for v in views for m in re.findall(r"v1:([A-Za-z0-9+/=]{24,})", v)
    ]
    return views, blobs


async def scan(inst: Installation, kind: str, tmp: Path, user_keys: list[str]) -> dict[str, bool]:
    svc = inst.service
    await svc.writes.index.flush_snapshots()
    kv = await kv_views(svc)
    store, blobs = await store_views(svc, kind, tmp, user_keys)
    plain = opened(list(dict.fromkeys(blobs)), await keyring(svc))
    everything = kv + store + plain
    return {
        "secret": any(SECRET in v for v in everything),
        "secret_in_store": any(SECRET in v for v in store + plain),
        # sealed, the store holds it only in opened form: found, the scan opened what a key opens
        "control_in_store": any(CONTROL in v for v in store + plain),
        "control_in_kv": any(CONTROL in v for v in kv),
    }


async def _seed(kind: str, tmp: Path, verb: str) -> tuple[Installation, Any, Any, str]:
    svc = await build_service(kind, tmp, isolation="bot", review=lambda s: ReviewQueue(s))
    await svc.register_kb(OTHER_KB, {"embedding_model": "hash", "isolation": "bot"})
    inst = build(svc)
    alice = await scope_of(svc, "person_alice", "alice")
    group = await scope_of(svc, "group_g1", "bob")
    if verb == "document_delete":
        doc = {
            "session_name": "person_alice",
            "bot_uuid": "bot1",
            "sender_id": "alice",
            "episodes": [{"content": SECRET}],
        }
        await svc.ingest_document(KB, "doc-1", doc, ADMIN)
        (secret_id,) = [e.id for e in await svc.fetch(alice, Criteria()) if e.content == SECRET]
    else:  # a candidate that became the memory: its record holds the text too
        assert inst.review is not None
        cand = await inst.review.propose(alice, Proposal(SECRET, SECRET, "identity"), ALICE, origin="test")
        decision = await inst.review.accept(alice, cand.id, ADMIN)
        assert decision.episode is not None
        secret_id = decision.episode.id
    control_scope = (
        alice
        if verb != "kb_delete"
        else await svc.scope_for(kb_id=OTHER_KB, session_name="group_g2", bot_uuid="bot1", sender_id="alice")
    )  # another chat: a chat's last-turn snapshot is one, whichever knowledge base it recalled from
    await svc.remember(control_scope, {"content": CONTROL}, ALICE)
    # the secret in the last-turn snapshot of its own chat and, as a near miss kept out by its
    # audience, in a group's of the same bot
    await chat_turn(svc, alice, "where is the spare key, the blue flowerpot?")
    await chat_turn(svc, group, "where is the spare key, the blue flowerpot?")
    await chat_turn(svc, control_scope, "where is the bicycle, in the garden shed?")
    return inst, alice, group, secret_id


async def chat_turn(svc: Any, scope: Any, text: str) -> None:
    """A turn as the listener takes it: prepared, published (nowhere here), recorded."""
    injection = await svc.prepare_turn(scope, text)
    assert injection is not None
    svc.record_turn(scope, injection)


async def _run(inst: Installation, verb: str, alice: Any, secret_id: str) -> None:
    svc = inst.service
    if verb == "forget":
        await svc.forget(alice, secret_id, ALICE)
    elif verb == "bulk_delete":
        assert await svc.bulk_delete(alice, Criteria(statuses=None, ids=(secret_id,)), ADMIN) == 1
    elif verb == "archive_then_delete":
        await svc.set_status(alice, secret_id, "archived", ADMIN)
        assert await svc.bulk_delete(alice, Criteria(statuses=("archived",)), ADMIN) == 1
    elif verb == "document_delete":
        assert await svc.delete_document(KB, "doc-1", ADMIN) == 1
    elif verb == "erase_episodes":
        assert await svc.erase_episodes(alice, [secret_id], ALICE) == 1
    elif verb == "kb_delete":
        await inst.delete_kb(KB)
    else:
        raise AssertionError(verb)


@pytest.mark.parametrize("kind", ["numpy", "chroma", "qdrant"])
@pytest.mark.parametrize("verb", VERBS)
async def test_an_erased_text_is_found_nowhere_and_a_kept_one_still_is(tmp_path: Path, kind: str, verb: str) -> None:
    inst, alice, group, secret_id = await _seed(kind, tmp_path, verb)
    svc = inst.service
    user_keys = sorted({alice.user_key, group.user_key})
    before = await scan(inst, kind, tmp_path, user_keys)
    assert before["secret"] and before["secret_in_store"] and before["control_in_store"], before
    own, near = await svc.last_injection(alice), await svc.last_injection(group)
    assert own is not None and secret_id in json.dumps(own.to_record())  # the positive controls of
    assert near is not None and secret_id in json.dumps(near.to_record())  # finding 1's scrub

    await _run(inst, verb, alice, secret_id)

    after = await scan(inst, kind, tmp_path, user_keys)
    assert not after["secret"], f"{verb} on {kind}: the erased text is still stored"
    assert after["control_in_store"] and after["control_in_kv"], after
    for scope in (alice, group):  # finding 1: no chat's last injection names it
        snap = await svc.last_injection(scope)
        assert snap is None or secret_id not in json.dumps(snap.to_record(), ensure_ascii=False)
