"""The one verb table (``parser.VERB_TABLE``) carries parsing, the policy verb, the handler and the help
order. A row without a handler, a policy rule or a help entry in every language fails here; so does a
handler no row names. The checker is run on a table with one row too many as the positive control."""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from components.commands import parser, render
from components.commands.memory import MemoryCommand
from components.commands.parser import HELP_ORDER, SPECS, VERB_TABLE, VerbSpec
from ltm.domain.privilege import POLICY
from ltm.i18n import LANGUAGES, catalog


def gaps(table: Iterable[VerbSpec], command: type = MemoryCommand) -> list[str]:
    """What a verb table misses against the command class, the policy and the catalogs."""
    rows = list(table)
    out: list[str] = []
    for row in rows:
        name = row.handler_name
        if name and not inspect.iscoroutinefunction(getattr(command, name, None)):
            out.append(f"{row.name}: no handler {name}")
        for verb in {row.policy_verb(), *(row.policy_verb(a) for a in row.actions)}:
            if verb not in POLICY:
                out.append(f"{row.name}: no policy rule {verb}")
        for lang in LANGUAGES:
            for key in (f"cmd.usage.{row.name}", f"cmd.help.{row.name}"):
                if key not in catalog(lang):
                    out.append(f"{row.name}: no {key} in {lang}")
    named = {row.handler_name for row in rows}
    for attr in dir(command):
        if attr.startswith("_do_") and attr not in named:
            out.append(f"{attr}: a handler no row names")
    return out


def test_the_table_has_every_part_of_every_verb() -> None:
    assert gaps(VERB_TABLE) == []


def test_a_row_without_handler_policy_or_help_fails() -> None:
    # positive control: the same checker flags a row that has only its parsing
    bogus = VerbSpec("bogus", lambda line: {})
    found = gaps((*VERB_TABLE, bogus))
    assert "bogus: no handler _do_bogus" in found
    assert "bogus: no policy rule bogus" in found
    assert {f"bogus: no cmd.help.bogus in {lang}" for lang in LANGUAGES} <= set(found)
    # and a handler the table forgets
    assert "_do_optin: a handler no row names" in gaps(r for r in VERB_TABLE if r.name != "optin")


def test_only_help_is_answered_by_the_entry_point() -> None:
    assert {r.name for r in VERB_TABLE if not r.handler_name} == {"help"}


def test_help_order_is_the_table_order() -> None:
    assert render.HELP_ORDER == HELP_ORDER == tuple(r.name for r in VERB_TABLE)
    assert {r.name for r in VERB_TABLE if not r.typed} == {"summary"}  # the bare !memory
    assert set(HELP_ORDER) == {"summary", *(s.name for s in SPECS)}
    text = render.help_text("en_US")
    lines = [catalog("en_US")[f"cmd.usage.{v}"] for v in HELP_ORDER]
    positions = [text.find(line.splitlines()[0]) for line in lines]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)


def test_policy_verbs_come_from_the_table() -> None:
    assert parser.parse("memory audit export").policy_verb == "audit.export"
    assert parser.parse("memory audit").policy_verb == "audit"
    assert parser.parse("memory").policy_verb == "summary"
    assert parser.parse("memory forget-me").policy_verb == "forget-me"
