"""Vietnamese patterns: a statement clause -> claims.

Vietnamese words are syllables separated by spaces, with tone marks that tell words apart (they are
kept). The speaker is "tôi" / "mình"; "chúng tôi" and "nhóm chúng tôi" are we; "chị tôi" (my sister)
is another subject. Negation is "không" / "chưa" before the verb, "không ... nữa" / "không còn"
(no longer); "trước đây" / "từng" mark a state that has ended. Values are normalised here: time
phrases cut, common nouns to their English canonical form, head noun last ("trà xanh" -> "green
tea", "nhạc jazz" -> "jazz music"), so the shared lexicon's kinds of thing apply.
"""

from __future__ import annotations

import re

from .lexicon import JOB_WORDS, Claim, category_of, consumed, diet_of, english_places
from .reader import Reader

# Letters only Vietnamese uses among the Latin scripts (ă đ ơ ư, and the tone-marked vowels of the
# Latin Extended Additional block), or its most common words (some are written without those).
_VI_LETTERS = re.compile(r"[ăđơư\u1ea0-\u1ef9]")
_VI_WORDS = re.compile(r"(?<!\w)(?:tôi|không|chúng|của|là|có|người|mình|thích|nhé|rồi)(?!\w)")


def detects(clause: str) -> bool:
    return bool(_VI_LETTERS.search(clause) or _VI_WORDS.search(clause))


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

