"""English patterns: a statement clause -> claims."""

from __future__ import annotations

import re

from .lexicon import (
    JOB_WORDS,
    Claim,
    Rule,
    category_of,
    clean_value,
    consumed,
    diet_of,
    norm_value,
    subject_of,
    topic_of,
    value_items,
)
from .reader import Reader

# --------------------------------------------------------------------------------------------
# English patterns
# --------------------------------------------------------------------------------------------

_NEG = (
    r"(?P<neg>(?:(?:do|does|did|am|is|are|was|were|will|would|have|has|had|could|should)\s+)?"
    r"(?:not|never|no longer)\s+(?:(?:really|actually|even|ever|currently|still)\s+)?)?"
)
_QUIT = r"(?P<quit>(?:stopped|stop|quit|gave up|give up|no longer)\s+)?"


def _alt(words: str) -> str:
    """``"a|b c|d"`` -> ``(?:a|b\\s+c|d)``: one alternation, spaces matching any whitespace."""
    return "(?:" + "|".join(w.strip().replace(" ", r"\s+") for w in words.split("|")) + ")"


def _en(verbs: str, tail: str, attribute: str, *, neg: bool = True, quit_: bool = False, **kw: object) -> Rule:
    """``\\b[negation][stopped ](verb)`` + ``tail`` (which names the ``val`` group)."""
    head = r"\b" + (_NEG if neg else "") + (_QUIT if quit_ else "")
    return Rule(re.compile(head + _alt(verbs) + tail), attribute, **kw)  # type: ignore[arg-type]


_VAL = r"\s+(?P<val>.+)"
_LIKE = (
    "like|likes|liked|love|loves|loved|enjoy|enjoys|enjoyed|adore|adores|am fond of|is fond of|am into|"
    "is into|am a fan of|is a fan of|am a big fan of|is a big fan of"
)
_HATE = (
    "hate|hates|hated|dislike|dislikes|disliked|detest|detests|cannot stand|can not stand|could not stand|"
    "am not a fan of|is not a fan of"
)
_PREFER = "prefer|prefers|preferred|would rather have|would rather drink|would rather use|would rather eat|" + (
    "would rather go with|would rather|favor|favors|favour|favours"
)
_USE = (
    "use|uses|using|used|rely on|relies on|go with|went with|going with|chose|choose|chosen|picked|pick|"
    "adopted|adopt|stick with|stuck with|stay with|run|runs|running"
)
_TRAVEL = (
    "going to go|going to fly|going to travel|going to visit|planning to go|plan to go|want to go|will go|"
    "will fly|will travel|will visit|plan to visit|planning to visit|want to visit|planning a trip|"
    "taking a trip|going|traveling|travelling|flying|heading|driving|visiting"
)
_MEAT = r"(?P<val>(?:meat|pork|beef|chicken|fish|seafood)\b.*)"

