"""The word tables of the restatement rule (:mod:`ltm.domain.restate`), per language. Pure data.

Each guard reads a statement for one kind of marker; two statements whose markers differ say
different things. The tables are measured per language on the held-out pairs of
``tests/data/restate_heldout.tsv`` (``python -m benchmarks.restate``).

- *fillers*: words a restatement adds or drops without changing the fact ("now", "currently",
  "actually", "still", politeness particles, progressive auxiliaries). They are removed before
  anything is compared.
- *negation*, *past*, *modality*, *quantity*: the markers of polarity, tense ("used to", "was"),
  modality ("will", "should", "want to", "can") and quantity or frequency ("rarely", "always",
  "only"). Substring markers of the unsegmented scripts (Han, kana, Thai) list the longer words
  that contain them but mean something else (``_FALSE``).
- *people*: pronouns and kinship words, so a fact about one person never folds into another's.
"""

from __future__ import annotations

import re

# ----------------------------------------------------------------------------------------- fillers
# Latin-script phrases dropped anywhere (word-bounded), longest first.
FILLERS_LATIN: tuple[str, ...] = tuple(
    sorted(
        {
            # English
            "these days", "nowadays", "at the moment", "right now", "for now", "just so you know",
            "by the way", "for the record", "to be honest", "as i said", "like i said", "actually",
            "currently", "presently", "still", "now", "truly", "definitely", "indeed", "honestly", "btw",
            "fyi", "remember that", "note that",
            # Spanish
            "la verdad es que", "en realidad", "de verdad", "por cierto", "hoy en día", "ahora mismo",
            "ahora", "actualmente", "todavía", "aún", "realmente", "la verdad", "ya sabes",
            # Vietnamese
            "bây giờ", "hiện tại", "hiện nay", "hiện đang", "thật ra", "thực ra", "thật sự", "thực sự",
            "đang", "vẫn", "giờ", "rất", "lắm", "nhé", "nha", "ạ", "đó", "đâu", "nhỉ",
        },
        key=len,
        reverse=True,
    )
)  # fmt: skip
# Spanish progressive and continuative auxiliaries ("estoy viviendo", "sigo viviendo") before a gerund.
ES_PROGRESSIVE = re.compile(
    r"\b(?:estoy|estás|estas|está|esta|estamos|están|estan|sigo|sigues|sigue|seguimos|siguen)\s+(?=\w+(?:ando|iendo|yendo)\b)"
)
# "me gusta mucho": intensity of a liking, not a quantity
ES_INTENSITY = re.compile(r"\b(gustan?|encantan?)\s+(?:muchísimo|mucho|bastante)\b")
# Han-script words dropped before the characters are compared (Simplified and Traditional).
FILLERS_HAN: tuple[str, ...] = tuple(
    sorted(
        {
            "其实", "其實", "对了", "對了", "顺便说一下", "順便說一下", "记住", "記住", "告诉你", "告訴你",
            "我说过", "我說過", "再说一次", "再說一次", "再说一遍", "再說一遍", "现在", "現在", "目前",
            "如今", "正在", "一直", "真的", "确实", "確實",
        },
        key=len,
        reverse=True,
    )
)  # fmt: skip
# Han characters a restatement adds or drops (particles, "very", measure words of people):
# any other character is content ("我喜欢茶" / "我喜欢冰茶").
FILLER_HAN_CHARS = frozenset("的了在是也都很就还還现現呢啊吧呀嘛喔哦啦耶着著名个個位从從来來类類比较較")
# Japanese words dropped (kana and kanji), then the endings that only mark politeness or aspect.
FILLERS_JA: tuple[str, ...] = tuple(
    sorted(
        {
            "今は", "今も", "今", "現在", "実は", "本当に", "ほんとうに", "とても", "すごく", "やっぱり",
            "一緒に", "、",
        },
        key=len,
        reverse=True,
    )
)  # fmt: skip
JA_LIKE = re.compile(r"大好き")  # "love" said as "like a lot": the same liking
JA_END = re.compile(r"(?:よね|よ|ね|な|わ|ぞ|さ)$")
# Grammar around a hiragana run (particles, auxiliaries, inflections): what is left is a word.
JA_GRAMMAR_TAIL = re.compile(
    r"(?:ています|でいます|ている|でいる|てる|でる|ません|ました|でした|だった|なかった|ない|たい|ます|です|いる|います|"
    r"だ|た|ず|って|んで|て|で|い|る|う|く|し|ん|"
    r"が|を|は|に|と|も|の|へ|や|から|まで|より|けど|ある|あり)$"
)
JA_GRAMMAR_HEAD = re.compile(r"^(?:が|を|は|に|で|と|も|の|へ|や)")
# Thai words dropped (politeness, "now", "still", progressive, "actually", "very").
FILLERS_TH: tuple[str, ...] = tuple(
    sorted(
        {
            "จริงๆแล้ว", "จริง ๆ แล้ว", "จริงๆ แล้ว", "ที่จริงแล้ว", "ที่จริง", "จริงๆ", "ตอนนี้", "ในตอนนี้",
            "ปัจจุบันนี้", "ปัจจุบัน", "กำลัง", "อยู่", "ยัง", "มาก", "เลย",
        },
        key=len,
        reverse=True,
    )
)  # fmt: skip

