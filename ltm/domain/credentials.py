"""Credentials in text, pure: key shapes, passwords and codes said in ordinary sentences, card numbers.

:func:`looks_like_credential` says whether a sentence holds one (the candidate extractor drops such
a sentence, consolidation never sends such a record to a model); :func:`redact_text` replaces each
value found with :data:`REDACTED` (what ``remember``, import and document ingest store instead).

A keyword alone is not a credential ("I forgot my password", "the PIN pad was broken"): a value
must follow it, through a connector (``is``, ``:``, ``=``, ``set ... to``, 是, 为, ：, 改成), with at
most a short qualifier between keyword and connector ("for my bank account", "(for work)", ", which
I never share,", 我). A value is a word that is not an ordinary word of the sentence's grammar
("is broken", "is on the fridge", 是什么): it holds a digit or a symbol, or it is a word that ends
its clause and is not one of :data:`_NOT_VALUES`. Matching runs on what a model would see: NFKC,
invisible characters removed, look-alike letters and leetspeak keywords folded (``p@ssw0rd``).
Measured on ``benchmarks/data/credentials.tsv`` by ``python -m benchmarks.credentials``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .text import neutralize

REDACTED = "[redacted]"

_SECRET_PATTERNS = [
    re.compile(p, re.I)
    for p in (
        r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}",
        r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
        r"\bgh[pousr]_[A-Za-z0-9]{20,}",
        r"\bgithub_pat_[A-Za-z0-9_]{20,}",
        r"\bglpat-[A-Za-z0-9_\-]{16,}",
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        r"\bAKIA[0-9A-Z]{16}\b",
        r"\bAIza[0-9A-Za-z_\-]{30,}",
        r"\bhf_[A-Za-z0-9]{30,}",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*(?:-----END [A-Z ]*PRIVATE KEY-----)?",
        r"\bbearer\s+[A-Za-z0-9._\-+/=]{16,}",
        r"(?<=://)[^\s:/@]+:[^\s@/]+(?=@)",  # scheme://user:password@host: the user and password
    )
]
# A long run of token characters mixing letters and digits (keys, tokens, hashes).
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-+/=]{24,}")

_KW_EN = (
    r"pass(?:word|wd|phrase|code|key)?s?|pw|pwd|pins?(?: ?codes?| numbers?)?|secrets?|tokens?|"
    r"api[ _-]?keys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?|wi-?fi keys?|credentials?|"
    r"otp|one[- ]time (?:codes?|passwords?|pins?)|cvv2?|cvc2?|"
    r"(?:verification|auth(?:entication)?|security|login|2fa|mfa|sms|confirmation|recovery|backup|unlock|"
    r"access|door|alarm|safe|lock) codes?"
)
_KW_ZH = (
    r"密码|口令|验证码|校验码|动态码|短信码|令牌|密钥|秘钥|私钥|安全码|取件码|支付码|激活码|提取码|授权码|"
    r"PIN码|pin码|识别码|暗号"
)
_EN = rf"(?<![A-Za-z])(?:{_KW_EN})(?![A-Za-z])"
# Between keyword and connector: nothing, a parenthesis, a clause set off by commas, or a short
# prepositional phrase ("for my bank account"); in Chinese up to four characters ("我", "已经").
_GAP_EN = (
    r"(?:\s*\([^()]{1,40}\)|\s*,[^,.;]{1,50},|\s*[,;:]\s*(?:mine|it|that one|ours)|"
    r"\s+(?:for|of|on|at|to|in|from|with)\s+(?:[\w'-]+\s+){0,4}?[\w'-]+)?"
)
_CONN_EN = (
    r"\s*(?:(?:is|was|are|were|will be|has been|'s)(?:\s+(?:now|still|currently|actually|just|always))?"
    r"(?:\s*[:：])?|[:：=]|->|=>|(?:set|changed|reset|updated)\s+to|to|as)\s*"
)
_CONN_ZH = r"\s*(?:是|为|：|:|=|就是|都是|设为|设置为|设成了?|设置成了?|改成了?|改为|换成了?|叫)\s*[:：]?\s*"
_QUOTE_OPEN = "\"'“‘「『(（<"
_VALUE_END = "\"'”’」』)）>。，,;；、"
_VALUE = rf"[{re.escape(_QUOTE_OPEN)}]?(?P<v>[^\s{re.escape(_VALUE_END)}]{{2,80}})"
_KW_SEP_EN = re.compile(rf"{_EN}{_GAP_EN}{_CONN_EN}{_VALUE}", re.I)
_GAP_ZH = r"[^\s，。,；;！？!?]{0,4}?"
_KW_SEP_ZH = re.compile(rf"(?:{_KW_ZH}){_GAP_ZH}{_CONN_ZH}{_VALUE}", re.I)
# A keyword right before a value holding a digit ("PIN 4821", "验证码583920").
_KW_DIGITS = re.compile(
    rf"(?:{_EN}|{_KW_ZH})\s*[#:：]?\s*[\"'“‘「]?(?P<v>(?=[^\s]*\d)[A-Za-z0-9][\w\-.#@!$%^&*+=/]{{2,79}})", re.I
)
_KW_ONLY = re.compile(rf"(?:{_KW_EN})", re.I)

# Words that follow "password is" in ordinary talk about a password, never as its value.
_NOT_VALUES = frozenset(
    """
    a an the my your his her our their its this that these those it one same different new old
    not no never too very so quite really still also just now being been be here there
    in on at of for to from with by under inside behind somewhere written saved stored kept
    long short strong weak wrong right correct incorrect invalid valid expired broken reset changed
    locked blocked required needed missing empty blank secure safe unsafe insecure easy hard simple
    complicated complex case sensitive ok okay fine good bad great terrible useless working
    what which who how why when where whatever something anything nothing everything
    same sent coming needed known unknown forgotten lost stolen leaked compromised encrypted hashed
    hidden shown visible private public secret confidential personal important
    generated random temporary permanent due set done updated
    and or but if then than because since until
    """.split()
)
_NOT_VALUES_ZH = re.compile(
    r"^(?:什么|多少|啥|哪|几|怎么|如何|不|没|错|对|正确|空|很|太|挺|真|忘|丢|被|要|需要|已经|还|也|都|"
    r"我的生日吗|吗|呢|了|的|一样|相同|同样|一个|这个|那个|多|少|长|短|复杂|简单|安全|弱|强)"
)
_CLAUSE_END = re.compile(r"\s*(?:$|[.!?。！？,，;；:：)）\"'”’」』]|\s(?:and|but|so|or|ok|okay|please|thanks)\b)", re.I)

# Payment card numbers: 12-19 digits, optionally grouped by one kind of separator (space, dash, dot).
_CARD = re.compile(r"(?<![\d.,\-])\d{1,6}(?:(?P<sep>[ .\-])\d{1,6}(?:(?P=sep)\d{1,6}){1,5}|\d{8,18})(?![\d])")
_CARD_WORDS = re.compile(
    r"(?<![A-Za-z])(?:card|cc|visa|master ?card|amex|discover|maestro|unionpay|iban|account(?: number)?)"
    r"(?![A-Za-z])|卡号|银行卡|信用卡|借记卡|储蓄卡|账号|帐号",
    re.I,
)
# Latin look-alikes (Cyrillic, Greek) and the symbols and digits written for letters ("p@ssw0rd").
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁԛԝкмнтвАЕОРСХІЈЅКМНТВαεορτυνικχΑΕΟΡΤΥΝΙΚΧ",
    "aeopcyxijsdqwkmhtbAEOPCXIJSKMHTBaeoptuvikxAEOPTYNIKX",
)
_LEET = str.maketrans(
    {"@": "a", "4": "a", "$": "s", "5": "s", "0": "o", "1": "i", "!": "i", "|": "l", "3": "e", "7": "t"}
)
_LEET_WORD = re.compile(r"[A-Za-z0-9@$!|]+")
_INNER_SEP = re.compile(r"(?<=[A-Za-z])[-_.*·](?=[A-Za-z])")


def canonical(text: str) -> str:
    """What a model would see of ``text``: NFKC, invisible and direction characters removed."""
    return neutralize(unicodedata.normalize("NFKC", str(text or "")))


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_spans(text: str) -> list[tuple[int, int]]:
    """Runs of 12-19 digits that are card numbers: Luhn-valid with a card's first digit (2-6), or
    next to a card word ("card number", 卡号) whatever their checksum."""
    named = bool(_CARD_WORDS.search(text))
    out = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if len(set(digits)) < 2:
            continue
        luhn = 13 <= len(digits) <= 19 and digits[0] in "23456" and _luhn_ok(digits)
        if luhn or (named and 12 <= len(digits) <= 19):
            out.append(m.span())
    return out


def has_card_number(text: str) -> bool:
    """A card number (see :func:`_card_spans`), grouped by spaces, dashes or dots, or not at all."""
    return bool(_card_spans(canonical(text)))


def _value_end(m: re.Match[str]) -> int:
    """Where the value of a keyword match ends: the sentence's closing marks are not part of it."""
    v = m.group("v")
    core = v.rstrip(".!?！？")
    if len(core) < 3 and core and not core.isalpha():
        # "22!!." : the marks are the short secret's own ("22!!"), all but a final full stop
        core = v[:-1] if v.endswith(".") and len(v) > 1 else v
    return m.end("v") - (len(v) - len(core))


