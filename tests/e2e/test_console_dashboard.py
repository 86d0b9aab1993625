"""The Memory Console as an operator meets it: inside the real LangBot 4.11.2 web UI.

Debian's Chromium (headless, driven by Playwright) logs into the dashboard of the e2e stack, opens
the sidebar's Plugin Pages -> Memory Console, waits for the sandboxed ``blob:`` iframe the dashboard
builds from the page HTML, and works through every panel inside it. The data comes from chats of the
same run (the WebChat websocket, the fake model calling our tools), stored text includes markup that
must stay text, and every mutation is checked against the store through the page API. A screenshot
of each panel goes to ``test-output/dashboard/``.

Host facts this relies on (LangBot 4.11.2 web bundle): the sidebar group is ``sidebar.pluginPages``
("Plugin Pages" / "插件页面") and a plugin with one page is listed by the page's label; the iframe is
``sandbox="allow-scripts allow-forms"`` titled ``<author>/<name> - <page path>``, hidden until it has
loaded; the host posts ``{type: "langbot:context", theme, language}`` to it on load and on every theme
or language change; language and theme are the dashboard's own settings (localStorage
``langbot_language`` and ``langbot-theme``); a first visit shows a sidebar tour (``data-testid=
"sidebar-guide"``, Skip) whose overlay takes every click until it is dismissed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.stack import ADMIN_PASSWORD, ADMIN_USER, WEBCHAT_BOT_UUID, Stack
from tests.e2e.test_langbot_e2e import call_tool, remember

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (run scripts/install-browser)"),
]
sync_api = pytest.importorskip("playwright.sync_api")

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "dashboard"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 1000}
TIMEOUT_MS = 30_000

HOSTILE_SCRIPT = "<script>window.__pwned='script'</script>"
HOSTILE_IMG = "<img src=x onerror=\"window.__pwned='img'\">"
LABELS = {
    "en-US": {"group": "Plugin Pages", "page": "Memory Console", "skip": "Skip"},
    "zh-Hans": {"group": "插件页面", "page": "记忆控制台", "skip": "跳过"},
    "zh-Hant": {"group": "插件頁面", "page": "記憶控制台", "skip": "跳過"},
    "ja-JP": {"group": "プラグインページ", "page": "記憶コンソール", "skip": "スキップ"},
    "vi-VN": {"group": "Trang plugin", "page": "Bảng điều khiển ký ức", "skip": "Bỏ qua"},
    "th-TH": {"group": "หน้าปลั๊กอิน", "page": "คอนโซลความจำ", "skip": "ข้าม"},
    "es-ES": {"group": "Páginas de plugins", "page": "Consola de memoria", "skip": "Omitir"},
}


@dataclass
class ChatData:
    """What the chats of this run stored: the space the console must show, and record ids."""

    session_name: str
    sender_id: str
    hostile_id: str
    tea_id: str
    forget_id: str
    paris_id: str
    lyon_id: str
    candidate_text: str
    conflict_text: str

    @property
    def scope(self) -> dict[str, str]:
        return {"session_name": self.session_name, "bot_uuid": WEBCHAT_BOT_UUID}


def episode_ids(stack: Stack, data: ChatData, kb: str, status: str = "all") -> dict[str, str]:
    """Episode id -> status of the chat's space, read through the page API (not the page)."""
    out: dict[str, str] = {}
    page = 1
    while True:
        got = stack.page_api(
            "/episodes", {"scope": {**data.scope, "kb_id": kb}, "status": status, "page": page, "page_size": 100}
        )
        for e in got["items"]:
            out[e["id"]] = e["status"]
        if not got.get("has_more"):
            return out
        page += 1


# For this module only: statements in chat become review candidates, and a record superseded a
# minute ago is old enough to be proposed for archiving. Consolidation runs stay off (the default).
MODULE_CONFIG = {"candidate_extraction_enabled": True, "consolidation_min_age_days": 0}


@pytest.fixture(scope="module")
def chat_data(stack: Stack) -> Iterator[ChatData]:
    """One person chat with memories, a correction, a profile, an injection and a review candidate."""
    if stack.request_log is None:
        pytest.skip("needs the fake model server (CALLTOOL): LTM_PROVIDER_* selects a real provider")
    previous = stack.plugin_config()
    try:
        yield make_chat_data(stack)
    finally:
        stack.set_plugin_config({k: previous.get(k) for k in MODULE_CONFIG})