# Thai politeness particles, dropped at the end of a statement only ("นะ" is inside "ชนะ").
TH_END = re.compile(r"(?:ครับ|ค่ะ|คะ|นะ|จ้ะ|จ้า|น่ะ|จ้ะ|ฮะ)+$")

# ----------------------------------------------------------------------------------------- numbers
EN_NUMBERS: dict[str, str] = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
EN_NUMBERS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"})
EN_NUMBERS.update({"once": "1", "twice": "2"})
ES_NUMBERS: dict[str, str] = {
    w: str(i)
    for i, w in enumerate("cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce".split())
    if w != "uno"  # "uno" and "un": an article as often as a number
}
# Vietnamese and Thai number words count only before a classifier ("hai con mèo", "ลูกสองคน"):
# "năm" is also "year", "ba" also "dad", "สาม" starts "สามี" (husband).
VI_NUMBER = re.compile(
    r"\b(hai|ba|bốn|tư|năm|sáu|bảy|tám|chín|mười)\s+(?=(?:con|đứa|lần|người|cái|chiếc|năm|tháng|ngày|tuổi|giờ|"
    r"cuốn|quyển|căn|chai|ly|cốc)\b)"
)
VI_NUMBERS = {"hai": "2", "ba": "3", "bốn": "4", "tư": "4", "năm": "5", "sáu": "6", "bảy": "7", "tám": "8",
              "chín": "9", "mười": "10"}  # fmt: skip
TH_NUMBER = re.compile(
    r"(หนึ่ง|สอง|สาม|สี่|ห้า|หก|เจ็ด|แปด|เก้า|สิบ)\s*(?=คน|ครั้ง|ตัว|ปี|เดือน|วัน|ชั่วโมง|อัน|ใบ|คัน|หลัง|ขวบ|โมง|เล่ม|แก้ว)"
)
TH_NUMBERS = {"หนึ่ง": "1", "สอง": "2", "สาม": "3", "สี่": "4", "ห้า": "5", "หก": "6", "เจ็ด": "7", "แปด": "8",
              "เก้า": "9", "สิบ": "10"}  # fmt: skip

# ---------------------------------------------------------------------------------------- negation
NEG_LATIN = frozenset(
    "not no never nobody nothing none neither nor without cannot hardly "  # English
    "nunca jamás jamas tampoco nada nadie ningún ningun ninguna ninguno ni sin "  # Spanish ("no" above)
    "không chưa chẳng chả đừng chớ".split()  # Vietnamese
)
NEG_SUBSTR: tuple[str, ...] = (
    "不", "没", "沒", "别", "別", "未", "无", "無", "非",  # Han
    "無い",  # Japanese (the kana forms: NEG_JA)
    "ไม่", "อย่า", "มิได้",  # Thai
)  # fmt: skip
NEG_JA = re.compile(r"(?<![少危])ない|ません|なかった|ずに|ず$")
NEG_FALSE: tuple[str, ...] = (
    "不错", "不錯", "不过", "不過", "不少", "差不多", "非常", "并非不", "少ない", "危ない", "ずっと", "すごく",
    "ไม่ค่อย", "まず", "必ず", "未来", "未來", "特别", "特別", "区别", "區別", "分别", "分別", "别人", "別人", "性别",
    "性別",
)  # fmt: skip

