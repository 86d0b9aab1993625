"""The audience rule fails closed: a memory is shared only when its scope is KNOWN to be a group.

A scope whose session name is neither ``person_…`` nor ``group_…`` (a launcher type the host may
add, a record of unknown kind, a name in another case) is private to the chat it was written in,
for the episode's audience and for the audit log's view alike. Each refusal has its control: a
group's memory is shared, a private chat's is its own.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ltm.domain.audience import SHARED, audience_of, audience_of_key, may_read
from ltm.domain.models import build_episode, validate_episode_input
from ltm.domain.scope import Scope, derive_scope

BOT = "b1"


def scope_named(session_name: str, launcher_type: str = "", isolation: str = "bot") -> Scope:
    """A scope as a journal record or a future launcher type could give it: derive_scope refuses
    such names, so it is built the way the service rebuilds a recorded one."""
    key = f"{BOT}:{session_name}"
    return Scope(
        session_name=session_name,
        bot_uuid=BOT,
        isolation=isolation,
        session_key=key,
        scope_key=key,
        user_key=f"bot:{BOT}",
        collection="kb",
        sender_id="zed",
        launcher_type=launcher_type,
    )


UNKNOWN_KINDS = [
    scope_named("channel_42"),
    scope_named("discord_7"),
    scope_named("Group_g1"),  # another case is another word
    scope_named("groups_g1"),
    scope_named("group"),  # no launcher id
    scope_named(""),
    scope_named("g1", launcher_type="channel"),
    scope_named("group_g1", launcher_type="channel"),  # the recorded launcher type decides
]


def test_an_unknown_kind_of_scope_is_private_to_its_chat() -> None:
    for scope in UNKNOWN_KINDS:
        assert audience_of(scope) == scope.session_key != SHARED, scope.session_name
    # controls: the two kinds the host names
    group = derive_scope(session_name="group_g1", bot_uuid=BOT, isolation="bot", collection="kb")
    person = derive_scope(session_name="person_zed", bot_uuid=BOT, isolation="bot", collection="kb")
    assert audience_of(group) == SHARED
    assert audience_of(person) == person.session_key != SHARED
    assert audience_of(scope_named("g1", launcher_type="group")) == SHARED  # the recorded type, known


def test_an_operator_may_still_share_explicitly() -> None:
    assert audience_of(scope_named("channel_42"), shared=True) == SHARED  # a document's "shared": true


def test_a_memory_written_there_is_not_read_in_another_chat() -> None:
    reader = derive_scope(session_name="group_g2", bot_uuid=BOT, isolation="bot", collection="kb", sender_id="amy")
    for scope in UNKNOWN_KINDS:
        ep = build_episode(validate_episode_input({"content": "Zed's door code"}), scope, origin="tool")
        assert ep.audience != SHARED
        assert not may_read(reader, ep.audience), scope.session_name
        assert may_read(scope, ep.audience)  # control: its own chat reads it
    shared = build_episode(
        validate_episode_input({"content": "Office at 9"}), scope_named("g2", "group"), origin="tool"
    )
    assert may_read(reader, shared.audience)  # control: a group's memory is read in every chat of the bot


def test_the_audit_view_fails_closed_too() -> None:
    for key in ("b1:channel_42", "channel_42", "b1:Group_1", "b1:group", "b1:groups_1", "", "bot:b1"):
        assert audience_of_key(key) != SHARED, key
    assert audience_of_key("b1:group_g1") == SHARED and audience_of_key("group_g1") == SHARED  # controls
    assert audience_of_key("b1:person_zed") == "b1:person_zed"


@given(st.text(max_size=30))
def test_only_a_group_name_is_shared(name: str) -> None:
    group = name.partition("_")[0] == "group" and bool(name.partition("_")[2])
    assert (audience_of(scope_named(name)) == SHARED) == group
    assert (audience_of_key(f"{BOT}:{name}") == SHARED) == group
