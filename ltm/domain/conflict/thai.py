"""Thai patterns: a statement clause -> claims.

Thai writes no spaces between words, so the patterns read the raw clause: a verb ("อยู่", "ชอบ",
"ทำงานที่") with what precedes it (the subject, after time words are dropped) and what follows it
(the value, cut before trailing particles and time words: "แล้ว", "ครับ", "ทุกวัน"). A clause with
no subject of its own is the speaker's. Negation is "ไม่" / "ไม่ได้" before the verb, "เลิก" (quit),
and "ไม่…แล้ว" (no longer); "เคย" / "เมื่อก่อน" mark a state that has ended. Values of the kinds
the comparison knows are mapped to the lexicon's English words (กาแฟ -> coffee, แมว -> cat)."""

from __future__ import annotations

import re

from .lexicon import Claim, consumed, diet_of
from .reader import Reader

_THAI = re.compile(r"[\u0e00-\u0e7f]")


def _has_thai(clause: str) -> bool:
    return bool(_THAI.search(clause))


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

# fmt: off
_CANON: dict[str, str] = {
    # drinks
    "กาแฟ": "coffee", "ชา": "tea", "ชาเขียว": "green tea", "ชาดำ": "black tea", "ชานม": "milk tea",
    "เบียร์": "beer", "ไวน์": "wine", "เหล้า": "alcohol", "นม": "milk", "น้ำผลไม้": "juice", "โค้ก": "coke",
    "น้ำเปล่า": "water", "ลาเต้": "latte", "มัทฉะ": "matcha",
    # food
    "ซูชิ": "sushi", "พิซซ่า": "pizza", "ราเมน": "ramen", "ทุเรียน": "durian", "ส้มตำ": "som tam",
    "ผักชี": "coriander", "ก๋วยเตี๋ยว": "noodles", "ข้าว": "rice", "สลัด": "salad", "ช็อกโกแลต": "chocolate",
    "ไอศกรีม": "ice cream", "ไอติม": "ice cream", "แกง": "curry", "อาหารเผ็ด": "spicy food", "ของหวาน": "sweets",
    "ไข่": "egg", "ถั่วลิสง": "peanut", "ถั่ว": "peanut", "กุ้ง": "shrimp", "ปลาร้า": "pla ra",
    # meat (not eating it is a vegetarian diet)
    "เนื้อ": "meat", "เนื้อสัตว์": "meat", "หมู": "pork", "เนื้อหมู": "pork", "เนื้อวัว": "beef", "ไก่": "chicken",
    "ปลา": "fish", "อาหารทะเล": "seafood",
    # pets
    "แมว": "cat", "หมา": "dog", "สุนัข": "dog", "กระต่าย": "rabbit", "แฮมสเตอร์": "hamster", "นกแก้ว": "parrot",
    # sports
    "ฟุตบอล": "football", "ว่ายน้ำ": "swimming", "วิ่ง": "running", "แบดมินตัน": "badminton", "เทนนิส": "tennis",
    "บาสเกตบอล": "basketball", "บาส": "basketball", "โยคะ": "yoga", "ปีนเขา": "climbing", "เดินป่า": "hiking",
    "ปั่นจักรยาน": "cycling", "กอล์ฟ": "golf", "มวย": "boxing",
    # music
    "แจ๊ส": "jazz", "ดนตรีแจ๊ส": "jazz", "เพลงแจ๊ส": "jazz", "ร็อก": "rock", "ร็อค": "rock", "เพลงร็อก": "rock",
    "ป๊อป": "pop", "เพลงป๊อป": "pop", "คลาสสิก": "classical", "เพลงคลาสสิก": "classical",
    # colours
    "สีแดง": "red", "สีฟ้า": "blue", "สีน้ำเงิน": "blue", "สีเขียว": "green", "สีเหลือง": "yellow", "สีดำ": "black",
    "สีขาว": "white", "สีม่วง": "purple", "สีชมพู": "pink", "สีส้ม": "orange", "สีเทา": "gray",
    # languages
    "ภาษาอังกฤษ": "english", "ภาษาไทย": "thai", "ภาษาจีน": "chinese", "ภาษาญี่ปุ่น": "japanese",
    "ภาษาเกาหลี": "korean", "ภาษาฝรั่งเศส": "french", "ภาษาเยอรมัน": "german", "ภาษาสเปน": "spanish",
    "ภาษาเวียดนาม": "vietnamese",
    # family: one value for brothers and sisters, one for children
    "พี่ชาย": "sibling", "พี่สาว": "sibling", "น้องชาย": "sibling", "น้องสาว": "sibling", "พี่น้อง": "sibling",
    "พี่": "sibling", "น้อง": "sibling", "ลูกชาย": "child", "ลูกสาว": "child", "ลูก": "child",
}
# fmt: on
_TRAIL = re.compile(
    r"(?:\s*(?:แล้ว|ครับ|ค่ะ|คะ|คับ|นะ|จ้ะ|จ้า|จ๊ะ|เลย|ด้วย|เหมือนกัน|มากๆ|มาก|ที่สุด|มากกว่า|ได้|อยู่|จริงๆ|เท่านั้น|"
    r"ตอนนี้|เดี๋ยวนี้|ทุกวัน|ทุกเช้า|ทุกคืน|ทุกเย็น|ทุกสัปดาห์|ทุกอาทิตย์|ทุกเดือน|ทุกปี|ทุกวัน\S+|เป็นประจำ|บ่อยๆ|"
    r"(?:ตั้งแต่|เมื่อ|ช่วง)(?:ปี|เดือน|วัน|สัปดาห์|อาทิตย์)?.*|"
    r"(?:หนึ่ง|สอง|สาม|สี่|ห้า|[0-9]+)\s*(?:ตัว|คน|อัน|เครื่อง|คัน|แก้ว|ถ้วย|มวน|ซอง|ขวด)|(?:ตัว|คน)(?:หนึ่ง)?))+$"
)
_LEAD = re.compile(r"^(?:ดื่ม|กิน|ทาน|เล่น|ฟัง|ดู|ที่|ใน|การ|ไป)(?=\S)")


