"""Nothing credential-like leaves the plugin for a model, on every path that sends text to one:

- candidate extraction (the review queue's model picks sentences of the user's turn);
- consolidation summaries (stored records go to the consolidation model as data).

Obfuscated credentials (a zero-width character inside ``password``, ``p@ssword``, look-alike
letters) and Luhn-valid card numbers are caught as well as the plain forms; the ordinary sentences
and records next to them still reach the model (positive control).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ltm.service import Actor
from tests.contract.test_consolidation import Clock, Conf, Env
from tests.contract.test_consolidation import ScriptedModel as ConsolidationModel
from tests.support import ADMIN, build_service, consolidated, scope_of, unwire_consolidation
from tests.support.review import ScriptedModel, review_world

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
    conf = Conf()
    clock = Clock()
    svc = await build_service("numpy", tmp_path, settings=lambda: conf.memory)
    svc.clock = clock
    model = ConsolidationModel()
    cons = consolidated(svc, model, settings=lambda: conf.consol)
    yield Env(svc, cons, model, clock, conf)
    unwire_consolidation(svc)


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