# fmt: off
_NOUNS = {
    "trà": "tea", "chè": "tea", "cà phê": "coffee", "cafe": "coffee", "bia": "beer", "rượu vang": "wine",
    "rượu": "liquor", "nước": "water", "sữa": "milk", "nước ép": "juice", "nước ngọt": "soda",
    "sô-cô-la": "chocolate", "sôcôla": "chocolate", "socola": "chocolate", "kem": "ice cream",
    "cơm": "rice", "mì": "noodles", "phở": "pho", "bún": "noodles", "thịt": "meat", "thịt bò": "beef",
    "thịt heo": "pork", "thịt lợn": "pork", "thịt gà": "chicken", "gà": "chicken", "cá": "fish",
    "hải sản": "seafood", "món ăn": "food", "đồ ăn": "food", "món": "food", "chó": "dog", "mèo": "cat",
    "thỏ": "rabbit", "vẹt": "parrot", "nhạc": "music", "bóng đá": "football", "bóng rổ": "basketball",
    "quần vợt": "tennis", "cầu lông": "badminton", "bơi": "swimming", "bơi lội": "swimming",
    "chạy bộ": "running", "đi bộ đường dài": "hiking", "leo núi": "climbing", "đạp xe": "cycling",
    "trượt tuyết": "skiing", "em trai": "younger brother", "em gái": "younger sister",
    "anh trai": "older brother", "chị gái": "older sister", "mùa hè": "summer", "mùa đông": "winter",
    "giáo viên": "teacher", "kỹ sư": "engineer", "kĩ sư": "engineer", "bác sĩ": "doctor",
    "y tá": "nurse", "lập trình viên": "programmer", "sinh viên": "student", "học sinh": "student",
    "luật sư": "lawyer", "kế toán": "accountant", "nhà thiết kế": "designer", "đầu bếp": "chef",
    "quản lý": "manager", "nhà báo": "journalist", "kiến trúc sư": "architect", "phiên dịch": "translator",
    "dược sĩ": "pharmacist", "nha sĩ": "dentist", "phi công": "pilot", "tài xế": "driver",
}
# fmt: on
# The nouns that name a job (also read, marks off, by ``vietnamese_bare``).
JOBS: dict[str, str] = {vi: en for vi, en in _NOUNS.items() if en in JOB_WORDS}
# fmt: off
_MODIFIERS = {
    "xanh": "green", "đen": "black", "sữa": "milk", "đá": "iced", "thái": "thai", "ý": "italian",
    "nhật": "japanese", "ấn độ": "indian", "hàn": "korean", "hàn quốc": "korean", "trung quốc": "chinese",
    "việt": "vietnamese", "việt nam": "vietnamese", "pháp": "french", "phần mềm": "software",
    "cổ điển": "classical", "không caffeine": "decaf",
}
# Vietnamese names of places whose English name differs: "Tôi sống ở Luân Đôn" and "I live in
# London" are one city, for a speaker who writes in both. Not names that differ only by their marks
# (Hà Nội, Đà Nẵng): an English sentence may well write them with the marks.
_PLACES = {
    "luân đôn": "london", "pa-ri": "paris", "ba lê": "paris", "bắc kinh": "beijing",
    "thượng hải": "shanghai", "hồng kông": "hong kong", "đài bắc": "taipei", "mát-xcơ-va": "moscow",
    "mạc tư khoa": "moscow", "tô-ky-ô": "tokyo", "đông kinh": "tokyo", "xơ-un": "seoul", "hán thành": "seoul",
    "nữu ước": "new york", "cựu kim sơn": "san francisco", "la mã": "rome", "sài gòn": "ho chi minh city",
    "thành phố hồ chí minh": "ho chi minh city", "tp hồ chí minh": "ho chi minh city", "tp.hcm": "ho chi minh city",
    "tphcm": "ho chi minh city",
    "mỹ": "united states", "hoa kỳ": "united states", "anh": "united kingdom", "pháp": "france", "đức": "germany",
    "nhật": "japan", "nhật bản": "japan", "hàn quốc": "south korea", "trung quốc": "china", "úc": "australia",
    "nga": "russia", "ý": "italy", "tây ban nha": "spain", "thái lan": "thailand",
}
_LANGUAGES = {
    "anh": "english", "pháp": "french", "đức": "german", "nhật": "japanese", "việt": "vietnamese",
    "trung": "chinese", "hoa": "chinese", "tây ban nha": "spanish", "hàn": "korean", "ý": "italian",
    "nga": "russian", "bồ đào nha": "portuguese", "thái": "thai",
}
# fmt: on
_TIME = (
    r"(?:nữa|rồi|lắm|luôn|nhé|nha|mà|đâu|thôi|nhất|cả|nhiều|rất nhiều|bây giờ|hiện nay|hiện giờ|dạo này|gần đây|"
    r"mỗi (?:ngày|sáng|tối|tuần|tháng|năm|buổi sáng|buổi tối)|hàng ngày|hằng ngày|hàng tuần|"
    r"(?:tháng|tuần|năm) (?:trước|sau|ngoái|tới|này|nay)|năm ngoái|hôm qua|hôm nay|ngày mai|"
    r"(?:từ|vào|trong)? ?(?:năm|tháng) \d{1,4}|từ (?:năm )?\d{4}|từ (?:nhỏ|bé|lâu)|"
    r"vào (?:thứ \S+|chủ nhật|cuối tuần|buổi \S+)|cuối tuần|buổi (?:sáng|chiều|tối)|thứ (?:hai|ba|tư|năm|sáu|bảy)|"
    r"chủ nhật|(?:vào )?tháng (?:một|hai|ba|tư|năm|sáu|bảy|tám|chín|mười|mười một|mười hai))"
)
_TRAIL = re.compile(rf"\s+{_TIME}$")
_PARTICLES = re.compile(r"\s+(?:nữa|rồi|nhé|nha|mà|đâu|thôi)$")
_LEAD_WORDS = re.compile(r"^(?:một|1|con|chiếc|cái|người|đứa|bé|các|những|cả|rất|cũng|được|với|cho|về|ở|tại)\s+")
_STOP = re.compile(r"\s+(?:để|vì|nhưng|khi|mà|từ khi|với|làm|cho|trong|bởi vì)\s+|[,;:()]")
_ITEMS = re.compile(r"\s*,\s*|\s+(?:và|hoặc|hay|với cả)\s+")


def _lookup(words: list[str], table: dict[str, str]) -> tuple[str, int]:
    """The longest entry of ``table`` at the start of ``words``: (its value, its length in words)."""
    for n in range(min(4, len(words)), 0, -1):
        key = " ".join(words[:n])
        if key in table:
            return table[key], n
    return "", 0