# -------------------------------------------------------------------------------------------- past
PAST_EN = frozenset(
    "used was were did had went came saw ate drank made took gave bought brought thought taught caught felt "
    "left lost met paid ran sat sold sent slept spent stood told understood won wore wrote grew knew threw "
    "drove rode spoke broke chose froze forgot began swam sang rang drew flew became formerly previously "
    "once ago anymore longer".split()
)
# -ed words that are not a past tense
ED_NOT_PAST = frozenset(
    "need bed red shed seed feed speed weed breed bleed hundred sled wed proceed succeed exceed indeed naked "
    "wicked sacred kindred named married usted pared sed merced".split()
)
PAST_ES = frozenset(
    "antes solía solías solíamos solían fue fui fuiste fuimos fueron era eras éramos eran estuve estuvo "
    "estuvimos tuve tuvo tuvimos hice hizo vivía tenía había anteriormente".split()
)
ES_PAST_END = re.compile(r"(?:aba|abas|ábamos|aban|aron|ieron|aste|iste)$")
ES_IMPERFECT = re.compile(r"(?<!r)(?:ía|ías|íamos|ían)$")  # "-ría" is the conditional: a modality
PAST_VI = ("đã", "từng", "trước đây", "hồi trước", "ngày xưa", "lúc trước", "hồi xưa", "trước kia")
PAST_HAN: tuple[str, ...] = (
    "以前", "以往", "过去", "過去", "曾", "从前", "從前", "原来", "原來", "当时", "當時", "那时", "那時",
    "小时候", "小時候", "过", "過",
)  # fmt: skip
PAST_HAN_FALSE: tuple[str, ...] = (
    "过敏", "過敏", "不过", "不過", "难过", "難過", "超过", "超過", "经过", "經過", "通过", "通過", "过年",
    "過年", "过来", "過來",
)  # fmt: skip
PAST_JA_WORDS = ("以前", "昔", "前は", "かつて", "当時", "元々", "もともと", "ていた", "でいた")
PAST_JA_END = re.compile(r"(?:た|だった|でした|ました|かった)(?:です)?$")
PAST_TH = ("เคย", "เมื่อก่อน", "ก่อนหน้านี้", "สมัยก่อน", "แต่ก่อน", "เมื่อตอน")