# fmt: off
_EN_RULES: tuple[Rule, ...] = (
    _en("call me|am called|is called|goes by|go by", _VAL, "name", neg=False),
    _en("used to live|formerly lived|previously lived|lived", r"\s+in" + _VAL, "past_location"),
    _en("live|lives|living|reside|resides|residing|stay|stays|staying|settled|based", r"\s+(?:in|at)" + _VAL,
        "location"),
    _en("moved back|moving back|moved|move|moving|relocated|relocate|relocating", r"\s+(?:back\s+)?to" + _VAL,
        "location"),
    _en("am|is|are|come|comes|came|originally", r"\s+(?:originally\s+)?from" + _VAL, "origin"),
    _en("grew up|was born|were born", r"\s+in" + _VAL, "origin"),
    _en("work|works|working|worked", r"\s+as" + _VAL, "role"),
    _en("work|works|working|employed|job", r"\s+(?:at|for|by)" + _VAL, "employer"),
    _en("joined|joining|starting at|started at", _VAL, "employer"),
    _en("work|works|working", r"\s+in" + _VAL, "workplace"),
    _en("am|is|are", r"\s+(?P<val>\d{1,3})(?:\s+years?\s+old|\s+yo)?\b", "age"),
    _en("turned|turning|will turn", r"\s+(?P<val>\d{1,3})\b", "age", neg=False),
    _en("am|is|are", r"\s+(?P<val>married|single|divorced|engaged|widowed)\b", "marital"),
    _en("am|is|are", r"\s+(?:a\s+|an\s+)?(?:strict\s+)?(?P<val>vegetarian|vegan|pescatarian)\b", "diet"),
    _en("am|is|are", r"\s+(?:severely\s+|very\s+)?allergic to" + _VAL, "allergy", multi=True),
    _en(_PREFER, _VAL, "affinity", strength="prefer"),
    _en(_LIKE, r"\s+(?:to\s+)?(?P<val>.+)", "affinity", multi=True),
    _en(_HATE, r"\s+(?:to\s+)?(?P<val>.+)", "affinity", multi=True, positive=False),
    _en("switched|switch|switching|migrated|migrate|migrating|moved|moving|changed|converted",
        r"\s+(?:over\s+)?to" + _VAL, "use", strength="switch"),
    _en(_USE, _VAL, "use", quit_=True, multi=True),
    _en("avoid|avoids|avoiding|dropped|drop|ditched|abandoned|abandon|got rid of|uninstalled", _VAL, "use",
        neg=False, positive=False),
    _en("drink|drinks|drinking|eat|eats|eating|have|has", r"\s+" + _MEAT, "diet_meat", quit_=True),
    _en("drink|drinks|drinking|drank|eat|eats|eating|ate", _VAL, "consume", quit_=True, multi=True),
    _en("smoke|smokes|smoking", r"\b(?P<val>)", "smoke", quit_=True),
    _en("speak|speaks|speaking", _VAL, "speaks", multi=True),
    _en("have|has|own|owns|got", r"\s+(?P<num>\d+|two|three|four|five|six|no)" + _VAL, "count"),
    _en("have|has|own|owns|got|adopted", r"\s+(?:a|an|one)" + _VAL, "has", multi=True),
    _en("cancelled|canceled|called off|skipping|skipped|postponed",
        r"\s+(?:my\s+|our\s+|the\s+)?(?:trip|visit|vacation|holiday|flight)\s+to" + _VAL, "travel",
        neg=False, positive=False),
    _en(_TRAVEL, r"\s+(?:to\s+|back to\s+)?(?P<val>.+)", "travel"),
    _en("plan|plans|planning|intend|intends|intending|want|wants|hope|hopes|going|will|gonna",
        r"\s+(?:to\s+)?(?P<verb>learn|start|buy|study|quit|build|write|take|join|try|sell|adopt|get)" + _VAL,
        "plan"),
)
# fmt: on
# "my trip to Oslo next week is off": the plan is called off (the possessive rule would read it as
# the trip's attribute "off")
_EN_CALLED_OFF = re.compile(
    r"^(?P<owner>my|our)\s+(?:trip|visit|vacation|holiday|flight|journey)\s+to\s+(?P<val>.+?)\s+"
    r"(?:is|was|has been|got|is now)\s+(?:off|cancell?ed|called off|postponed|scrapped)$"
)
_EN_POSSESSIVE = re.compile(
    r"^(?P<owner>my|our|his|her|their|[a-z][a-z\-]*'s)\s+(?P<attr>[a-z][a-z ]{0,40}?)\s+"
    r"(?P<neg>is not|are not|was not|isn't|aren't)?\s*(?:is|are|was|=|has become|became|is now|are now)\s+(?P<val>.+)$"
)
_EN_FAV_REVERSED = re.compile(
    r"^(?P<val>.+?)\s+(?:is|are)\s+(?:still\s+)?(?:my|our|his|her)\s+favou?rite(?:\s+(?P<cat>[a-z ]+))?$"
)
_EN_THE = re.compile(
    r"^(?:the|our|my)\s+(?P<attr>[a-z][a-z ]{0,30}?)\s+(?:is|was|has been|got|will be)\s+"
    r"(?:now\s+)?(?:(?:moved|changed|rescheduled|pushed|postponed|set|scheduled|planned|delayed|bumped)\s+)?"
    r"(?:to|on|at|in|for|until|back to)?\s*(?P<val>.+)$"
)
_EN_MOVED_OBJECT = re.compile(
    r"^(?:we|i|they|he|she)?\s*(?:have\s+|has\s+)?(?:moved|rescheduled|pushed|postponed|changed|shifted)\s+"
    r"(?:the|our|my)\s+(?P<attr>[a-z][a-z ]{0,30}?)\s+(?:to|until)\s+(?P<val>.+)$"
)
_SCHEDULE_WORDS = {
    "meeting",
    "deadline",
    "call",
    "interview",
    "appointment",
    "party",
    "flight",
    "exam",
    "wedding",
    "dinner",
    "standup",
    "stand-up",
    "launch",
    "release",
    "demo",
    "trip",
    "class",
    "lesson",
    "review",
    "sync",
    "event",
    "match",
    "game",
    "concert",
    "date",
    "birthday party",
    "offsite",
    "workshop",
}