def _canon(raw: str, reorder: bool = True, trail: bool = True) -> str:
    """One value: counters and time phrases off (``trail``: not off a date or time that is the value
    itself), head noun last and in English if known."""
    v = raw.strip(" ,.;:!?'\"")
    cut = _TRAIL if trail else _PARTICLES
    for _ in range(4):
        v2 = cut.sub("", _LEAD_WORDS.sub("", v)).strip(" ,.;:!?")
        if v2 == v:
            break
        v = v2
    words = v.split()
    if not reorder or not words:
        return v
    if words[0] == "tiếng" and len(words) > 1:  # a language: "tiếng pháp" -> french
        rest = " ".join(words[1:])
        return _LANGUAGES.get(rest, rest)
    head, n = _lookup(words, _NOUNS)
    if not head:
        return v
    rest = words[n:]
    if not rest:
        return head
    mod, m = _lookup(rest, _MODIFIERS)
    if mod and m == len(rest):
        return f"{mod} {head}"
    if len(rest) <= 2:  # "nhạc jazz" -> "jazz music"
        return f"{' '.join(rest)} {head}"
    return v


def _values(raw: str, multi: bool, reorder: bool = True, prefer: bool = False, trail: bool = True) -> list[str]:
    if prefer:
        raw = re.split(r"\s+hơn(?:\s+|$)", raw, maxsplit=1)[0]
    head = _STOP.split(raw, maxsplit=1)[0] if not multi else re.split(r"[;:()]|\s+(?:nhưng|vì|để)\s+", raw)[0]
    items = _ITEMS.split(head) if multi else [head]
    out = [_canon(x, reorder, trail) for x in items]
    return [x for x in out if x and any(c.isalnum() for c in x)][:5]


# --------------------------------------------------------------------------------------------
# subjects
# --------------------------------------------------------------------------------------------

# The people a speaker names as "X tôi" (also read, marks off, by ``vietnamese_bare``).
KIN = (
    r"bố|ba|cha|mẹ|má|vợ|chồng|con|con gái|con trai|anh|chị|em|anh trai|chị gái|em trai|em gái|bạn|bạn gái|"
    r"bạn trai|sếp|đồng nghiệp|ông|bà|cô|chú|bác|dì|cậu|hàng xóm|người yêu|bạn thân"
)
_WE = re.compile(
    r"(?<!\w)(?:chúng tôi|chúng ta|chúng mình|bọn tôi|bọn mình|tụi tôi|tụi mình|nhóm|team|công ty|đội)(?!\w)"
)
_ME = re.compile(r"(?<!\w)(?:tôi|mình|tớ)(?!\w)")
_OTHER = re.compile(rf"(?<!\w)(?P<who>{KIN})\s+(?:của\s+)?(?:tôi|mình|tớ)(?!\w)")
_ADVERBIAL = re.compile(
    rf"(?<!\w)(?:{_TIME}|giờ|bây giờ|hiện tại|thật ra|thực ra|nói thật|trước đây|hồi trước|sau này|cuối cùng|"
    r"đã|đang|sẽ|vẫn|còn|cũng|hay|thường|rất|chỉ|mới|vừa|hiện|luôn|lại|thì|không|chưa|chẳng|nào|tối|sáng|"
    r"trưa|chiều|ngày|tuần|tháng|năm|nay|sau|trước|hai|ba|tư|sáu|bảy|thứ|và|nhưng)(?!\w)"
)


def _subject(prefix: str) -> str:
    p = prefix.strip(" ,")
    if not p:
        return ""
    m = _OTHER.search(p)
    if m:
        return m.group("who")
    if _WE.search(p):
        return "we"
    if _ME.search(p):
        return "self"
    rest = " ".join(_ADVERBIAL.sub(" ", p).split())
    return rest if rest and len(rest.split()) <= 3 else ""


# --------------------------------------------------------------------------------------------
# patterns
# --------------------------------------------------------------------------------------------

