"""Ages said in words, written in digits, in the seven languages: "I'm thirty-one" -> "I'm 31",
"tengo treinta y un años" -> "tengo 31 años", "ba mươi mốt tuổi" -> "31 tuổi", 三十一岁 -> 31岁,
"อายุสามสิบเอ็ดปี" -> "อายุ 31 ปี". Pure.

Only a number in an age's own frame is rewritten (before "years old", años, tuổi, 岁 / 歲 / 歳 / 才,
after อายุ, or after an English "I am …" when it ends its clause), so "one of my friends" and "tôi có
một con mèo" keep their words: a number word elsewhere is no age, and the readers have their own rules
for it. Spanish and Vietnamese are matched without their accents (one character for one, so the spans
found are the text's), as people type them both ways.
"""

from __future__ import annotations

import re

from .confusables import unaccented

__all__ = ["HAN_NUMERALS", "ages_in_digits", "han_number"]

# ------------------------------------------------------------------------------------------ English
_EN_SMALL = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_EN_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_EN_NUMBER = re.compile(
    rf"\b(?:(?P<tens>{'|'.join(_EN_TENS)})(?:[- ](?P<unit>one|two|three|four|five|six|seven|eight|nine))?"
    rf"|(?P<small>{'|'.join(sorted(_EN_SMALL, key=len, reverse=True))}))\b"
)
_EN_AFTER = re.compile(r"\s+(?:years?\s+old|yo)\b")
_EN_BEFORE = re.compile(r"\b(?:am|is|are|turned|turning|turn)\s+$")
_EN_CLAUSE_END = re.compile(r"\s*(?:now|already|this year|today)?\s*(?:$|[,.!?;])")


def _en(text: str) -> str:
    out, last = [], 0
    for m in _EN_NUMBER.finditer(text):
        aged = _EN_AFTER.match(text, m.end()) or (
            _EN_BEFORE.search(text, max(0, m.start() - 12), m.start()) and _EN_CLAUSE_END.match(text, m.end())
        )
        if not aged:
            continue
        if m.group("tens"):
            value = _EN_TENS[m.group("tens")] + (_EN_SMALL[m.group("unit")] if m.group("unit") else 0)
        else:
            value = _EN_SMALL[m.group("small")]
        out += [text[last : m.start()], str(value)]
        last = m.end()
    return "".join(out) + text[last:] if out else text


# ------------------------------------------------------------------------------------------ Spanish
_ES_SMALL = {
    "un": 1, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7,
    "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "trece": 13, "catorce": 14, "quince": 15,
    "dieciseis": 16, "diecisiete": 17, "dieciocho": 18, "diecinueve": 19, "veinte": 20, "veintiun": 21,
    "veintiuno": 21, "veintiuna": 21, "veintidos": 22, "veintitres": 23, "veinticuatro": 24,
    "veinticinco": 25, "veintiseis": 26, "veintisiete": 27, "veintiocho": 28, "veintinueve": 29,
}  # fmt: skip
_ES_TENS = {"treinta": 30, "cuarenta": 40, "cincuenta": 50, "sesenta": 60, "setenta": 70, "ochenta": 80,
            "noventa": 90}  # fmt: skip
_ES_AGE = re.compile(
    rf"\b(?:(?:cien|ciento)\s+)?(?:(?P<tens>{'|'.join(_ES_TENS)})(?:\s+y\s+(?P<unit>{'|'.join(_ES_SMALL)}))?"
    rf"|(?P<small>{'|'.join(sorted(_ES_SMALL, key=len, reverse=True))}))(?=\s+anos\b)"
)


def _es(text: str) -> str:
    bare = unaccented(text)
    out, last = [], 0
    for m in _ES_AGE.finditer(bare):
        if m.group("tens"):
            value = _ES_TENS[m.group("tens")] + (_ES_SMALL[m.group("unit")] if m.group("unit") else 0)
        else:
            value = _ES_SMALL[m.group("small")]
        value += 100 if m.group().startswith("cien") else 0
        out += [text[last : m.start()], str(value)]
        last = m.end()
    return "".join(out) + text[last:] if out else text


