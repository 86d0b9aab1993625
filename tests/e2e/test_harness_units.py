"""Fast checks of the e2e harness pieces that need no LangBot (run in the default, non-e2e suite)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

from e2e.fake_openai import hash_embed, parse_calltool_directives, plan_reply
from e2e.stack import RUNNER_PLUGIN_DIR, PluginRef, ProviderSettings, free_ports

TOOLS = [{"type": "function", "function": {"name": "remember", "parameters": {"type": "object"}}}]


def _load_runner_module() -> ModuleType:
    path = RUNNER_PLUGIN_DIR / "components" / "runner" / "default.py"
    spec = importlib.util.spec_from_file_location("localrunner_default", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestFakeModel:
    def test_directives_are_parsed_with_json_arguments(self) -> None:
        """CALLTOOL directives keep their full JSON object, spaces included; malformed ones are skipped."""
        text = 'a CALLTOOL:remember:{"content": "x y", "tags": ["a"]} b CALLTOOL:forget:{broken CALLTOOL:x:{"k":1}'
        assert parse_calltool_directives(text) == [("remember", {"content": "x y", "tags": ["a"]}), ("x", {"k": 1})]

    def test_offered_tool_is_called_once_then_echoed(self) -> None:
        """The model calls an offered tool, and after the tool result it echoes instead of calling again."""
        body = {"messages": [{"role": "user", "content": 'CALLTOOL:remember:{"content": "teal"}'}], "tools": TOOLS}
        first = plan_reply(body)
        assert first["tool_calls"][0]["function"]["name"] == "remember"
        assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"content": "teal"}
        call_id = first["tool_calls"][0]["id"]
        body["messages"] += [first, {"role": "tool", "tool_call_id": call_id, "content": '{"ok": true}'}]
        second = plan_reply(body)
        assert "tool_calls" not in second
        assert 'tool result remember: {"ok": true}' in second["content"]

    def test_tool_not_offered_is_not_called(self) -> None:
        reply = plan_reply({"messages": [{"role": "user", "content": 'CALLTOOL:remember:{"content": "x"}'}]})
        assert "tool_calls" not in reply and "not offered, not called: remember" in reply["content"]

    def test_a_consolidation_request_gets_an_answer_the_plugin_accepts(self) -> None:
        """The plugin's own prompt in, an answer its own strict check accepts out (every id cited)."""
        from ltm.domain import consolidation as rules
        from ltm.domain.models import Episode

        sources = [
            Episode(id=f"ep_{n:020x}", content=text, user_key="u", scope_key="u", session_name="person_u")
            for n, text in enumerate(["I drink <b>black</b> coffee.", "I grind beans by hand"], 1)
        ]
        messages = rules.build_prompt(sources)
        reply = plan_reply({"messages": messages})
        draft = rules.parse_draft(reply["content"], [e.id for e in sources], budget_tokens=1500)
        assert "black" in draft.summary and "by hand" in draft.summary

    def test_hash_embeddings_are_normalised(self) -> None:
        for vec in hash_embed(["hello world", ""]):
            assert len(vec) == 384
            norm = math.sqrt(sum(v * v for v in vec))
            assert norm == 0.0 or abs(norm - 1.0) < 1e-9


class TestStackPieces:
    def test_free_ports_are_distinct(self) -> None:
        ports = free_ports(5)
        assert len(set(ports)) == 5 and all(p > 0 for p in ports)

    def test_runner_plugin_identity(self) -> None:
        ref = PluginRef.from_dir(RUNNER_PLUGIN_DIR)
        assert ref.plugin_id == "ltm-team/LocalRunner"

    def test_real_provider_needs_url_and_key(self) -> None:
        assert ProviderSettings.from_env({"LTM_PROVIDER_BASE_URL": "http://x/v1"}) is None
        real = ProviderSettings.from_env({"LTM_PROVIDER_BASE_URL": "http://x/v1/", "LTM_PROVIDER_API_KEY": "k"})
        assert real is not None and not real.fake and real.base_url == "http://x/v1"


class TestLocalRunner:
    def test_prompt_keeps_only_non_empty_string_contents(self) -> None:
        """Like LocalAgent: list contents and blank strings from listeners are dropped."""
        runner = _load_runner_module()
        items = [
            {"role": "system", "content": "base"},
            {"role": "system", "content": [{"type": "text", "text": "list content"}]},
            {"role": "system", "content": "  "},
            {"role": "system", "content": "memory block"},
        ]
        assert [m.content for m in runner.prompt_messages(items)] == ["base", "memory block"]

    def test_rag_message_shape(self) -> None:
        runner = _load_runner_module()
        payload = json.loads(runner.render_rag_message(["a", "b"]).content)
        assert payload["type"] == "langbot_retrieved_context"
        assert payload["data"]["chunks"] == [{"index": 1, "content": "a"}, {"index": 2, "content": "b"}]

    def test_manifests_parse(self) -> None:
        import yaml

        for path in (RUNNER_PLUGIN_DIR / "components").rglob("*.yaml"):
            doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
            assert {"apiVersion", "kind", "metadata", "spec"} <= set(doc), path


def test_install_mode_and_the_installed_subset() -> None:
    """``LTM_E2E_INSTALL=package`` selects the installed stack; the named subset exists test by test."""
    from e2e.stack import install_mode

    assert install_mode({"LTM_E2E_INSTALL": " Package "}) == "package"
    assert install_mode({}) == ""
    root = Path(__file__).resolve().parents[2]
    lines = (root / "tests" / "e2e" / "installed_subset.txt").read_text(encoding="utf-8").splitlines()
    subset = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert "tests/e2e/test_installed_e2e.py" in subset
    for entry in subset:
        path, _, name = entry.partition("::")
        source = (root / path).read_text(encoding="utf-8")
        assert not name or f"def {name}(" in source, entry
