"""Episode and profile validation: malformed input is refused with a clear key before any write."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.errors import ValidationError
from ltm.domain.models import (
    Episode,
    Profile,
    apply_profile_patch,
    build_episode,
    content_hash,
    validate_episode_input,
    validate_profile_patch,
)
from ltm.domain.scope import derive_scope
from ltm.domain.timefields import minute_text, parse_instant, to_iso

SCOPE = derive_scope(session_name="person_u1", bot_uuid="b", sender_id="u1")


class TestTimeFields:
    def test_offset_is_normalised_to_utc(self) -> None:
        assert to_iso(parse_instant("2024-05-01T12:00:00+02:00", "t")) == "2024-05-01T10:00:00Z"

    @pytest.mark.parametrize(
        "bad", ["tomorrow", "2024-05-01", "2024-05-01T10:00:00", "next week", "", "2024-13-01T00:00Z"]
    )
    def test_refuses_words_dates_and_naive_times(self, bad: str) -> None:
        with pytest.raises(ValidationError):
            parse_instant(bad, "event_at")
        with pytest.raises(ValidationError):
            minute_text(bad)

    def test_a_time_is_shown_to_the_minute_in_utc(self) -> None:
        """The one format replies and the health check show (microseconds and offsets dropped)."""
        assert minute_text("2026-12-05T09:43:04.400038Z") == "2026-12-05 09:43 UTC"
        assert minute_text("2024-05-01T12:00:00+02:00") == "2024-05-01 10:00 UTC"

    def test_validity_order(self) -> None:
        with pytest.raises(ValidationError) as err:
            validate_episode_input(
                {"content": "x", "valid_from": "2024-02-01T00:00:00Z", "valid_until": "2024-01-01T00:00:00Z"}
            )
        assert err.value.key == "error.validity_order"


class TestEpisodeInput:
    def test_defaults(self) -> None:
        data = validate_episode_input({"content": "  I like tea  "})
        assert data.content == "I like tea" and data.importance == 0.5 and data.claim_type == "user_statement"

    @pytest.mark.parametrize(
        "raw,key",
        [
            ({"content": ""}, "error.content_empty"),
            ({"content": "x", "importance": 2}, "error.importance"),
            ({"content": "x", "importance": True}, "error.importance"),
            ({"content": "x", "claim_type": "fact"}, "error.claim_type"),
            ({"content": "x", "tags": [1]}, "error.field_type"),
            ({"content": "x", "event_at": "yesterday"}, "error.time_format"),
            ({"content": "x", "status": "gone"}, "error.status"),
        ],
    )
    def test_malformed_fields(self, raw: dict, key: str) -> None:
        with pytest.raises(ValidationError) as err:
            validate_episode_input(raw)
        assert err.value.key == key

    def test_metadata_roundtrip(self) -> None:
        data = validate_episode_input(
            {
                "content": "我住在柏林",
                "tags": ["place"],
                "event_at": "2024-05-01T10:00:00+08:00",
                "supersedes": ["ep_1"],
            }
        )
        ep = build_episode(data, SCOPE, origin="tool", timestamp="2024-06-01T00:00:00Z")
        md = ep.to_metadata()
        assert all(v is not None and not isinstance(v, (dict, list)) for v in md.values())
        back = Episode.from_metadata({**md, "_langbot_instance_uuid": "x"})
        assert back.content == "我住在柏林" and back.tags == ["place"] and back.supersedes == ["ep_1"]
        assert back.event_at == "2024-05-01T02:00:00Z" and back.user_key == SCOPE.user_key
        assert md["file_id"] == ep.id == md["episode_id"]

    def test_missing_status_reads_active(self) -> None:
        assert Episode.from_metadata({"text": "x", "episode_id": "e"}).status == "active"

    def test_retag_cannot_restamp_scope(self) -> None:
        ep = build_episode(validate_episode_input({"content": "x"}), SCOPE, origin="tool")
        with pytest.raises(ValueError):
            ep.retagged(user_key="other")

    def test_hash_survives_width_case_space(self) -> None:
        assert content_hash("Ｉ like  TEA") == content_hash("i like tea")

    @given(
        st.dictionaries(
            st.sampled_from(["content", "importance", "tags", "event_at", "claim_type", "status"]),
            st.one_of(st.none(), st.text(), st.integers(), st.floats(), st.lists(st.text())),
        )
    )
    def test_fuzz_never_crashes_unexpectedly(self, raw: dict) -> None:
        try:
            validate_episode_input(raw)
        except ValidationError as exc:
            assert exc.key.startswith("error.")


class TestProfiles:
    def _apply(self, prof: Profile, raw: dict) -> Profile:
        return apply_profile_patch(prof, validate_profile_patch(raw), max_traits=3, max_preferences=2, updated_at="t")

    def test_correction_replaces_preference(self) -> None:
        p = self._apply(Profile("speaker", "k"), {"set_preferences": {"Language": "Go"}})
        p = self._apply(p, {"set_preferences": {"language": "Python"}})
        assert p.preferences == {"language": "Python"}

    def test_traits_dedup_and_bound(self) -> None:
        p = self._apply(Profile("speaker", "k"), {"add_traits": ["kind", "Kind ", "curious", "tall", "calm"]})
        assert p.traits == ["curious", "tall", "calm"]

    def test_unknown_field_refused(self) -> None:
        with pytest.raises(ValidationError):
            validate_profile_patch({"nickname": "x"})

    def test_empty_patch_refused(self) -> None:
        with pytest.raises(ValidationError):
            validate_profile_patch({"target": "speaker"})
