"""Value tombstones: the normalised value and its key (pure), and the service rules around them:
a rejected or forgotten-for-good value is refused with a pointer to its tombstone and reason, an
admin can lift it, and the store keeps no text. Every refusal has a positive control."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ltm.domain.candidates import Proposal
from ltm.domain.errors import NotFoundError, TombstonedError
from ltm.domain.tombstone import is_first_person, normalize_value, subject_of, tombstone_id, value_key
from ltm.i18n import error_text
from tests.support import ADMIN, KB
from tests.support.console.state import stored_state
from tests.support.review import World, contents, review_world


class TestNormalisation:
    @pytest.mark.parametrize(
        "variant",
        [
            "I prefer Python",
            "i prefer python",
            "I PREFER PYTHON!",
            "I prefer, Python.",
            "  I   prefer\tPython  ",
            "I\u3000prefer Python",  # ideographic space
            "Ｉ ｐｒｅｆｅｒ Ｐｙｔｈｏｎ",  # full-width
            "“I prefer Python”",
            "I prefer Python\u200b",  # zero-width space
        ],
    )
    def test_variants_share_one_key(self, variant: str) -> None:
        assert value_key(variant, "alice") == value_key("I prefer Python.", "alice")

    def test_chinese_spacing_and_width(self) -> None:
        assert normalize_value("我 喜欢 咖啡！") == normalize_value("我喜欢咖啡") == normalize_value("我喜欢咖啡。")
        assert normalize_value("我用ＰｏｓｔｇｒｅＳＱＬ") == normalize_value("我用 postgresql")

    @pytest.mark.parametrize(
        ("a", "b"),
        [
            ("I prefer Python", "I prefer Go"),
            ("I use C++", "I use C"),
            ("It costs $5", "It costs 5"),
            ("我喜欢咖啡", "我不喜欢咖啡"),
        ],
    )
    def test_different_values_differ(self, a: str, b: str) -> None:
        assert value_key(a, "alice") != value_key(b, "alice")

    def test_whose_value(self) -> None:
        assert is_first_person("I am vegetarian") and is_first_person("我吃素")
        assert not is_first_person("The deadline is Friday") and not is_first_person("我们周五发布")
        assert subject_of("I am vegetarian", "alice") == "alice"
        assert subject_of("The deadline is Friday", "alice") == ""
        # a first-person value is the speaker's; a third-person one belongs to the whole scope
        assert value_key("I am vegetarian", "alice") != value_key("I am vegetarian", "bob")
        assert value_key("The deadline is Friday", "alice") == value_key("The deadline is Friday", "bob")
        assert tombstone_id("", "!!!") == "" and value_key("...", "alice") == ""


async def _rejected(w: World, content: str, reason: str = "not true") -> str:
    cand = await w.review.propose(w.alice, Proposal(content, content, "preference"), ADMIN, origin="rules")
    rejected = await w.review.reject(w.alice, cand.id, ADMIN, reason)
    return rejected.result_id


class TestRefusals:
    async def test_rejected_value_is_refused_with_its_tombstone_and_reason(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        tid = await _rejected(w, "I prefer Python.", reason="the user never said that")
        assert tid == value_key("I prefer Python.", "alice")
        for variant in ("I prefer Python.", "i PREFER python", "Ｉ prefer Ｐython!!"):
            before = await stored_state(w.service)
            with pytest.raises(TombstonedError) as exc:
                await w.service.remember(w.alice, {"content": variant}, ADMIN)
            assert await stored_state(w.service) == before  # nothing written, not even an audit entry
            text = error_text(exc.value, "en_US")
            assert tid in text and "the user never said that" in text and "tombstone lift" in text
            assert tid in error_text(exc.value, "zh_Hans")
        ep, _ = await w.service.remember(w.alice, {"content": "I prefer Go."}, ADMIN)  # positive control
        assert ep.content == "I prefer Go."

    async def test_another_speakers_first_person_value_is_not_refused(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        group = await w.service.scope_for(kb_id=KB, session_name="group_g1", bot_uuid="bot1", sender_id="carol")
        cand = await w.review.propose(
            group, Proposal("I am vegetarian.", "I am vegetarian.", "preference"), ADMIN, origin="rules"
        )
        await w.review.reject(group, cand.id, ADMIN, "carol is not")
        with pytest.raises(TombstonedError):
            await w.service.remember(group, {"content": "I am vegetarian."}, ADMIN)
        dave = group.with_sender("dave")
        ep, _ = await w.service.remember(dave, {"content": "I am vegetarian."}, ADMIN)
        assert ep.sender_id == "dave"

    async def test_forget_never_records_a_tombstone_and_plain_forget_does_not(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        plain, _ = await w.service.remember(w.alice, {"content": "I live in Oslo."}, ADMIN)
        await w.service.forget(w.alice, plain.id, ADMIN, reason="moved")
        again, _ = await w.service.remember(w.alice, {"content": "I live in Oslo."}, ADMIN)  # control: allowed
        await w.service.forget(w.alice, again.id, ADMIN, reason="never store my city", never=True)
        with pytest.raises(TombstonedError) as exc:
            await w.service.remember(w.alice, {"content": "i live in oslo"}, ADMIN)
        assert "never store my city" in error_text(exc.value, "en_US")
        (tb,), total = await w.review.list_tombstones(w.alice)
        assert total == 1 and tb.kind == "forgotten" and tb.sources == [again.id] and tb.subject == "alice"
        entries, _ = await w.service.audit_page(w.alice, 1, 2)
        assert [e["operation"] for e in entries] == ["tombstone.record", "episode.forget"]

    async def test_lift_lets_the_value_back(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        tid = await _rejected(w, "I prefer Python.")
        with pytest.raises(TombstonedError):
            await w.service.remember(w.alice, {"content": "I prefer Python."}, ADMIN)
        lifted = await w.review.lift_tombstone(w.alice, tid, ADMIN, "the user confirmed it after all")
        assert lifted.id == tid
        ep, _ = await w.service.remember(w.alice, {"content": "I prefer Python."}, ADMIN)
        assert ep.content == "I prefer Python."
        entries, _ = await w.service.audit_page(w.alice, 1, 2)
        assert entries[1]["operation"] == "tombstone.lift" and entries[1]["reason"] == "the user confirmed it after all"
        with pytest.raises(NotFoundError):
            await w.review.lift_tombstone(w.alice, tid, ADMIN)
        with pytest.raises(NotFoundError):
            await w.review.lift_tombstone(w.alice, "tb_../../profile", ADMIN)

    async def test_tombstones_are_per_scope(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        await _rejected(w, "The deadline is Friday.")
        bob = await w.service.scope_for(kb_id=KB, session_name="person_bob", bot_uuid="bot1", sender_id="bob")
        ep, _ = await w.service.remember(bob, {"content": "The deadline is Friday."}, ADMIN)
        assert ep.user_key == bob.user_key
        assert (await w.review.list_tombstones(bob)) == ([], 0)

    async def test_a_second_decision_on_the_same_value_counts_on_one_tombstone(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        stored, _ = await w.service.remember(w.alice, {"content": "I prefer Go."}, ADMIN)
        # the same value with other punctuation: not the same stored text, the same tombstone key
        cand = await w.review.propose(
            w.alice, Proposal("I prefer, Go", "I prefer, Go", "preference"), ADMIN, origin="rules"
        )
        await w.review.reject(w.alice, cand.id, ADMIN, "first")
        await w.service.forget(w.alice, stored.id, ADMIN, reason="second", never=True)
        (tb,), total = await w.review.list_tombstones(w.alice)
        assert total == 1 and tb.count == 2 and tb.sources == [cand.id, stored.id]
        assert (tb.kind, tb.reason) == ("forgotten", "second")

    async def test_the_store_keeps_no_text(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        await _rejected(w, "My secret hobby is competitive yodelling.", reason="private")
        ep, _ = await w.service.remember(w.alice, {"content": "I collect rare stamps quietly."}, ADMIN)
        await w.service.forget(w.alice, ep.id, ADMIN, never=True)
        kv, _ = await stored_state(w.service)
        tombs = {k: json.loads(v) for k, v in kv.items() if k.startswith("tomb/")}
        assert len(tombs) == 2
        blob = json.dumps(tombs, ensure_ascii=False).lower()
        assert "yodel" not in blob and "stamps" not in blob
        assert all(k.startswith(f"tomb/{KB}/{w.alice.user_key}/tb_") for k in tombs)

    async def test_document_ingest_is_refused_whole(self, tmp_path: Path) -> None:
        w = await review_world(tmp_path)
        await _rejected(w, "The launch is in May.")
        doc = {
            "session_name": "person_alice",
            "bot_uuid": "bot1",
            "episodes": [{"content": "Unrelated fact"}, {"content": "the launch is in may"}],
        }
        before = await stored_state(w.service)
        with pytest.raises(TombstonedError):
            await w.service.ingest_document(KB, "doc-1", doc, ADMIN)
        assert await stored_state(w.service) == before
        doc["episodes"] = [{"content": "Unrelated fact"}]  # positive control
        assert await w.service.ingest_document(KB, "doc-1", doc, ADMIN) == 1
        assert "Unrelated fact" in await contents(w.service, w.alice.with_sender(""))
