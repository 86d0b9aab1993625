"""Reply rendering for ``!memory``: localized, chat-sized, memory text quoted as data.

Memory content (and every other stored string: tags, sender ids, profile items, audit reasons) is
untrusted. It is shown on one line inside quotes, with control and invisible format characters
removed, line breaks collapsed (a memory cannot fake a new reply line), the characters that make
mentions, links, HTML or code in chat markup replaced by look-alikes (``@ < > [ ] ` |``), and cut to
a length. Each reply is kept under :data:`MAX_REPLY_CHARS`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from components.commands.parser import HELP_ORDER
from ltm.i18n import t
from ltm.service import (
    DEFAULT_STATUS,
    EXPIRES_BY,
    Episode,
    InjectionSnapshot,
    LtmError,
    Profile,
    RecallTrace,
    TraceRow,
    candidate_status_key,
    explain,
    matrix,
    minute_text,
    neutralize,
    render_shipped,
    status_key,
    trust_label,
)

MAX_REPLY_CHARS = 3000
LIST_CONTENT_CHARS = 120
SHOW_CONTENT_CHARS = 1200
FIELD_CHARS = 80
ELLIPSIS = "\u2026"
_NEUTRAL = str.maketrans(
    {
        "@": "\uff20",  # ＠ no mentions
        "<": "\u2039",  # ‹ no HTML
        ">": "\u203a",  # ›
        "[": "\uff3b",  # ［ no markdown links
        "]": "\uff3d",  # ］
        "`": "\u02cb",  # ˋ no code spans
        "|": "\u2223",  # ∣ no spoilers / tables
        "\u201c": '"',
        "\u201d": '"',
    }
)
TRUST_KEYS = {"inferred": "cmd.trust.inferred", "unconfirmed": "cmd.trust.unconfirmed"}
CANDIDATE_CLASS_KEYS = {
    "identity": "cmd.cand.class_identity",
    "preference": "cmd.cand.class_preference",
    "plan": "cmd.cand.class_plan",
    "correction": "cmd.cand.class_correction",
}
TOMBSTONE_KIND_KEYS = {"rejected": "cmd.tomb.kind_rejected", "forgotten": "cmd.tomb.kind_forgotten"}


def clean(value: Any, limit: int = FIELD_CHARS) -> str:
    """One line of untrusted text: neutralised as for a model (no invisible, control or direction
    characters), line breaks collapsed, no chat markup, at most ``limit`` chars."""
    line = " ".join(neutralize(value).split()).translate(_NEUTRAL)
    if len(line) > limit:
        line = line[: max(0, limit - 1)].rstrip() + ELLIPSIS
    return line


def quote(value: Any, limit: int = LIST_CONTENT_CHARS) -> str:
    """Untrusted text as a quoted one-line datum: “…”."""
    return "\u201c" + clean(value, limit) + "\u201d"


def fit(text: str, limit: int = MAX_REPLY_CHARS) -> str:
    """Cut a whole reply to the chat limit at a line boundary."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit - 2)
    if cut < limit // 2:
        cut = limit - 2
    return text[:cut].rstrip() + "\n" + ELLIPSIS


def chunk_text(text: str, limit: int = MAX_REPLY_CHARS) -> list[str]:
    """Split ``text`` into parts of at most ``limit`` chars, at line ends where possible.

    ``"".join(parts) == text`` always holds, so the parts of a JSON export concatenate back exactly.
    """
    parts: list[str] = []
    buf = ""
    for line in text.splitlines(keepends=True):
        while len(line) > limit:
            if buf:
                parts.append(buf)
                buf = ""
            parts.append(line[:limit])
            line = line[limit:]
        if len(buf) + len(line) > limit:
            parts.append(buf)
            buf = ""
        buf += line
    if buf:
        parts.append(buf)
    return parts or [""]