_VALUE_STOP = re.compile(r"\s*(?:ในการ|สำหรับ|เพื่อ|โดย|เพราะ|ซึ่ง)")


def _value(raw: str) -> str:
    """The words after a verb -> a canonical value (English for the kinds the lexicon knows)."""
    v = raw.strip(" ,.!?")
    for _ in range(4):
        v2 = _TRAIL.sub("", v).strip()
        if v2 not in _CANON:
            v2 = _LEAD.sub("", v2)
        if v2 == v:
            break
        v = v2
    return _CANON.get(v, v).strip()


def _values(raw: str) -> list[str]:
    head = _VALUE_STOP.split(raw, maxsplit=1)[0]
    items = [_value(x) for x in re.split(r"\s*(?:,|และ|หรือ|กับ)\s*", head)]
    return [i for i in items if i][:5]


# --------------------------------------------------------------------------------------------
# subjects
# --------------------------------------------------------------------------------------------

_SELF = {"ฉัน", "ผม", "ดิฉัน", "หนู", "ชั้น", "กู", "เค้า", "เรา"}  # เรา is often "I"; ทีมเรา / พวกเรา is "we"
_WE = {"พวกเรา", "ทีมเรา", "ทีมของเรา", "บริษัทเรา", "บริษัทของเรา", "ทีม"}
_TIME = re.compile(
    r"(?:ตอนนี้|เดี๋ยวนี้|ปัจจุบัน|ล่าสุด|ช่วงนี้|ช่วงหลังนี้|ระยะนี้|หมู่นี้|ตั้งแต่|ที่จริง(?:แล้ว)?|จริงๆ(?:แล้ว)?|ความจริง(?:แล้ว)?|ปีที่แล้ว|ปีนี้|ปีหน้า|"
    r"เดือนที่แล้ว|เดือนนี้|เดือนหน้า|สัปดาห์หน้า|อาทิตย์หน้า|สัปดาห์ที่แล้ว|อาทิตย์ที่แล้ว|เมื่อวาน|วันนี้|พรุ่งนี้|"
    r"วัน(?:จันทร์|อังคาร|พุธ|พฤหัสบดี|พฤหัส|ศุกร์|เสาร์|อาทิตย์)(?:นี้|หน้า)?|เมื่อก่อน|แต่ก่อน|สมัยก่อน|ก็|ยัง|จะ|"
    r"กำลัง|เคย|ได้|ก่อนหน้านี้|ตอนเด็ก|เดี๋ยว|อีก|บางที|มัก|มักจะ|ชอบที่จะ)"
)


