"""Issue 35 on a real LangBot 4.11.2: a person sees what the memory holds that they said
(``!memory me``), erases it (``!memory forget-me`` then ``confirm <code>``; the text is then in no
plugin-storage row of LangBot's database and no longer recalled), and opts out (the model's
``remember`` for them is refused with the reason; ``optin`` lets it through again: the control).

On LangBot's default embedded Chroma, its files (``data/chroma``, write-ahead log included) are read
as raw bytes too: the row was there (its id), its text never in plain, and not after the erase."""

from __future__ import annotations

import re
import sqlite3

import pytest

from e2e.stack import Stack
from ltm.i18n import t
from tests.e2e.test_erasure_e2e import chroma_bytes
from tests.e2e.test_langbot_e2e import call_tool, remember

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("fake_model_only")]

SAID = "My favourite mountain is Kilimanjaro"
LATER = "My favourite river is the Mekong"


def plugin_values(stack: Stack) -> bytes:
    """Every plugin-storage value LangBot holds for the plugin under test, concatenated."""
    assert stack.run_dir is not None
    db = stack.run_dir / "langbot" / "data" / "langbot.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute(
            "SELECT value FROM binary_storages WHERE owner_type = 'plugin' AND owner LIKE ?",
            (f"%{stack.plugin.name}%",),
        ).fetchall()
    finally:
        con.close()
    return b"\n".join(bytes(r[0] or b"") for r in rows)


def test_me_forget_me_and_optout(stack: Stack) -> None:
    with stack.connect() as chat:
        stored = remember(chat, SAID)
        on_chroma = stack.backends.vdb == "chroma"
        if on_chroma:  # positive control: the scan reads the store that holds the row
            assert stored["id"].encode() in chroma_bytes(stack.langbot_data_dir)
        me = chat.command("!memory me")
        ask = chat.command("!memory forget-me")
        code = re.search(r"confirm (\d{6})", ask)
        assert code, ask
        wrong = chat.command("!memory forget-me confirm " + ("000000" if code.group(1) != "000000" else "111111"))
        done = chat.command(f"!memory forget-me confirm {code.group(1)}")
        after = chat.command("!memory me")
        listed = chat.command("!memory list")
        optout = chat.command("!memory optout")
        refused = call_tool(chat, "remember", {"content": LATER})
        optin = chat.command("!memory optin")
        allowed = remember(chat, LATER)
    assert stored["id"] in me and "Kilimanjaro" in me, me
    assert t("privacy.forget_me.bad_code", "en_US") in wrong, wrong  # the host prefixes "[bot] "
    assert "Erased" in done and "1 memories" in done, done
    assert t("privacy.me.empty", "en_US") in after, after
    assert "Kilimanjaro" not in listed, listed
    assert b"Kilimanjaro" not in plugin_values(stack)  # no snapshot, candidate, profile or audit row keeps it
    if on_chroma:
        assert b"Kilimanjaro" not in chroma_bytes(stack.langbot_data_dir)  # nor any file of the vector store
    assert t("privacy.optout.done", "en_US") in optout, optout
    assert isinstance(refused, dict) and refused.get("ok") is False, refused
    assert "opted out" in str(refused.get("error")), refused
    assert t("privacy.optin.done", "en_US") in optin, optin
    assert allowed["content"] == LATER  # the control: stored again once opted in
