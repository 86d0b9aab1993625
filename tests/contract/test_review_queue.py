"""The review queue over a real MemoryService: extraction (rules and a scripted model), auto-apply,
conflict parking and its resolution, the twice-rejected value through every write path, trust
axes, and the queue store. Every exclusion test has a positive control."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.errors import ConflictError, LtmError, NotFoundError, ParkedError, TombstonedError
from ltm.domain.scope import Scope
from ltm.i18n import error_text
from ltm.service import Actor
from ltm.service.injection import context_payload, render_block
from ltm.service.review import ReviewSettings
from ltm.service.review import candidates as candidates_mod
from ltm.service.review import queue as queue_mod
from ltm.service.transfer import import_scope
from tests.support import ADMIN, KB
from tests.support.console.state import stored_state
from tests.support.review import ScriptedModel, World, contents, review_world

LISTENER = Actor(surface="listener", sender_id="alice", query_id=7)
SECRET = "sk-proj-Zq8vN3kLmP0aB7cD9eF1gH2iJ4"


def pick(*quotes: str, cls: str = "preference", **fields: Any) -> str:
    return json.dumps({"candidates": [{"evidence_quote": q, "classification": cls, **fields} for q in quotes]})


async def ops(w: World, n: int) -> list[str]:
    entries, _ = await w.service.audit_page(w.alice, 1, n)
    return [e["operation"] for e in reversed(entries)]


# ------------------------------------------------------------------------------------ extraction
class TestExtraction:
    def test_settings_are_off_by_default_and_bounded(self) -> None:
        s = ReviewSettings.from_config({})
        assert (s.enabled, s.auto_apply, s.max_per_turn, s.model_uuid) == (False, False, 3, "")
        assert ReviewSettings.from_config({"candidate_max_per_turn": 99}).max_per_turn == 10
        assert ReviewSettings.from_config({"candidate_extraction_enabled": "true"}).enabled

    async def test_rules_queue_the_users_statements(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        report = await w.review.extract(
            w.alice,
            "Hello! I prefer tea over coffee. The weather is nice. What's your name?",
            LISTENER,
            source_ref="query:7",
        )
        assert report.mode == "rules" and report.skipped == []
        (c,) = report.candidates
        assert (c.status, c.content, c.evidence_quote, c.origin) == (
            "pending",
            "I prefer tea over coffee.",
            c.content,
            "rules",
        )
        assert (c.classification, c.source_ref, c.sender_id) == ("preference", "query:7", "alice")
        assert await contents(w.service, w.alice, None) == []  # pending: nothing is a memory yet
        assert await ops(w, 5) == ["candidate.propose"]

    async def test_at_most_max_per_turn(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path, candidate_max_per_turn=2)
        report = await w.review.extract(w.alice, "I like tea. I live in Oslo. I am a nurse.", LISTENER)
        assert [c.content for c in report.candidates] == ["I like tea.", "I live in Oslo."]

    @pytest.mark.parametrize("mode", ["rules", "model"])
    async def test_credentials_are_never_stored_nor_sent(self, tmp_path: Path, mode: str) -> None:
        model = ScriptedModel(pick("I prefer tea."))
        cfg = {"candidate_model_uuid": "m-1"} if mode == "model" else {}
        w = await review_world(tmp_path, model=model, **cfg)
        text = f"I prefer tea. My API key is {SECRET} and my password is hunter22. 我的验证码是 583920。"
        report = await w.review.extract(w.alice, text, LISTENER)
        (c,) = report.candidates
        assert c.content == "I prefer tea." and c.redactions == 2 and report.redactions == 2
        kv, vectors = await stored_state(w.service)
        blob = json.dumps({k: (v or b"").decode("utf-8", "replace") for k, v in kv.items()}, ensure_ascii=False)
        blob += json.dumps(vectors, ensure_ascii=False)
        for secret in (SECRET, "hunter22", "583920"):
            assert secret not in blob
        sent = " ".join(call["system"] + call["user"] for call in model.calls)
        assert (mode == "model") == bool(model.calls)
        for secret in (SECRET, "hunter22", "583920"):
            assert secret not in sent
        if mode == "model":
            assert "I prefer tea." in sent  # positive control: the clean sentence was offered

    async def test_repeats_are_skipped(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        first = await w.review.extract(w.alice, "I like tea.", LISTENER)
        again = await w.review.extract(w.alice, "i like TEA!", LISTENER)
        assert len(first.candidates) == 1 and again.candidates == [] and again.skipped[0][0] == "queued"
        await w.service.remember(w.alice, {"content": "I live in Oslo."}, ADMIN)
        known = await w.review.extract(w.alice, "I live in Oslo.", LISTENER)
        assert known.candidates == [] and known.skipped[0][0] == "known"

    async def test_a_full_queue_drops_candidates_and_says_so(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(candidates_mod, "MAX_OPEN", 2)
        w = await review_world(tmp_path)
        report = await w.review.extract(w.alice, "I like tea. I live in Oslo. I am a nurse.", LISTENER)
        assert len(report.candidates) == 2 and report.skipped == [("queue_full", "2")]
        with pytest.raises(ConflictError):
            await w.review.propose(w.alice, Proposal("I am 30.", "I am 30.", "identity"), ADMIN, origin="rules")


class TestModelSelection:
    async def test_a_paraphrase_writes_nothing(self, tmp_path: Path) -> None:
        model = ScriptedModel(pick("The user prefers tea to coffee."))
        w = await review_world(tmp_path, model=model, candidate_model_uuid="m-1")
        before = await stored_state(w.service)
        report = await w.review.extract(w.alice, "I prefer tea over coffee. I live in Oslo.", LISTENER)
        assert report.mode == "model" and report.candidates == [] and "word for word" in report.model_error
        assert await stored_state(w.service) == before
        model.reply = pick("I prefer tea over coffee.")  # positive control: the exact sentence
        report = await w.review.extract(w.alice, "I prefer tea over coffee. I live in Oslo.", LISTENER)
        assert [c.content for c in report.candidates] == ["I prefer tea over coffee."]

    @pytest.mark.parametrize(
        "reply",
        [
            "not json at all",
            pick("I live in Oslo.", status="accepted"),
            pick("I live in Oslo.", cls="fact"),
            json.dumps({"candidates": [], "explanation": "none"}),
            json.dumps(
                {
                    "candidates": [
                        {"evidence_quote": "I live in Oslo.", "classification": "identity"},
                        {"evidence_quote": "I live in Oslo", "classification": "identity"},
                    ]
                }
            ),
        ],
    )
    async def test_any_fault_in_the_answer_writes_nothing(self, tmp_path: Path, reply: str) -> None:
        w = await review_world(tmp_path, model=ScriptedModel(reply), candidate_model_uuid="m-1")
        before = await stored_state(w.service)
        report = await w.review.extract(w.alice, "I prefer tea. I live in Oslo.", LISTENER)
        assert report.candidates == [] and report.model_error
        assert await stored_state(w.service) == before

    async def test_time_and_failures_write_nothing(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(queue_mod, "MODEL_TIMEOUT_S", 0.05)
        model = ScriptedModel(("sleep", 2.0))
        w = await review_world(tmp_path, model=model, candidate_model_uuid="m-1")
        before = await stored_state(w.service)
        report = await w.review.extract(w.alice, "I live in Oslo.", LISTENER)
        assert report.candidates == [] and "within" in report.model_error
        assert model.calls[0]["timeout"] == 0.05
        model.reply = RuntimeError("host refused")
        report = await w.review.extract(w.alice, "I live in Oslo.", LISTENER)
        assert report.candidates == [] and "RuntimeError" in report.model_error
        assert await stored_state(w.service) == before

    async def test_model_candidates_stay_pending_even_with_auto_apply(self, tmp_path: Path) -> None:
        model = ScriptedModel(pick("I live in Oslo.", cls="identity", recommendation="accept", note="clear fact"))
        w = await review_world(tmp_path, model=model, candidate_model_uuid="m-1", candidate_auto_apply=True)
        report = await w.review.extract(w.alice, "I live in Oslo. What about you?", LISTENER)
        (c,) = report.candidates
        assert c.status == "pending" and report.accepted == []
        assert (c.model_recommendation, c.model_note, c.origin) == ("accept", "clear fact", "model")
        assert await contents(w.service, w.alice) == []
        model.reply = pick("I like tea.", recommendation="reject")
        (r,) = (await w.review.extract(w.alice, "I like tea.", LISTENER)).candidates
        assert r.status == "pending" and r.model_recommendation == "reject"  # advice is never a status


# ------------------------------------------------------------------------------------ auto-apply
class TestAutoApply:
    async def test_rule_candidates_are_accepted_at_once_and_audited(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path, candidate_auto_apply=True)
        report = await w.review.extract(w.alice, "I live in Oslo.", LISTENER)
        (c,) = report.candidates
        assert report.accepted == [c.id]
        got = await w.review.get(w.alice, c.id)
        assert got.status == "accepted" and got.decided_by["surface"] == "auto-apply"
        ep = await w.service.get_episode(w.alice, got.result_id)
        assert (ep.content, ep.origin, ep.extra) == ("I live in Oslo.", "candidate", {"candidate_id": c.id})
        assert (ep.claim_type, ep.confidence) == ("user_statement", "stated")
        assert await ops(w, 3) == ["candidate.propose", "episode.remember", "candidate.accept"]

    async def test_auto_apply_never_overwrites_a_conflict(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path, candidate_auto_apply=True)
        old, _ = await w.service.remember(w.alice, {"content": "I live in Paris."}, ADMIN)
        report = await w.review.extract(w.alice, "I moved to Berlin.", LISTENER)
        (c,) = report.candidates
        assert c.status == "conflict" and report.accepted == []
        assert (await w.service.get_episode(w.alice, old.id)).status == "active"
        assert await contents(w.service, w.alice) == ["I live in Paris."]


# ------------------------------------------------------------------------------------ conflicts
class TestConflicts:
    async def test_a_contradicting_remember_is_parked_with_both_sides(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        old, _ = await w.service.remember(w.alice, {"content": "Alice prefers Python."}, ADMIN)
        before = await contents(w.service, w.alice, None)
        with pytest.raises(ParkedError) as exc:
            await w.service.remember(
                w.alice, {"content": "Alice prefers Go.", "importance": 0.9, "tags": ["lang"]}, ADMIN
            )
        assert await contents(w.service, w.alice, None) == before  # never silently overwrites or keeps both
        text = error_text(exc.value, "en_US")
        cid = exc.value.params["candidate"]
        assert cid in text and old.id in text and "supersedes" in text
        c = await w.review.get(w.alice, cid)
        assert c.status == "conflict" and c.origin == "tool" and c.content == "Alice prefers Go."
        (side,) = c.conflicts_with
        assert (side["id"], side["content"], side["attribute"]) == (old.id, "Alice prefers Python.", "affinity")
        assert c.episode_fields["importance"] == 0.9 and c.episode_fields["tags"] == ["lang"]

    async def test_a_state_said_to_have_ended_is_parked_against_the_current_one(self, tmp_path: Path) -> None:
        """ "I used to live in Lisbon" after "I live in Lisbon" corrects it: parked for a person, who
        accepts it to supersede the first. Control: an ended state of another value is written."""
        w = await review_world(tmp_path)
        old, _ = await w.service.remember(w.alice, {"content": "I live in Lisbon."}, ADMIN)
        with pytest.raises(ParkedError) as exc:
            await w.service.remember(w.alice, {"content": "I used to live in Lisbon."}, ADMIN)
        c = await w.review.get(w.alice, exc.value.params["candidate"])
        assert c.status == "conflict" and [s["id"] for s in c.conflicts_with] == [old.id]
        await w.service.remember(w.alice, {"content": "I used to live in Porto."}, ADMIN)
        assert await contents(w.service, w.alice) == ["I live in Lisbon.", "I used to live in Porto."]

    async def test_compatible_and_corrections_are_written(self, tmp_path: Path) -> None:
        """Positive controls: a compatible statement and an explicit correction go straight in."""
        w = await review_world(tmp_path)
        old, _ = await w.service.remember(w.alice, {"content": "I live in Paris."}, ADMIN)
        await w.service.remember(w.alice, {"content": "I like tea."}, ADMIN)
        new, retired = await w.service.remember(
            w.alice, {"content": "I moved to Berlin.", "supersedes": [old.id]}, ADMIN
        )
        assert [r.id for r in retired] == [old.id]
        assert await contents(w.service, w.alice) == ["I like tea.", "I moved to Berlin."]
        assert (await w.review.list(w.alice)).items == []

    async def test_resolved_by_accept_the_old_record_is_superseded(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        old, _ = await w.service.remember(w.alice, {"content": "我住在北京。"}, ADMIN)
        with pytest.raises(ParkedError) as exc:
            await w.service.remember(w.alice, {"content": "我搬到上海了。"}, ADMIN)
        d = await w.review.accept(w.alice, exc.value.params["candidate"], ADMIN, "用户确认搬家")
        assert not d.parked and [e.id for e in d.superseded] == [old.id]
        assert d.episode is not None and d.episode.extra == {"candidate_id": d.candidate.id}
        assert d.candidate.status == "accepted" and d.candidate.superseded == [old.id]
        sup = await w.service.get_episode(w.alice, old.id)
        assert sup.status == "superseded" and sup.superseded_by == d.episode.id
        assert await contents(w.service, w.alice) == ["我搬到上海了。"]
        assert await contents(w.service, w.alice, ("superseded",)) == ["我住在北京。"]  # available on request

    async def test_resolved_by_reject_the_old_record_stays(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        old, _ = await w.service.remember(w.alice, {"content": "I prefer Python."}, ADMIN)
        with pytest.raises(ParkedError) as exc:
            await w.service.remember(w.alice, {"content": "I prefer Go."}, ADMIN)
        cid = exc.value.params["candidate"]
        rejected = await w.review.reject(w.alice, cid, ADMIN, "misheard")
        assert rejected.status == "rejected" and rejected.result_id.startswith("tb_")
        assert (await w.service.get_episode(w.alice, old.id)).status == "active"
        assert await contents(w.service, w.alice, None) == ["I prefer Python."]
        # rejected is not superseded: never recalled, still inspectable
        result = await w.service.recall(w.alice, "Go", budget_tokens=10**6)
        assert "I prefer Go." not in [r.episode.content for r in result.episodes]
        every = await w.review.list(w.alice, all_statuses=True)
        assert [(c.id, c.status, c.reason) for c in every.items] == [(cid, "rejected", "misheard")]
        assert (await w.review.list(w.alice)).items == []

    async def test_a_pending_candidate_that_now_conflicts_is_parked_on_accept(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        (c,) = (await w.review.extract(w.alice, "I work at Stripe.", LISTENER)).candidates
        assert c.status == "pending"
        old, _ = await w.service.remember(w.alice, {"content": "I work at Google."}, ADMIN)
        first = await w.review.accept(w.alice, c.id, ADMIN)
        assert first.parked and first.episode is None
        assert first.candidate.status == "conflict" and first.candidate.conflicts_with[0]["id"] == old.id
        assert await contents(w.service, w.alice) == ["I work at Google."]
        second = await w.review.accept(w.alice, c.id, ADMIN)
        assert not second.parked and [e.id for e in second.superseded] == [old.id]
        assert await contents(w.service, w.alice) == ["I work at Stripe."]
        assert await ops(w, 3) == ["candidate.park", "episode.remember", "candidate.accept"]

    async def test_a_conflict_whose_other_side_is_gone_is_written_plainly(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        old, _ = await w.service.remember(w.alice, {"content": "I am 30 years old."}, ADMIN)
        with pytest.raises(ParkedError) as exc:
            await w.service.remember(w.alice, {"content": "I am 31 years old."}, ADMIN)
        await w.service.forget(w.alice, old.id, ADMIN)
        d = await w.review.accept(w.alice, exc.value.params["candidate"], ADMIN)
        assert not d.parked and d.superseded == [] and await contents(w.service, w.alice) == ["I am 31 years old."]

    async def test_only_the_same_speakers_records_conflict(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        group = await w.service.scope_for(kb_id=KB, session_name="group_g1", bot_uuid="bot1", sender_id="bob")
        await w.service.remember(group, {"content": "I live in Paris."}, ADMIN)
        carol = group.with_sender("carol")
        ep, _ = await w.service.remember(carol, {"content": "I moved to Berlin."}, ADMIN)
        assert ep.sender_id == "carol"
        with pytest.raises(ParkedError):  # positive control: bob contradicting himself
            await w.service.remember(group, {"content": "I moved to Berlin."}, ADMIN)

    async def test_only_people_and_the_model_are_parked(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        await w.service.remember(w.alice, {"content": "I live in Paris."}, ADMIN)
        ep, _ = await w.service.remember(w.alice, {"content": "I moved to Berlin."}, ADMIN, origin="consolidation")
        assert ep.origin == "consolidation"
        with pytest.raises(ParkedError):
            await w.service.remember(w.alice, {"content": "I moved to Rome."}, ADMIN, origin="command")

    async def test_a_decision_is_final(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        (c,) = (await w.review.extract(w.alice, "I like tea.", LISTENER)).candidates
        await w.review.accept(w.alice, c.id, ADMIN)
        before = await stored_state(w.service)
        with pytest.raises(ConflictError):
            await w.review.reject(w.alice, c.id, ADMIN)
        with pytest.raises(ConflictError):
            await w.review.accept(w.alice, c.id, ADMIN)
        assert await stored_state(w.service) == before

    async def test_a_profile_candidate_writes_through_update_profile(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        (c,) = (await w.review.extract(w.alice, "My name is Alice Liddell.", LISTENER)).candidates
        assert c.target == "profile" and c.status == "pending"
        d = await w.review.accept(w.alice, c.id, ADMIN)
        assert d.profile is not None and d.profile.name == "Alice Liddell"
        assert d.candidate.result_id == "profile:" + d.profile.key
        assert await ops(w, 2) == ["profile.update", "candidate.accept"]
        (c2,) = (await w.review.extract(w.alice, "Call me Ally.", LISTENER)).candidates
        assert c2.status == "conflict" and c2.conflicts_with[0]["content"] == "Alice Liddell"
        await w.review.accept(w.alice, c2.id, ADMIN)
        assert (await w.service.get_profile(w.alice, "speaker", "alice")).name == "Ally"


# ------------------------------------------------------------------------------------ twice rejected
async def _twice_rejected(w: World) -> str:
    """Two open candidates carry the same value; both are rejected (the second after the first
    tombstone already refused accepting it). Returns the tombstone id."""
    await w.service.remember(w.alice, {"content": "I prefer Python."}, ADMIN)
    (c1,) = (await w.review.extract(w.alice, "I prefer Java.", LISTENER)).candidates
    with pytest.raises(ParkedError) as exc:
        await w.service.remember(w.alice, {"content": "i prefer JAVA"}, ADMIN)  # the model's tool call
    c2 = exc.value.params["candidate"]
    await w.review.reject(w.alice, c1.id, ADMIN, "not true")
    with pytest.raises(TombstonedError):  # path: accepting another candidate with the value
        await w.review.accept(w.alice, c2, ADMIN)
    assert (await w.review.get(w.alice, c2)).status == "conflict"  # refused, left as it was
    rejected = await w.review.reject(w.alice, c2, ADMIN, "still not true")
    (tb,), _ = await w.review.list_tombstones(w.alice)
    assert tb.id == rejected.result_id and tb.count == 2
    return tb.id


class TestTwiceRejected:
    async def test_the_value_does_not_come_back_through_any_write_path(self, tmp_path: Path) -> None:
        model = ScriptedModel(pick("I prefer Java!", cls="preference"))
        w = await review_world(tmp_path, model=model, candidate_auto_apply=True)
        tid = await _twice_rejected(w)
        before = await stored_state(w.service)
        for origin in ("tool", "command", "console", "consolidation", "candidate"):
            with pytest.raises(TombstonedError) as exc:
                await w.service.remember(w.alice, {"content": "I prefer Java."}, ADMIN, origin=origin)
            assert tid in error_text(exc.value, "en_US") and "still not true" in error_text(exc.value, "en_US")
        with pytest.raises(TombstonedError):  # an explicit correction does not lift a tombstone
            ids = [e.id for e in (await w.service.list_episodes(w.alice)).items]
            await w.service.remember(w.alice, {"content": "I PREFER java", "supersedes": ids}, ADMIN)
        with pytest.raises(TombstonedError):
            await w.review.propose(
                w.alice, Proposal("I prefer Java.", "I prefer Java.", "preference"), ADMIN, origin="rules"
            )
        rules_report = await w.review.extract(w.alice, "Ｉ PREFER  java!!", LISTENER)
        assert rules_report.candidates == [] and rules_report.skipped == [("tombstoned", tid)]
        w.config["candidate_model_uuid"] = "m-1"
        model_report = await w.review.extract(w.alice, "I prefer Java!", LISTENER)
        assert (
            model_report.mode == "model"
            and model_report.candidates == []
            and model_report.skipped == [("tombstoned", tid)]
        )
        doc = {
            "session_name": "person_alice",
            "bot_uuid": "bot1",
            "sender_id": "alice",
            "episodes": [{"content": "I prefer Java"}],
        }
        with pytest.raises(TombstonedError):
            await w.service.ingest_document(KB, "doc-java", doc, ADMIN)
        assert await stored_state(w.service) == before
        assert await contents(w.service, w.alice, None) == ["I prefer Python."]
        # positive control: another value still goes through every path
        w.config["candidate_model_uuid"] = ""
        assert (await w.review.extract(w.alice, "I like tea.", LISTENER)).accepted

    async def test_import_refuses_a_tombstoned_value(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        await _twice_rejected(w)
        before = await contents(w.service, w.alice, None)
        with pytest.raises(TombstonedError):
            await import_scope(
                w.service, w.alice, {"episodes": [{"content": "I prefer Java.", "sender_id": "alice"}]}, ADMIN
            )
        assert await contents(w.service, w.alice, None) == before

    async def test_import_of_other_values_works(self, tmp_path: Path) -> None:
        """Positive control of the import path (and what the import currently does)."""
        w = await review_world(tmp_path)
        await _twice_rejected(w)
        report = await import_scope(
            w.service, w.alice, {"episodes": [{"content": "I like tea.", "sender_id": "alice"}]}, ADMIN
        )
        assert report.imported == 1


# ------------------------------------------------------------------------------------ trust axes
class TestTrust:
    async def test_an_inference_stays_inferred_however_often_recalled(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        inf, _ = await w.service.remember(
            w.alice, {"content": "Alice probably owns a bicycle", "claim_type": "inference"}, ADMIN
        )
        await w.service.remember(w.alice, {"content": "Alice owns a red kayak"}, ADMIN)
        for _ in range(5):
            result = await w.service.recall(w.alice, "Alice bicycle kayak", budget_tokens=10**6)
        by = {r.episode.id: r.to_public() for r in result.episodes}
        assert (by[inf.id]["claim_type"], by[inf.id]["confidence"], by[inf.id]["trust"]) == (
            "inference",
            "inferred",
            "inferred",
        )
        stated = next(v for k, v in by.items() if k != inf.id)
        assert stated["trust"] == "stated"
        payload = context_payload(result, {"id": "alice", "name": ""})
        marks = {e["content"]: e.get("trust") for e in payload["episodes"]}
        assert marks == {"Alice probably owns a bicycle": "inferred", "Alice owns a red kayak": None}
        assert '"Alice probably owns a bicycle"|inferred' in render_block(payload, "en_US")

    async def test_only_a_persons_confirmation_lifts_it(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        inf, _ = await w.service.remember(
            w.alice, {"content": "Alice probably owns a bicycle", "claim_type": "inference"}, ADMIN
        )
        confirmed = await w.service.confirm_episode(w.alice, inf.id, ADMIN, "she said so")
        assert (confirmed.claim_type, confirmed.confidence) == ("inference", "confirmed")
        assert confirmed.extra["confirmed_by"] == "admin"
        result = await w.service.recall(w.alice, "bicycle", budget_tokens=10**6)
        assert result.episodes[0].to_public()["trust"] == "confirmed"
        assert "trust" not in context_payload(result, {"id": "alice"})["episodes"][0]
        n = await w.service.audit_count(w.alice)
        await w.service.confirm_episode(w.alice, inf.id, ADMIN)  # already confirmed: nothing changes
        assert await w.service.audit_count(w.alice) == n
        await w.service.set_status(w.alice, inf.id, "archived", ADMIN)
        with pytest.raises(ConflictError):
            await w.service.confirm_episode(w.alice, inf.id, ADMIN)

    async def test_unknown_grounding_is_marked_unconfirmed(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        doc = {
            "session_name": "person_alice",
            "bot_uuid": "bot1",
            "sender_id": "alice",
            "episodes": [{"content": "Alice likes kites"}],
        }
        await w.service.ingest_document(KB, "d1", doc, ADMIN)
        result = await w.service.recall(w.alice, "kites", budget_tokens=10**6)
        assert result.episodes[0].to_public()["trust"] == "unconfirmed"
        assert context_payload(result, {"id": "alice"})["episodes"][0]["trust"] == "unconfirmed"


# ------------------------------------------------------------------------------------ the store
class CountingKV:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gets: list[str] = []

    async def get(self, key: str) -> bytes | None:
        self.gets.append(key)
        return await self.inner.get(key)

    async def set(self, key: str, value: bytes) -> None:
        await self.inner.set(key, value)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)

    async def keys(self, prefix: str = "") -> list[str]:
        return await self.inner.keys(prefix)


class TestStore:
    async def test_pages_read_only_what_they_show(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path, kv=CountingKV)
        ids = []
        for i in range(120):
            c = await w.review.propose(
                w.alice, Proposal(f"I own {i} kites.", f"I own {i} kites.", "identity"), ADMIN, origin="rules"
            )
            ids.append(c.id)
        for cid in ids[:30]:
            await w.review.reject(w.alice, cid, ADMIN)
        counting = w.service.kv
        assert isinstance(counting, CountingKV)
        counting.gets.clear()
        page = await w.review.list(w.alice, page=2, page_size=10)
        assert [c.id for c in page.items] == list(reversed(ids[30:]))[10:20] and page.total == 90 and page.has_more
        cand_reads = [k for k in counting.gets if k.startswith("cand/")]
        assert len(cand_reads) == 11  # the open list + the 10 records shown
        counting.gets.clear()
        page = await w.review.list(w.alice, page=3, page_size=10, all_statuses=True)
        assert [c.id for c in page.items] == list(reversed(ids))[20:30] and page.total == 120
        assert len([k for k in counting.gets if k.startswith("cand/")]) <= 13  # head + ≤2 index chunks + 10

    async def test_another_scope_cannot_see_or_decide(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        (c,) = (await w.review.extract(w.alice, "I like tea.", LISTENER)).candidates
        bob: Scope = await w.service.scope_for(kb_id=KB, session_name="person_bob", bot_uuid="bot1", sender_id="bob")
        assert (await w.review.list(bob, all_statuses=True)).items == []
        before = await stored_state(w.service)
        for verb in (w.review.accept, w.review.reject):
            with pytest.raises(NotFoundError):
                await verb(bob, c.id, ADMIN)
        with pytest.raises(NotFoundError):
            await w.review.get(w.alice, "cand_../../profile/x")
        assert await stored_state(w.service) == before
        assert (await w.review.get(w.alice, c.id)).status == "pending"  # positive control

    async def test_a_refused_candidate_write_takes_the_memory_back(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The memory and the candidate's record are one mutation: when storing the decided record
        is refused, the memory just written is deleted again; a retry accepts and writes it once."""
        w = await review_world(tmp_path)
        (c,) = (await w.review.extract(w.alice, "I like tea.", LISTENER)).candidates
        real_set = w.service.kv.set
        calls = {"n": 0}

        async def flaky_set(key: str, value: bytes) -> None:
            if f"/r/{c.id}" in key:
                calls["n"] += 1
                if calls["n"] == 1:
                    raise OSError("storage went away")
            await real_set(key, value)

        monkeypatch.setattr(w.service.kv, "set", flaky_set)
        with pytest.raises(LtmError) as info:
            await w.review.accept(w.alice, c.id, ADMIN)
        assert info.value.key == "error.backend"
        assert (await w.review.get(w.alice, c.id)).status == "pending"
        assert await contents(w.service, w.alice, None) == []  # taken back
        assert not await w.service.fences() and not await w.service.kv.keys("journal/")
        d = await w.review.accept(w.alice, c.id, ADMIN)
        assert d.candidate.status == "accepted" and calls["n"] == 2
        assert await contents(w.service, w.alice, None) == ["I like tea."]  # written once


class TestHostileTurnText:
    @pytest.mark.parametrize("bad", ["\ud800", "\udfff", "\x00", "\u200b", "\u202e"])
    async def test_a_turn_with_unstorable_or_invisible_characters_is_extracted_cleanly(
        self, tmp_path: Path, bad: str
    ) -> None:
        """Once a UnicodeEncodeError when the candidate was stored (a lone surrogate in the user's
        message). The candidate carries the text without the character; the model never sees it."""
        model = ScriptedModel(pick("I prefer tea over coffee."))
        w = await review_world(tmp_path, model=model, candidate_model_uuid="m-1")
        report = await w.review.extract(w.alice, f"I prefer tea{bad} over coffee. I live in Oslo.", LISTENER)
        assert bad not in model.calls[0]["user"] and "I live in Oslo." in model.calls[0]["user"]
        assert [c.content for c in report.candidates] == ["I prefer tea over coffee."]
        rules_world = await review_world(tmp_path / "rules")
        report = await rules_world.review.extract(rules_world.alice, f"I live in Oslo{bad}.", LISTENER)
        assert [c.content for c in report.candidates] == ["I live in Oslo."]