def _subject(prefix: str, inherited: str) -> str:
    """Who a clause is about, from the words before its verb: the speaker unless someone is named."""
    p = _TIME.sub("", prefix).strip(" ,")
    if not p:
        return inherited or "self"
    if p in _WE or p.startswith(("พวกเรา", "ทีมเรา", "ทีมของเรา", "บริษัทเรา")):
        return "we"
    if p in _SELF or (p.startswith(tuple(_SELF)) and "ของ" not in p):
        return "we" if p.startswith("เรา") and inherited == "we" else "self"
    return p


# --------------------------------------------------------------------------------------------
# predicates
# --------------------------------------------------------------------------------------------

_NEG = r"(?P<neg>ไม่ได้|ไม่เคย|ไม่|เลิก|ไม่ค่อย|ยังไม่|หยุด)?"
_REST = r"(?P<val>.+)"
_NO_LONGER = re.compile(r"ไม่.*แล้ว$|ไม่.*อีกต่อไป|ไม่.*อีกแล้ว")

# (pattern, attribute, options); the verb with its negation is group ``v``.
# fmt: off
_RULES: tuple[tuple[re.Pattern[str], str, dict[str, object]], ...] = (
    (re.compile(r"(?P<v>" + _NEG + r"(?:ชื่อ))(?:ว่า|คือ)?\s*" + _REST), "name", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ย้ายไปทำงาน|ย้ายมาทำงาน|เปลี่ยนไปทำงาน|เปลี่ยนงานไป|เข้าทำงาน))(?:ที่|กับ)?\s*" + _REST),
     "employer", {"strength": "switch"}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ทำงาน(?:อยู่)?))(?:ที่|กับ|ให้)\s*" + _REST), "employer", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ย้ายไปอยู่|ย้ายมาอยู่|ย้ายกลับไปอยู่|ย้ายไป|ย้ายมา|ย้ายกลับไป|ย้ายบ้านไป))(?:ที่|ใน)?\s*"
                + _REST), "location", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:อาศัยอยู่|พักอยู่|อยู่))(?:ที่|ใน)?\s*" + _REST), "location", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:เป็นคน|มาจาก))\s*" + _REST), "origin", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:สูบบุหรี่|สูบ|ดูดบุหรี่))(?P<val>)"), "smoke", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:กินมังสวิรัติ|กินเจ|เป็นมังสวิรัติ|กินวีแกน|เป็นวีแกน))(?P<val>)"), "diet", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:แพ้))\s*" + _REST), "allergy", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:เกลียด|ไม่ชอบ|รังเกียจ))\s*" + _REST), "affinity", {"positive": False}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ชอบ|รัก|หลงรัก|ติด|โปรด))\s*" + _REST), "affinity", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:เปลี่ยนไปใช้|เปลี่ยนมาใช้|ย้ายไปใช้|หันไปใช้|หันมาใช้))\s*" + _REST),
     "use", {"strength": "switch"}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ใช้งาน|ใช้))\s*" + _REST), "use", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ดื่ม|กิน|ทาน))\s*" + _REST), "consume", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:เลี้ยง))\s*" + _REST), "has", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:พูด))\s*" + _REST), "speaks", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:เรียน|ฝึก))\s*(?P<val>ภาษา.+)"), "plan:learn", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:ไปเที่ยว|ไปทำงานที่|บินไป|ไป))\s*" + _REST), "travel", {}),
    (re.compile(r"(?P<v>" + _NEG + r"(?:มี))\s*" + _REST), "has", {}),
)
# fmt: on
_SCHEDULE = re.compile(
    r"^(?P<attr>(?:การ)?ประชุม\S*?|กำหนดส่ง\S*?|เดดไลน์|นัด\S*?|สอบ\S*?|งานเลี้ยง|เที่ยวบิน|สัมภาษณ์งาน|สัมภาษณ์)"
    r"(?:จะ)?(?:ถูก)?(?:เลื่อนไป(?:เป็น)?|ย้ายไป(?:เป็น)?|เปลี่ยนเป็น|เปลี่ยนไป(?:เป็น)?|คือ|เป็น|อยู่|จัด)?(?:ใน|ที่)?\s*"
    r"(?P<val>(?:วัน|เดือน|ตอน|พรุ่งนี้|มะรืน|สัปดาห์|อาทิตย์|[0-9]).*)$"
)
_AGE = re.compile(r"อายุ\s*(?P<num>[0-9]{1,3})")
_MARITAL = (
    (re.compile(r"หย่า"), "divorced"),
    (re.compile(r"หมั้น"), "engaged"),
    (re.compile(r"โสด"), "single"),
    (re.compile(r"แต่งงาน|มีครอบครัวแล้ว"), "married"),
)
_FAVORITE = re.compile(r"^(?P<attr>\S+?)ที่(?P<who>\S*?)ชอบ(?:ที่สุด)?(?:คือ|เป็น)\s*(?P<val>.+)$")
_POSSESSIVE = re.compile(r"^(?P<attr>\S+?)ของ(?P<owner>\S+?)(?:คือ|เป็น|ชื่อ)\s*(?P<val>.+)$")
_ROLE = re.compile(r"^(?P<head>\S*?)(?P<neg>ไม่ได้)?เป็น(?P<val>\S.*)$")
_JOBS = (
    "หมอ",
    "แพทย์",
    "พยาบาล",
    "ครู",
    "อาจารย์",
    "วิศวกร",
    "โปรแกรมเมอร์",
    "นักเรียน",
    "นักศึกษา",
    "ทนาย",
    "ทนายความ",
    "พนักงาน",
    "ผู้จัดการ",
    "นักออกแบบ",
    "ดีไซเนอร์",
    "นักบัญชี",
    "เชฟ",
    "พ่อครัว",
    "แม่บ้าน",
    "ตำรวจ",
    "ทหาร",
    "นักเขียน",
    "นักข่าว",
    "เภสัชกร",
    "ทันตแพทย์",
    "สถาปนิก",
    "นักวิจัย",
    "ฟรีแลนซ์",
    "นักธุรกิจ",
    "เจ้าของร้าน",
)


