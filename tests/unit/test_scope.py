"""Scope keys and the one filter builder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.errors import ScopeError, ValidationError
from ltm.domain.filters import Criteria, filter_conditions, matches, scope_filter
from ltm.domain.keys import session_name_of, split_session_name
from ltm.domain.scope import derive_scope


class TestKeys:
    def test_session_isolation_keys(self) -> None:
        """Session isolation: user_key equals the session key, which includes the bot."""
        s = derive_scope(launcher_type="group", launcher_id="123", bot_uuid="b1", isolation="session")
        assert s.session_name == "group_123"
        assert s.session_key == "b1:group_123"
        assert s.scope_key == "b1:group_123"
        assert s.user_key == "b1:group_123"

    def test_bot_isolation_shares_l2_not_l1(self) -> None:
        """Bot isolation: two sessions of one bot share user_key but keep their own scope_key."""
        a = derive_scope(session_name="person_a", bot_uuid="b1", isolation="bot")
        b = derive_scope(session_name="group_g", bot_uuid="b1", isolation="bot")
        assert a.user_key == b.user_key == "bot:b1"
        assert a.scope_key != b.scope_key

    def test_no_bot_falls_back_to_session_name(self) -> None:
        s = derive_scope(session_name="person_x", bot_uuid="", isolation="bot")
        assert s.session_key == "person_x" and s.user_key == "person_x"

    def test_session_name_split_keeps_underscores_in_id(self) -> None:
        assert split_session_name("person_websocket_abc_1") == ("person", "websocket_abc_1")

    @pytest.mark.parametrize("bad", ["", "person", "robot_1", "person_"])
    def test_malformed_session_names_are_refused(self, bad: str) -> None:
        with pytest.raises(ScopeError):
            split_session_name(bad)

    def test_unknown_isolation_is_refused(self) -> None:
        with pytest.raises(ValidationError):
            derive_scope(session_name="person_a", isolation="global")

    @given(st.sampled_from(["person", "group"]), st.text(min_size=1).filter(lambda s: not any(c.isspace() for c in s)))
    def test_roundtrip(self, lt: str, lid: str) -> None:
        assert split_session_name(session_name_of(lt, lid)) == (lt, lid)


class TestFilterBuilder:
    def test_single_condition_is_bare(self) -> None:
        """Chroma rejects a one-item $and: a lone scope condition is returned bare."""
        assert scope_filter("k", Criteria(statuses=None)) == {"user_key": {"$eq": "k"}}

    def test_multiple_conditions_use_and(self) -> None:
        f = scope_filter("k", Criteria(ids=("e1", "e2"), sender_id="u"))
        assert set(f) == {"$and"}
        assert ("user_key", "$eq", "k") in filter_conditions(f)
        assert ("status", "$eq", "active") in filter_conditions(f)
        assert ("episode_id", "$in", ["e1", "e2"]) in filter_conditions(f)

    def test_empty_user_key_is_refused(self) -> None:
        with pytest.raises(ScopeError):
            scope_filter("", Criteria())

    def test_unknown_status_is_refused(self) -> None:
        with pytest.raises(ValidationError):
            scope_filter("k", Criteria(statuses=("gone",)))

    def test_matches_scope_and_status(self) -> None:
        """Positive control first, then the exclusions."""
        f = scope_filter("k", Criteria())
        assert matches({"user_key": "k", "status": "active"}, f)
        assert not matches({"user_key": "other", "status": "active"}, f)
        assert not matches({"user_key": "k", "status": "superseded"}, f)

    def test_validity_window(self) -> None:
        f = scope_filter("k", Criteria(as_of_ts=100.0))
        base = {"user_key": "k", "status": "active"}
        assert matches({**base, "valid_from_ts": 0.0, "valid_until_ts": 200.0}, f)
        assert not matches({**base, "valid_from_ts": 150.0, "valid_until_ts": 200.0}, f)
        assert not matches({**base, "valid_from_ts": 0.0, "valid_until_ts": 100.0}, f)


def test_scope_fence_keys_are_the_scopes_own_and_no_other() -> None:
    from ltm.domain.storage_keys import (
        l1_lock_key,
        l2_lock_key,
        scope_fence_keys,
        session_profile_key,
        speaker_profile_key,
    )

    alice = derive_scope(session_name="person_alice", bot_uuid="bot", collection="kb1")
    alicia = derive_scope(session_name="person_alice2", bot_uuid="bot", collection="kb1")  # a prefix only
    elsewhere = derive_scope(session_name="person_alice", bot_uuid="bot", collection="kb2")
    own = [
        l2_lock_key(alice),
        l1_lock_key(session_profile_key(alice)),
        l1_lock_key(speaker_profile_key(alice, "alice")),
    ]
    others = [
        l2_lock_key(alicia),
        l2_lock_key(elsewhere),
        l1_lock_key(session_profile_key(alicia)),
        "l2:kb1:",
        "not-a-lock",
    ]
    assert scope_fence_keys(alice, others + own) == sorted(own)
    assert scope_fence_keys(alice, others) == []
    assert scope_fence_keys(alicia, others + own) == sorted(
        [l2_lock_key(alicia), l1_lock_key(session_profile_key(alicia))]
    )