def make_chat_data(stack: Stack) -> ChatData:
    """The tool turns run before candidate extraction is on (their CALLTOOL text is no statement)."""
    with stack.connect() as chat:
        hostile = remember(chat, f"My notes say {HOSTILE_SCRIPT} and {HOSTILE_IMG} verbatim")
        tea = remember(chat, "I drink jasmine tea every morning")
        doomed = remember(chat, "My locker code is 4711, please forget it later")
        paris = remember(chat, "I live in Paris")
        lyon = remember(chat, "I moved from Paris to Lyon", supersedes=[paris["id"]])
        profile = call_tool(
            chat, "update_profile", {"name": HOSTILE_SCRIPT, "add_traits": [HOSTILE_IMG, "early riser"]}
        )
        assert isinstance(profile, dict) and "error" not in profile, profile
        chat.send("What do I drink in the morning?")  # an injection snapshot of this space
        # a move told with a time before the speaker contradicts Lyon: parked for a person
        conflict_text = "These days I live in Marseille"
        parked = call_tool(chat, "remember", {"content": conflict_text})
        assert isinstance(parked, dict) and parked.get("ok") is False, parked
        stack.set_plugin_config(MODULE_CONFIG)
        candidate_text = "Next spring I will visit Kyoto with my sister."  # a plan: the demo model keeps no plan
        chat.send(candidate_text)
        return ChatData(
            session_name=chat.session_name,
            sender_id=chat.sender_id,
            hostile_id=hostile["id"],
            tea_id=tea["id"],
            forget_id=doomed["id"],
            paris_id=paris["id"],
            lyon_id=lyon["id"],
            candidate_text=candidate_text,
            conflict_text=conflict_text,
        )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class Dashboard:
    """One logged-in dashboard tab with the Memory Console open; ``f`` is the console's frame."""

    def __init__(self, browser: Any, stack: Stack, language: str = "en-US", theme: str = "light") -> None:
        self.stack, self.language = stack, language
        self.context = browser.new_context(viewport=VIEWPORT, locale=language)
        self.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack.base_url)
        # The operator's own dashboard settings, as the language and theme menus store them; the
        # workspace assistant is collapsed (it floats over the lower middle of every page).
        # (The script runs in every frame: only the dashboard's own document may touch localStorage.)
        self.context.add_init_script(
            "if (window === window.top) {"
            f"localStorage.setItem('langbot_language', {json.dumps(language)});"
            f"localStorage.setItem('langbot-theme', {json.dumps(theme)});"
            "localStorage.setItem('langbot-assistant-panel-open', 'false');}"
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.problems: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        self.f: Any = None

    def _on_console(self, m: Any) -> None:
        # only the console's own frame: the dashboard logs its offline noise (releases, marketplace)
        if m.type in ("error", "warning") and str((m.location or {}).get("url", "")).startswith("blob:"):
            self.problems.append(f"console {m.type}: {m.text}")

    def login(self) -> None:
        page = self.page
        page.goto(self.stack.base_url + "/login")
        page.locator("input[type=email], input[name=email]").first.fill(ADMIN_USER)
        page.locator("input[type=password]").fill(ADMIN_PASSWORD)
        page.locator("input[type=password]").press("Enter")
        page.wait_for_url("**/home/**")
        # the first-visit sidebar tour: its overlay intercepts every click until skipped
        guide = page.locator('[data-testid="sidebar-guide"]')
        guide.get_by_role("button", name=LABELS[self.language]["skip"]).click()
        guide.wait_for(state="detached")

    def open_console(self) -> None:
        page, labels = self.page, LABELS[self.language]
        group = page.locator(
            '[data-sidebar="group"]', has=page.locator('[data-sidebar="group-label"]', has_text=labels["group"])
        )
        group.locator('[data-sidebar="menu-button"]', has_text=labels["page"]).click()
        page.wait_for_url("**/home/plugin-pages?id=*")
        plugin = self.stack.plugin
        frame_el = page.locator(f'iframe[title^="{plugin.author}/{plugin.name} - "]')
        frame_el.wait_for(state="visible")
        assert frame_el.get_attribute("sandbox") == "allow-scripts allow-forms"
        assert (frame_el.get_attribute("src") or "").startswith("blob:")
        self.f = page.frame_locator(f'iframe[title^="{plugin.author}/{plugin.name} - "]')
        self.f.locator("#tabs").wait_for()

    @property
    def frame(self) -> Any:
        return next(fr for fr in self.page.frames if fr.url.startswith("blob:"))

    def toggle_theme(self) -> None:
        """The account menu's theme button (beside its language select): light -> dark -> system."""
        page = self.page
        page.locator('[data-sidebar="menu-button"]', has_text=ADMIN_USER).click()
        menu = page.locator('[role="menu"]')
        menu.locator('button[role="combobox"]').locator("xpath=following-sibling::button[1]").click()
        page.keyboard.press("Escape")
        menu.wait_for(state="detached")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(SHOTS / f"{name}.png"))

    def tab(self, name: str) -> None:
        self.f.locator(f'#tabs [data-tab="{name}"]').click()
        self.wait_idle(name)

    def wait_idle(self, panel: str) -> None:
        self.f.locator(f"#panel-{panel}:not([aria-busy])").wait_for()

    def assert_no_script_ran(self) -> None:
        pwned = self.frame.evaluate("() => window.__pwned === undefined ? null : String(window.__pwned)")
        assert pwned is None, f"stored text executed as markup in the dashboard: {pwned}"
        count = self.frame.evaluate("() => document.querySelectorAll('img, script:not([src]), svg, iframe').length")
        # the page's own inline scripts are allowed; stored text adds no element at all
        own = self.frame.evaluate("() => document.querySelectorAll('script:not([src])').length")
        assert count == own, f"stored text became elements: {count - own} extra"

    def close(self) -> None:
        self.context.close()