# ---------------------------------------------------------------------------------------- modality
MODAL_EN: dict[str, str] = {
    **dict.fromkeys("will shall going".split(), "will"),
    **dict.fromkeys("would".split(), "would"),
    **dict.fromkeys("should ought".split(), "should"),
    **dict.fromkeys("must".split(), "must"),
    **dict.fromkeys("want wants wanted".split(), "want"),
    **dict.fromkeys("plan plans planning planned intend intends intending".split(), "plan"),
    **dict.fromkeys("hope hopes hoping wish wishes".split(), "hope"),
    **dict.fromkeys("may might maybe perhaps probably".split(), "may"),
    **dict.fromkeys("can could able".split(), "can"),
    **dict.fromkeys("need needs".split(), "need"),
    **dict.fromkeys("try tries trying".split(), "try"),
    **dict.fromkeys("thinking considering".split(), "consider"),
}
EN_HAVE_TO = re.compile(r"\b(?:have|has|had) to\b")
MODAL_ES: dict[str, str] = {
    **dict.fromkeys("quiero quieres quiere queremos quieren quisiera".split(), "want"),
    **dict.fromkeys("debería deberías debo debes debe debemos deben".split(), "should"),
    **dict.fromkeys("puedo puedes puede podemos pueden podría".split(), "can"),
    **dict.fromkeys("pienso planeo planeamos".split(), "plan"),
    **dict.fromkeys("espero ojalá".split(), "hope"),
    **dict.fromkeys("gustaría".split(), "would"),
}
ES_GOING_TO = re.compile(r"\b(?:voy|vas|va|vamos|van) a \w+(?:ar|er|ir)\b")
ES_HAVE_TO = re.compile(r"\b(?:tengo|tienes|tiene|tenemos|tienen) que\b")
ES_FUTURE_END = re.compile(r"\w{2,}(?:aré|eré|iré|ará|erá|irá|arás|erás|irás|aremos|eremos|iremos|arán|erán|irán)$")
MODAL_VI: dict[str, str] = {
    "sẽ": "will", "sắp": "will", "muốn": "want", "nên": "should", "phải": "must", "cần": "need",
    "định": "plan", "dự định": "plan", "có thể": "can", "hy vọng": "hope", "mong": "hope", "tính": "plan",
}  # fmt: skip
MODAL_HAN: dict[str, str] = {
    "会": "will", "會": "will", "将": "will", "將": "will", "要": "will", "想": "want", "希望": "hope",
    "应该": "should", "應該": "should", "该": "should", "該": "should", "必须": "must", "必須": "must",
    "需要": "need", "可以": "can", "能": "can", "可能": "may", "打算": "plan", "计划": "plan", "計劃": "plan",
    "計畫": "plan", "准备": "plan", "準備": "plan", "愿意": "want", "願意": "want", "梦想": "want",
    "夢想": "want",
}  # fmt: skip
MODAL_HAN_FALSE: tuple[str, ...] = (
    "会议", "會議", "机会", "機會", "社会", "社會", "聚会", "聚會", "学会", "學會", "重要", "主要", "只要",
    "要是", "功能", "能力", "将军", "將軍",
)  # fmt: skip
MODAL_JA: dict[str, str] = {
    "たい": "want", "たく": "want", "ほしい": "want", "欲しい": "want", "つもり": "plan", "予定": "plan",
    "べき": "should", "なければ": "must", "なきゃ": "must", "ないと": "must", "かもしれ": "may",
    "だろう": "may", "でしょう": "may", "ようと": "plan",
}  # fmt: skip
MODAL_JA_FALSE: tuple[str, ...] = ("たいてい", "大抵", "ったい", "たいへん")
MODAL_TH: dict[str, str] = {
    "จะ": "will", "อยาก": "want", "ควร": "should", "ต้อง": "must", "อาจ": "may", "คง": "may",
    "น่าจะ": "may", "วางแผน": "plan", "ตั้งใจ": "plan", "หวัง": "hope", "สามารถ": "can",
}  # fmt: skip
MODAL_TH_FALSE: tuple[str, ...] = ("อาจารย์", "คงที่", "จะจะ")