# a wish, a plan, a condition (before the verb) or a question (at the end) says nothing of now
# ("ฉันอยากย้ายไปเชียงใหม่": wants to move); อาจารย์ ("teacher") is not อาจ ("may")
_NOT_A_STATE_BEFORE = re.compile(r"อยาก|คิดจะ|คิดว่าจะ|วางแผน|ถ้า|หาก|อาจ(?!ารย์)|น่าจะ")
_QUESTION = re.compile(r"(?:ไหม|มั้ย|หรือเปล่า|หรือยัง|เหรอ|หรอ|หรือไม่)$")
# อยู่ is also "to be at": at home, at work, with someone is not where one lives
_NOT_A_HOME = re.compile(r"^(?:กับ|บ้าน$|ที่ทำงาน|ออฟฟิศ|ห้อง|ข้างนอก|แถวนี้|ใกล้|ตรงนี้|ที่นี่|ระหว่าง)")


def _negated(neg: str | None, clause: str) -> bool:
    return bool(neg) or bool(_NO_LONGER.search(clause))


# "ทริปไปออสโลอาทิตย์หน้ายกเลิกแล้ว", "ฉันยกเลิกทริปไปเชียงใหม่": a trip called off
_CALLED_OFF = (
    re.compile(r"ยกเลิก(?:ทริป|การเดินทาง|ทัวร์|การไป)(?:ไป)?(?:เที่ยว)?(?P<val>.+)$"),
    re.compile(r"(?:ทริป|การเดินทาง|ทัวร์|เที่ยวบิน)(?:ไป)?(?:เที่ยว)?(?P<val>.+?)(?:ถูก|โดน)?ยกเลิก"),
)