# At most three aspect words a side of a negation: two unbounded groups of the same words backtrack
# cubically on a long run of them ("đã đã đã ...").
_ASPECT = (
    r"(?:(?:đã|đang|sẽ|vẫn|còn|cũng|hay|thường|rất|chỉ|mới|vừa|hiện|hiện đang|luôn|cực kỳ|cực kì|thật sự)\s+){0,3}"
)
_NEG = (
    r"(?P<neg>(?:không còn|không bao giờ|chẳng bao giờ|không|chưa|chẳng|chả|đâu có|đã thôi|thôi|đã ngừng|ngừng|"
    r"đã bỏ|bỏ|đã cai|cai)\s+)?"
)


def _vi(verbs: str, tail: str, attribute: str, *, neg: bool = True, **kw: object):
    head = _ASPECT + (_NEG if neg else "") + _ASPECT + r"(?<!\w)(?P<v>" + verbs + r")(?!\w)"
    return (re.compile(head + tail), attribute, kw)


_VAL = r"\s+(?P<val>.+)"

# fmt: off
_RULES = (
    _vi(r"độc thân|đã kết hôn|kết hôn|đã lập gia đình|lập gia đình|đã có gia đình|có gia đình|đã có vợ|có vợ|"
        r"đã có chồng|có chồng|lấy vợ|lấy chồng|cưới vợ|cưới chồng|ly hôn|ly dị|đính hôn|góa vợ|góa chồng",
        r"(?P<val>)", "marital"),
    _vi(r"ăn chay trường|ăn chay|ăn thuần chay|là người ăn chay", r"(?P<val>)", "diet"),
    _vi(r"ăn", r"\s+(?P<val>(?:thịt|cá|hải sản|gà)(?!\w).*)", "diet_meat"),
    _vi(r"sống|sinh sống|định cư|cư trú", r"\s+(?:ở|tại)?\s*(?P<val>.+)", "location"),
    _vi(r"chuyển đến|chuyển tới|chuyển về|chuyển nhà đến|chuyển nhà về|chuyển nhà tới|dọn đến|dọn tới|dọn về|"
        r"chuyển ra|chuyển vào", _VAL, "location"),
    _vi(r"lớn lên|sinh ra|đến từ|quê ở|là người", r"\s+(?:ở|tại)?\s*(?P<val>.+)", "origin"),
    _vi(r"vào làm|gia nhập|đầu quân cho|nhảy việc sang|nhảy việc qua|chuyển việc sang|chuyển sang làm",
        r"\s+(?:ở|tại|cho)?\s*(?P<val>.+)", "employer"),
    _vi(r"làm việc|làm|công tác|đi làm", r"\s+(?:ở|tại|cho)" + _VAL, "employer"),
    _vi(r"làm nghề|làm", _VAL, "role_maybe"),
    _vi(r"bị dị ứng|dị ứng", r"\s+(?:với\s+)?(?P<val>.+)", "allergy", multi=True),
    _vi(r"ưu tiên|chuộng|thích|yêu|mê",
        r"\s+(?:dùng|sử dụng|uống|ăn|nghe|xem|đọc|chơi)?\s*(?P<val>.+?\s+hơn(?:\s.*)?)$", "affinity",
        strength="prefer"),
    _vi(r"ghét|không ưa|không chịu được|không chịu nổi|chán ghét|sợ", _VAL, "affinity", multi=True,
        positive=False),
    _vi(r"thích|yêu thích|yêu|mê|khoái|ưa|thích thú", r"\s+(?:dùng|uống|ăn|nghe|xem|chơi)?\s*(?P<val>.+)",
        "affinity", multi=True),
    _vi(r"chuyển sang|chuyển qua|đổi sang|đổi qua|chuyển đổi sang|thay bằng|chuyển dùng|đổi dùng|migrate sang",
        _VAL, "use", strength="switch"),
    _vi(r"hút thuốc lá|hút thuốc|hút", r"(?P<val>)", "smoke"),
    _vi(r"thuốc lá|thuốc", r"(?P<val>)", "smoke_object"),
    _vi(r"dùng|sử dụng|xài|chọn|triển khai trên|chạy trên|code bằng|lập trình bằng|viết bằng", _VAL, "use",
        multi=True),
    _vi(r"uống|ăn", _VAL, "consume", multi=True),
    _vi(r"nói được|nói|biết nói|nói thạo|nói thành thạo|biết", r"\s+(?P<val>tiếng\s.+)", "speaks", multi=True),
    _vi(r"đang học|học|sẽ học|muốn học|định học", _VAL, "plan_learn", multi=True),
    _vi(r"chơi|tập", _VAL, "plays", multi=True),
    _vi(r"có|nuôi", r"\s+(?P<num>\d+|hai|ba|bốn|năm|sáu)\s+(?:con|chiếc|cái|người|đứa|bé)?\s*(?P<val>.+)", "count"),
    _vi(r"có|nuôi", r"\s+(?!thể|lẽ|vẻ|khi|lúc|phải|ai|gì|đủ|nhiều|ít)(?P<val>.+)", "has", multi=True),
    _vi(r"đi du lịch|du lịch|đi|bay|sẽ đến|định đến|bay sang|bay tới|bay đến",
        r"\s+(?:đến|tới|sang|ở|đi)?\s*(?!làm|học|ngủ|bộ|chơi|ăn|uống|xem|mua|chợ|họp|ca|đâu|về|dạo|tập|câu|ra|vào)"
        r"(?P<val>.+)", "travel"),
    _vi(r"ở", r"\s+(?:tại\s+)?(?P<val>.+)", "location_here"),
    _vi(r"là", r"\s+(?:một\s+|người\s+)?(?P<val>.+)", "is_a"),
)
# fmt: on
_MARITAL = (
    ("độc thân", "single"),
    ("ly hôn", "divorced"),
    ("ly dị", "divorced"),
    ("đính hôn", "engaged"),
    ("góa", "widowed"),
)
_NUM = {"hai": "2", "ba": "3", "bốn": "4", "năm": "5", "sáu": "6"}
_SCHEDULE = (
    r"cuộc họp|buổi họp|họp|hạn chót|hạn nộp|deadline|buổi phỏng vấn|phỏng vấn|chuyến bay|kỳ thi|buổi thi|"
    r"đám cưới|bữa tối|buổi ra mắt|lễ ra mắt|ra mắt|buổi hẹn|lịch hẹn|cuộc hẹn|buổi học|lớp học|buổi thuyết trình|"
    r"sự kiện|bữa tiệc|tiệc|trận đấu|buổi hòa nhạc|chuyến đi|ngày phát hành|phát hành|standup|buổi standup"
)
_THE = re.compile(
    rf"^(?P<attr>{_SCHEDULE})(?:\s+\S+){{0,2}}?\s+(?:đã\s+)?(?:được\s+)?"
    r"(?:(?:dời|chuyển|lùi|hoãn|đổi|đẩy|dịch|dời lại|lùi lại|hoãn lại|sẽ|vẫn)\s+)?(?:lại\s+)?"
    r"(?:sang|đến|tới|vào|là|lúc|ngày)\s+(?P<val>.+)$"
)
_POSSESSIVE = re.compile(
    r"^(?P<attr>\S+(?:\s+\S+){0,4}?)\s+(?:của\s+)?(?P<owner>tôi|mình|chúng tôi|chúng ta)\s+"
    r"(?P<neg>không phải\s+)?(?:là|tên là)\s+(?P<val>.+)$"
)
_ATTR = {"tên": "name", "tuổi": "age", "nghề": "role", "nghề nghiệp": "role", "công việc": "role",
         "công ty": "employer", "nhà": "location", "địa chỉ": "location", "sinh nhật": "attr:birthday"}  # fmt: skip
