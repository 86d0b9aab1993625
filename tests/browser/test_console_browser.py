"""The Memory Console in a real browser: Debian's Chromium (headless) driven by Playwright.

The page is the real ``components/pages/console.html`` served by a stand-in LangBot host
(``tests/console_support/server.py``): the SDK's own bridge script, the host's CSP, the host's
sandboxed iframe and postMessage bridge, and ``page-api`` forwarded to the real ``handle_api`` over a
seeded MemoryService. Screenshots of every panel go to ``test-output/console/``.

Needs ``/usr/bin/chromium`` (``scripts/install-browser``); no browser is ever downloaded.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ltm.domain.errors import NotFoundError
from tests.support.console.seed import HOSTILE, HOSTILE_IMG, HOSTILE_SCRIPT, N_PLAIN, Seeded, seeded_service
from tests.support.console.server import ConsoleServer

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium (run scripts/install-browser)"
)
sync_api = pytest.importorskip("playwright.sync_api")

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "console"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    tmp = tmp_path_factory.mktemp("console")
    with ConsoleServer(lambda: seeded_service(tmp)) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class Console:
    """One browser page on the stand-in host, with the console frame and its diagnostics."""

    def __init__(self, browser: Any, server: ConsoleServer, **host: str) -> None:
        self.server = server
        self.context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.problems: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        self.page.goto(server.host_url(**host))
        self.f = self.page.frame_locator("#plugin")

    def _on_console(self, m: Any) -> None:
        if m.type == "error" or "Content Security Policy" in m.text:
            self.problems.append(f"console {m.type}: {m.text}")

    @property
    def frame(self) -> Any:
        return next(fr for fr in self.page.frames if fr.url.startswith("blob:"))

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(SHOTS / f"{name}.png"))

    def tab(self, name: str) -> None:
        self.f.locator(f'#tabs [data-tab="{name}"]').click()
        self.f.locator(f"#panel-{name}:not([aria-busy])").wait_for()

    def wait_idle(self, panel: str) -> None:
        self.f.locator(f"#panel-{panel}:not([aria-busy])").wait_for()

    def open(self, session: str, bot: str = "bot1") -> None:
        self.f.locator(f'#scope-list button[data-session="{session}"]').click()
        self.f.locator("#scope-banner .mono", has_text=session).first.wait_for()

    def assert_no_script_ran(self) -> None:
        pwned = self.frame.evaluate("() => window.__pwned === undefined ? null : String(window.__pwned)")
        assert pwned is None, f"stored text executed as markup: {pwned}"
        markup = "img, svg, script:not([src]):not(#ltm-catalogs):not(#ltm-console), a[href], iframe, object"
        assert self.frame.evaluate(f"() => document.querySelectorAll('{markup}').length") == 0
        assert not [r for r in self.server.requests if "pwned" in r], "a stored <img> was fetched"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def console(browser: Any, server: ConsoleServer) -> Iterator[Console]:
    c = Console(browser, server)
    yield c
    c.close()
    assert not c.problems, c.problems


def episode(c: Console, eid: str) -> Any:
    return c.f.locator(f'#panel-episodes article[data-episode-id="{eid}"]')


def test_click_through_every_panel(console: Console, server: ConsoleServer) -> None:
    c, seeded = console, server.seeded
    assert isinstance(seeded, Seeded)
    svc, alice = seeded.service, seeded.alice

    # -- Memory space: known spaces from the key names; pick one; the keys are derived server-side.
    c.f.locator('#scope-list button[data-session="person_alice"]').wait_for()
    assert c.f.locator("#scope-list li").count() == 3
    assert c.f.locator("#kb-select").input_value() == "kb-test"  # the only memory KB is preselected
    c.open("person_alice")
    c.f.locator("#advanced summary").click()
    assert alice.user_key in c.f.locator("#derived").inner_text()
    c.f.locator("#f-isolation").select_option("bot")
    c.f.locator("#derive").click()
    c.f.locator("#derived .notice").wait_for()
    assert "bot:bot1" in c.f.locator("#derived").inner_text()
    c.shot("01-memory-space")
    c.f.locator("#advanced summary").click()

    # -- Profiles: hostile stored text shows as text.
    c.tab("profiles")
    session_card = c.f.locator('[data-profile="session"]')
    session_card.wait_for()
    assert HOSTILE_SCRIPT in session_card.inner_text() and HOSTILE_IMG in session_card.inner_text()
    c.assert_no_script_ran()
    session_card.locator('[data-role="field"]').select_option("add_traits")
    session_card.locator('[data-role="value"]').fill("reads <i>novels</i>")
    session_card.locator('[data-action="save-profile"]').click()
    c.f.locator('[data-profile="session"] .chip', has_text="reads <i>novels</i>").wait_for()
    entries, _ = server.run(svc.audit_page(alice, 1, 1))
    assert (entries[0]["operation"], entries[0]["surface"]) == ("profile.update", "console")
    c.shot("02-profiles")

    # -- Episodes: server-side paging, newest first.
    c.tab("episodes")
    c.f.locator("#panel-episodes article.episode").first.wait_for()
    assert c.f.locator("#panel-episodes article.episode").count() == 20
    hostile = episode(c, seeded.hostile_ids[1])
    assert HOSTILE_IMG in hostile.locator('[data-role="content"]').inner_text()
    hostile.locator("details summary").click()
    assert "Recorded" in hostile.inner_text() and "Origin" in hostile.inner_text()
    c.assert_no_script_ran()
    c.shot("03-episodes")
    c.f.locator('#ep-pager [data-action="next"]').click()
    c.wait_idle("episodes")
    assert c.f.locator('#ep-pager [data-role="page"]').inner_text() == "Page 2"
    assert c.f.locator("#panel-episodes article.episode").count() == N_PLAIN + 9 - 20
    assert not c.f.locator('#ep-pager [data-action="next"]').is_enabled()

    # Filters: time window (event time) and status.
    c.f.locator("#ep-from").fill("2023-06-05T00:00")
    c.f.locator("#ep-until").fill("2023-06-15T00:00")
    c.f.locator("#ep-apply").click()
    c.wait_idle("episodes")
    episode(c, seeded.dated_ids[1]).wait_for()
    assert c.f.locator("#panel-episodes article.episode").count() == 1
    c.f.locator("#ep-from").fill("")
    c.f.locator("#ep-until").fill("")

    # Search by relevance.
    c.f.locator("#ep-query").fill("jasmine tea")
    c.f.locator("#ep-search").click()
    c.wait_idle("episodes")
    first = c.f.locator("#panel-episodes article.episode").first
    assert first.get_attribute("data-episode-id") == seeded.tea_id
    assert "jasmine tea" in c.f.locator("#ep-mode").inner_text()
    c.shot("04-episodes-search")

    # Archive from the search result, find it under "archived", restore it.
    episode(c, seeded.tea_id).locator('[data-action="archive"]').click()
    c.f.locator("#toast", has_text="Archived").wait_for()
    assert server.run(svc.get_episode(alice, seeded.tea_id)).status == "archived"
    c.f.locator("#ep-clear").click()
    c.f.locator("#ep-status").select_option("archived")
    c.f.locator("#ep-apply").click()
    c.wait_idle("episodes")
    episode(c, seeded.tea_id).wait_for()
    assert c.f.locator('#ep-counts [data-count="archived"]').inner_text().endswith("2")
    episode(c, seeded.tea_id).locator('[data-action="restore"]').click()
    c.f.locator("#toast", has_text="Restored").wait_for()
    assert server.run(svc.get_episode(alice, seeded.tea_id)).status == "active"
    c.wait_idle("episodes")  # the toast shows before the list reloads
    assert episode(c, seeded.tea_id).count() == 0

    # Forget inline, with the in-page confirmation (the host sandbox has no dialogs).
    c.f.locator("#ep-status").select_option("active")
    c.f.locator("#ep-apply").click()
    c.wait_idle("episodes")
    target = episode(c, seeded.hostile_ids[0])
    target.locator('[data-action="forget"]').click()
    target.locator('[data-role="reason"]').fill("hostile test data")
    c.shot("05-episodes-forget-confirm")
    target.locator('[data-action="confirm"]').click()
    c.f.locator("#toast", has_text="Forgot").wait_for()
    with pytest.raises(NotFoundError):
        server.run(svc.get_episode(alice, seeded.hostile_ids[0]))
    ops = [e["operation"] for e in server.run(svc.audit_page(alice, 1, 3))[0]]
    assert ops == ["episode.forget", "episode.restore", "episode.archive"]

    # -- Injection
    c.tab("injection")
    c.f.locator("#panel-injection h3", has_text="Last injection").wait_for()
    text = c.f.locator("#panel-injection").inner_text()
    assert "Alice drinks jasmine tea" in text and "(no longer in this space)" in text and HOSTILE_SCRIPT in text
    assert f"(shown to the model as {seeded.tea_id[3:8]})" in text and "Block tokens (estimate)" in text
    c.assert_no_script_ran()
    c.shot("06-injection")

    # -- Audit: paged, newest first, exportable.
    c.tab("audit")
    rows = c.f.locator("#panel-audit tbody tr")
    rows.first.wait_for()
    assert rows.count() == 20
    assert "episode.forget" in rows.first.inner_text() and "console" in rows.first.inner_text()
    assert HOSTILE_IMG in c.f.locator("#panel-audit").inner_text()  # an archive reason, as text
    c.f.locator("#audit-export").click()
    c.wait_idle("audit")
    audit_doc = json.loads(c.f.locator('[data-doc="audit"] textarea').input_value())
    assert audit_doc["count"] == server.run(svc.audit_count(alice))
    c.assert_no_script_ran()
    c.shot("07-audit")

    # -- Export: L2 of this scope as JSON (download is blocked by the host sandbox: Copy + text).
    c.tab("export")
    c.f.locator("#export-l2").click()
    box = c.f.locator('[data-doc="export"]')
    box.wait_for()
    doc = json.loads(box.locator("textarea").input_value())
    counts = server.run(svc.count_by_status(alice))
    assert doc["layer"] == "l2" and doc["count"] == sum(counts.values())
    assert {e["user_key"] for e in doc["episodes"]} == {alice.user_key}
    assert any(e["content"].endswith(HOSTILE[1]) for e in doc["episodes"])
    box.locator('[data-action="copy"]').click()
    c.f.locator("#toast", has_text="Copied").wait_for()
    c.shot("08-export")
    c.f.locator("#export-l1").click()
    c.f.locator('[data-doc="export"] h3', has_text="ltm-l1-").wait_for()
    doc = json.loads(c.f.locator('[data-doc="export"] textarea').input_value())
    assert doc["layer"] == "l1" and doc["profiles"]["session"]["name"] == HOSTILE_SCRIPT

    # -- Diagnostics: red/amber/green cards; fences shown or honestly absent.
    c.tab("diagnostics")
    c.f.locator("#diag-run").click()
    c.wait_idle("diagnostics")
    c.f.locator('[data-check="isolation_probe"][data-verdict="green"]').wait_for()
    assert c.f.locator('[data-check="kb_in_pipeline"]').get_attribute("data-verdict") == "amber"
    assert c.f.locator('[data-check="embedding_model"]').get_attribute("data-verdict") == "green"
    fences_text = c.f.locator("#fences-body").inner_text()
    if callable(getattr(svc, "fences", None)):
        assert "No write fence" in fences_text
    else:
        assert "Write fences are not available in this version." in fences_text
    c.shot("09-diagnostics")

    # -- Candidates: the review queue is on (/meta); a conflict shows both sides; accept and reject
    # call the same resolver as !memory candidate (tests/test_review_surfaces.py compares the states).
    assert c.f.locator('#tabs [data-tab="candidates"]').is_visible()
    c.tab("candidates")
    conflict = c.f.locator(f'#panel-candidates article[data-candidate-id="{seeded.conflict_id}"]')
    conflict.wait_for()
    sides = conflict.locator('[data-role="sides"]').inner_text()
    assert "Alice moved to Berlin" in sides and "Alice moved to Lyon" in sides
    c.shot("09b-candidates")
    pending = c.f.locator(f'#panel-candidates article[data-candidate-id="{seeded.pending_id}"]')
    pending.locator('[data-role="cand-reason"]').fill("said so in chat")
    pending.locator('[data-action="accept"]').click()
    c.f.locator("#toast", has_text="Accepted").wait_for()
    accepted = server.run(seeded.review.get(alice, seeded.pending_id))
    assert accepted.status == "accepted" and accepted.reason == "said so in chat"
    assert accepted.decided_by["surface"] == "console"
    stored = server.run(svc.get_episode(alice, accepted.result_id))
    assert stored.origin == "candidate" and stored.extra["candidate_id"] == seeded.pending_id
    assert stored.content == "I prefer window seats on long flights."
    c.wait_idle("candidates")
    assert pending.count() == 0  # the default list shows open candidates only
    conflict.locator('[data-action="reject"]').click()
    c.f.locator("#toast", has_text="Rejected").wait_for()
    c.f.locator("#tomb-body tr[data-tombstone-id]").first.wait_for()
    assert server.run(svc.get_episode(alice, seeded.lyon_id)).status == "active"  # the other side stays
    c.f.locator("#cand-all").check()
    c.wait_idle("candidates")
    c.f.locator(
        f'#panel-candidates article[data-candidate-id="{seeded.pending_id}"][data-status="accepted"]'
    ).wait_for()
    c.assert_no_script_ran()
    c.shot("09c-candidates-decided")
    c.tab("diagnostics")

    # -- Language and theme switch live (host context message): zh_Hans + dark.
    c.page.evaluate("lbSetContext('dark', 'zh-Hans')")
    c.f.locator('#tabs [data-tab="diagnostics"]', has_text="诊断").wait_for()
    assert c.frame.evaluate("() => document.documentElement.classList.contains('dark')")
    bg = c.frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(10, 10, 10)"
    assert "范围隔离探测" in c.f.locator("#panel-diagnostics").inner_text()
    c.shot("10-diagnostics-zh-dark")
    c.tab("episodes")
    c.f.locator("#ep-apply", has_text="应用筛选").wait_for()
    assert "有效" in c.f.locator("#panel-episodes article.episode").first.inner_text()
    c.shot("11-episodes-zh-dark")
    c.tab("profiles")
    c.f.locator("#panel-profiles h2", has_text="发言者画像").wait_for()
    c.shot("12-profiles-zh-dark")
    c.assert_no_script_ran()
    calls = c.page.evaluate("window.__apiCalls")
    scoped = [x for x in calls if x["endpoint"] not in ("/meta", "/kbs", "/scopes", "/derive")]
    assert scoped and all(x["body"]["scope"]["session_name"] == "person_alice" for x in scoped)
    assert all("user_key" not in x["body"]["scope"] for x in scoped)  # the client never sends keys


def test_starts_in_zh_hans_dark(browser: Any, server: ConsoleServer) -> None:
    """Also runs over the documented (unwrapped) bridge, where a refusal rejects the SDK promise."""
    c = Console(browser, server, theme="dark", language="zh-Hans", bridge="unwrapped")
    try:
        c.f.locator("h1", has_text="记忆控制台").wait_for()
        c.f.locator('#scope-list button[data-session="person_bob"]').click()
        c.f.locator('[data-profile="session"]', has_text="Bob's private session").wait_for()
        assert c.frame.evaluate("() => document.documentElement.getAttribute('data-theme')") == "dark"
        assert "会话画像" in c.f.locator("#panel-profiles").inner_text()
        c.shot("13-start-zh-dark")
        c.page.evaluate("lbSetContext('light', 'en-US')")
        c.f.locator("#panel-profiles h3", has_text="Session profile").wait_for()
        assert c.frame.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
        c.f.locator("#f-session").fill("bogus")
        c.f.locator("#open-scope").click()
        c.f.locator("#space-error", has_text="Malformed session name: bogus").wait_for()
    finally:
        c.close()
    assert not c.problems, c.problems


def test_backend_errors_are_shown_not_blank(console: Console) -> None:
    c = console
    c.f.locator('#scope-list button[data-session="person_bob"]').wait_for()
    c.f.locator("#f-session").fill("bogus")
    c.f.locator("#open-scope").click()
    c.f.locator("#space-error", has_text="Malformed session name: bogus").wait_for()
    # A scope without a memory knowledge base: profiles work, episodes say why they cannot.
    c.f.locator("#kb-select").select_option("")
    c.f.locator("#f-session").fill("person_bob")
    c.f.locator("#f-bot").fill("bot1")
    c.f.locator("#open-scope").click()
    c.f.locator('[data-profile="session"]', has_text="Bob's private session").wait_for()
    c.tab("episodes")
    err = c.f.locator("#panel-episodes > .error")
    err.wait_for()
    assert "No memory knowledge base" in err.inner_text()
    c.shot("14-error-no-kb")


def test_opened_outside_langbot_says_so(browser: Any, server: ConsoleServer) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(server.page_url)
        page.locator("#no-host").wait_for(state="visible", timeout=TIMEOUT_MS)
        assert "Open it from the LangBot WebUI" in page.locator("#no-host").inner_text()
    finally:
        context.close()


def test_consolidation_preview_and_archive_only_run(console: Console, server: ConsoleServer) -> None:
    """The Consolidation tab (the stand-in installs an enabled, model-less Consolidator): Preview lists
    the superseded record as a cleanup candidate; Run (confirmed in the page) archives it."""
    c, seeded = console, server.seeded
    assert isinstance(seeded, Seeded)
    svc, alice = seeded.service, seeded.alice
    c.f.locator('#scope-list button[data-session="person_alice"]').wait_for()
    c.open("person_alice")
    c.f.locator('#tabs [data-tab="consolidation"]:not([hidden])').wait_for()
    c.tab("consolidation")
    c.f.locator('#panel-consolidation [data-role="consol-proposals"]').wait_for()
    c.f.locator("#consol-preview").click()
    cand = c.f.locator(f'#panel-consolidation [data-consol-candidate="{seeded.superseded_id}"]')
    cand.wait_for()
    assert "Alice lives in Paris" in cand.inner_text()
    c.shot("15-consolidation")
    c.f.locator('#panel-consolidation [data-action="consol-run"]').click()
    c.f.locator('#panel-consolidation [data-action="confirm"]').click()
    result = c.f.locator('#panel-consolidation [data-role="consol-result"]')
    result.wait_for()
    assert seeded.superseded_id in result.inner_text()
    assert server.run(svc.get_episode(alice, seeded.superseded_id)).status == "archived"
    c.assert_no_script_ran()
    c.shot("15b-consolidation-run")


def _catalog(lang: str) -> dict[str, str]:
    return json.loads((ROOT / "pages" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))


def test_every_dashboard_language_reaches_its_catalog(browser: Any, server: ConsoleServer) -> None:
    """LangBot's dashboard sends ``ja-JP``, ``zh-Hant``...; each picks its own inlined catalog (and a
    regional or unknown tag its nearest one), static labels and messages alike, live."""
    c = Console(browser, server, language="ja-JP")
    try:
        ja = _catalog("ja_JP")
        c.f.locator("h1", has_text=ja["title"]).wait_for()
        c.open("person_alice")
        c.f.locator('#tabs [data-tab="episodes"]', has_text=ja["tab.episodes"]).wait_for()
        c.tab("episodes")
        c.shot("20-episodes-ja")
        for tag, lang in (
            ("zh-Hant", "zh_Hant"),
            ("vi-VN", "vi_VN"),
            ("th-TH", "th_TH"),
            ("es-ES", "es_ES"),
            ("zh-TW", "zh_Hant"),
            ("es-MX", "es_ES"),
            ("ja", "ja_JP"),
            ("fr-FR", "en_US"),  # control: a language LangBot does not offer is English
        ):
            cat = _catalog(lang)
            c.page.evaluate(f"lbSetContext(null, '{tag}')")
            c.f.locator("h1", has_text=cat["title"]).wait_for()
            c.f.locator('#tabs [data-tab="diagnostics"]', has_text=cat["tab.diagnostics"]).wait_for()
            c.f.locator("#ep-apply", has_text=cat["ep.apply"]).wait_for()
            if tag in ("zh-Hant", "th-TH"):
                c.shot(f"21-episodes-{lang}")
        c.page.evaluate("lbSetContext(null, 'zh-Hant')")
        c.f.locator("h1", has_text=_catalog("zh_Hant")["title"]).wait_for()
        before = len(c.page.evaluate("window.__apiCalls"))
        c.f.locator("#ep-apply").click()  # a request after the switch names the page's language
        c.wait_idle("episodes")
        calls = c.page.evaluate("window.__apiCalls")
        assert len(calls) > before
        assert calls[-1]["body"]["lang"] == "zh-Hant"
        assert {x["body"].get("lang") for x in calls if isinstance(x.get("body"), dict)} >= {"ja-JP", "zh-Hant"}
        assert not c.problems, c.problems
    finally:
        c.close()