def claims_th(clause: str, inherited: str) -> list[Claim]:
    """The claims of one Thai clause, or ``[]``."""
    clause = clause.replace("\u0e4d\u0e32", "\u0e33")  # NFKC (lexicon.prep) splits sara am: ทำ -> ทํา
    m = _SCHEDULE.match(clause)
    if m:
        attr = re.sub(r"^การ", "", m.group("attr"))
        return [Claim("", "the:" + attr, v) for v in _values(m.group("val"))]
    m = _CALLED_OFF[0].search(clause) or _CALLED_OFF[1].search(clause)
    if m and (vals := _values(_TIME.sub("", m.group("val")))):
        return [Claim(_subject(_TIME.sub("", clause[: m.start()]), inherited), "travel", vals[0], False)]
    m = _AGE.search(clause)
    if m:
        return [Claim(_subject(clause[: m.start()], inherited), "age", m.group("num"), "ไม่" not in clause[: m.start()])]
    for pattern, value in _MARITAL:
        m = pattern.search(clause)
        if m:
            head = clause[: m.start()]
            neg = re.search(r"(?:ไม่ได้|ไม่|ยังไม่)$", head)
            subj = _subject(re.sub(r"(?:ไม่ได้|ไม่|ยังไม่|เป็น|ยัง)+$", "", head), inherited)
            return [Claim(subj, "marital", value, not neg)]
    m = _FAVORITE.match(clause)
    if m:
        subj = _subject(m.group("who"), inherited)
        return [Claim(subj, "attr:favorite " + m.group("attr"), v) for v in _values(m.group("val"))]
    m = _POSSESSIVE.match(clause)
    if m:
        subj = _subject(m.group("owner"), inherited)
        attr = m.group("attr")
        if attr == "ชื่อ":
            return [Claim(subj, "name", v) for v in _values(m.group("val"))]
        return [Claim(subj, "attr:" + attr, v) for v in _values(m.group("val"))]
    m = _ROLE.match(clause)
    if m:
        val = _value(m.group("val"))
        if val in _JOBS or any(val.startswith(j) for j in _JOBS) or val.startswith("นัก"):
            subj = _subject(m.group("head"), inherited)
            return [Claim(subj, "role", val, not m.group("neg"))]

    for pattern, attribute, opts in _RULES:
        m = pattern.search(clause)
        if not m:
            continue
        if attribute not in ("travel", "plan:learn") and (
            _NOT_A_STATE_BEFORE.search(clause[: m.start()]) or _QUESTION.search(clause)
        ):
            return []
        neg = m.group("neg")
        positive = bool(opts.get("positive", True)) != _negated(neg, clause)
        strength = str(opts.get("strength", ""))
        subj = _subject(clause[: m.start()], inherited)
        if attribute == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attribute == "diet":
            return [Claim(subj, "diet", "vegetarian", positive)]
        tail = m.group("val")
        if attribute == "affinity" and re.search(r"(?:มากกว่า|ที่สุด)\s*(?:ครับ|ค่ะ|นะ)?$", tail):
            strength = "prefer"
        vals = _values(tail)
        if not vals:
            continue
        attribute = consumed(attribute, vals[0])
        if (diet := diet_of(subj, attribute, vals[0], positive)) is not None:
            return [diet]
        if attribute == "has" and re.match(r"^(?:ประชุม|นัด|เวลา|ปัญหา|ความสุข|งาน)", vals[0]):
            continue
        if attribute == "location" and (re.match(r"^(?:ทำงาน|เรียน|ใช้)", vals[0]) or _NOT_A_HOME.match(tail)):
            continue
        if attribute == "travel" and re.match(r"^(?:ทำงาน|เรียน|ซื้อ|กิน|ดู|หา|นอน)", vals[0]):
            continue
        return [Claim(subj, attribute, v, positive, strength) for v in vals]
    return []


def _tokens(text: str) -> set[str]:
    """Thai has no spaces: character pairs of its runs of Thai letters stand in for words."""
    out: set[str] = set()
    for run in re.findall(r"[\u0e00-\u0e7f]+", text):
        out |= {run[i : i + 2] for i in range(len(run) - 1)}
    return out


READER = Reader(
    lang="th",
    claims=claims_th,
    detects=_has_thai,
    lead=r"^(?:จริงๆ(?:แล้ว)?|ที่จริง(?:แล้ว)?|ความจริง(?:แล้ว)?|อ้อ|เอ่อ|แก้ไข(?:นิดนึง|นิดหนึ่ง)?|ขอแก้)\s*",
    split=r"\s*(?<!ตั้ง)แต่(?!ก่อน|ง)\s*|\s*เพราะ(?:ว่า)?\s*|\s*ดังนั้น\s*",
    ended=r"(?<!ไม่)เคย(?!ชิน)|เมื่อก่อน|แต่ก่อน|สมัยก่อน",
    negations=r"ไม่",
    tokens=_tokens,
)