def _role_or_kind(value: str) -> str:
    v = norm_value(value)
    words = v.split()
    if not words:
        return ""
    if v in ("vegetarian", "vegan", "pescatarian"):
        return "diet"
    if v in JOB_WORDS or words[-1] in JOB_WORDS or (len(words) >= 2 and " ".join(words[-2:]) in JOB_WORDS):
        return "role"
    if v in ("student", "retiree", "retired", "parent", "mother", "father", "mom", "dad"):
        return "role"
    return "is_a"


def claims_en(clause: str, inherited: str) -> list[Claim]:
    out: list[Claim] = []
    neg_anywhere = bool(re.search(r"\b(?:anymore|any more|no longer|no more)\b", clause))

    m = _EN_FAV_REVERSED.match(clause)
    if m:
        cat = (m.group("cat") or "").strip()
        val = clean_value(m.group("val"))
        attr = "attr:favorite " + (cat or topic_of(val))
        return [Claim("self", attr, val)]
    m = _EN_MOVED_OBJECT.match(clause)
    if m and m.group("attr").split()[-1] in _SCHEDULE_WORDS:
        return [Claim("", "the:" + m.group("attr").strip(), clean_value(m.group("val")))]
    m = _EN_CALLED_OFF.match(clause)
    if m:
        return [Claim("self" if m.group("owner") == "my" else "we", "travel", clean_value(m.group("val")), False)]
    m = _EN_POSSESSIVE.match(clause)
    if m:
        owner = m.group("owner")
        subj = {"my": "self", "our": "we", "his": "he", "her": "she", "their": "they"}.get(owner, owner[:-2])
        attr = re.sub(r"^(?:current|new|old|real|actual|full)\s+", "", m.group("attr").strip())
        attr = attr.replace("favourite", "favorite")
        vals = value_items(m.group("val"), multi=False)
        if attr in ("name", "first name", "last name", "nickname"):
            return [Claim(subj, "name", v, not m.group("neg")) for v in vals]
        if attr in ("home", "address", "city", "hometown") and attr != "hometown":
            return [Claim(subj, "location", v, not m.group("neg")) for v in vals]
        if attr in ("job", "occupation", "profession", "role", "position", "title"):
            return [Claim(subj, "role", v, not m.group("neg")) for v in vals]
        if attr in ("age",):
            return [Claim(subj, "age", v, not m.group("neg")) for v in vals]
        if attr in ("employer", "company", "workplace"):
            return [Claim(subj, "employer", v, not m.group("neg")) for v in vals]
        return [Claim(subj, "attr:" + attr, v, not m.group("neg")) for v in vals]
    m = _EN_THE.match(clause)
    if m and m.group("attr").split()[-1] in _SCHEDULE_WORDS | {
        "plan",
        "budget",
        "password",
        "wifi",
        "address",
        "venue",
        "location",
        "price",
        "rent",
        "goal",
    }:
        return [Claim("", "the:" + m.group("attr").strip(), v) for v in value_items(m.group("val"), False)]

    for rule in _EN_RULES:
        m = rule.pattern.search(clause)
        if not m:
            continue
        subj = subject_of(clause[: m.start()]) or inherited
        negated = bool(m.groupdict().get("neg")) or bool(m.groupdict().get("quit")) or neg_anywhere
        positive = rule.positive != negated
        attr = rule.attribute
        if attr == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attr == "count":
            num = m.group("num")
            noun = norm_value(value_items(m.group("val"), False)[0] if value_items(m.group("val"), False) else "")
            if not noun:
                continue
            if num == "no":
                return [Claim(subj, "has", noun, False)]
            return [Claim(subj, "count:" + noun, num, positive)]
        if attr == "diet_meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "plan":
            verb = m.group("verb")
            return [Claim(subj, "plan:" + verb, v, positive) for v in value_items(m.group("val"), True)]
        vals = value_items(m.group("val"), rule.multi)
        if not vals:
            continue
        if attr == "role":
            kind = _role_or_kind(vals[0])
            if kind == "diet":
                return [Claim(subj, "diet", "vegetarian", positive)]
            return [Claim(subj, "role", v, positive) for v in vals]
        if attr == "use" and rule.strength == "switch":
            # "switched from X to Y" / "moved to Berlin": a place is a location, a tool is a use.
            if not category_of(vals[0]) and re.search(r"\bmoved\b|\bmoving\b", m.group(0)):
                return [Claim(subj, "location", v, positive) for v in vals]
            claims = [Claim(subj, "use", v, positive, "switch") for v in vals]
            src = re.search(r"\bfrom\s+(?P<old>.+?)\s+to\b", m.group(0)) or re.search(
                r"\bfrom\s+(?P<old>[^,;]+?)$", clause[m.end() :]
            )
            if src:
                claims += [Claim(subj, "use", clean_value(src.group("old")), False)]
            return claims
        attr = consumed(attr, vals[0])
        if (diet := diet_of(subj, attr, vals[0], positive)) is not None:
            return [diet]
        if attr == "travel" and re.match(
            r"^(?:be|have|do|make|get|take|learn|start|try|buy|use|stop|quit|work|see)\b", vals[0]
        ):
            continue
        return [Claim(subj, attr, v, positive, rule.strength) for v in vals]

    m = re.search(r"\b(?P<neg>(?:am|is|are)\s+not\s+|am\s+|is\s+|are\s+)(?:a|an)\s+(?P<val>.+)", clause)
    if m:
        subj = subject_of(clause[: m.start()]) or inherited
        vals = value_items(m.group("val"), False)
        if vals:
            kind = _role_or_kind(vals[0])
            positive = "not" not in m.group("neg") and not neg_anywhere
            if kind == "diet":
                return [Claim(subj, "diet", "vegetarian", positive)]
            return [Claim(subj, kind, vals[0], positive)]
    return out