def episode_card(d: Dashboard, eid: str) -> Any:
    return d.f.locator(f'#panel-episodes article[data-episode-id="{eid}"]')


def test_operator_works_through_every_panel(stack: Stack, browser: Any, chat_data: ChatData) -> None:
    data, kb = chat_data, stack.kb_uuid
    d = Dashboard(browser, stack)
    try:
        d.login()
        d.open_console()

        # -- The page's own styles and catalogs reached the blob document.
        style = d.frame.evaluate(
            """() => ({
                font: getComputedStyle(document.body).fontFamily,
                accent: getComputedStyle(document.documentElement).getPropertyValue('--accent').trim(),
                button: getComputedStyle(document.getElementById('open-scope')).backgroundColor,
                theme: document.documentElement.getAttribute('data-theme'),
                title: document.querySelector('h1').textContent,
            })"""
        )
        assert not re.match(r'\s*("?Times|serif)', style["font"]), f"browser-default font: {style}"
        assert style["accent"], f"the page's CSS variables are not set: {style}"
        assert style["button"] not in ("rgba(0, 0, 0, 0)", "rgb(239, 239, 239)"), f"default button: {style}"
        assert style["theme"] == "light" and style["title"] == "Memory Console", style
        assert "space.kb_none" not in d.f.locator("#kb-select").inner_text(), "catalog keys shown raw"

        # -- Memory space: pick the memory KB and this run's chat from the lists.
        option = d.f.locator(f'#kb-select option[value="{kb}"]')
        option.wait_for(state="attached")
        assert "Long-term memory (e2e)" in option.inner_text(), "the memory KB is not listed by its name"
        d.f.locator("#kb-select").select_option(kb)
        space = d.f.locator(f'#scope-list button[data-session="{data.session_name}"]')
        space.wait_for()
        assert data.sender_id in space.locator('[data-role="speakers"]').inner_text(), space.inner_text()
        space.click()
        d.f.locator("#scope-banner", has_text=data.session_name).wait_for()
        d.shot("01-memory-space")

        # -- Profiles: the chat's profile, hostile text shown as text.
        d.tab("profiles")
        profiles = d.f.locator("#panel-profiles")
        profiles.locator("[data-profile]", has_text="early riser").first.wait_for()
        text = profiles.inner_text()
        assert HOSTILE_SCRIPT in text and HOSTILE_IMG in text, text
        d.assert_no_script_ran()
        d.shot("02-profiles")

        # -- Episodes: the chat's memories, newest first; hostile text as text.
        d.tab("episodes")
        episode_card(d, data.tea_id).wait_for()
        hostile = episode_card(d, data.hostile_id)
        assert HOSTILE_IMG in hostile.locator('[data-role="content"]').inner_text()
        assert HOSTILE_SCRIPT in hostile.locator('[data-role="content"]').inner_text()
        d.assert_no_script_ran()
        d.shot("03-episodes")

        # Search by relevance.
        d.f.locator("#ep-query").fill("what do I drink in the morning")
        d.f.locator("#ep-search").click()
        d.wait_idle("episodes")
        first = d.f.locator("#panel-episodes article.episode").first
        assert first.get_attribute("data-episode-id") == data.tea_id, first.inner_text()
        d.shot("04-episodes-search")
        d.f.locator("#ep-clear").click()
        d.wait_idle("episodes")

        # Forget one record: it leaves the store (positive control: it is there before).
        assert data.forget_id in episode_ids(stack, data, kb)
        target = episode_card(d, data.forget_id)
        target.locator('[data-action="forget"]').click()
        target.locator('[data-role="reason"]').fill("the user asked in chat")
        d.shot("05-episodes-forget-confirm")
        target.locator('[data-action="confirm"]').click()
        d.f.locator("#toast", has_text="Forgot").wait_for()
        d.wait_idle("episodes")
        assert episode_card(d, data.forget_id).count() == 0
        after = episode_ids(stack, data, kb)
        assert data.forget_id not in after and data.tea_id in after, after

        # -- Injection: what the last reply in this chat was given.
        d.tab("injection")
        d.f.locator("#panel-injection h3").first.wait_for()
        injection = d.f.locator("#panel-injection").inner_text()
        assert "jasmine tea" in injection, injection
        d.assert_no_script_ran()
        d.shot("06-injection")
        # the recall trace kept with the snapshot: why the tea memory won
        d.f.locator("#panel-injection h3", has_text="Near misses").wait_for()
        why = d.f.locator(f'#panel-injection details[data-why="{data.tea_id}"]')
        why.locator("summary").click()
        assert "dense" in why.inner_text() and "rank #" in why.inner_text(), why.inner_text()
        assert d.f.locator(f'#inj-near-misses li[data-near-miss="{data.tea_id}"]').count() == 0  # control
        # a typed question: Lyon is injected; the superseded Paris row is a near miss, kept out by
        # the status filter (found in the host's store by the explicit "why")
        d.f.locator("#why-query").fill("Where do I live?")
        d.f.locator("#why-run").click()
        d.f.locator(f'#why-injected li[data-why-row="{data.lyon_id}"]').wait_for()
        paris = d.f.locator(f'#why-near-misses li[data-near-miss="{data.paris_id}"]')
        assert paris.get_attribute("data-reason") == "status", d.f.locator("#why-near-misses").inner_text()
        assert "not active" in paris.inner_text()
        assert d.f.locator(f'#why-near-misses li[data-near-miss="{data.lyon_id}"]').count() == 0  # control
        paris.scroll_into_view_if_needed()
        d.shot("06b-injection-trace")

        # -- Audit: paged, newest first; the export is Copy + text (the sandbox blocks downloads).
        d.tab("audit")
        rows = d.f.locator("#panel-audit tbody tr")
        rows.first.wait_for()
        assert "episode.forget" in rows.first.inner_text() and "console" in rows.first.inner_text()
        d.f.locator("#audit-export").click()
        d.wait_idle("audit")
        box = d.f.locator('[data-doc="audit"]')
        audit_doc = json.loads(box.locator("textarea").input_value())
        total = stack.page_api("/audit", {"scope": {**data.scope, "kb_id": kb}, "page": 1, "page_size": 1})["total"]
        assert audit_doc["count"] == total and total >= 7, (audit_doc["count"], total)
        box.locator('[data-action="copy"]').click()
        d.f.locator("#toast", has_text="Copied").wait_for()
        assert json.loads(d.page.evaluate("navigator.clipboard.readText()")) == audit_doc
        d.assert_no_script_ran()
        d.shot("07-audit-export")

        # -- Export (L2): only this space, Copy works inside the host's sandbox.
        d.tab("export")
        d.f.locator("#export-l2").click()
        d.wait_idle("export")
        export = json.loads(d.f.locator('[data-doc="export"] textarea').input_value())
        contents = [e["content"] for e in export["episodes"]]
        assert any(HOSTILE_IMG in c for c in contents) and not any("locker code" in c for c in contents)
        d.f.locator('[data-doc="export"] [data-action="copy"]').click()
        d.f.locator("#toast", has_text="Copied").wait_for()
        d.shot("08-export")

        # -- Diagnostics and write fences.
        d.tab("diagnostics")
        d.f.locator("#diag-run").click()
        d.wait_idle("diagnostics")
        d.f.locator('[data-check="isolation_probe"][data-verdict="green"]').wait_for()
        # the console has no pipeline: the check reads the one that served this space's last chat turn
        d.f.locator('[data-check="kb_in_pipeline"][data-verdict="green"]').wait_for()
        assert d.f.locator('[data-check="kb_in_pipeline"]').count() == 1
        fences = d.f.locator("#fences-body")
        assert fences.locator('[data-role="no-fences"], tr').count() >= 1, fences.inner_text()
        d.shot("09-diagnostics-fences")

        # -- Move: back up the whole installation, then restore that document into the same one:
        # every record is already there (skipped, nothing written) and every record reads back.
        d.tab("move")
        d.f.locator("#move-backup").click()
        backup = d.f.locator("#move-backup-text")
        backup.wait_for()
        text = backup.input_value()
        assert '"ltm-backup/1"' in text.splitlines()[0], text[:200]
        assert data.tea_id in text  # positive control: the chat's memory is in the backup
        d.shot("09b-move-backup")
        d.f.locator("#move-paste").fill(text)
        d.f.locator("#move-restore").click()
        report = d.f.locator('#move-report[data-ok="true"]')
        report.wait_for(timeout=120_000)
        # restoring into the installation it came from writes nothing: every record is skipped
        assert re.search(r"Written\s*0\b", report.inner_text()), report.inner_text()
        d.shot("09c-move-restored")

        # -- Candidates: the chat's statement waits for a person; accepting writes a memory.
        d.tab("candidates")
        cand = d.f.locator("#panel-candidates article[data-candidate-id]", has_text=data.candidate_text)
        cand.wait_for()
        cid = cand.get_attribute("data-candidate-id")
        assert not any(data.candidate_text in c for c in contents)  # not a memory yet
        d.shot("10-candidates")
        cand.locator('[data-role="cand-reason"]').fill("confirmed by the operator")
        cand.locator('[data-action="accept"]').click()
        d.f.locator("#toast", has_text="Accepted").wait_for()
        d.wait_idle("candidates")
        stored = stack.page_api("/episodes", {"scope": {**data.scope, "kb_id": kb}, "status": "active"})["items"]
        assert any(e["content"] == data.candidate_text for e in stored), f"accepted {cid} is not a memory"
        d.shot("11-candidates-accepted")
        # the parked move shows the stored memory it contradicts, beside its own words
        conflict = d.f.locator("#panel-candidates article[data-candidate-id]", has_text=data.conflict_text)
        conflict.wait_for()
        assert "Lyon" in conflict.inner_text(), conflict.inner_text()
        d.shot("11b-candidates-conflict")

        # -- Consolidation review: the superseded record is proposed; Run is refused while
        # consolidation runs are off (the default), and the refusal changes nothing.
        d.tab("consolidation")
        d.f.locator("#consol-preview").click()
        d.wait_idle("consolidation")
        proposed = d.f.locator(f'#panel-consolidation [data-consol-candidate="{data.paris_id}"]')
        proposed.wait_for()
        assert "Paris" in proposed.inner_text()
        d.f.locator('[data-role="consol-disabled"]').wait_for()
        d.f.locator('#panel-consolidation [data-action="consol-run"]').click()
        d.f.locator('#panel-consolidation [data-action="confirm"]').click()
        d.wait_idle("consolidation")
        err = d.f.locator("#panel-consolidation > .error")
        err.wait_for()
        refusal = err.inner_text()
        d.shot("12-consolidation-refused")
        assert episode_ids(stack, data, kb)[data.paris_id] == "superseded", "a refused run changed the store"
        assert "[object Object]" not in refusal and "disabled" in refusal.lower(), (
            f"the refusal does not say why: {refusal!r}"
        )
        d.assert_no_script_ran()
    finally:
        d.close()
    assert not d.problems, d.problems


