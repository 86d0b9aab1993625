"""``!memory consolidate preview`` / ``!memory consolidate run [proposal_id]``: reply texts.

The ``!memory`` entry point parses the line, checks the privilege (admin only) and calls these with
the scope it derived; they call the one :class:`~ltm.service.consolidation.Consolidator` of the
plugin (``plugin.consolidator``, composed in ``main.compose``) and render localized replies.
Stored text (memories, the draft summary) is shown quoted and cleaned, never as markup.
Every function returns at least one reply and never raises.
"""

from __future__ import annotations

import logging
from typing import Any

from components.commands import render
from components.commands.errors import error_line
from ltm.i18n import t
from ltm.service import MAX_SOURCE_CHARS, Actor, Consolidator, LtmError, Preview, RunResult, Scope, ScopeError

log = logging.getLogger(__name__)

SUMMARY_CHARS = 600
SOURCE_CHARS = 80
CANDIDATE_CHARS = 90


def consolidator_of(plugin: Any) -> Consolidator:
    existing = getattr(plugin, "consolidator", None)
    if isinstance(existing, Consolidator):
        return existing
    raise ScopeError("no consolidator in this installation", key="consol.error.unavailable")


def _actor(ctx: Any, scope: Scope, actor: Actor | None) -> Actor:
    if actor is not None:
        return actor
    return Actor(
        surface="command",
        sender_id=scope.sender_id,
        query_id=getattr(ctx, "query_id", None),
        privilege=int(getattr(ctx, "privilege", 1) or 1),
    )


def _replies(lines: list[str]) -> list[str]:
    """Lines packed into chat-sized replies (never cutting a line unless it alone is too long)."""
    out: list[str] = []
    buf = ""
    for line in lines:
        line = render.fit(line)
        if buf and len(buf) + 1 + len(line) > render.MAX_REPLY_CHARS:
            out.append(buf)
            buf = ""
        buf = f"{buf}\n{line}" if buf else line
    if buf:
        out.append(buf)
    return out or [""]


def render_preview(lang: str, p: Preview) -> list[str]:
    lines = [t("consol.preview.title", lang), t("consol.preview.readonly", lang)]
    lines.append(t("consol.preview.enabled" if p.enabled else "consol.preview.disabled", lang))
    if p.candidates:
        lines.append(t("consol.candidates.title", lang, n=len(p.candidates)))
        for i, c in enumerate(p.candidates, 1):
            e = c.episode
            lines.append(
                t(
                    "consol.candidate.line",
                    lang,
                    n=i,
                    id=render.clean(e.id, 40),
                    content=render.quote(e.content, CANDIDATE_CHARS),
                    by=render.clean(e.superseded_by, 40) or "-",
                    age=c.age_days,
                )
            )
            if c.risks:
                risks = "; ".join(t(f"consol.risk.{r}", lang) for r in c.risks)
                lines.append(t("consol.candidate.risks", lang, risks=risks))
    else:
        lines.append(t("consol.candidates.none", lang))
    lines.append(t("consol.summary.title", lang))
    if not p.model_configured:
        lines.append(t("consol.summary.no_model", lang))
    elif p.proposal is not None:
        prop = p.proposal
        lines.append(t("consol.summary.proposal", lang, id=prop.id))
        lines.append(t("consol.summary.text", lang, summary=render.quote(prop.summary, SUMMARY_CHARS)))
        lines.append(
            t(
                "consol.summary.validity",
                lang,
                start=render.date_text(prop.valid_from),
                end=render.date_text(prop.valid_until),
            )
        )
        lines.append(t("consol.summary.sources", lang, n=len(p.sources)))
        for e in p.sources:
            lines.append(
                t(
                    "consol.summary.source_line",
                    lang,
                    id=render.clean(e.id, 40),
                    content=render.quote(e.content, SOURCE_CHARS),
                )
            )
        lines.append(t("consol.summary.keeps_sources", lang))
        if p.enabled:
            lines.append(t("consol.summary.run_hint", lang, command=f"!memory consolidate run {prop.id}"))
        else:
            lines.append(t("consol.summary.enable_hint", lang))
    else:
        lines.append(t(f"consol.draft.{p.draft_error or 'no_sources'}", lang))
    if p.skipped_long:
        lines.append(t("consol.summary.skipped_long", lang, n=p.skipped_long, limit=MAX_SOURCE_CHARS))
    if p.apply_profile_updates:
        lines.append(t("consol.summary.profile_reserved", lang))
    if p.candidates and p.enabled:
        lines.append(t("consol.candidates.run_hint", lang))
    return _replies(lines)


def render_run(lang: str, r: RunResult) -> list[str]:
    lines = [t("consol.run.title", lang)]
    if r.summary is not None:
        lines.append(
            t(
                "consol.run.summary",
                lang,
                id=render.clean(r.summary.id, 40),
                n=len(r.summary.extra.get("sources") or []),
                proposal=render.clean(r.proposal_id, 40),
            )
        )
        lines.append(t("consol.summary.text", lang, summary=render.quote(r.summary.content, SUMMARY_CHARS)))
    if r.archived:
        shown = ", ".join(render.clean(i, 40) for i in r.archived[:20])
        more = f" (+{len(r.archived) - 20})" if len(r.archived) > 20 else ""
        lines.append(t("consol.run.archived", lang, n=len(r.archived), ids=shown + more))
    elif r.summary is None:
        lines.append(t("consol.run.nothing", lang))
    return _replies(lines)


async def consolidate_preview(plugin: Any, ctx: Any, scope: Scope, lang: str, actor: Actor | None = None) -> list[str]:
    """``!memory consolidate preview``: candidates with risk notes and, with a model, a stored
    one-use proposal. Changes no memory."""
    try:
        preview = await consolidator_of(plugin).preview(scope, _actor(ctx, scope, actor), lang=lang)
        return render_preview(lang, preview)
    except LtmError as exc:
        return [error_line(lang, exc)]
    except Exception:
        log.exception("consolidate preview failed (query %s)", getattr(ctx, "query_id", None))
        return [t("consol.error.internal", lang)]


async def consolidate_run(
    plugin: Any,
    ctx: Any,
    scope: Scope,
    lang: str,
    proposal_id: str | None = None,
    actor: Actor | None = None,
) -> list[str]:
    """``!memory consolidate run [proposal_id]``: archive the superseded candidates and apply the
    named reviewed proposal (``consolidation_enabled`` only)."""
    try:
        pid = (proposal_id or "").strip() or None
        result = await consolidator_of(plugin).run(scope, _actor(ctx, scope, actor), pid)
        return render_run(lang, result)
    except LtmError as exc:
        return [error_line(lang, exc)]
    except Exception:
        log.exception("consolidate run failed (query %s)", getattr(ctx, "query_id", None))
        return [t("consol.error.internal", lang)]