# --------------------------------------------------------------------------------------- Vietnamese
_VI_DIGIT = {"mot": 1, "hai": 2, "ba": 3, "bon": 4, "tu": 4, "nam": 5, "lam": 5, "sau": 6, "bay": 7,
             "tam": 8, "chin": 9}  # fmt: skip
_VI_AGE = re.compile(
    r"\b(?:(?P<tens>hai|ba|bon|nam|sau|bay|tam|chin)\s+muoi(?:\s+(?P<unit>mot|hai|ba|bon|tu|nam|lam|sau|bay|tam|chin))?"
    r"|muoi(?:\s+(?P<teen>mot|hai|ba|bon|nam|lam|sau|bay|tam|chin))?"
    r"|(?P<one>mot|hai|ba|bon|nam|sau|bay|tam|chin))(?=\s+tuoi\b)"
)


def _vi(text: str) -> str:
    bare = unaccented(text).replace("đ", "d")
    out, last = [], 0
    for m in _VI_AGE.finditer(bare):
        if m.group("tens"):
            value = 10 * _VI_DIGIT[m.group("tens")] + (_VI_DIGIT[m.group("unit")] if m.group("unit") else 0)
        elif m.group("one"):
            value = _VI_DIGIT[m.group("one")]
        else:
            value = 10 + (_VI_DIGIT[m.group("teen")] if m.group("teen") else 0)
        out += [text[last : m.start()], str(value)]
        last = m.end()
    return "".join(out) + text[last:] if out else text


# ------------------------------------------------------------------------------- Chinese, Japanese
_HAN_DIGIT = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}  # fmt: skip
_HAN_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10000, "萬": 10000}
HAN_NUMERALS = frozenset(_HAN_DIGIT) | frozenset(_HAN_UNIT)  # the characters :func:`han_number` reads
_HAN_AGE = re.compile(r"[〇零一二两兩三四五六七八九十百]{1,6}(?=[岁歲歳才])")


def han_number(run: str) -> int:
    """三十一 -> 31, 十五 -> 15, 一百零二 -> 102, 三万五千 -> 35000, 二三 -> 23 (digits one by one)."""
    if all(c in _HAN_DIGIT for c in run):
        return int("".join(str(_HAN_DIGIT[c]) for c in run))
    total, cur = 0, 0
    for c in run:
        if c in _HAN_DIGIT:
            cur = _HAN_DIGIT[c]
        else:
            total += max(cur, 1) * _HAN_UNIT[c]
            cur = 0
    return total + cur


def _han(text: str) -> str:
    return _HAN_AGE.sub(lambda m: str(han_number(m.group())), text)


# --------------------------------------------------------------------------------------------- Thai
_TH_DIGIT = {"หนึ่ง": 1, "เอ็ด": 1, "สอง": 2, "ยี่": 2, "สาม": 3, "สี่": 4, "ห้า": 5, "หก": 6, "เจ็ด": 7,
             "แปด": 8, "เก้า": 9}  # fmt: skip
_TH_WORDS = "|".join(sorted([*_TH_DIGIT, "สิบ", "ร้อย"], key=len, reverse=True))
_TH_AGE = re.compile(rf"(?<=อายุ)\s*((?:{_TH_WORDS})+)(?=\s*(?:ปี|ขวบ)|\s*$|\s*แล้ว)")
_TH_TOKEN = re.compile(_TH_WORDS)


def _th_number(run: str) -> int:
    total, cur = 0, 0
    for word in _TH_TOKEN.findall(run):
        if word == "สิบ":
            total += 10 * (cur or 1)
            cur = 0
        elif word == "ร้อย":
            total += 100 * (cur or 1)
            cur = 0
        else:
            cur = _TH_DIGIT[word]
    return total + cur


def _th(text: str) -> str:
    return _TH_AGE.sub(lambda m: " " + str(_th_number(m.group(1))) + " ", text)


def ages_in_digits(text: str) -> str:
    """``text`` (case-folded) with every age said in words written in digits (see the module)."""
    if re.search(r"[岁歲歳才]", text):
        text = _han(text)
    if "อายุ" in text:
        text = _th(text)
    if "ano" in text or "año" in text:
        text = _es(text)
    if "tuoi" in text or "tuổi" in text:
        text = _vi(text)
    return _en(text)