def test_console_follows_dashboard_language_and_theme(stack: Stack, browser: Any, chat_data: ChatData) -> None:
    """zh_Hans + dark set in the dashboard reach the page through the SDK context message."""
    d = Dashboard(browser, stack, language="zh-Hans", theme="dark")
    try:
        d.login()
        d.open_console()
        d.f.locator("h1", has_text="记忆控制台").wait_for()
        assert d.frame.evaluate("() => document.documentElement.getAttribute('data-theme')") == "dark"
        bg = d.frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(10, 10, 10)", bg
        d.f.locator(f'#kb-select option[value="{stack.kb_uuid}"]').wait_for(state="attached")
        d.f.locator("#kb-select").select_option(stack.kb_uuid)
        d.f.locator(f'#scope-list button[data-session="{chat_data.session_name}"]').click()
        d.f.locator("#panel-profiles h2", has_text="发言者画像").wait_for()
        d.shot("13-profiles-zh-dark")
        d.tab("episodes")
        episode_card(d, chat_data.tea_id).wait_for()
        assert "有效" in episode_card(d, chat_data.tea_id).inner_text()
        d.assert_no_script_ran()
        d.shot("14-episodes-zh-dark")

        # A theme change in the dashboard reaches the open page without a reload (dark -> system,
        # which is light in headless Chromium); the episodes stay on screen.
        d.toggle_theme()
        d.f.locator('html[data-theme="light"]').wait_for(state="attached")
        assert d.frame.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
        episode_card(d, chat_data.tea_id).wait_for()
        d.shot("15-episodes-zh-light-live")
    finally:
        d.close()
    assert not d.problems, d.problems