def _is_value(text: str, m: re.Match[str]) -> bool:
    v = text[m.start("v") : _value_end(m)]
    if len(v) < 2:
        return False
    if re.search(r"[\u3400-\u9fff]", v):
        return not _NOT_VALUES_ZH.match(v)
    if v.lower() in _NOT_VALUES:
        return False
    if not v.isalpha():  # a digit or a symbol: "bluebird77", "tiger-lily", "4321"
        return len(v) >= 3
    return len(v) >= 3 and bool(_CLAUSE_END.match(text, _value_end(m)))


def _value_spans(text: str) -> list[tuple[int, int]]:
    out = []
    for pattern in (_KW_SEP_EN, _KW_SEP_ZH, _KW_DIGITS):
        pos = 0
        while (m := pattern.search(text, pos)) is not None:
            if _is_value(text, m):
                out.append((m.start("v"), _value_end(m)))
            pos = m.start() + 1
    return out


def _fold_same_length(text: str) -> str:
    """Look-alike letters read as Latin, and each word that then reads as a keyword once its symbols
    and digits are read as letters folded to it (same length, so spans stay valid)."""

    def fold(m: re.Match[str]) -> str:
        word = m.group()
        folded = word.translate(_LEET)
        return folded if folded != word and _KW_ONLY.fullmatch(folded) else word

    return _LEET_WORD.sub(fold, text.translate(_CONFUSABLES))