def pretty_lines(doc: dict[str, Any], list_key: str) -> str:
    """A JSON document with one list item per line (so chat parts break between items)."""
    head = {k: v for k, v in doc.items() if k != list_key}
    items = doc.get(list_key) or []
    head_json = json.dumps(head, ensure_ascii=False, sort_keys=False)
    opening = head_json[:-1] + ", " if head else "{"
    if not items:
        return opening + f'"{list_key}": []}}\n'
    lines = [opening + f'"{list_key}": [']
    for i, item in enumerate(items):
        lines.append(json.dumps(item, ensure_ascii=False) + ("," if i < len(items) - 1 else ""))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def layout(name: str, lang: str, **values: Any) -> str:
    """A reply laid out by ``ltm/templates/replies/<name>.j2`` (sandboxed; ``t`` is the catalog in
    ``lang``). Every stored string in ``values`` must already be cleaned or quoted."""

    def translate(msgid: str, /, **args: Any) -> str:
        return t(msgid, lang, **args)

    # a loop's last line ends with a line break: a reply never does
    return render_shipped(f"replies/{name}.j2", {"t": translate, **values}).rstrip("\n")


# --------------------------------------------------------------------------------------------
# pieces
# --------------------------------------------------------------------------------------------


def date_text(value: Any) -> str:
    """The one way a reply shows a time: an ISO instant as ``YYYY-MM-DD HH:MM UTC``; ``-`` for none;
    anything else (a bare date, a word) cleaned as untrusted text."""
    if not value:
        return "-"
    try:
        return minute_text(value)
    except LtmError:
        return clean(value, 40) or "-"


def status_label(lang: str, status: str) -> str:
    return t(status_key(status), lang)


def episode_line(lang: str, e: Episode, score: float | None = None) -> str:
    marks = [] if e.status == DEFAULT_STATUS else [status_label(lang, e.status)]
    trust = trust_label(e.claim_type, e.confidence)
    if trust in TRUST_KEYS:
        marks.append(t(TRUST_KEYS[trust], lang))
    valid = (
        {"start": date_text(e.valid_from), "end": date_text(e.valid_until)} if e.valid_from or e.valid_until else None
    )
    return layout(
        "episode_line",
        lang,
        id=clean(e.id, 40),
        marks=marks,
        content=quote(e.content, LIST_CONTENT_CHARS),
        speaker=clean(e.sender_id, 32) or "-",
        when=date_text(e.event_at or e.timestamp),
        valid=valid,
        score=None if score is None else f"{score:.2f}",
    )


def _profile_section(title: str, p: Profile | None, missing: str = "") -> dict[str, Any]:
    if missing or p is None or p.is_empty():
        return {"title": title, "missing": missing or "cmd.profile.empty"}
    return {
        "title": title,
        "missing": "",
        "name": quote(p.name, 60) if p.name else "",
        "traits": [quote(x, 60) for x in p.traits[:20]],
        "preferences": [f"{clean(k, 40)}={quote(v, 60)}" for k, v in list(p.preferences.items())[:20]],
        "notes": [quote(x, 80) for x in p.notes[:10]],
        "updated": date_text(p.updated_at) if p.updated_at else "",
    }


# --------------------------------------------------------------------------------------------
# whole replies
# --------------------------------------------------------------------------------------------


def summary(
    lang: str,
    scope_info: dict[str, str],
    counts: dict[str, int] | None,
    injection: InjectionSnapshot | None,
    audit_total: int,
    today: dict[str, Any] | None = None,
) -> str:
    per = None if counts is None else ", ".join(f"{status_label(lang, s)} {n}" for s, n in counts.items())
    shown = None
    if injection is not None and injection.at:
        shown = {"at": date_text(injection.at), "episodes": len(injection.episodes), "tokens": injection.tokens}
    text = layout(
        "summary",
        lang,
        isolation=clean(scope_info.get("isolation"), 20),
        scope_key=clean(scope_info.get("scope_key"), 120),
        user_key=clean(scope_info.get("user_key"), 120),
        kb=clean(scope_info.get("collection"), 80),
        sender=clean(scope_info.get("sender_id"), 60),
        counts=per,
        injection=shown,
        audit_total=audit_total,
        today=today,
    )
    return fit(text)


def profile(lang: str, session: Profile | None, speaker: Profile | None, sender_id: str) -> str:
    sections = [
        _profile_section(t("cmd.profile.session", lang), session),
        _profile_section(
            t("cmd.profile.speaker", lang, sender=clean(sender_id, 60) or "-"),
            speaker,
            "" if sender_id else "cmd.profile.no_sender",
        ),
    ]
    return fit(layout("profile", lang, sections=sections))