READER = Reader(
    lang="en",
    claims=claims_en,
    lead=(
        r"^(?:(?:actually|correction|update|so|well|oh|and|but|also|now|ok|okay|hey|hi|btw|by the way|fyi|"
        r"just so you know|to be clear|for the record|note|remember|remember that|please note|please remember|"
        r"heads up|quick update|news|good news|bad news|yes|no(?=[,:!-])|sorry|i meant|i mean|to correct|not anymore)"
        r"[,:!-]?\s+)+"
        # a time said before the speaker ("these days i live in …", "since the summer we have been …")
        r"|^(?:these days|nowadays|currently|lately|recently|at the moment|right now|at present|for now|"
        r"as of (?:now|today|this \w+|last \w+)|since (?:the |last |this |early |late )?\w+(?: \d{4})?|"
        r"for the (?:past|last) (?:\w+ )?\w+|after (?:the|my|our) \w+|(?:this|last) (?:week|month|year|spring|summer|"
        r"autumn|fall|winter)|(?:in|since) \d{4}|a (?:week|month|year) ago)[,]?\s+(?=(?:i|we)\b)"
    ),
    split=(
        r"\s*;\s*|,\s+but\s+|\s+but\s+|,\s+so\s+|\s+so\s+(?=i\b|we\b)|,\s+and\s+(?=(?:i|we|my|our|now|then)\b)|"
        r"\s+and\s+(?=(?:i|we|my|our)\b)|\s+and\s+(?=(?:now\s+)?(?:work|works|live|lives|moved|prefer|prefers|use|"
        r"uses|like|likes|love|loves|hate|hates|have|has|am|is|switched|drink|drinks)\b)|\s+because\s+|"
        r"\s+since\s+(?=i|we)|,\s+(?=(?:i|we|now|then|but|and)\b)"
    ),
    # A state that held and no longer does. "be used to" (accustomed) is not one; a plain past tense
    # ("I lived in Lisbon in 2019") says nothing of now and is left alone.
    ended=r"(?<!\bam )(?<!\bis )(?<!\bare )(?<!\bget )(?<!\bgot )(?<!\bbe )\b(?:used to|formerly|previously)\s+(?=\w)",
)