# ---------------------------------------------------------------------------------------- quantity
QUANT_EN: dict[str, str] = {
    **dict.fromkeys("rarely seldom hardly barely".split(), "rarely"),
    **dict.fromkeys("sometimes occasionally".split(), "sometimes"),
    **dict.fromkeys("often frequently regularly".split(), "often"),
    **dict.fromkeys("usually normally generally mostly typically".split(), "usually"),
    **dict.fromkeys("always constantly".split(), "always"),
    **dict.fromkeys("every each daily weekly monthly".split(), "every"),
    **dict.fromkeys("all".split(), "all"),
    **dict.fromkeys("some several".split(), "some"),
    **dict.fromkeys("many lot lots plenty".split(), "many"),
    **dict.fromkeys("few little".split(), "few"),
    **dict.fromkeys("most".split(), "most"),
    **dict.fromkeys("only".split(), "only"),
    **dict.fromkeys("more".split(), "more"),
    **dict.fromkeys("less fewer".split(), "less"),
    **dict.fromkeys("almost nearly".split(), "almost"),
}
QUANT_ES: dict[str, str] = {
    **dict.fromkeys("raramente".split(), "rarely"),
    **dict.fromkeys("frecuentemente menudo".split(), "often"),
    **dict.fromkeys("normalmente generalmente".split(), "usually"),
    **dict.fromkeys("siempre".split(), "always"),
    **dict.fromkeys("cada".split(), "every"),
    **dict.fromkeys("todos todas".split(), "all"),
    **dict.fromkeys("algunos algunas".split(), "some"),
    **dict.fromkeys("muchos muchas mucho mucha".split(), "many"),
    **dict.fromkeys("pocos pocas poco poca".split(), "few"),
    **dict.fromkeys("solo sólo solamente".split(), "only"),
    **dict.fromkeys("más".split(), "more"),
    **dict.fromkeys("menos".split(), "less"),
    **dict.fromkeys("casi".split(), "almost"),
    **dict.fromkeys("veces".split(), "sometimes"),
}
ES_RARELY = re.compile(r"\brara vez\b")
QUANT_VI: dict[str, str] = {
    "hiếm khi": "rarely", "ít khi": "rarely", "thỉnh thoảng": "sometimes", "đôi khi": "sometimes",
    "thường xuyên": "often", "thường": "usually", "luôn": "always", "mỗi": "every", "hằng": "every",
    "hàng ngày": "every", "tất cả": "all", "một số": "some", "nhiều": "many", "ít": "few", "chỉ": "only",
    "hầu như": "almost", "hầu hết": "most", "gần như": "almost",
}  # fmt: skip
QUANT_HAN: dict[str, str] = {
    "很少": "rarely", "偶尔": "sometimes", "偶爾": "sometimes", "有时": "sometimes", "有時": "sometimes",
    "经常": "often", "經常": "often", "常常": "often", "总是": "always", "總是": "always", "通常": "usually",
    "每": "every", "几乎": "almost", "幾乎": "almost", "只": "only", "一些": "some", "很多": "many",
    "许多": "many", "許多": "many", "大部分": "most", "所有": "all", "全部": "all", "不常": "rarely",
}  # fmt: skip
# 只/隻 after a numeral or a demonstrative is a measure word ("一只猫"), not "only"
QUANT_HAN_FALSE = re.compile("[一二两兩三四五六七八九十几幾这這那每][只隻]")
QUANT_JA: dict[str, str] = {
    "たまに": "sometimes", "時々": "sometimes", "ときどき": "sometimes", "時には": "sometimes",
    "よく": "often", "頻繁": "often", "いつも": "always", "常に": "always", "毎": "every",
    "めったに": "rarely", "滅多に": "rarely", "ほとんど": "almost", "殆ど": "almost", "全部": "all",
    "すべて": "all", "全て": "all", "少し": "few", "たくさん": "many", "沢山": "many", "だけ": "only",
    "しか": "only", "大抵": "usually", "たいてい": "usually", "普段": "usually",
}  # fmt: skip
QUANT_TH: dict[str, str] = {
    "ไม่ค่อย": "rarely", "นานๆ": "rarely", "นาน ๆ": "rarely", "บางครั้ง": "sometimes", "บางที": "sometimes",
    "บ่อย": "often", "เสมอ": "always", "ประจำ": "usually", "มัก": "usually", "ทุก": "every",
    "ทั้งหมด": "all", "หลาย": "many", "แค่": "only", "เท่านั้น": "only", "เกือบ": "almost",
}  # fmt: skip