_QUIT_PREFIX = re.compile(
    r"(?<!\w)(?:đã\s+)?(?:bỏ|ngừng|thôi|cai|dừng)\s+(?=(?:dùng|sử dụng|xài|uống|ăn|hút|làm|sống|chơi|nuôi|nói)(?!\w))"
)


# "chuyến đi Oslo tuần sau bị hủy rồi", "tôi hủy chuyến đi Oslo": a trip called off (the word that
# calls it off before or after it; "chuyến đi Đà Nẵng rất vui" is no such thing)
_TRIP = r"chuyến\s+(?:đi|bay|du lịch|công tác)\s+(?:đến\s+|tới\s+|sang\s+)?(?P<val>.+?)"
_CALLED_OFF = (
    re.compile(rf"(?<!\w)(?:đã\s+)?(?:hủy|huỷ|hoãn)\s+{_TRIP}$"),
    re.compile(rf"{_TRIP}\s+(?:(?:bị|đã bị|đã|được)\s+)?(?:hủy|huỷ|hoãn)(?:\s+rồi)?$"),
)


def _read(clause: str, inherited: str) -> list[Claim]:
    c = clause
    anywhere = bool(re.search(r"(?<!\w)(?:nữa|không còn)(?!\w)", c))
    m = re.search(r"(?<!\w)(?P<val>\d{1,3})\s*tuổi(?!\w)", c)
    if m:
        neg = bool(re.search(r"(?<!\w)(?:không phải|chưa)(?!\w)", c[: m.start()]))
        return [Claim(_subject(c[: m.start()]) or inherited, "age", m.group("val"), not neg)]
    m = _CALLED_OFF[0].search(c) or _CALLED_OFF[1].search(c)
    if m and (vals := _values(m.group("val"), False, reorder=False)):
        return [Claim(_subject(c[: m.start()]) or inherited or "self", "travel", vals[0], False)]
    m = _THE.match(c)
    if m:
        vals = _values(m.group("val"), False, reorder=False, trail=False)
        return [Claim("", "the:" + m.group("attr"), v) for v in vals]
    m = _POSSESSIVE.match(c)
    if m and not _ADVERBIAL.fullmatch(m.group("attr")) and not re.search(r"(?<!\w)(?:giờ|nay)$", m.group("attr")):
        owner = m.group("owner")
        subj = "we" if owner.startswith("chúng") else "self"
        attr = m.group("attr")
        positive = not m.group("neg")
        fav = re.match(r"^(?P<what>.+?)\s+(?:yêu thích|ưa thích|ưa chuộng)(?:\s+nhất)?$", attr)
        if fav:
            vals = _values(m.group("val"), False)
            return [Claim(subj, "attr:favorite " + fav.group("what"), v, positive) for v in vals]
        key = _ATTR.get(attr, "attr:" + attr)
        vals = _values(
            m.group("val"), False, reorder=key == "role", trail=key in ("name", "role", "employer", "location")
        )
        return [Claim(subj, key, v, positive) for v in vals]
    m = re.search(r"(?:gọi (?:tôi|mình) là|(?:tôi|mình) tên(?: là)?)\s+(?P<val>.+)", c)
    if m:
        return [Claim("self", "name", v) for v in _values(m.group("val"), False, reorder=False)]
    quit_ = _QUIT_PREFIX.search(c)
    if quit_:
        c = c[: quit_.start()] + c[quit_.end() :]
    for pattern, attribute, kw in _RULES:
        m = pattern.search(c)
        if not m:
            continue
        gd = m.groupdict()
        subj = _subject(c[: m.start()]) or inherited
        neg_word = (gd.get("neg") or "").strip()
        negated = bool(neg_word) or bool(quit_) or anywhere
        positive = bool(kw.get("positive", True)) != negated
        multi = bool(kw.get("multi"))
        strength = str(kw.get("strength", ""))
        attr = attribute
        verb = gd.get("v") or ""
        if attr == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attr == "smoke_object":  # "bỏ thuốc lá", "cai thuốc": quitting names the thing
            if neg_word in ("bỏ", "đã bỏ", "cai", "đã cai", "thôi", "đã thôi", "ngừng", "đã ngừng"):
                return [Claim(subj, "smoke", "smoking", False)]
            continue
        if attr == "marital":
            val = next((e for k, e in _MARITAL if k in verb), "married")
            return [Claim(subj, "marital", val, positive and neg_word != "chưa")]
        if attr == "diet":
            val = "vegan" if "thuần" in verb else "vegetarian"
            return [Claim(subj, "diet", val, positive)]
        if attr == "diet_meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "count":
            vals = _values(m.group("val"), False)
            if not vals:
                continue
            num = m.group("num")
            return [Claim(subj, "count:" + vals[0], _NUM.get(num, num), positive)]
        if attr == "plan_learn":
            return [Claim(subj, "plan:learn", v, positive) for v in _values(m.group("val"), True)]
        reorder = attr not in ("location", "origin", "employer", "use", "travel")
        vals = _values(m.group("val"), multi, reorder=reorder, prefer=strength == "prefer")
        if not vals:
            continue
        if attr == "location_here":  # "tôi ở Hà Nội": "ở" is the verb only right after who
            if not re.search(r"(?<!\w)(?:tôi|mình|tớ|ta|chúng tôi)\s*$", c[: m.start("v")]):
                continue
            attr = "location"
        if attr == "employer" and re.match(r"^(?:nhà|từ xa|online|ca)(?!\w)", vals[0]):
            continue
        if attr == "role_maybe":
            if vals[0].split()[-1] not in JOB_WORDS:
                continue
            attr = "role"
        if attr == "is_a":
            if vals[0].split()[-1] in JOB_WORDS:
                return [Claim(subj, "role", vals[0], positive)]
            return [Claim(subj, "is_a", vals[0], positive)]
        if attr == "consume" and neg_word in ("bỏ", "đã bỏ", "cai", "đã cai") and not category_of(vals[0]):
            attr = "use"
        attr = consumed(attr, vals[0])
        if (diet := diet_of(subj, attr, vals[0], positive)) is not None:
            return [diet]
        if attr == "use" and strength == "switch":
            return [Claim(subj, "use", v, positive, "switch") for v in vals]
        return [Claim(subj, attr, v, positive, strength) for v in vals]
    # "tôi đã bỏ cà phê": quitting a thing, with no verb of using it
    m = re.search(r"(?<!\w)(?:đã\s+)?(?:bỏ|cai|ngừng)\s+(?P<val>.+)", clause)
    if m:
        vals = _values(m.group("val"), True)
        subj = _subject(clause[: m.start()]) or inherited
        return [Claim(subj, "consume" if category_of(v) else "use", v, False) for v in vals]
    return []