def episode_page(
    lang: str,
    title_key: str,
    items: Sequence[Episode],
    page: int,
    has_more: bool,
    verb: str,
    *,
    as_of: str | None = None,
) -> str:
    when = date_text(as_of) if as_of else ""
    if not items:
        empty = t("cmd.list.empty_page", lang, page=page) if page > 1 else t(f"{title_key}.empty", lang)
        return layout("episode_page", lang, as_of=when, title=empty, lines=[], more="")
    more = t("cmd.list.more", lang, verb=verb, next=page + 1) if has_more else ""
    lines = [episode_line(lang, e) for e in items]
    return fit(layout("episode_page", lang, as_of=when, title=t(title_key, lang, page=page), lines=lines, more=more))


def search(lang: str, query: str, hits: Iterable[tuple[Episode, float]], *, as_of: str | None = None) -> str:
    rows = list(hits)
    when = date_text(as_of) if as_of else ""
    if not rows:
        none = t("cmd.search.none", lang, query=quote(query, 60))
        return layout("episode_page", lang, as_of=when, title=none, lines=[], more="")
    title = t("cmd.search.title", lang, query=quote(query, 60), n=len(rows))
    lines = [episode_line(lang, e, score) for e, score in rows]
    return fit(layout("episode_page", lang, as_of=when, title=title, lines=lines, more=""))


WHY_LINES = 8  # a short reply: the injected rows and the best near misses


def why(lang: str, query: str, trace: RecallTrace | None) -> str:
    """``!memory why``: one line per row, injected first, each near miss with its reason."""
    rows = list(trace.rows) if trace is not None else []
    if trace is None or not rows:
        return t("cmd.why.none", lang, query=quote(query, 60))
    lines = [t("cmd.why.title", lang, query=quote(query, 60), k=trace.top_k)]
    for r in rows[:WHY_LINES]:
        rid = clean(r.id, 40)
        if r.injected:
            lines.append(t("cmd.why.in", lang, rank=r.rank, id=rid, signals=_signals(r)))
        else:
            lines.append(t("cmd.why.out", lang, id=rid, reason=t(f"cmd.why.reason.{r.reason}", lang)))
    rest = len(rows) - WHY_LINES + trace.omitted
    if rest > 0:
        lines.append(t("cmd.why.more", lang, n=rest))
    return fit("\n".join(lines))


def _signals(r: TraceRow) -> str:
    parts = [f"{name} {v:.2f}" for name, v in (("dense", r.dense), ("bm25", r.lexical)) if v]
    if r.window:
        parts.append("time")
    if r.rerank:
        parts.append(f"rerank #{r.rerank}")
    return ", ".join(parts) or "-"


def show(lang: str, e: Episode) -> str:
    fields = [
        ("cmd.field.speaker", clean(e.sender_id, 60) or "-"),
        ("cmd.field.recorded", date_text(e.timestamp)),
        ("cmd.field.event", date_text(e.event_at)),
        ("cmd.field.valid", f"{date_text(e.valid_from)} \u2192 {date_text(e.valid_until)}"),
        ("cmd.field.claim", f"{clean(e.claim_type, 20)} / {clean(e.confidence, 20)}"),
        ("cmd.field.importance", f"{e.importance:.2f}"),
        ("cmd.field.tags", ", ".join(quote(x, 40) for x in e.tags) or "-"),
        ("cmd.field.origin", clean(e.origin, 20)),
        ("cmd.field.source", quote(e.source_ref, 120) if e.source_ref else "-"),
        ("cmd.field.supersedes", ", ".join(clean(x, 40) for x in e.supersedes) or "-"),
        ("cmd.field.superseded_by", clean(e.superseded_by, 40) or "-"),
    ]
    if e.import_original_id:
        fields.append(("cmd.field.imported_from", clean(e.import_original_id, 80)))
    if e.document_id:
        fields.append(("cmd.field.document", clean(e.document_id, 80)))
    fields += [("cmd.field.hash", clean(e.content_hash, 40) or "-"), ("cmd.field.scope", clean(e.user_key, 120))]
    text = layout(
        "show",
        lang,
        id=clean(e.id, 40),
        status=status_label(lang, e.status),
        content=quote(e.content, SHOW_CONTENT_CHARS),
        fields=[(t(key, lang), value) for key, value in fields],
    )
    return fit(text)