# ------------------------------------------------------------------------------------------ people
PEOPLE_LATIN: dict[str, str] = {
    **dict.fromkeys("i me my mine myself".split(), "self"),
    **dict.fromkeys("we us our ours".split(), "we"),
    **dict.fromkeys("he him his himself".split(), "he"),
    **dict.fromkeys("she her hers herself".split(), "she"),
    **dict.fromkeys("they them their theirs".split(), "they"),
    **dict.fromkeys("you your yours".split(), "you"),
    # Spanish
    **dict.fromkeys("yo mi mis mí conmigo".split(), "self"),
    **dict.fromkeys("nosotros nosotras nuestro nuestra nuestros nuestras".split(), "we"),
    **dict.fromkeys("él".split(), "he"),
    **dict.fromkeys("ella".split(), "she"),
    **dict.fromkeys("ellos ellas".split(), "they"),
    **dict.fromkeys("tú tu tus usted".split(), "you"),
    # Vietnamese
    **dict.fromkeys("tôi mình tớ".split(), "self"),
    **dict.fromkeys("họ".split(), "they"),
    **dict.fromkeys("bạn".split(), "you"),
}
PEOPLE_VI_PHRASES: dict[str, str] = {
    "chúng tôi": "we", "chúng ta": "we", "anh ấy": "he", "ông ấy": "he", "cô ấy": "she", "chị ấy": "she",
    "bà ấy": "she",
}  # fmt: skip
KIN_LATIN = frozenset(
    "mother mom mum father dad parents brother sister son daughter wife husband partner girlfriend "
    "boyfriend friend boss colleague coworker grandmother grandma grandfather grandpa aunt uncle cousin "
    "neighbour neighbor kid kids child children baby "
    "madre mamá padre papá padres hermano hermana hermanos hijo hija hijos esposa esposo marido novio novia "
    "amigo amiga jefe jefa abuela abuelo tío tía primo prima "
    "mẹ bố cha vợ chồng con anh chị em ông bà sếp".split()
)
PEOPLE_HAN: tuple[tuple[str, str], ...] = (
    ("我们", "we"), ("我們", "we"), ("咱们", "we"), ("咱們", "we"), ("他们", "they"), ("他們", "they"),
    ("她们", "they"), ("她們", "they"), ("你们", "you"), ("你們", "you"), ("我", "self"), ("他", "he"),
    ("她", "she"), ("你", "you"),
)  # fmt: skip
# The speaker joined with another person ("my wife and I", "mi hermano y yo", "tôi và vợ", 我和老婆,
# 妻と私, ผมกับภรรยา): the statement is then also about the speaker. Latin scripts: the speaker's
# word on one side of the conjunction (the other side is read in ``restate``); the others: phrases.
SELF_JOIN_LATIN = frozenset("i me yo tôi toi mình minh tớ".split())
JOIN_LATIN = frozenset("and y e &".split())
JOIN_VI = frozenset("và va với voi cùng cung".split())
POSSESSIVE_LATIN = frozenset("my his her their our mi mis su sus".split())
SELF_JOIN_PHRASES: tuple[str, ...] = (
    "我和", "和我", "我跟", "跟我", "我与", "与我", "我與", "與我", "我同", "同我",
    "私と", "と私", "わたしと", "とわたし", "僕と", "と僕", "俺と", "と俺",
    "ผมกับ", "กับผม", "ฉันกับ", "กับฉัน", "ผมและ", "และผม", "ฉันและ", "และฉัน", "ดิฉันกับ", "กับดิฉัน",
)  # fmt: skip
KIN_HAN: tuple[str, ...] = (
    "妈妈", "媽媽", "母亲", "母親", "爸爸", "父亲", "父親", "父母", "爸媽", "哥哥", "姐姐", "弟弟", "妹妹",
    "儿子", "兒子", "女儿", "女兒", "老婆", "妻子", "太太", "老公", "丈夫", "先生", "男朋友", "女朋友", "朋友",
    "老板", "老闆", "同事", "奶奶", "爷爷", "爺爺", "外婆", "外公", "姥姥", "阿姨", "叔叔", "舅舅", "表哥",
    "表姐", "邻居", "鄰居", "孩子", "小孩", "宝宝", "寶寶",
)  # fmt: skip
PEOPLE_JA: tuple[tuple[str, str], ...] = (
    ("私たち", "we"), ("我々", "we"), ("彼女", "she"), ("彼ら", "they"), ("彼", "he"), ("あなた", "you"),
    ("私", "self"), ("わたし", "self"), ("僕", "self"), ("ぼく", "self"), ("俺", "self"), ("うち", "self"),
)  # fmt: skip
KIN_JA: tuple[str, ...] = (
    "両親", "母", "父", "兄", "姉", "弟", "妹", "息子", "娘", "夫", "妻", "主人", "旦那", "彼氏", "友達",
    "上司", "同僚", "祖母", "祖父", "子供", "子ども",
)  # fmt: skip
KIN_JA_FALSE: tuple[str, ...] = ("大丈夫", "丈夫")
PEOPLE_TH: tuple[tuple[str, str], ...] = (
    ("พวกเรา", "we"), ("เรา", "we"), ("ฉัน", "self"), ("ผม", "self"), ("ดิฉัน", "self"), ("หนู", "self"),
    ("เขา", "he"), ("เธอ", "she"), ("คุณ", "you"),
)  # fmt: skip
KIN_TH: tuple[str, ...] = (
    "พ่อแม่", "แม่", "พ่อ", "พี่ชาย", "พี่สาว", "น้องชาย", "น้องสาว", "ลูกชาย", "ลูกสาว", "ลูก", "ภรรยา",
    "สามี", "แฟน", "เพื่อน", "เจ้านาย", "ปู่", "ยาย",
)  # fmt: skip
PEOPLE_TH_FALSE: tuple[str, ...] = ("ภูเขา", "ปีนเขา", "คุณภาพ", "คุณค่า", "แม่น้ำ", "ลูกค้า")

