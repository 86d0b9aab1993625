"""The record codec (ltm.domain.records), the scope and actor codecs, and the contraction table.

The reference decoders below are the hand-written ones the codec replaced, kept verbatim: on any
input, stored shapes and malformed ones alike, the codec must give the same value or raise the same
error.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ltm.domain import records as rec
from ltm.domain.actors import Actor, actor_record
from ltm.domain.contractions import CONTRACTIONS, expand
from ltm.domain.filters import STATUSES
from ltm.domain.models import Episode, Profile
from ltm.domain.scope import Scope, derive_scope, scope_of_record, user_key_scope

# ------------------------------------------------------------------------------------ strategies
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
EPISODE_KEYS = (
    "episode_id", "file_id", "text", "user_key", "scope_key", "session_name", "bot_uuid", "sender_id", "importance",
    "tags", "status", "supersedes", "superseded_by", "timestamp", "event_at", "valid_from", "valid_until",
    "claim_type", "confidence", "source_ref", "origin", "content_hash", "document_id", "import_original_id",
    "audience", "extra",
)  # fmt: skip
SCOPE_KEYS = (
    "isolation",
    "session_name",
    "bot_uuid",
    "session_key",
    "scope_key",
    "user_key",
    "collection",
    "sender_id",
)


def records_over(
    keys: tuple[str, ...], values: st.SearchStrategy[Any] = json_values
) -> st.SearchStrategy[dict[str, Any]]:
    """Records with any subset of ``keys`` (plus a stray key), each holding any JSON-like value."""
    return st.dictionaries(st.sampled_from((*keys, "stray")), values, max_size=len(keys))


ids = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00", exclude_categories=("Zs", "Zl", "Zp", "Cc")),
    min_size=1,
    max_size=20,
)
scopes = st.builds(
    derive_scope,
    launcher_type=st.sampled_from(("person", "group")),
    launcher_id=ids,
    bot_uuid=st.none() | ids,
    isolation=st.sampled_from(("session", "bot")),
    collection=st.text(max_size=12),
    # storable text: derive_scope refuses a lone surrogate or NUL in a sender id (its own test)
    sender_id=st.none() | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
)


# ------------------------------------------------------------------------------------ references
def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the error's type is what is compared
        return "error", type(exc)


def old_episode(md: dict[str, Any], fallback_id: str = "") -> Episode:
    def _json_list(raw: Any) -> list[str]:
        if isinstance(raw, list):
            return [str(x) for x in raw]
        if isinstance(raw, str) and raw:
            try:
                val = json.loads(raw)
                return [str(x) for x in val] if isinstance(val, list) else []
            except ValueError:
                return []
        return []

    status = md.get("status") or "active"
    if status not in STATUSES:
        status = "active"
    extra: dict[str, Any] = {}
    if isinstance(md.get("extra"), str):
        try:
            extra = json.loads(md["extra"])
        except ValueError:
            extra = {}
    eid = str(md.get("episode_id") or md.get("file_id") or fallback_id)
    return Episode(
        id=eid,
        content=str(md.get("text") or ""),
        user_key=str(md.get("user_key") or ""),
        scope_key=str(md.get("scope_key") or ""),
        session_name=str(md.get("session_name") or ""),
        bot_uuid=str(md.get("bot_uuid") or ""),
        sender_id=str(md.get("sender_id") or ""),
        importance=float(md.get("importance") or 0.0),
        tags=_json_list(md.get("tags")),
        status=status,
        supersedes=_json_list(md.get("supersedes")),
        superseded_by=str(md.get("superseded_by") or ""),
        timestamp=str(md.get("timestamp") or ""),
        event_at=md.get("event_at") or None,
        valid_from=md.get("valid_from") or None,
        valid_until=md.get("valid_until") or None,
        claim_type=str(md.get("claim_type") or "unknown"),
        confidence=str(md.get("confidence") or "unverified"),
        source_ref=str(md.get("source_ref") or ""),
        origin=str(md.get("origin") or "tool"),
        content_hash=str(md.get("content_hash") or ""),
        document_id=str(md.get("document_id") or ""),
        import_original_id=str(md.get("import_original_id") or ""),
        audience=str(md.get("audience") or ""),
        extra=extra,
    )


def old_scope_of_record(d: dict[str, Any]) -> Scope:
    return Scope(
        session_name=str(d.get("session_name") or ""),
        bot_uuid=str(d.get("bot_uuid") or ""),
        isolation=str(d.get("isolation") or ""),
        session_key=str(d.get("session_key") or ""),
        scope_key=str(d.get("scope_key") or ""),
        user_key=str(d.get("user_key") or ""),
        collection=str(d.get("collection") or ""),
        sender_id=str(d.get("sender_id") or ""),
        operator=True,
    )


# ------------------------------------------------------------------------------------ tests
class TestFieldReaders:
    @given(records_over(("k",)), st.text(max_size=5))
    def test_text_reads_like_str_or_default(self, d: dict[str, Any], default: str) -> None:
        """``text`` is ``str(value or default)``: a falsy value reads as the default."""
        assert rec.text(d, "k", default) == str(d.get("k") or default)

    @given(records_over(("k",)))
    def test_number_and_strings_fail_as_float_and_iteration_do(self, d: dict[str, Any]) -> None:
        """A value that is no number (no list) raises what ``float`` (iteration) raises."""
        assert outcome(rec.number, d, "k") == outcome(lambda: float(d.get("k") or 0.0))
        assert outcome(rec.strings, d, "k") == outcome(lambda: [str(x) for x in (d.get("k") or [])])

    @given(st.lists(st.text(max_size=6), max_size=4))
    def test_json_strings_round_trip(self, items: list[str]) -> None:
        """A list kept as a JSON string reads back as the list; undecodable text reads as []."""
        assert rec.json_strings(json.dumps(items)) == items
        assert rec.json_strings(items) == items
        assert rec.json_strings("[not json") == [] and rec.json_strings(7) == []

    def test_choice_keeps_only_allowed_values(self) -> None:
        """An unknown or missing value reads as the default."""
        assert rec.choice({"s": "archived"}, "s", STATUSES, "active") == "archived"
        assert rec.choice({"s": "gone"}, "s", STATUSES, "active") == "active"
        assert rec.choice({}, "s", STATUSES, "active") == "active"


class TestEpisodeCodec:
    @given(records_over(EPISODE_KEYS), st.text(max_size=5))
    def test_decoding_matches_the_hand_written_decoder(self, md: dict[str, Any], fallback: str) -> None:
        """Any stored metadata, malformed too, decodes to the same episode (or the same error)."""
        assert outcome(Episode.from_metadata, md, fallback) == outcome(old_episode, md, fallback)

    @given(scopes, st.text(min_size=1, max_size=40), st.lists(st.text(min_size=1, max_size=8), max_size=3))
    def test_metadata_round_trip(self, scope: Scope, content: str, tags: list[str]) -> None:
        """An episode's metadata reads back as the episode."""
        e = Episode(
            id="ep_1",
            content=content,
            user_key=scope.user_key,
            scope_key=scope.scope_key,
            session_name=scope.session_name,
            tags=tags,
            event_at="2026-01-02T03:04:05Z",
            extra={"k": 1},
        )
        back = Episode.from_metadata(e.to_metadata())
        assert back == Episode(**{**e.__dict__, "content_hash": back.content_hash})


