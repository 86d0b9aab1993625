"""Replies of the people's-rights verbs (``me``, ``forget-me``): stored text stays data (cleaned
and quoted like every other reply); strings from the ``privacy`` catalog domain."""

from __future__ import annotations

from components.commands.render import clean, fit, quote, status_label
from ltm.i18n import t
from ltm.service import FORGET_ME_TTL_S, Holdings, PersonErasure, Settings

ME_PAGE_SIZE = 20


def _profile_fields(d: dict) -> str:
    bits = []
    if d.get("name"):
        bits.append(clean(d["name"], 60))
    bits += [clean(x, 60) for x in (d.get("traits") or [])[:10]]
    bits += [f"{clean(k, 30)}={clean(v, 40)}" for k, v in list((d.get("preferences") or {}).items())[:10]]
    return "; ".join(bits) or "-"


def holdings(lang: str, held: Holdings, page: int = 1) -> str:
    """``!memory me``: the speaker's profiles, then a page of their memories (newest first)."""
    if not held.episodes and not held.profiles:
        lines = [t("privacy.me.empty", lang)]
    else:
        lines = [t("privacy.me.title", lang, episodes=len(held.episodes), profiles=len(held.profiles), page=page)]
        if page == 1:
            for p in held.profiles:
                lines.append(
                    t("privacy.me.profile", lang, kb=clean(p.kb, 40), fields=_profile_fields(p.profile.to_dict()))
                )
        start = (max(1, page) - 1) * ME_PAGE_SIZE
        for _kb, e in held.episodes[start : start + ME_PAGE_SIZE]:
            lines.append(
                t(
                    "privacy.me.episode",
                    lang,
                    id=clean(e.id, 40),
                    chat=clean(e.session_name, 60),
                    status=status_label(lang, e.status),
                    content=quote(e.content),
                )
            )
        if len(held.episodes) > start + ME_PAGE_SIZE:
            lines.append(t("privacy.me.next", lang, page=page + 1))
    if held.opted_out:
        lines.append(t("privacy.me.opted_out", lang))
    return fit("\n".join(lines))


def ask_code(lang: str, code: str) -> str:
    return t("privacy.forget_me.ask", lang, minutes=int(FORGET_ME_TTL_S // 60), code=clean(code, 16))


def erased(lang: str, done: PersonErasure) -> str:
    return t("privacy.forget_me.done", lang, **done.to_dict())


def with_retention(lang: str, summary: str, settings: Settings) -> str:
    """The ``!memory`` summary with the retention settings, when set (issue 35)."""
    lines = []
    if settings.retention_days:
        lines.append(t("privacy.summary.retention", lang, days=settings.retention_days))
    if settings.audit_retention_days:
        lines.append(t("privacy.summary.audit_retention", lang, days=settings.audit_retention_days))
    return fit("\n".join([summary, *lines])) if lines else summary