# Comparisons and preferences: the order of their content words carries the fact.
COMPARE_LATIN: tuple[str, ...] = (
    "than", "over", "rather", "instead", "versus", "vs", "más que", "menos que", "en vez de", "en lugar de",
    "antes que", "hơn", "thay vì", "prefer", "prefers", "preferred", "prefiero", "prefiere", "prefieres",
    "preferimos", "prefieren",
)  # fmt: skip
COMPARE_SUBSTR: tuple[str, ...] = (
    "比", "而不是", "更喜欢", "更喜歡", "宁愿", "寧願", "より", "の方が", "ほうが", "กว่า", "แทน",
)  # fmt: skip

# Spanish function words (left out of the content words, beside the English stopwords).
STOPWORDS_ES = frozenset(
    "el la los las un una unos unas de del a al en con por para y e o u que es son soy eres somos sea ser "
    "está están estoy estás estamos estar me te se le les lo nos os muy también pero si sí".split()
)
# Vietnamese typed without accents, read only in a statement that looks like it (``restate._vi_bare``).
# Without its marks a syllable is several words; these lists only add reasons *not* to fold, so a
# word read wrongly costs a duplicate row, never a lost fact. Left out: "chớ"/"chả" ("cho" is "for",
# "cha" is "father") among the negations. Built from the accented tables by taking the marks off.
VI_BARE_HINTS = frozenset("toi khong chua cua duoc nguoi chung nhung voi thich dang roi nua cung".split())
NEG_VI_BARE = frozenset("khong chua chang dung".split())
PEOPLE_VI_BARE: dict[str, str] = {
    "chung toi": "we", "chung ta": "we", "anh ay": "he", "ong ay": "he", "co ay": "she", "chi ay": "she",
    "ba ay": "she", "ho": "they", "ban": "you",
}  # fmt: skip

# Vietnamese fillers typed without accents, dropped only from a statement that reads as such: the
# phrases that cannot be anything else (bây giờ, hiện tại, thực ra …), and "still" / "-ing" (vẫn, đang)
# only right after the subject, since the same letters are content elsewhere ("van hoc", văn học).
# Left out: the sentence-final particles (nhé, nha, đó), whose bare letters are also words (nhẹ, nhà, đỏ).
VI_BARE_FILLERS = re.compile(r"\b(?:bay gio|hien tai|hien nay|thuc ra|that ra|thuc su|that su)\b")
VI_BARE_AUX = re.compile(
    r"\b(toi|minh|ban|em|anh|chi|ho|chung toi|chung ta|anh ay|co ay|chi ay|ong ay|ba ay)\s+(?:van|dang)(?:\s+dang)?\b"
)

# Vietnamese function words and classifiers.
STOPWORDS_VI = frozenset("là ở của và với một các những cái thì mà được bị có cho vào ra đi này kia ấy".split())


def _nfkc_tables() -> None:
    """Store every word of the tables as the rule reads text: NFKC (Thai "ำ" is two code points
    after it)."""
    import unicodedata

    def n(s: str) -> str:
        return unicodedata.normalize("NFKC", s)

    g = globals()
    for name, value in list(g.items()):
        if name.startswith("_") or not name.isupper():
            continue
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            g[name] = tuple(n(v) for v in value)
        elif isinstance(value, tuple) and all(isinstance(v, tuple) for v in value):
            g[name] = tuple((n(a), b) for a, b in value)
        elif isinstance(value, frozenset):
            g[name] = frozenset(n(v) for v in value)
        elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
            g[name] = {n(k): v for k, v in value.items()}
        elif isinstance(value, re.Pattern):
            g[name] = re.compile(n(value.pattern), value.flags)


_nfkc_tables()
