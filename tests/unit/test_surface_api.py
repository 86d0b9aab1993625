"""The surfaces' one door into the core: ``components/`` and ``pages/`` import ``ltm.service`` (the
package, whose ``__all__`` is the public API) and ``ltm.i18n``, and nothing else of ours.

``PUBLIC_API`` pins ``ltm.service.__all__``: a name added to or removed from the API fails
:func:`test_the_public_api_is_pinned` until it is added or removed here too, so a change of the API
is a visible decision. Every rule reports ``path -> [what breaks it]``."""

from __future__ import annotations

import ast
from pathlib import Path

import ltm.service
from tests.unit.test_layering import files, violations

PUBLIC_API = frozenset(
    {
        # moving a whole installation (ltm-backup/1)
        "BACKUP_MAX_CHUNK_LINES",
        "BACKUP_MAX_LINE_CHARS",
        "RestoreReport",
        # the façade, its caller and its settings
        "Actor",
        "MemoryService",
        "Settings",
        # the installation's other verb owners
        "Consolidator",
        "ReviewQueue",
        "forget_tombstone_id",
        # what the verbs return
        "Candidate",
        "Episode",
        "ExtractReport",
        "HealthReport",
        "Holdings",
        "ImportReport",
        "Injection",
        "InjectionSnapshot",
        "Overview",
        "PersonErasure",
        "Preview",
        "Profile",
        "RecallResult",
        "RecallTrace",
        "RecalledEpisode",
        "RetireEvent",
        "RunResult",
        "ServedTurns",
        "TraceRow",
        "TurnUsage",
        "console_view",
        "explain",
        "identity",
        # what they refuse with
        "FencedError",
        "LtmError",
        "NotFoundError",
        "PermissionDenied",
        "ScopeError",
        "ValidationError",
        # scopes and the criteria of a bulk verb
        "Criteria",
        "Scope",
        "derive_scope",
        "scope_fence_keys",
        "speaker_profile_key",
        # the privilege policy
        "can_run",
        "is_admin",
        "matrix",
        "requires_admin",
        "rule_for",
        # vocabulary and limits
        "ACTIVE",
        "DEFAULT_STATUS",
        "EXPIRES_BY",
        "FORGET_ME_TTL_S",
        "MAX_ID_CHARS",
        "MAX_REASON",
        "MAX_SOURCE_CHARS",
        "PROPOSAL_ID_RE",
        "SETTABLE_FIELDS",
        "STATUSES",
        "bounded_int",
        "candidate_status_key",
        "is_record_id",
        "listed_statuses",
        "status_key",
        "trust_label",
        # untrusted text as data; instants
        "neutralize",
        "neutralize_data",
        "minute_text",
        "parse_instant",
        "render_shipped",
        "to_iso",
        "unstorable",
        # live calls and host-call counting
        "CHAT_GRACE_S",
        "HOST_CALLS",
        "TURN_TIMES",
        "OPERATOR_GRACE_S",
        "note_host_call",
        "note_time",
    }
)
ALLOWED_MODULES = {"ltm.service", "ltm.i18n"}
# The service's inside: a surface calls verbs, never the write engine (or the index behind it).
INSIDE = {"writes"}


def surface_reaches(source: str, public: frozenset[str] = PUBLIC_API) -> list[str]:
    """What ``source`` (a surface module) takes of ours besides the public API and the catalogs:
    another ``ltm`` module, a name ``ltm.service`` does not export, the service's inside. The one
    form is ``from ltm.service import <name>`` (a plain ``import ltm...`` is reported too)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "ltm"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "ltm":
            if node.module not in ALLOWED_MODULES:
                out.append(f"{node.lineno}: from {node.module}")
            elif node.module == "ltm.service":
                out += [f"{node.lineno}: ltm.service.{a.name}" for a in node.names if a.name not in public]
        elif isinstance(node, ast.Attribute) and node.attr in INSIDE:
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(out)


def test_the_public_api_is_pinned() -> None:
    assert set(ltm.service.__all__) == PUBLIC_API, {
        "added": sorted(set(ltm.service.__all__) - PUBLIC_API),
        "removed": sorted(PUBLIC_API - set(ltm.service.__all__)),
    }
    assert len(ltm.service.__all__) == len(PUBLIC_API), "a name listed twice in __all__"
    missing = [name for name in PUBLIC_API if not hasattr(ltm.service, name)]
    assert missing == []


def test_surfaces_import_only_the_public_api() -> None:
    paths = files("components", "pages")
    assert len(paths) > 20  # control: the scan sees the surfaces
    assert violations(paths, lambda p: surface_reaches(p.read_text(encoding="utf-8"))) == {}


def test_every_public_name_is_used_by_a_surface_or_returned_by_a_verb() -> None:
    """The API holds what the surfaces use: a name no surface imports is one a verb hands them
    (a return or a raised type they handle by its attributes) - listed here so none is left over."""
    returned_only = {"ImportReport", "Overview", "RecallResult", "RecalledEpisode", "RestoreReport", "RetireEvent"}
    used: set[str] = set()
    for path in files("components", "pages"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "ltm.service":
                used.update(a.name for a in node.names)
    assert PUBLIC_API - used == returned_only


def test_the_rule_names_each_reach(tmp_path: Path) -> None:
    """Positive control: every kind of reach is reported with its line; the allowed ones are not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ltm.service import Actor, MemoryService\n"
        "from ltm.i18n import t\n"
        "from ltm.domain.scope import Scope\n"
        "from ltm.service.health import run_health\n"
        "import ltm.ports\n"
        "from ltm.service import Secret\n"
        "x = service.writes.index\n"
        "import ltm.service\n"
    )
    assert violations([probe], lambda p: surface_reaches(p.read_text())) == {
        "probe.py": [
            "3: from ltm.domain.scope",
            "4: from ltm.service.health",
            "5: import ltm.ports",
            "6: ltm.service.Secret",
            "7: service.writes",
            "8: import ltm.service",
        ]
    }
    allowed = "from ltm.service import Actor, Scope\nfrom ltm.i18n import t\nfrom components.turn_scope import x\n"
    assert surface_reaches(allowed) == []
