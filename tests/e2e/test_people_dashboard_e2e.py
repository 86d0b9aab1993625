"""Issue 35 in the real LangBot 4.11.2 dashboard, in the seven UI languages: the Memory Console's
People panel lists what one person said (the dashboard's language reaches the page; every label is
that language's catalog entry, not the English fallback), exports it as JSON and erases it; then
``!memory me`` in the person's private chat lists nothing while another person's memory stays (the
control). The chat replies of ``!memory me`` / ``optout`` / ``forget-me`` come from the
configured language's catalog. Screenshots: ``test-output/dashboard/people-<lang>.png``.

Host fact: the WebChat gives every websocket connection its own sender id
(``websocket_<connection id>``), so one sender cannot speak in both a private chat and a group
through it. And the e2e pipeline answers a group message only when the bot is mentioned (LangBot's
default group rule), which the WebChat websocket frame here does not carry: the control is another
person's memory in their own private chat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack
from ltm.i18n import LANGUAGES, t
from tests.e2e.test_console_dashboard import CHROMIUM, CHROMIUM_ARGS, SHOTS, Dashboard
from tests.e2e.test_langbot_e2e import remember

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("fake_model_only"),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (run scripts/install-browser)"),
]
ROOT = Path(__file__).resolve().parents[2]
TAGS = {
    "en_US": "en-US",
    "zh_Hans": "zh-Hans",
    "zh_Hant": "zh-Hant",
    "ja_JP": "ja-JP",
    "vi_VN": "vi-VN",
    "th_TH": "th-TH",
    "es_ES": "es-ES",
}
# the panel's own labels, checked against the page catalog of each language
PANEL_KEYS = ["tab.people", "people.find", "people.bot", "people.sender", "people.export", "people.erase"]
COLUMN_KEYS = ["people.col_id", "people.col_chat", "people.col_status", "people.col_content"]
# words Spanish writes as English does ("Id", "Chat"): the catalog check still applies to them
SAME_AS_ENGLISH = {("es_ES", "people.col_id"), ("es_ES", "people.col_chat")}
SAID = "My favourite mountain is Kilimanjaro"
OTHER = "Our team meets on Fridays at the harbour"


def page_catalog(lang: str) -> dict[str, str]:
    return json.loads((ROOT / "pages" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def find_person(d: Dashboard, sender_id: str) -> None:
    d.tab("people")
    d.f.locator("#people-bot").fill(WEBCHAT_BOT_UUID)
    d.f.locator("#people-sender").fill(sender_id)
    d.f.locator("#people-find").click()
    d.f.locator("#people-episodes").wait_for()
    d.wait_idle("people")


def panel_labels(d: Dashboard) -> dict[str, str]:
    f = d.f
    got = {
        "tab.people": f.locator('#tabs [data-tab="people"]').inner_text(),
        "people.find": f.locator("#people-find").inner_text(),
        "people.bot": f.locator('#panel-people [data-i18n="people.bot"]').inner_text(),
        "people.sender": f.locator('#panel-people [data-i18n="people.sender"]').inner_text(),
        "people.export": f.locator("#people-export").inner_text(),
        "people.erase": f.locator('#panel-people button[data-action="people-erase"]').inner_text(),
    }
    heads = f.locator("#people-episodes thead th").all_inner_texts()
    for key, i in zip(COLUMN_KEYS, (0, 1, 3, 5), strict=True):
        got[key] = heads[i]
    return {k: v.strip() for k, v in got.items()}


def test_people_panel_in_seven_languages_then_export_and_erase(stack: Stack, browser: Any) -> None:
    english = page_catalog("en_US")
    with stack.connect() as mine, stack.connect() as group:
        said = remember(mine, SAID)
        other = remember(group, OTHER)
        before = mine.command("!memory me")
        assert said["id"] in before and "Kilimanjaro" in before, before  # the positive control
        for lang in LANGUAGES:
            cat = page_catalog(lang)
            d = Dashboard(browser, stack, language=TAGS[lang])
            try:
                d.login()
                d.open_console()
                d.f.locator("h1", has_text=cat["title"]).wait_for()
                find_person(d, mine.sender_id)
                d.f.locator(f'#people-episodes tr[data-episode-id="{said["id"]}"]').wait_for()
                assert "Kilimanjaro" in d.f.locator("#people-episodes").inner_text()
                assert other["id"] not in d.f.locator("#people-episodes").inner_text()
                labels = panel_labels(d)
                d.shot(f"people-{lang}")
                for key, shown in labels.items():
                    assert shown == cat[key], (lang, key, shown, cat[key])
                    if lang != "en_US" and (lang, key) not in SAME_AS_ENGLISH:  # not an English fallback
                        assert shown != english[key], (lang, key, "English fallback")
                if lang == LANGUAGES[-1]:
                    d.f.locator("#people-export").click()
                    doc = json.loads(d.f.locator('#panel-people [data-doc="people"] textarea').input_value())
                    assert doc["sender_id"] == mine.sender_id, doc
                    assert [e["id"] for e in doc["episodes"]] == [said["id"]], doc
                    d.shot(f"people-{lang}-export")
                    d.f.locator('#panel-people button[data-action="people-erase"]').click()
                    d.f.locator('#panel-people button[data-action="confirm"]').click()
                    d.f.locator("#people-erased").wait_for()
                    d.wait_idle("people")
                    d.f.locator("#panel-people .empty", has_text=cat["people.no_episodes"]).wait_for()
                    d.shot(f"people-{lang}-erased")
            finally:
                d.close()
            assert not d.problems, (lang, d.problems)
        after = mine.command("!memory me")
    assert t("privacy.me.empty", "en_US") in after and "Kilimanjaro" not in after, after
    kept = stack.page_api(
        "/episodes",
        {"scope": {"session_name": group.session_name, "bot_uuid": WEBCHAT_BOT_UUID, "kb_id": stack.kb_uuid}},
    )["items"]
    assert any(e["id"] == other["id"] for e in kept), kept  # the other person's memory stays


COMMANDS = ["!memory me", "!memory optout", "!memory forget-me"]


def expected_reply(command: str, lang: str) -> str:
    if command.endswith(" me"):
        return t("privacy.me.empty", lang)
    if command.endswith("optout"):
        return t("privacy.optout.done", lang)
    parts = t("privacy.forget_me.ask", lang, minutes="\x00", code="\x00").split("\x00")
    return max(parts, key=len)  # the longest run of catalog text between the values


def test_privacy_replies_in_seven_languages(stack: Stack) -> None:
    previous = stack.plugin_config().get("language", "en_US")
    replies: dict[str, str] = {}
    try:
        for i, lang in enumerate(LANGUAGES):
            stack.set_plugin_config({"language": lang})
            with stack.connect() as chat:  # a new person each time: nothing stored, not opted out
                replies[lang] = chat.command(COMMANDS[i % len(COMMANDS)])
    finally:
        stack.set_plugin_config({"language": previous})
    out = ROOT / "test-output" / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    (out / "privacy-replies.txt").write_text(
        "\n\n".join(f"{k}: {v}" for k, v in replies.items()) + "\n", encoding="utf-8"
    )
    for i, lang in enumerate(LANGUAGES):
        command = COMMANDS[i % len(COMMANDS)]
        want = expected_reply(command, lang)
        assert want and want in replies[lang], (lang, command, replies[lang])
        if lang != "en_US":  # the control: not the English catalog
            assert expected_reply(command, "en_US") not in replies[lang], (lang, replies[lang])
