"""The seven languages through the real LangBot 4.11.2 stack: the host keeps every I18nString of the
manifest, and ``!memory`` replies in the configured language (ja_JP, zh_Hant; en_US as the control).

Replies are written to ``test-output/e2e/replies-<lang>.txt`` for reading; the console and a command
reply in LangBot's web UI are screenshotted to ``test-output/dashboard/lang-<lang>-*.png``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.stack import Stack
from ltm.i18n import LANGUAGES, catalog, t
from tests.e2e.test_console_dashboard import CHROMIUM, CHROMIUM_ARGS, LABELS, SHOTS, Dashboard

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "test-output" / "e2e"


def _find_labels(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("en_US") == "Long-Term Memory":
            found.append(node)
        for v in node.values():
            found += _find_labels(v)
    elif isinstance(node, list):
        for v in node:
            found += _find_labels(v)
    return found


def test_the_host_keeps_the_seven_languages_of_the_manifest(stack: Stack) -> None:
    labels = _find_labels(stack.plugins())
    assert labels, "the host lists no plugin labelled Long-Term Memory"
    label = labels[0]
    assert {k for k, v in label.items() if v} >= set(LANGUAGES), label
    assert label["ja_JP"] == "長期記憶" and label["th_TH"] == "ความจำระยะยาว"


@pytest.mark.parametrize("lang", ["ja_JP", "zh_Hant"])
def test_memory_commands_reply_in_the_configured_language(stack: Stack, lang: str) -> None:
    previous = stack.plugin_config().get("language", "en_US")
    stack.set_plugin_config({"language": lang})
    try:
        with stack.connect() as chat:
            summary = chat.command("!memory")
            helptext = chat.command("!memory help")
            unknown = chat.command("!memory nope")
    finally:
        stack.set_plugin_config({"language": previous})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"replies-{lang}.txt").write_text("\n\n".join((summary, helptext, unknown)) + "\n", encoding="utf-8")
    assert catalog(lang)["cmd.summary.title"] in summary, summary
    assert catalog(lang)["cmd.help.title"] in helptext, helptext
    assert t("cmd.parse.unknown_verb", lang, verb="nope") in unknown, unknown
    assert "Long-term memory of this chat" not in summary  # control: not the English catalog


def test_the_console_answers_in_the_page_language(stack: Stack) -> None:
    for tag, lang in (("ja-JP", "ja_JP"), ("zh-Hant", "zh_Hant"), ("en-US", "en_US")):
        with pytest.raises(Exception) as refused:  # a refusal: Stack.page_api raises with {code, msg}
            stack.page_api("/nope", {"lang": tag})
        raw = str(refused.value)
        msg = json.loads(raw[raw.index("{") :])["msg"]
        expected = json.loads((ROOT / "pages" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))["err.endpoint"]
        assert msg == expected.format(endpoint="/nope"), (tag, msg)


# ---------------------------------------------------------------------------- seen in the dashboard
DASHBOARD_TAGS = {"ja_JP": "ja-JP", "zh_Hant": "zh-Hant"}


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (run scripts/install-browser)")
@pytest.mark.parametrize("lang", ["ja_JP", "zh_Hant"])
def test_the_console_and_a_command_reply_show_in_the_dashboard_language(stack: Stack, lang: str) -> None:
    """The Memory Console and a ``!memory`` reply in LangBot's own web UI (Chromium, the dashboard's
    language and the plugin's language both set): screenshots in ``test-output/dashboard/``."""
    sync_api = pytest.importorskip("playwright.sync_api")
    previous = stack.plugin_config().get("language", "en_US")
    stack.set_plugin_config({"language": lang})
    SHOTS.mkdir(parents=True, exist_ok=True)
    page_catalog = json.loads((ROOT / "pages" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            d = Dashboard(browser, stack, language=DASHBOARD_TAGS[lang])
            try:
                d.login()
                d.open_console()
                d.f.locator("h1", has_text=page_catalog["title"]).wait_for()
                d.f.locator("#kb-select option", has_text="Long-term memory (e2e)").first.wait_for(state="attached")
                assert page_catalog["space.title"] in d.frame.evaluate("() => document.body.innerText")
                d.shot(f"lang-{lang}-console")

                # The pipeline's debug chat (Processors -> LTM e2e): one !memory turn, its reply on screen.
                page = d.page
                page.goto(stack.base_url + "/home/pipelines")
                page.get_by_text("LTM e2e", exact=True).first.click()
                # the first-visit pipeline tour: its popover covers the settings, not the chat
                skip = page.locator('[data-testid="pipeline-setup-guide"]').get_by_role(
                    "button", name=LABELS[d.language]["skip"]
                )
                skip.click()
                skip.wait_for(state="detached")
                box = page.locator("textarea[placeholder]").first
                box.fill("!memory")
                box.press("Enter")
                title = catalog(lang)["cmd.summary.title"]
                page.get_by_text(title).first.wait_for(timeout=60_000)
                d.shot(f"lang-{lang}-command-reply")
            finally:
                d.close()
                browser.close()
            assert not d.problems, d.problems
    finally:
        stack.set_plugin_config({"language": previous})