def entries(lang: str, title: str, items: Sequence[dict[str, Any]], footer: Sequence[str] = ()) -> str:
    """``title``, then each item's ``head`` with its ``subs`` indented, then ``footer`` lines."""
    return layout("entries", lang, title=title, items=list(items), footer=[x for x in footer if x])


def audit_page(lang: str, entries_: Sequence[dict[str, Any]], total: int, page: int, page_size: int) -> str:
    if not entries_:
        return t("cmd.audit.empty", lang) if total == 0 else t("cmd.list.empty_page", lang, page=page)
    pages = max(1, -(-total // page_size))
    items = []
    for e in entries_:
        head = t(
            "cmd.audit.line",
            lang,
            seq=int(e.get("seq") or 0),
            at=date_text(e.get("at")),
            op=clean(e.get("operation"), 40),
            sender=clean(e.get("sender"), 40) or "-",
            summary=t("policy.audit.redacted", lang) if e.get("redacted") else quote(e.get("summary"), 100),
        )
        subs = [t("cmd.audit.reason", lang, reason=quote(e.get("reason"), 100))] if e.get("reason") else []
        items.append({"head": head, "subs": subs})
    more = t("cmd.list.more", lang, verb="audit", next=page + 1) if page < pages else ""
    return fit(entries(lang, t("cmd.audit.title", lang, page=page, pages=pages, total=total), items, [more]))


def health(lang: str, report: Any) -> str:
    marks = {"green": "\U0001f7e2", "amber": "\U0001f7e1", "red": "\U0001f534"}
    overall = getattr(report, "verdict", "red")
    checks = []
    for c in getattr(report, "checks", []):
        args = {k: clean(v, 200) for k, v in dict(getattr(c, "args", {}) or {}).items()}
        checks.append(
            {
                "mark": marks.get(c.verdict, "?"),
                "name": clean(c.name, 40),
                "verdict": t(f"health.verdict.{c.verdict}", lang),
                "text": explain(c.key, lang, args),
            }
        )
    verdict = t(f"health.verdict.{overall}", lang)
    return fit(layout("health", lang, mark=marks.get(overall, "?"), verdict=verdict, checks=checks))


def help_text(lang: str, topic: str = "") -> str:
    admin_verbs = {verb for verb, _kind, needs in matrix() if needs}
    admin_mark = " " + t("cmd.help.admin_mark", lang)

    def mark(verb: str) -> str:
        return admin_mark if verb in admin_verbs else ""

    return fit(layout("help", lang, topic=topic, verbs=HELP_ORDER, mark=mark))


# --------------------------------------------------------------------------------------------
# review queue
# --------------------------------------------------------------------------------------------


def _who(d: dict[str, Any] | None) -> str:
    d = d or {}
    return clean(d.get("sender_id") or d.get("surface") or "-", 40)


def _conflict_subs(lang: str, sides: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for side in sides[:10]:
        if side.get("kind") == "profile":
            field, value = clean(side.get("field"), 20), quote(side.get("content"), 60)
            out.append("\u2194 " + t("cmd.cand.conflict_profile", lang, field=field, value=value))
            continue
        line = t(
            "cmd.cand.conflict_line",
            lang,
            id=clean(side.get("id"), 40),
            content=quote(side.get("content"), 100),
            attribute=clean(side.get("attribute") or "-", 30),
        )
        out.append("\u2194 " + line)
    return out


def _candidate_item(lang: str, c: Any) -> dict[str, Any]:
    status = t(candidate_status_key(c.status), lang)
    kind = (
        t(CANDIDATE_CLASS_KEYS[c.classification], lang)
        if c.classification in CANDIDATE_CLASS_KEYS
        else clean(c.classification, 20)
    )
    when = date_text(c.created_at)
    subs = [
        t(
            "cmd.cand.meta",
            lang,
            kind=kind,
            origin=clean(c.origin, 20),
            speaker=clean(c.sender_id, 32) or "-",
            when=when,
        )
    ]
    if c.target == "profile":
        subs.append(t("cmd.cand.profile", lang, name=quote((c.profile_patch or {}).get("name"), 60)))
    if c.model_recommendation:
        advice, note = clean(c.model_recommendation, 10), quote(c.model_note, 100)
        subs.append(t("cmd.cand.model", lang, advice=advice, note=note))
    if c.redactions:
        subs.append(t("cmd.cand.redacted", lang, n=int(c.redactions)))
    if "instruction-like" in (getattr(c, "flags", None) or []):
        subs.append(t("cmd.cand.instruction_like", lang))
    if c.status == "conflict":
        subs += _conflict_subs(lang, c.conflicts_with)
    if c.status in ("accepted", "rejected"):
        decided = t(
            "cmd.cand.decided",
            lang,
            who=_who(c.decided_by),
            when=date_text(c.decided_at),
            result=clean(c.result_id, 60) or "-",
            reason=quote(c.reason, 80) if c.reason else "-",
        )
        subs.append(decided)
    return {"head": f"\u2022 {clean(c.id, 40)} [{status}] {quote(c.content, LIST_CONTENT_CHARS)}", "subs": subs}


def candidate_page(lang: str, page: Any, all_statuses: bool) -> str:
    if not page.items:
        if page.page > 1:
            return t("cmd.list.empty_page", lang, page=page.page)
        return t("cmd.candidates.empty_all" if all_statuses else "cmd.candidates.empty", lang)
    title = t(
        "cmd.candidates.title_all" if all_statuses else "cmd.candidates.title", lang, page=page.page, total=page.total
    )
    if page.has_more:
        flag = " --all-statuses" if all_statuses else ""
        footer = t("cmd.candidates.more", lang, command=f"!memory candidates {page.page + 1}{flag}")
    else:
        footer = t("cmd.candidates.hint", lang)
    return fit(entries(lang, title, [_candidate_item(lang, c) for c in page.items], [footer]))


def decision(lang: str, d: Any) -> str:
    c = d.candidate
    if d.parked:
        head = t("cmd.candidate.parked", lang, id=clean(c.id, 40), content=quote(c.content, 160))
        hint = t("cmd.candidate.parked_hint", lang, id=clean(c.id, 40))
        return fit(entries(lang, "", [{"head": head, "subs": _conflict_subs(lang, c.conflicts_with)}], [hint]))
    if c.target == "profile":
        return t(
            "cmd.candidate.accepted_profile",
            lang,
            id=clean(c.id, 40),
            name=quote((c.profile_patch or {}).get("name"), 60),
        )
    text = t(
        "cmd.candidate.accepted",
        lang,
        id=clean(c.id, 40),
        episode=clean(c.result_id, 40),
        content=quote(c.content, 160),
    )
    superseded = t("cmd.candidate.superseded", lang, ids=", ".join(clean(x, 40) for x in c.superseded))
    episode = getattr(d, "episode", None)
    words = str(episode.extra.get(EXPIRES_BY) or "") if episode is not None else ""
    expires = (
        t("cmd.candidate.expires", lang, until=date_text(episode.valid_until), words=clean(words, 60))
        if words and episode is not None
        else ""
    )
    return entries(lang, text, [], [superseded if c.superseded else "", expires])


def rejected(lang: str, c: Any) -> str:
    return t(
        "cmd.candidate.rejected",
        lang,
        id=clean(c.id, 40),
        content=quote(c.content, 160),
        tombstone=clean(c.result_id, 40) or "-",
    )


def tombstone_page(lang: str, items: Sequence[Any], total: int, page: int, page_size: int) -> str:
    if not items:
        return t("cmd.tombstones.empty", lang) if total == 0 else t("cmd.list.empty_page", lang, page=page)
    pages = max(1, -(-total // page_size))
    rows = [
        {
            "head": t(
                "cmd.tombstones.line",
                lang,
                id=clean(tb.id, 40),
                kind=t(TOMBSTONE_KIND_KEYS.get(tb.kind, "cmd.tomb.kind_rejected"), lang),
                who=_who(tb.by),
                when=date_text(tb.at),
                count=int(tb.count),
                speaker=clean(tb.subject, 32) or t("cmd.tombstones.anyone", lang),
                reason=quote(tb.reason, 100) if tb.reason else "-",
            ),
            "subs": [],
        }
        for tb in items
    ]
    more = t("cmd.list.more", lang, verb="tombstones", next=page + 1) if page < pages else ""
    title = t("cmd.tombstones.title", lang, page=page, pages=pages, total=total)
    return fit(entries(lang, title, rows, [more, t("cmd.tombstones.hint", lang)]))
