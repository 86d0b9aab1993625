"""Life events that end or change a state, in the seven languages: a job left, lost or started, a
retirement, a move from one place to another, a break-up, a pet's death, a wedding, going vegan. Pure.

The readers read states ("I work at Netflix", 我在京东上班); people tell what changed as events ("I left
Netflix", 我退休了, 定年退職しました, "tôi nghỉ hưu rồi"). Each event here is read into the state it ends
or starts, so that it meets the stored state: leaving Netflix is ``(self, employer, netflix, -)``, a
retirement or a lost job is ``(self, employer, ANY, -)`` (no longer employed anywhere), a wedding is
``(self, marital, married, +)``. The claims are added to the readers' own (:func:`.compare.parse_claims`).

Whose event it is: the words before it, with time words and fillers dropped, must be nothing (Spanish
and Japanese drop "I") or the speaker ("I", 我, tôi, ฉัน, 私は …); anything else ("my father", 我爸, bố
tôi, พ่อฉัน, 父は) is someone else's event, read as theirs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..confusables import unaccented
from .chinese import simplified
from .lexicon import ANY, Claim, category_of, clean_value, is_han

__all__ = ["event_claims"]

# words before an event that say nothing of whose it is
_EN_FILLER = re.compile(
    r"\b(?:just|finally|recently|already|actually|officially|also|then|so|well|and|last|this|week|month|year|"
    r"in|on|at|early|late|the|spring|summer|autumn|fall|winter|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|\d{4})\b"
)
_EN_SELF = {"i": "self", "we": "we"}


def _en_subject(pre: str) -> str:
    words = _EN_FILLER.sub(" ", pre).split()
    if not words:
        return "self"
    return _EN_SELF.get(" ".join(words), " ".join(words))


def _word_subject(pre: str, selves: dict[str, str], filler: re.Pattern[str]) -> str:
    rest = " ".join(filler.sub(" ", pre).split())
    return selves.get(rest, "self" if not rest else rest)


_ES_FILLER = re.compile(r"\b(?:ya|yo|finalmente|por fin|hace|el|la|un|una|ano|mes|semana|pasad[oa]|ayer|en|\w+ado)\b")
_VI_FILLER = re.compile(r"(?:đã|rồi|vừa|mới|năm ngoái|tháng trước|tuần trước|hôm qua|năm nay|cũng|thì)")
_VI_SELF = {"tôi": "self", "mình": "self", "em": "self", "tớ": "self", "chúng tôi": "we", "chúng mình": "we"}
_JA_FILLER = re.compile(
    r"(?:先月|先週|去年|今年|昨日|今月|ついに|やっと|もう|この前|春に|夏に|秋に|冬に|[0-9０-９]+月に?|、)"
)
_JA_SELF = {"私は": "self", "僕は": "self", "俺は": "self", "わたしは": "self", "私": "self", "僕": "self"}
_TH_FILLER = re.compile(r"(?:เพิ่ง|ได้|แล้ว|ปีที่แล้ว|เดือนที่แล้ว|เมื่อวาน|ปีนี้|ก็|จะ|เพิ่งจะ)")
_TH_SELF = {"ฉัน": "self", "ผม": "self", "ดิฉัน": "self", "หนู": "self", "เรา": "self", "พวกเรา": "we"}
_ZH_FILLER = re.compile(r"(?:已经|已經|终于|終於|刚刚|剛剛|刚|剛|去年|今年|上个月|上個月|上周|上週|昨天|前年|也|就)")
_ZH_SELF = {"我": "self", "我们": "we", "我們": "we"}


@dataclass(frozen=True)
class _Event:
    pattern: re.Pattern[str]  # matched on the text without accents; names ``pre`` (who) and ``val``
    subject: Callable[[str], str]
    attribute: str
    fixed: str | None  # the value, or None for the ``val`` group
    positive: bool
    bare_value: bool = False  # the value as matched, without accents (as the Spanish reader keeps it)
    lead: re.Pattern[str] | None = None  # time words a value may start with ("先月トヨタ")
    names: dict[str, str] | None = None  # the value as the language's reader keeps it ("gato" -> "cat")


def _ev(
    pattern: str, subject: Callable[[str], str], attribute: str, fixed: str | None, positive: bool, **kw: object
) -> _Event:
    return _Event(re.compile(pattern), subject, attribute, fixed, positive, **kw)  # type: ignore[arg-type]


_NOT_AN_EMPLOYER = r"(?!my\b|the\b|a\b|an\b|our\b|his\b|her\b|their\b|home\b|early\b|it\b|them\b|him\b|work\b)"
_EN_TAIL = r"(?:\s+(?:in|on|last|this|after|before|yesterday|today|a|two|three|to)\b.*)?$"
_ES_WHO = lambda pre: _word_subject(pre, {}, _ES_FILLER)  # noqa: E731
_VI_WHO = lambda pre: _word_subject(pre, _VI_SELF, _VI_FILLER)  # noqa: E731
_JA_WHO = lambda pre: _word_subject(pre, _JA_SELF, _JA_FILLER)  # noqa: E731
_TH_WHO = lambda pre: _word_subject(pre, _TH_SELF, _TH_FILLER)  # noqa: E731
_ZH_WHO = lambda pre: _word_subject(pre, _ZH_SELF, _ZH_FILLER)  # noqa: E731

# things one gives up that are no employer (the readers read them as habits)
_HABITS = frozenset(
    "タバコ たばこ 煙草 喫煙 お酒 酒 smoking drinking alcohol sugar 烟 香烟 thuốc lá rượu บุหรี่ เหล้า".split()
)

# pets by the name the readers keep (English, except Chinese, which keeps its own)
_PETS = {
    "gato": "cat", "gata": "cat", "perro": "dog", "perra": "dog", "meo": "cat", "cho": "dog", "猫": "cat", "犬": "dog",
    "แมว": "cat", "หมา": "dog", "สุนัข": "dog",
}  # fmt: skip


def _owner(selves: tuple[str, ...], we: tuple[str, ...] = ()) -> Callable[[str], str]:
    """Whose pet: no owner or the speaker's own word is the speaker's."""

    def who(pre: str) -> str:
        bare = unaccented(pre)  # "tôi" typed with or without its accent
        return "we" if bare in we else "self" if bare in selves else pre

    return who


# fmt: off
_EVENTS: tuple[_Event, ...] = (
    # English (case-folded, contractions spelled out)
    _ev(r"^(?P<pre>.*?)\b(?:got|landed|found|started|began|accepted|took)\s+(?:a\s+)?(?:new\s+)?"
        r"(?:job|position|role|offer)\s+(?:at|with)\s+(?P<val>.+)$", _en_subject, "employer", None, True),
    _ev(r"^(?P<pre>.*?)\b(?:started|begin|began|am starting)\s+(?:working|work)\s+(?:at|for)\s+(?P<val>.+)$",
        _en_subject, "employer", None, True),
    _ev(r"^(?P<pre>.*?)\b(?:quit|left|lost)\s+(?:my|our)\s+job\s+(?:at|with)\s+(?P<val>.+)$",
        _en_subject, "employer", None, False),
    _ev(r"^(?P<pre>.*?)\b(?:left|quit|resigned from|retired from|(?:was|got) (?:laid off|let go|fired) from|"
        r"stopped working (?:at|for))\s+" + _NOT_AN_EMPLOYER + r"(?P<val>[^\s,]+(?:\s+[^\s,]+)??)" + _EN_TAIL,
        _en_subject, "employer", None, False),
    _ev(r"^(?P<pre>.*?)\b(?:(?:quit|left|lost)\s+(?:my|our)\s+jobs?|retired|am retired|"
        r"(?:was|got) (?:laid off|let go|fired)|am unemployed|am out of work|am between jobs)\b",
        _en_subject, "employer", ANY, False),
    _ev(r"^(?P<pre>.*?)\b(?:got|am getting) married\b", _en_subject, "marital", "married", True),
    _ev(r"^(?P<pre>.*?)\bgot engaged\b", _en_subject, "marital", "engaged", True),
    _ev(r"^(?P<pre>.*?)\bgot divorced\b", _en_subject, "marital", "divorced", True),
    _ev(r"^(?P<pre>my|our)\s+(?:old\s+)?(?P<val>dog|cat|puppy|kitten|hamster|rabbit|parrot|turtle|horse|bird)\s+"
        r"(?:died|passed away|passed|was put down|ran away)\b",
        lambda pre: "self" if pre == "my" else "we", "has", None, False),
    _ev(r"^(?P<pre>.*?)\b(?:went|became|turned|have gone|am now|have become)\s+(?P<val>vegan|vegetarian)\b",
        _en_subject, "diet", None, True),
    _ev(r"^(?P<pre>.*?)\b(?:broke up|split up|separated) with (?:my|our) (?P<val>girlfriend|boyfriend|partner|wife|"
        r"husband|fiancee|fiance)\b", _en_subject, "has", None, False),
    _ev(r"^my (?P<val>girlfriend|boyfriend|partner|wife|husband|fiancee|fiance) and (?P<pre>i) "
        r"(?:broke up|split up|separated|split)\b", _en_subject, "has", None, False),
    _ev(r"^(?P<pre>.*?)\b(?:moved|relocated|have moved|have relocated)\s+from\s+.+?\s+to\s+(?P<val>.+)$",
        _en_subject, "location", None, True),
    # Spanish (the verb's person says whose: "me jubilé", not "se jubiló")
    _ev(r"^(?P<pre>.*?)\b(?:me mude|me he mudado|me traslade)\s+de\s+.+?\s+a\s+(?P<val>.+)$",
        _ES_WHO, "location", None, True, bare_value=True),
    _ev(r"^(?P<pre>)(?:nos mudamos|nos hemos mudado|nos trasladamos)\s+de\s+.+?\s+a\s+(?P<val>.+)$",
        lambda pre: "we", "location", None, True, bare_value=True),
    _ev(r"^(?P<pre>.*?)\b(?:corte|termine|rompi|me separe)\s+con\s+mi\s+"
        r"(?P<val>novi[oa]|pareja|espos[oa]|marido|mujer)\b", _ES_WHO, "has", None, False, bare_value=True),
    _ev(r"^(?P<pre>mi|nuestr[oa])\s+(?P<val>gat[oa]|perr[oa])\s+(?:se\s+)?(?:murio|fallecio)\b",
        _owner(("mi",), ("nuestro", "nuestra")), "has", None, False, bare_value=True, names=_PETS),
    _ev(r"^(?P<pre>.*?)\b(?:me jubile|me he jubilado|estoy jubilad[oa]|me despidieron|me quede sin trabajo|"
        r"estoy en paro|deje mi trabajo|renuncie a mi trabajo)\b", _ES_WHO, "employer", ANY, False),
    _ev(r"^(?P<pre>.*?)\b(?:deje|renuncie a|sali de|me fui de)\s+(?!el\b|la\b|los\b|las\b|de\b|mi\b|un\b|una\b|a\b)"
        r"(?P<val>[^\s,]+(?:\s+[^\s,]+)??)(?:\s+(?:en|el|la|hace|ayer|este|esta)\b.*)?$",
        _ES_WHO, "employer", None, False, bare_value=True),
    _ev(r"^(?P<pre>.*?)\b(?:empece a trabajar|entre a trabajar|me contrataron)\s+(?:en|para)\s+(?P<val>.+)$",
        _ES_WHO, "employer", None, True, bare_value=True),
    # Vietnamese
    _ev(r"^(?P<pre>.*?)nghi viec\s+(?:o|tai)\s+(?P<val>.+?)(?:\s+roi)?$", _VI_WHO, "employer", None, False),
    _ev(r"^(?P<pre>.*?)(?:nghi huu|ve huu|nghi viec|that nghiep|bi sa thai|bi duoi viec)(?:\s+roi)?$",
        _VI_WHO, "employer", ANY, False),
    _ev(r"^(?P<pre>.*?)chia tay(?:\s+voi)?\s+(?P<val>ban gai|ban trai|nguoi yeu|vo|chong)(?:\s+roi)?$",
        _VI_WHO, "has", None, False),
    _ev(r"^(?:con\s+)?(?P<val>meo|cho)\s+(?:cua\s+)?(?P<pre>toi|minh|nha toi|chung toi)?\s*(?:da\s+)?(?:chet|mat)\b",
        _owner(("", "toi", "minh", "nha toi"), ("chung toi",)), "has", None, False, bare_value=True, names=_PETS),
    _ev(r"^(?P<pre>.*?)(?:da\s+)?chuyen\s+(?:nha\s+)?tu\s+.+?\s+(?:vao|ra|den|toi|sang|len|xuong|ve)\s+(?P<val>.+?)(?:\s+roi)?$",
        _VI_WHO, "location", None, True),
    # Japanese
    _ev(r"^(?P<pre>.*?)[^\s、。はがを]+から(?P<val>[^\s、。はがを]+?)(?:に|へ)引っ越し",
        _JA_WHO, "location", None, True),
    _ev(r"^(?P<pre>.*?)(?P<val>彼女|彼氏|恋人|妻|夫|婚約者)と(?:別れ|離婚し)(?:ました|た)",
        _JA_WHO, "has", None, False),
    _ev(r"^(?P<pre>うちの|私の|僕の|わたしの)?(?P<val>猫|犬)(?:が|は)(?:死にました|死んだ|亡くなりました|亡くなった)",
        _owner(("", "うちの", "私の", "僕の", "わたしの")), "has", None, False, names=_PETS),
    _ev(r"^(?P<pre>.*?)(?:定年退職|退職|リタイア|失業)(?:しました|した|しています)$", _JA_WHO, "employer", ANY, False),
    _ev(r"^(?P<pre>)(?P<val>[^\s、。はがを]+)を(?:辞めました|辞めた|退職しました|退職した)$",
        _JA_WHO, "employer", None, False, lead=_JA_FILLER),
    # Thai
    _ev(r"^(?P<pre>.*?)ลาออกจาก(?P<val>.+?)(?:แล้ว)?$", _TH_WHO, "employer", None, False),
    _ev(r"^(?P<pre>.*?)(?:เกษียณ(?:อายุ)?|ตกงาน|ถูกไล่ออก|ลาออก)(?:แล้ว)?$", _TH_WHO, "employer", ANY, False),
    _ev(r"^(?P<pre>.*?)เลิกกับ(?P<val>แฟนสาว|แฟนหนุ่ม|แฟน|สามี|ภรรยา)", _TH_WHO, "has", None, False),
    _ev(r"^(?P<val>แมว|หมา|สุนัข)(?:ของ)?(?P<pre>ฉัน|ผม|เรา)?\s*(?:ได้)?ตาย", _owner(("", "ฉัน", "ผม", "เรา")),
        "has", None, False, names=_PETS),
    _ev(r"^(?P<pre>.*?)ย้าย(?:บ้าน)?จาก.+?(?:ไป|มา)(?:อยู่)?(?:ที่)?(?P<val>.+?)(?:แล้ว)?$", _TH_WHO, "location", None, True),
    # Chinese (both scripts)
    _ev(r"^(?P<pre>.*?)[和跟与與](?P<val>女朋友|男朋友|女友|男友|对象|對象|老婆|老公)分手了?",
        _ZH_WHO, "has", None, False),
    _ev(r"^(?P<pre>我的|我们的|我們的|我家的|我家)?(?P<val>猫|貓|狗)(?:去世|死|走)了",
        _owner(("", "我的", "我家的", "我家"), ("我们的", "我們的")), "has", None, False),
    _ev(r"^(?P<pre>.*?)[从從](?P<val>.+?)(?:辞职|辭職|离职|離職)了?$", _ZH_WHO, "employer", None, False),
    _ev(r"^(?P<pre>.*?)(?:辞职|辭職|离职|離職|退休|失业|失業|被裁员|被裁員|被裁|被解雇|被解僱|被开除|被開除)了?$",
        _ZH_WHO, "employer", ANY, False),
    _ev(r"^(?P<pre>.*?)跳槽(?:去了|去|到了|到)(?P<val>.+)$", _ZH_WHO, "employer", None, True),
)
# fmt: on


# Every event holds one of these (on the text without accents): most clauses hold none and skip the
# patterns. An event added without its word here fails its own test.
_EVENT_WORDS = re.compile(
    r"job|work|left|quit|resign|retir|laid off|let go|fired|unemployed|married|engaged|divorced|died|passed|"
    r"moved|relocated|mude|mudamos|mudado|traslad|chuyen|引っ越し|ย้าย|"
    r"put down|ran away|vegan|vegetarian|broke up|split|separated|jubil|despid|trabajo|paro|deje|renuncie|sali de|"
    r"me fui|empece|entre a|contrataron|corte|termine|rompi|murio|fallecio|nghi|ve huu|that nghiep|sa thai|"
    r"duoi viec|chia tay|chet|mat|退職|リタイア|失業|辞め|別れ|離婚|死|亡く|ลาออก|เกษียณ|ตกงาน|ไล่ออก|เลิกกับ|ตาย|"
    r"辞职|辭職|离职|離職|退休|失业|裁|解雇|解僱|开除|開除|跳槽|分手|去世|走了"
)


def event_claims(clause: str) -> list[Claim]:
    """The state an event in ``clause`` (prepared by :func:`.lexicon.prep`) ends or starts, or ``[]``."""
    bare = unaccented(clause).replace("đ", "d")  # one character for one: spans are the clause's
    if not _EVENT_WORDS.search(bare):
        return []
    for ev in _EVENTS:
        m = ev.pattern.search(bare)
        if not m:
            continue
        pre = clause[m.start("pre") : m.end("pre")].strip(" ,")
        value = ev.fixed
        if value is None:
            raw = (bare if ev.bare_value else clause)[m.start("val") : m.end("val")]
            if ev.lead is not None:
                lead = ev.lead.match(raw)
                pre, raw = (pre + raw[: lead.end()], raw[lead.end() :]) if lead else (pre, raw)
            value = (ev.names or {}).get(raw, "") or clean_value(raw)
            value = simplified(value) if any(is_han(c) for c in value) else value  # as the Chinese reader keeps it
        if not value or (ev.attribute == "employer" and value != ANY and (category_of(value) or value in _HABITS)):
            continue  # "タバコを辞めました", "I quit coffee": a habit, which the readers read
        return [Claim(ev.subject(pre), ev.attribute, value, ev.positive)]
    return []