def _folded_keywords(text: str) -> str:
    """As :func:`_fold_same_length`, after inner separators are dropped (``pass-word``)."""
    return _fold_same_length(_INNER_SEP.sub("", text.translate(_CONFUSABLES)))


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


# Every rule needs a digit or one of these in the text (look-alike letters folded, lower case):
# most memories have neither, and skip the patterns (the recall hot path redacts rerank rows).
_TRIGGERS = (
    "pass", "pw", "pin", "secret", "token", "key", "credential", "otp", "cvv", "cvc", "code", "bearer",
    "begin", "://", "@", "$", "|", "!", "码", "令", "钥", "暗号", REDACTED, "sk-", "sk_", "pk_", "rk_", "gh",
    "xox", "akia", "aiza", "hf_", "eyj", "glpat",
)  # fmt: skip


def _may_hold(text: str) -> bool:
    lower = text.translate(_CONFUSABLES).lower()
    return any(c.isdigit() for c in text) or any(t in lower for t in _TRIGGERS)


def _has_leet(text: str) -> bool:
    """A letter next to a symbol or digit read as a letter, or a non-ASCII look-alike: only then
    can folding find a keyword that is not there as it is."""
    return not text.isascii() or bool(re.search(r"[A-Za-z][@$0-9!|]|[@$0-9!|][A-Za-z]", text))


def credential_spans(text: str) -> list[tuple[int, int]]:
    """The spans of credential values in ``text`` (already :func:`canonical`), merged, in order."""
    if not _may_hold(text):
        return []
    spans = [m.span() for p in _SECRET_PATTERNS for m in p.finditer(text)]
    spans += _card_spans(text)
    for m in _TOKEN_RUN.finditer(text):
        run = m.group()
        if any(c.isdigit() for c in run) and any(c.isalpha() for c in run):
            spans.append(m.span())
    spans += _value_spans(text)
    if _has_leet(text):
        folded = _fold_same_length(text)
        if folded != text:
            spans += _value_spans(folded)
    return _merge(spans)


@lru_cache(maxsize=4096)
def looks_like_credential(sentence: str) -> bool:
    """API keys, tokens, one-time codes, passwords and PINs with their value, card numbers; or a
    text where one was already redacted (it is kept away from models all the same)."""
    text = canonical(sentence)
    if REDACTED in text or credential_spans(text):
        return True
    if not _may_hold(text) or not (_has_leet(text) or _INNER_SEP.search(text)):
        return False
    folded = _folded_keywords(text)
    return folded != text and bool(_value_spans(folded))


@lru_cache(maxsize=4096)
def redact_text(text: str) -> tuple[str, int]:
    """``text`` with every credential value replaced by :data:`REDACTED`, and how many were. Text
    without one is returned unchanged; text with one is returned in its :func:`canonical` form."""
    if not text:
        return text, 0
    clean = canonical(text)
    spans = credential_spans(clean)
    if not spans:
        if not looks_like_credential(clean):
            return text, 0
        return REDACTED, 1  # "pass-w0rd is x": the keyword was split, the value is not placed
    out, last = [], 0
    for a, b in spans:
        out.append(clean[last:a])
        out.append(REDACTED)
        last = b
    out.append(clean[last:])
    return "".join(out), len(spans)