class TestProfileCodec:
    @given(
        st.dictionaries(
            st.sampled_from(("name", "traits", "notes", "updated_at", "sender_id")),
            scalars | st.lists(scalars, max_size=3),
        )
    )
    def test_decoding_matches_the_hand_written_decoder(self, d: dict[str, Any]) -> None:
        """Traits, notes and the text fields read as before, malformed values included."""

        def old(data: dict[str, Any]) -> tuple[Any, ...]:
            return (
                str(data.get("name") or ""),
                [str(t) for t in (data.get("traits") or [])],
                [str(n) for n in (data.get("notes") or [])],
                str(data.get("updated_at") or ""),
                str(data.get("sender_id") or ""),
            )

        def new(data: dict[str, Any]) -> tuple[Any, ...]:
            p = Profile.from_dict(data, "speaker", "k")
            return (p.name, p.traits, p.notes, p.updated_at, p.sender_id)

        assert outcome(new, d) == outcome(old, d)


class TestScopeCodec:
    @given(scopes)
    def test_from_describe_is_the_inverse_of_describe(self, scope: Scope) -> None:
        """Every scope derive_scope builds reads back from its describe() record."""
        assert Scope.from_describe(scope.describe()) == scope
        assert Scope.from_describe(scope.describe()).describe() == scope.describe()

    @given(records_over(SCOPE_KEYS, scalars))
    def test_stored_records_read_as_before(self, d: dict[str, Any]) -> None:
        """A journal part, fence or candidate scope written by earlier versions (any shape) names
        the same scope as before: the same keys, the same launcher, an operator."""
        new, old = scope_of_record(d), old_scope_of_record(d)
        assert new.describe() == old.describe()
        assert (new.launcher, new.is_group, new.operator) == (old.launcher, old.is_group, old.operator)

    def test_user_key_scope(self) -> None:
        """A memory known only by its user key: its keys are the user key, read as the operator."""
        s = user_key_scope("kb", "bot:b1")
        assert (s.session_key, s.scope_key, s.user_key, s.collection, s.operator) == ("bot:b1",) * 3 + ("kb", True)


class TestActorCodec:
    actors = st.builds(
        Actor,
        surface=st.sampled_from(("command", "tool", "console", "recovery")),
        sender_id=st.text(max_size=8),
        query_id=st.none() | st.integers(),
    )

    @given(actors)
    def test_record_round_trip(self, actor: Actor) -> None:
        """A member's actor and the console's operator read back from their record."""
        assert Actor.from_record(actor.to_record()) == actor
        console = Actor.console(actor.sender_id)
        assert Actor.from_record(console.to_record()) == console

    def test_record_shape(self) -> None:
        """The journal's shape: surface, sender and query, and the operator only when there is one."""
        assert actor_record(Actor("command", "u1", 7, privilege=2)) == {
            "surface": "command",
            "sender_id": "u1",
            "query_id": 7,
        }
        assert actor_record(Actor.console("alice"))["operator"] == "alice"

    @given(records_over(("surface", "sender_id", "query_id", "operator"), scalars))
    def test_malformed_records_read_as_empty(self, d: dict[str, Any]) -> None:
        """Any record reads as an actor: missing text is empty, a query id that is no whole number is none."""
        a = Actor.from_record(d)
        assert isinstance(a.surface, str) and isinstance(a.sender_id, str)
        assert a.query_id is None or (isinstance(a.query_id, int) and not isinstance(a.query_id, bool))


class TestContractions:
    @given(st.sampled_from(sorted(CONTRACTIONS)), st.sampled_from(("", "so ", "and ")))
    def test_every_entry_is_spelled_out(self, word: str, lead: str) -> None:
        """Each contraction of the table, straight or curly apostrophe, becomes its long form."""
        assert expand(f"{lead}{word} ok") == f"{lead}{CONTRACTIONS[word]} ok"
        assert expand(f"{lead}{word.replace(chr(39), chr(0x2019))} ok") == f"{lead}{CONTRACTIONS[word]} ok"

    def test_a_word_that_contains_one_is_kept(self) -> None:
        assert expand("the bit's edge") == "the bit's edge"
