"""``!memory``: parse the line, pre-check the privilege policy, call one service verb, render the reply.

The pre-check only words a refusal for the chat (who counts as an admin, which sender id was
seen); the guard is the service verb itself, which asks the same policy with the caller's
:class:`~ltm.service.Actor` and refuses with the same localized text.

Dispatch (SDK ``Command._execute``): the host splits ``command_text`` on single spaces, the SDK
looks the first parameter up among the registered subcommands and, on a miss, calls ``"*"`` without
shifting and delivers only its first yield. So every verb name, ``""`` (bare ``!memory`` and lines
with a double space) and ``"*"`` are registered to the same entry point, which re-parses the whole
``command_text`` itself (quotes, flags). A registered name streams every reply; through ``"*"``
(unknown verb, upper case, quoted verb) the replies are folded into one. Verbs answer with one reply,
except exports, whose first reply is a header and the next ones are JSON parts that concatenate back
into the document.

Identity: the scope comes from ``scope_of_turn`` (query variables first); the admin check uses the
query variable ``sender_id`` (the current speaker) and never ``Session.sender_id``, which is a
group's first speaker.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from langbot_plugin.api.definition.components.command.command import Command
from langbot_plugin.api.entities.builtin.command.context import CommandReturn, ExecuteContext

from components.background_calls import OPERATOR_GRACE_S, runs_background_work
from components.commands import render, rights
from components.commands.consolidate import consolidate_preview, consolidate_run
from components.commands.errors import error_line
from components.commands.parser import ROW_OF, VERBS, Parsed, ParseError, parse
from components.turn_scope import scope_of_turn
from ltm.i18n import t
from ltm.service import (
    Actor,
    Criteria,
    LtmError,
    MemoryService,
    PermissionDenied,
    ReviewQueue,
    Scope,
    ScopeError,
    can_run,
    forget_tombstone_id,
    is_admin,
    rule_for,
)

log = logging.getLogger(__name__)

PAGE_SIZE = 10
EXPORT_PAGE_SIZE = 20
AUDIT_EXPORT_PAGE_SIZE = 100
SEARCH_LIMIT = 10
SEARCH_BUDGET_TOKENS = 1_000_000


@dataclass(frozen=True)
class Call:
    """One parsed, permitted request: what every verb handler gets."""

    ctx: ExecuteContext
    lang: str
    p: Parsed
    scope: Scope
    actor: Actor
    v: dict[str, Any]  # the query variables
    admin: bool


class MemoryCommand(Command):
    def __init__(self) -> None:
        super().__init__()

        async def streamed(self: MemoryCommand, ctx: ExecuteContext) -> AsyncGenerator[CommandReturn, None]:
            for text in await self.respond(ctx):
                yield CommandReturn(text=text)

        async def folded(self: MemoryCommand, ctx: ExecuteContext) -> AsyncGenerator[CommandReturn, None]:
            # "*" delivers only the first yield: header + parts in one reply (parts concatenate exactly).
            replies = await self.respond(ctx)
            yield CommandReturn(text=replies[0] + ("\n" + "".join(replies[1:]) if len(replies) > 1 else ""))

        for name in ("", *VERBS):
            self.subcommand(name, help=f"!memory {name}".strip(), usage="!memory help")(streamed)
        self.subcommand("*", help="!memory help", usage="!memory help")(folded)

    # ------------------------------------------------------------------ the one entry point
    @property
    def service(self) -> MemoryService:
        return self.plugin.service

    @property
    def review(self) -> ReviewQueue | None:
        return getattr(self.plugin, "review", None)

    @runs_background_work(OPERATOR_GRACE_S)
    async def respond(self, ctx: ExecuteContext) -> list[str]:
        """Replies for one command line. Never raises: every failure becomes a localized message."""
        lang = "en_US"
        speaker = ""
        try:
            lang = self.service.settings.language
            try:
                parsed = parse(ctx.command_text, root=ctx.command or "memory")
            except ParseError as exc:
                return [self._usage_error(lang, exc)]
            variables = await self._variables(ctx)
            speaker = str(variables.get("sender_id") or "")
            policy_verb = parsed.policy_verb
            admin = is_admin(ctx.privilege, speaker, self.service.settings.admin_sender_ids)
            log.info("!memory %s (query %s, privilege %s, admin %s)", policy_verb, ctx.query_id, ctx.privilege, admin)
            if not can_run(policy_verb, ctx.privilege, speaker, self.service.settings.admin_sender_ids):
                kind = rule_for(policy_verb).kind
                return [
                    t(f"cmd.refused.{kind}", lang, verb=policy_verb)
                    + "\n"
                    + t("cmd.refused.how", lang, sender=render.clean(speaker, 60) or "-")
                ]
            if parsed.verb == "help":
                return [render.help_text(lang, parsed.action)]
            scope = await self._scope(ctx, variables)
            actor = Actor(
                surface="command",
                sender_id=scope.sender_id,  # the policy's speaker (scope_of_turn never takes a group's)
                query_id=ctx.query_id,
                privilege=int(ctx.privilege or 1),
            )
            handler = getattr(self, ROW_OF[parsed.verb].handler_name)
            replies: list[str] = await handler(Call(ctx, lang, parsed, scope, actor, variables, admin))
            return replies or [t("cmd.error.internal", lang)]
        except PermissionDenied as exc:  # the service's own check (e.g. forgetting another's memory)
            return [error_line(lang, exc) + "\n" + t("cmd.refused.how", lang, sender=render.clean(speaker, 60) or "-")]
        except LtmError as exc:
            return [error_line(lang, exc)]
        except Exception:
            log.exception("!memory failed (query %s)", getattr(ctx, "query_id", None))
            return [t("cmd.error.internal", lang)]

    @staticmethod
    def _usage_error(lang: str, exc: ParseError) -> str:
        args = {k: render.clean(v, 60) if isinstance(v, str) else v for k, v in exc.params.items()}
        return t(exc.key, lang, **args) + "\n" + t("cmd.usage.hint", lang)

    @staticmethod
    async def _variables(ctx: ExecuteContext) -> dict[str, Any]:
        try:
            return dict(await ctx.get_query_vars() or {})
        except Exception as exc:  # an ended query or an old host: the Session is the fallback
            log.warning("query variables unavailable for query %s: %s", ctx.query_id, exc)
            return {}

    async def _scope(self, ctx: ExecuteContext, variables: dict[str, Any]) -> Scope:
        try:
            bot = await ctx.get_bot_uuid()
        except Exception as exc:
            log.warning("bot uuid unavailable for query %s: %s", ctx.query_id, exc)
            bot = None
        return await scope_of_turn(self.service, variables, session=ctx.session, bot_uuid=bot or None)

    # ------------------------------------------------------------------ read verbs
    async def _do_summary(self, c: Call) -> list[str]:
        o = await self.service.overview(c.scope)
        today = await self.service.ledger.today(c.scope)
        text = render.summary(c.lang, c.scope.describe(), o.counts, o.injection, o.audit_total, today)
        return [rights.with_retention(c.lang, text, self.service.settings)]

    async def _do_profile(self, c: Call) -> list[str]:
        session = await self.service.get_profile(c.scope, "session")
        speaker = await self.service.get_profile(c.scope, "speaker", c.scope.sender_id) if c.scope.sender_id else None
        return [render.profile(c.lang, session, speaker, c.scope.sender_id)]

    async def _page(self, lang: str, p: Parsed, scope: Scope, title: str) -> list[str]:
        page = await self.service.list_episodes(
            scope, statuses=p.statuses, page=p.page, page_size=PAGE_SIZE, as_of_ts=p.as_of_ts
        )
        return [render.episode_page(lang, title, page.items, page.page, page.has_more, p.verb, as_of=p.as_of)]

    async def _do_list(self, c: Call) -> list[str]:
        return await self._page(c.lang, c.p, c.scope, "cmd.list.title")

    async def _do_superseded(self, c: Call) -> list[str]:
        return await self._page(c.lang, c.p, c.scope, "cmd.superseded.title")

    async def _do_archived(self, c: Call) -> list[str]:
        return await self._page(c.lang, c.p, c.scope, "cmd.archived.title")

    async def _do_search(self, c: Call) -> list[str]:
        if not c.scope.collection:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")
        result = await self.service.recall(
            c.scope,
            c.p.query,
            limit=SEARCH_LIMIT,
            with_profiles=False,
            budget_tokens=SEARCH_BUDGET_TOKENS,
            parse_window=False,
            as_of=c.p.as_of,
        )
        hits = [(r.episode, r.score) for r in result.episodes]
        return [render.search(c.lang, c.p.query, hits, as_of=result.as_of)]

    async def _do_why(self, c: Call) -> list[str]:
        if not c.scope.collection:
            raise ScopeError("no memory knowledge base for this scope", key="error.no_kb")
        result = await self.service.why(c.scope, c.p.query, c.actor, as_of=c.p.as_of)
        return [render.why(c.lang, c.p.query, result.trace)]

    async def _do_show(self, c: Call) -> list[str]:
        return [render.show(c.lang, await self.service.get_episode(c.scope, c.p.episode_id))]

    async def _do_audit(self, c: Call) -> list[str]:
        if c.p.action == "export":
            doc = await self.service.audit_document(c.scope, c.actor, c.p.page, AUDIT_EXPORT_PAGE_SIZE)
            count, total, pages = doc["count"], doc["total"], doc["pages"]
            header = t("cmd.audit.export_header", c.lang, count=count, total=total, page=c.p.page, pages=pages)
            more = c.p.page < pages
            return self._document(
                c.lang,
                header,
                render.pretty_lines(doc, "entries"),
                more,
                f"!memory audit export {c.p.page + 1}",
                importable=False,
            )
        entries, total = await self.service.audit_page(c.scope, c.p.page, PAGE_SIZE)
        return [render.audit_page(c.lang, entries, total, c.p.page, PAGE_SIZE)]

    @staticmethod
    async def _pipeline_kbs(ctx: ExecuteContext, variables: dict[str, Any]) -> list[str] | None:
        """The pipeline's knowledge bases: the host API first, the query variable second, else unknown."""
        try:
            return [str(kb.get("uuid")) for kb in await ctx.list_pipeline_knowledge_bases() if isinstance(kb, dict)]
        except Exception as exc:
            log.info("pipeline knowledge bases unavailable for query %s: %s", ctx.query_id, exc)
        kbs = variables.get("_knowledge_base_uuids")
        return [str(k) for k in kbs] if isinstance(kbs, list) else None

    async def _do_health(self, c: Call) -> list[str]:
        kbs = await self._pipeline_kbs(c.ctx, c.v)
        report = await self.service.health(c.scope, kbs, probe=c.admin, actor=c.actor)
        text = render.health(c.lang, report)
        if not c.admin:
            text += "\n" + t("cmd.health.probe_admin", c.lang)
        return [text]

    # ------------------------------------------------------------------ admin verbs
    async def _do_forget(self, c: Call) -> list[str]:
        e = await self.service.forget(c.scope, c.p.episode_id, c.actor, reason=c.p.reason, never=c.p.never)
        text = t("cmd.forget.done", c.lang, id=render.clean(e.id, 40), content=render.quote(e.content))
        if c.p.never:
            tid = forget_tombstone_id(c.scope, e.content, e.sender_id, e.audience, c.admin)
            text += "\n" + t("cmd.forget.never", c.lang, tombstone=tid)
        return [text]

    async def _do_confirm(self, c: Call) -> list[str]:
        before = await self.service.get_episode(c.scope, c.p.episode_id)
        e = await self.service.confirm_episode(c.scope, c.p.episode_id, c.actor, reason=c.p.reason)
        key = "cmd.confirm.already" if before.confidence == "confirmed" else "cmd.confirm.done"
        return [
            t(
                key,
                c.lang,
                id=render.clean(e.id, 40),
                content=render.quote(e.content),
                was=render.clean(before.confidence, 20),
            )
        ]

    async def _do_consolidate(self, c: Call) -> list[str]:
        if c.p.action == "preview":
            return await consolidate_preview(self.plugin, c.ctx, c.scope, c.lang, actor=c.actor)
        return await consolidate_run(
            self.plugin, c.ctx, c.scope, c.lang, proposal_id=c.p.proposal_id or None, actor=c.actor
        )

    # ------------------------------------------------------------------ review queue
    def _queue(self) -> ReviewQueue:
        if self.review is None:
            raise ScopeError("no review queue", key="cmd.review.unavailable")
        return self.review

    async def _do_candidates(self, c: Call) -> list[str]:
        page = await self._queue().list(c.scope, page=c.p.page, page_size=PAGE_SIZE, all_statuses=c.p.all_statuses)
        return [render.candidate_page(c.lang, page, c.p.all_statuses)]

    async def _do_candidate(self, c: Call) -> list[str]:
        queue = self._queue()
        if c.p.action == "accept":
            return [render.decision(c.lang, await queue.accept(c.scope, c.p.candidate_id, c.actor, c.p.reason))]
        return [render.rejected(c.lang, await queue.reject(c.scope, c.p.candidate_id, c.actor, c.p.reason))]

    async def _do_tombstones(self, c: Call) -> list[str]:
        items, total = await self._queue().list_tombstones(c.scope, c.p.page, PAGE_SIZE)
        return [render.tombstone_page(c.lang, items, total, c.p.page, PAGE_SIZE)]

    async def _do_tombstone(self, c: Call) -> list[str]:
        tb = await self._queue().lift_tombstone(c.scope, c.p.tombstone_id, c.actor, c.p.reason)
        return [t("cmd.tombstone.lifted", c.lang, id=render.clean(tb.id, 40))]

    async def _do_archive(self, c: Call) -> list[str]:
        e = await self.service.set_status(c.scope, c.p.episode_id, "archived", c.actor, reason=c.p.reason)
        return [t("cmd.archive.done", c.lang, id=render.clean(e.id, 40), content=render.quote(e.content))]

    async def _do_restore(self, c: Call) -> list[str]:
        e = await self.service.set_status(c.scope, c.p.episode_id, "active", c.actor, reason=c.p.reason)
        return [t("cmd.restore.done", c.lang, id=render.clean(e.id, 40), content=render.quote(e.content))]

    async def _do_delete(self, c: Call) -> list[str]:
        criteria = Criteria(statuses=c.p.statuses, sender_id=c.p.speaker, before_ts=c.p.before_ts)
        n = await self.service.bulk_delete(c.scope, criteria, c.actor, reason=c.p.reason, tag=c.p.tag or "")
        described = self._filter_text(c.lang, c.p)
        if n == 0:
            return [t("cmd.delete.none", c.lang, filter=described)]
        return [t("cmd.delete.done", c.lang, n=n, filter=described)]

    @staticmethod
    def _filter_text(lang: str, p: Parsed) -> str:
        bits = []
        if p.speaker is not None:
            bits.append(t("cmd.filter.speaker", lang, value=render.quote(p.speaker, 40)))
        if p.tag is not None:
            bits.append(t("cmd.filter.tag", lang, value=render.quote(p.tag, 40)))
        if p.before is not None:
            bits.append(t("cmd.filter.before", lang, value=p.before))
        if p.statuses:
            statuses = ", ".join(render.status_label(lang, s) for s in p.statuses)
        else:
            statuses = t("cmd.filter.all", lang)
        bits.append(t("cmd.filter.status", lang, value=statuses))
        return "; ".join(bits)

    async def _do_export(self, c: Call) -> list[str]:
        if c.p.action == "l1":
            doc = await self.service.export_scope(c.scope, c.actor, layer="l1")
            header = t("cmd.export.header_l1", c.lang, count=doc["count"], checksum=doc["checksum"])
            body = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
            return self._document(c.lang, header, body, False, "", importable=False)
        doc = await self.service.export_scope(
            c.scope, c.actor, layer="l2", statuses=c.p.statuses, page=c.p.page, page_size=EXPORT_PAGE_SIZE
        )
        header = t(
            "cmd.export.header_l2",
            c.lang,
            count=doc["count"],
            total=doc["total"],
            page=doc["page"],
            pages=doc["pages"],
            checksum=doc["checksum"],
        )
        more = doc["page"] < doc["pages"]
        status_flag = f" --status {','.join(c.p.statuses)}" if c.p.statuses else ""
        next_cmd = f"!memory export l2{status_flag} --page {doc['page'] + 1}"
        return self._document(c.lang, header, render.pretty_lines(doc, "episodes"), more, next_cmd)

    @staticmethod
    def _document(lang: str, header: str, body: str, more: bool, next_cmd: str, importable: bool = True) -> list[str]:
        parts = render.chunk_text(body)
        head = header + "\n" + t("cmd.export.parts", lang, parts=len(parts))
        if importable:
            head += "\n" + t("cmd.export.import_hint", lang)
        if more:
            head += "\n" + t("cmd.export.next", lang, command=next_cmd)
        return [head, *parts]

    async def _do_import(self, c: Call) -> list[str]:
        report = await self.service.import_scope(c.scope, c.p.payload, c.actor)
        if report.imported == 0:
            return [t("cmd.import.nothing", c.lang, skipped=report.skipped)]
        text = t("cmd.import.done", c.lang, n=report.imported, skipped=report.skipped, batch=report.batch)
        if report.links_dropped:
            text += "\n" + t("cmd.import.links_dropped", c.lang, n=report.links_dropped)
        return [text]

    # ------------------------------------------------------------------ people's rights (issue 35)
    async def _do_me(self, c: Call) -> list[str]:
        held = await self.service.my_memory(c.scope, c.actor)
        return [rights.holdings(c.lang, held, c.p.page)]

    async def _do_forget_me(self, c: Call) -> list[str]:
        if c.p.action == "confirm":
            return [rights.erased(c.lang, await self.service.forget_me(c.scope, c.actor, c.p.code))]
        return [rights.ask_code(c.lang, self.service.forget_me_code(c.scope, c.actor))]

    async def _do_optout(self, c: Call) -> list[str]:
        changed = await self.service.set_opt_out(c.scope, c.actor, True)
        return [t("privacy.optout.done" if changed else "privacy.optout.already", c.lang)]

    async def _do_optin(self, c: Call) -> list[str]:
        changed = await self.service.set_opt_out(c.scope, c.actor, False)
        return [t("privacy.optin.done" if changed else "privacy.optin.already", c.lang)]