def claims_vi(clause: str, inherited: str) -> list[Claim]:
    """The clause's claims; a place (where one lives, comes from, travels) by its English name."""
    return english_places(_read(clause, inherited), _PLACES)


READER = Reader(
    lang="vi",
    claims=claims_vi,
    detects=detects,
    lead=(
        r"^(?:(?:à|ừ|ờ|ừm|à mà|thật ra|thực ra|nói thật|đính chính|cập nhật|nhân tiện|à này|mà này|lưu ý|"
        r"sửa lại|xin lỗi|vâng|dạ|không)[,:!]\s*|(?:thật ra|thực ra|nói thật là|đính chính|dạ|vâng)\s+)+"
    ),
    split=r",?\s+nhưng\s+|\s+vì\s+|\s+bởi vì\s+|,\s+(?=(?:còn|giờ|bây giờ|nay)\s)|,?\s+nên\s+(?=tôi\s)",
    # "Trước đây tôi sống ở Hải Phòng", "tôi từng làm ở FPT": a state that held and no longer does
    ended=r"(?<!\w)(?:trước đây|trước kia|hồi trước|ngày trước|lúc trước|(?:đã\s+)?từng)\s+(?=\w)",
    # "khong" / "chua": the same negations typed without accents (the fallback counts them in any text;
    # neither is an English or Spanish word)
    negations=r"(?<!\w)(?:không|chưa|chẳng|chả|đừng|khong|chua)(?!\w)",
)
