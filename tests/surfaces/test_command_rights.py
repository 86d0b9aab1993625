"""``!memory me``, ``forget-me``, ``optout`` / ``optin`` driven exactly as LangBot 4.11.2 runs a
command (the SDK's ``ExecuteContextProxy`` and ``_execute`` over the real plugin and the fake host),
in ``bot`` isolation where a person's private chat and the groups of the bot share one memory.

Each exclusion has its control: Bob's memories are never listed to Alice and survive her erasure;
a group gets no content; a wrong code erases nothing while the right one does; Bob keeps being
remembered while Alice is opted out. Replies are checked in every language for the catalog text.
"""

from __future__ import annotations

import re

import pytest

from ltm.i18n import LANGUAGES, t
from ltm.service import Actor
from ltm.service.consent import OptedOutError
from tests.surfaces.test_command_memory import ALICE, BOB, GROUP, Harness, host_harness

ALICE_SAID = ("Alice keeps bees on her roof", "Alice's sister lives in Porto")
BOB_SAID = "Bob restores old motorbikes"
CODE = re.compile(r"confirm (\d{6})")


async def seeded(language: str = "en_US") -> Harness:
    h = await host_harness({"language": language}, isolation="bot")
    await h.remember(ALICE, "alice", ALICE_SAID[0])
    await h.remember(GROUP, "alice", ALICE_SAID[1])
    await h.remember(GROUP, "bob", BOB_SAID)
    return h


class TestMe:
    async def test_lists_her_statements_from_every_chat_and_never_bobs(self) -> None:
        h = await seeded()
        reply = await h.one("memory me", speaker="alice", chat=ALICE)
        for said in ALICE_SAID:
            assert said in reply
        assert "group_g1" in reply and "person_alice" in reply  # the chat each one is in
        assert "motorbikes" not in reply
        bob = await h.one("memory me", speaker="bob", chat=BOB)  # control: Bob sees his own
        assert BOB_SAID in bob and "bees" not in bob

    @pytest.mark.parametrize("lang", LANGUAGES)
    async def test_in_a_group_it_shows_nothing_and_says_to_ask_in_private(self, lang: str) -> None:
        h = await seeded(lang)
        reply = await h.one("memory me", speaker="alice", chat=GROUP)
        assert reply == t("privacy.me.private_only", lang) and "bees" not in reply
        assert reply != "privacy.me.private_only"


class TestForgetMe:
    async def test_code_then_confirm_erases_hers_and_keeps_bobs(self) -> None:
        h = await seeded()
        ask = await h.one("memory forget-me", speaker="alice", chat=ALICE)
        code = CODE.search(ask)
        assert code, ask
        wrong = "000000" if code.group(1) != "000000" else "111111"
        refused = await h.one(f"memory forget-me confirm {wrong}", speaker="alice", chat=ALICE)
        assert refused == t("privacy.forget_me.bad_code", "en_US")
        assert ALICE_SAID[0] in await h.one("memory me", speaker="alice", chat=ALICE)  # nothing erased yet
        stolen = await h.one(f"memory forget-me confirm {code.group(1)}", speaker="bob", chat=BOB)
        assert stolen == t("privacy.forget_me.bad_code", "en_US")  # bound to Alice
        done = await h.one(f"memory forget-me confirm {code.group(1)}", speaker="alice", chat=ALICE)
        assert "Erased" in done and "2 memories" in done
        assert await h.one("memory me", speaker="alice", chat=ALICE) == t("privacy.me.empty", "en_US")
        assert BOB_SAID in await h.one("memory me", speaker="bob", chat=BOB)  # control
        listed = await h.one("memory list", speaker="bob", chat=GROUP)
        assert BOB_SAID in listed and "bees" not in listed and "Porto" not in listed


class TestOptOut:
    async def test_nothing_of_hers_is_stored_while_bob_keeps_working(self) -> None:
        h = await seeded()
        assert await h.one("memory optout", speaker="alice", chat=GROUP) == t("privacy.optout.done", "en_US")
        assert await h.one("memory optout", speaker="alice", chat=ALICE) == t("privacy.optout.already", "en_US")
        scope = await h.scope(GROUP, "alice")
        with pytest.raises(OptedOutError):
            await h.service.remember(
                scope, {"content": "Alice moved to Lisbon"}, Actor(surface="tool", sender_id="alice")
            )
        assert "opted out" in await h.one("memory me", speaker="alice", chat=ALICE)
        await h.remember(GROUP, "bob", "Bob moved to Lisbon")  # control: Bob is stored
        assert await h.one("memory optin", speaker="alice", chat=ALICE) == t("privacy.optin.done", "en_US")
        await h.remember(GROUP, "alice", "Alice moved to Lisbon")
        assert "Alice moved to Lisbon" in await h.one("memory me", speaker="alice", chat=ALICE)


async def test_help_lists_the_new_verbs_in_every_language() -> None:
    for lang in LANGUAGES:
        h = await host_harness({"language": lang})
        text = await h.one("memory help", speaker="alice", chat=ALICE)
        for verb in ("me", "forget-me", "optout", "optin"):
            assert t(f"cmd.usage.{verb}", lang) in text, (lang, verb)


async def test_the_summary_shows_retention_only_when_set() -> None:
    h = await host_harness({"retention_days": 90, "audit_retention_days": 365})
    text = await h.one("memory", speaker="alice", chat=ALICE)
    assert t("privacy.summary.retention", "en_US", days=90) in text
    assert t("privacy.summary.audit_retention", "en_US", days=365) in text
    plain = await (await host_harness()).one("memory", speaker="alice", chat=ALICE)  # the control: off
    assert "Retention" not in plain and "retention" not in plain
