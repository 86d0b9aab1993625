"""Nothing credential-like leaves the plugin for a model, on every path that sends text to one:

- candidate extraction (the review queue's model picks sentences of the user's turn);
- consolidation summaries (stored records go to the consolidation model as data);
- the KB's rerank model (the query and the head of the recalled rows).

And nothing credential-like becomes a memory: ``remember`` (tool, command, console), import,
document ingest and an accepted candidate store the value replaced by ``[redacted]``.

Obfuscated credentials (a zero-width character inside ``password``, ``p@ssword``, look-alike
letters) and Luhn-valid card numbers are caught as well as the plain forms; the ordinary sentences
and records next to them still reach the model (positive control).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.credentials import REDACTED
from ltm.domain.models import build_episode, validate_episode_input
from ltm.service import Actor
from ltm.service.transfer import import_scope
from tests.contract.test_consolidation import Env, consolidation_env
from tests.contract.test_consolidation import ScriptedModel as ConsolidationModel
from tests.support import ADMIN, KB, scope_of
from tests.support.review import ScriptedModel, contents, review_world
from tests.unit.test_rerank import OverlapReranker
from tests.unit.test_rerank import _service as rerank_service

LISTENER = Actor(surface="listener", sender_id="alice", query_id=7)
SECRETS = {
    "My pass\u200bword is hunter2!": "hunter2",
    "My p@ssword: qwerty9.": "qwerty9",
    "My p\u0430ssword is zebra77.": "zebra77",
    "My card is 4111 1111 1111 1111.": "4111",
    "Card 5500-0000-0000-0004 expires soon.": "5500",
}
SAFE = ("I prefer green tea.", "I live in Oslo.")


async def test_candidate_extraction_sends_no_credential_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel()
    w = await review_world(tmp_path, model=model, candidate_model_uuid="m-1")
    text = " ".join([SAFE[0], *SECRETS, SAFE[1]])
    report = await w.review.extract(w.alice, text, LISTENER)
    assert report.mode == "model" and len(model.calls) == 1
    sent = model.calls[0]["system"] + model.calls[0]["user"]
    for secret in SECRETS.values():
        assert secret not in sent, f"{secret} reached the candidate model"
    assert all(s in sent for s in SAFE)  # positive control
    assert report.redactions == len(SECRETS)


@pytest.fixture
async def cons_env(tmp_path: Path) -> AsyncIterator[Env]:
    yield await consolidation_env("numpy", tmp_path, ConsolidationModel())


async def test_consolidation_sends_no_credential_to_the_model(cons_env: Env) -> None:
    env = cons_env
    alice = await scope_of(env.svc)
    await env.seed(alice, SAFE[0], *SECRETS, SAFE[1], "I work as a nurse.")
    env.clock.advance(10)
    preview = await env.cons.preview(alice, ADMIN)
    assert len(env.model.calls) == 1, preview.draft_error
    sent = "".join(m["content"] for m in env.model.calls[0])
    for secret in SECRETS.values():
        assert secret not in sent, f"{secret} reached the consolidation model"
    assert all(s in sent for s in SAFE) and "nurse" in sent  # positive control
    assert preview.proposal is not None
    assert {e.content for e in preview.sources} == {*SAFE, "I work as a nurse."}


# ------------------------------------------------------------------ secrets said in plain speech
# Each is missed by the keyword-right-before-the-value rule of earlier builds; the value after ->.
PLAIN_SPEECH = {
    "The password for my bank account is swordfish.": "swordfish",
    "I set my email password to bluebird77.": "bluebird77",
    "My wifi password is: tiger-lily.": "tiger-lily",
    "My PIN for the debit card is 4321.": "4321",
    "my password (for work) is opensesame42.": "opensesame42",
    "The password, which I never share, is marmalade.": "marmalade",
    "My visa is 4111.1111.1111.1111.": "4111.1111.1111.1111",
    "提取码：x7k9。": "x7k9",
}


async def test_plain_speech_secrets_never_reach_the_candidate_model(tmp_path: Path) -> None:
    model = ScriptedModel()
    w = await review_world(tmp_path, model=model, candidate_model_uuid="m-1")
    report = await w.review.extract(w.alice, " ".join([SAFE[0], *PLAIN_SPEECH, SAFE[1]]), LISTENER)
    assert report.mode == "model" and len(model.calls) == 1
    sent = model.calls[0]["system"] + model.calls[0]["user"]
    for secret in PLAIN_SPEECH.values():
        assert secret not in sent, f"{secret} reached the candidate model"
    assert all(s in sent for s in SAFE)  # positive control
    assert report.redactions == len(PLAIN_SPEECH)


@pytest.mark.parametrize("origin", ["tool", "command", "console"])
async def test_remember_stores_no_secret(tmp_path: Path, origin: str) -> None:
    """The model's ``remember`` tool, ``!memory remember`` and the console all write through
    ``remember``: the value is replaced, the rest of the sentence is kept."""
    w = await review_world(tmp_path)
    for text in PLAIN_SPEECH:
        ep, _ = await w.service.remember(w.alice, {"content": text}, LISTENER, origin=origin)
        assert REDACTED in ep.content
    ep, _ = await w.service.remember(w.alice, {"content": SAFE[0]}, LISTENER, origin=origin)
    assert ep.content == SAFE[0]  # positive control: an ordinary memory is stored as it was said
    stored = " ".join(await contents(w.service, w.alice))
    for secret in PLAIN_SPEECH.values():
        assert secret not in stored, f"{secret} was stored"
    assert "The password for my bank account is [redacted]." in stored


async def test_import_stores_no_secret(tmp_path: Path) -> None:
    w = await review_world(tmp_path)
    rows = [{"id": f"x{n}", "content": text} for n, text in enumerate([*PLAIN_SPEECH, SAFE[1]])]
    report = await import_scope(w.service, w.alice, {"episodes": rows}, ADMIN)
    assert report.imported == len(rows)
    stored = await contents(w.service, w.alice)
    assert SAFE[1] in stored  # positive control
    for secret in PLAIN_SPEECH.values():
        assert secret not in " ".join(stored), f"{secret} was imported"
    again = await import_scope(w.service, w.alice, {"episodes": rows}, ADMIN)
    assert again.imported == 0  # a second import of the same file recognises the redacted rows


async def test_document_ingest_stores_no_secret(tmp_path: Path) -> None:
    w = await review_world(tmp_path)
    doc = {
        "session_name": "person_alice",
        "bot_uuid": "bot1",
        "sender_id": "alice",
        "episodes": [{"content": t} for t in PLAIN_SPEECH],
    }
    doc["episodes"].append({"content": SAFE[0]})
    await w.service.ingest_document(KB, "doc-1", doc, ADMIN)
    stored = " ".join(await contents(w.service, w.alice))
    assert SAFE[0] in stored  # positive control
    for secret in PLAIN_SPEECH.values():
        assert secret not in stored, f"{secret} was ingested"


async def test_an_accepted_candidate_stores_no_secret(tmp_path: Path) -> None:
    """A candidate queued with a secret in it (by an earlier build's weaker rule) is written
    redacted when a person accepts it."""
    w = await review_world(tmp_path)
    text = "The password for my bank account is swordfish."
    cand = await w.review.propose(w.alice, Proposal(text, text, "identity"), LISTENER, origin="rules")
    decision = await w.review.accept(w.alice, cand.id, ADMIN)
    assert decision.episode is not None
    assert decision.episode.content == "The password for my bank account is [redacted]."
    assert "swordfish" not in " ".join(await contents(w.service, w.alice))


async def test_the_rerank_model_gets_no_secret(tmp_path: Path) -> None:
    """A row stored before redaction existed, and a secret in the query, stay out of the rerank call."""
    model = OverlapReranker()
    svc = await rerank_service(tmp_path, model, {"rerank_model": "rr-1"})
    scope = await scope_of(svc)
    legacy = build_episode(
        validate_episode_input({"content": "The password for my bank account is swordfish."}), scope, origin="tool"
    )
    await svc.writes.upsert(scope, [legacy])
    await svc.remember(scope, {"content": "I keep my bank account at Nordea."}, ADMIN)
    await svc.recall(scope, "bank account password, mine is bluebird77", limit=3, with_profiles=False)
    assert len(model.calls) == 1
    query, documents, _ = model.calls[0]
    assert "I keep my bank account at Nordea." in documents  # positive control
    assert "swordfish" not in " ".join(documents) and "bluebird77" not in query
    assert "bank account" in query


async def test_consolidation_skips_a_stored_plain_speech_secret(cons_env: Env) -> None:
    """Rows stored before redaction existed are still kept away from the consolidation model."""
    env = cons_env
    alice = await scope_of(env.svc)
    await env.seed(alice, SAFE[0], SAFE[1], "I work as a nurse.")
    for text in PLAIN_SPEECH:
        stamp = env.svc.clock().isoformat()
        legacy = build_episode(validate_episode_input({"content": text}), alice, origin="tool", timestamp=stamp)
        await env.svc.writes.upsert(alice, [legacy])
    env.clock.advance(10)
    await env.cons.preview(alice, ADMIN)
    assert len(env.model.calls) == 1
    sent = "".join(m["content"] for m in env.model.calls[0])
    for secret in PLAIN_SPEECH.values():
        assert secret not in sent, f"{secret} reached the consolidation model"
    assert all(s in sent for s in SAFE)  # positive control
