"""Look-alike characters, pure: the one fold both text guards (``credentials``, ``instructions``)
match on, so that a rule written once in plain Latin or Simplified Chinese also reads the same
words written with look-alikes.

- :func:`canonical`: what a model would see - NFKC (fullwidth ``Ｆｒｏｍ``, ligatures, Roman numeral
  ``Ⅰ``, mathematical letters), invisible and direction characters removed (:func:`text.neutralize`).
- :func:`fold`: :func:`canonical`'s output with every character in :data:`FOLD` replaced by the one
  its rules are written in, **one character for one** (so a span found on the folded text is the same
  span of the canonical text - the credential redaction relies on it):

  * Cyrillic, Greek, Armenian and Latin-extension letters that render like a Latin letter
    (``а е о р с у х ѕ і ј ԁ ɡ ν ο``...) become that letter - "ѕуѕtеm:" reads as "system:";
  * Latin letters with accents, and the small capitals, become the plain letter (``ï`` -> ``i``,
    ``ñ`` -> ``n``, ``đ`` -> ``d``, ``ɪɢɴᴏʀᴇ`` -> ``ignore``): a reader reads "ïgnore" as "ignore", and
    people type Vietnamese and Spanish without their accents ("mat khau", "contrasena"). A rule is
    folded the same way, so one written "mật khẩu" reads both spellings;
  * Traditional Chinese characters that the rules' Simplified words use become their Simplified
    form (現→现, 進→进, 開發→开发, 密碼→密码...). The table holds only the characters of words the rules
    are written with, plus the common words around them; it is not a general converter (OpenCC is
    not a dependency), so a Traditional word outside it is matched only if a rule lists it itself.
- :func:`closed_up`: text spelled out with gaps ("忽 略 指 令", "パ ス ワ ー ド", "i g n o r e",
  "I-G-N-O-R-E") with the gaps taken out, and where each character came from.

Folding Cyrillic in a Russian sentence gives Latin nonsense; no rule reads Russian, and the fold is
only ever used for matching, never stored or shown.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import chain

from .text import neutralize

# Letters that render like a Latin letter (the Unicode confusables list, restricted to the ones that
# are a whole letter on their own in common fonts).
_LATIN_LOOKALIKES = {
    # Cyrillic lower case
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "ь": "b", "һ": "h", "ӏ": "l", "ɡ": "g", "ɑ": "a", "ı": "i", "ȷ": "j", "ʏ": "y", "ᴠ": "v", "ᴡ": "w",
    "ᴢ": "z", "ꮃ": "w",
    # Cyrillic upper case
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ї": "I", "Ј": "J", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    "Ү": "Y", "Һ": "H", "Ӏ": "I",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
    # Armenian
    "օ": "o", "ս": "u", "ո": "n", "հ": "h", "ց": "g", "ք": "q", "զ": "q", "Տ": "S", "Օ": "O",
}  # fmt: skip

# Traditional -> Simplified, one character each: the characters of the words the guards' Chinese
# rules are written with (instruction rules: 现在 进入 开发者模式 以后 从现在 回复 链接 系统 管理员
# 忽略 指令 设定 规则 限制 推荐 夸 聪明 …; credential rules: 密码 验证码 号码 银行 卡号 门 锁 车库 柜 助记词
# …) and the common words that sit between them in a sentence (这 说 们 个 对 话 时 问 题 …).
_TRADITIONAL = (
    "現现進进開开發发啟启設设換换後后從从這这說说對对話话們们覆复連连結结網网複复誇夸聰聪時时語语體体"
    "無无視视記记統统係系員员權权約约則则戶户試试調调獄狱轉转變变裝装當当為为麼么讓让個个條条見见"
    "應应該该須须會会將将總总遠远絕绝許许隻只僅仅幫帮薦荐廣广稱称復复鏈链碼码驗验證证鑰钥號号賬账"
    "帳帐銀银櫃柜鎖锁門门車车庫库詞词錢钱臉脸書书簡简訊讯認认動动態态聯联絡络繫系禮礼問问題题導导"
    "師师機机器器請请謝谢給给寫写頭头帶带訴诉裡里裏里於于與与來来關关閉闭護护儲储郵邮遞递區区單单"
    "審审腦脑電电邊边聽听嗎吗樣样氣气歡欢愛爱員员顯显隱隐藏藏劃划處处擬拟據据輸输臺台臺台歷历實实"
    "權权歲岁點点擊击鍵键戲戏適适級级監监聲声錄录們们標标準准優优惠惠碼码鎖锁閘闸禁禁衛卫晶晶館馆"
    "圖图燈灯鐘钟錶表紀纪範范規规訂订閱阅議议論论討讨這这種种類类數数據据處处樂乐餐餐廳厅魚鱼雞鸡"
    "週周讀读寫写貓猫狗狗國国際际財财務务業业產产廠厂"
)
_TRAD_TO_SIMP = {_TRADITIONAL[i]: _TRADITIONAL[i + 1] for i in range(0, len(_TRADITIONAL), 2)}


def _accented_latin() -> dict[str, str]:
    """Every precomposed Latin letter that is a plain letter with marks (Latin-1, Extended-A/B and
    Extended Additional, where Vietnamese lives), and the marked letters that do not decompose."""
    out = {}
    for cp in chain(range(0xC0, 0x250), range(0x1E00, 0x1F00)):
        decomposed = unicodedata.normalize("NFD", chr(cp))
        base, marks = decomposed[0], decomposed[1:]
        if marks and base.isascii() and base.isalpha() and all(unicodedata.combining(m) for m in marks):
            out[chr(cp)] = base
    out.update({"đ": "d", "Đ": "D", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "ħ": "h", "ŧ": "t", "ƀ": "b"})
    return out


_SMALL_CAPITALS = {
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j",
    "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t", "ᴜ": "u",
}  # fmt: skip

_UNACCENT: dict[int, str] = {ord(k): v for k, v in _accented_latin().items()}


# The digits and symbols written for letters ("p@ssw0rd", "1gn0re"): both guards read a word with
# them through this one table (each decides which words to read so).
LEET = str.maketrans(
    {"@": "a", "4": "a", "$": "s", "5": "s", "0": "o", "1": "i", "!": "i", "|": "l", "3": "e", "7": "t", "8": "b"}
)
LEET_SYMBOLS = frozenset("@4$501!|378")


def unaccented(text: str) -> str:
    """``text`` with accents taken off its Latin letters only ("mañana" -> "manana", "hôm qua" ->
    "hom qua"), one character for one: for rules that read words typed without accents."""
    return text.translate(_UNACCENT)


FOLD: dict[int, str] = {
    ord(k): v
    for k, v in {**_accented_latin(), **_SMALL_CAPITALS, **_LATIN_LOOKALIKES, **_TRAD_TO_SIMP}.items()
    if k != v
}

# Marks left on a Latin letter after NFKC, which has no precomposed letter for them: strike-through
# (U+0336), overlays (U+0338), stacked marks. A reader reads the letter.
_MARKS_ON_LATIN = re.compile(
    r"(?<=[A-Za-z\u00c0-\u024f\u1e00-\u1eff])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+"
)


def canonical(text: str) -> str:
    """What a model would see of ``text``: NFKC, invisible and direction characters removed, and the
    marks NFKC could not join to a Latin letter dropped ("y̶o̶u̶" is "you")."""
    out = neutralize(unicodedata.normalize("NFKC", str(text or "")))
    return out if out.isascii() else _MARKS_ON_LATIN.sub("", out)


def fold(text: str) -> str:
    """``text`` (already :func:`canonical`) with look-alike letters read as Latin and the Traditional
    characters of :data:`FOLD` read as Simplified, one character for one (the length is kept)."""
    return text.translate(FOLD)


def rule(pattern: str) -> str:
    """A rule's regular expression in the form it is matched against: its Traditional characters and
    look-alikes folded as the text is (so a rule written 無視 matches text that read 無視 before the fold),
    and Thai SARA AM decomposed as NFKC decomposes it in the text (ำ -> ํา)."""
    return fold(pattern.replace("\u0e33", "\u0e4d\u0e32"))


def skeleton(text: str) -> str:
    """:func:`fold` of :func:`canonical`: the form both guards match their rules on."""
    return fold(canonical(text))


# Characters of scripts written without spaces between words, and the gaps put between them to
# hide a word ("忽 略", "密-码", "パ・ス"). A Latin word spelled out letter by letter ("i g n o r e",
# "I-G-N-O-R-E", "p.a.s.s"): three or more single letters, each followed by one gap character.
# Both are consuming matches with no repeat inside a look-around, so a long text costs linear time.
_CLOSE = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_GAP = re.compile(rf"(?<=[{_CLOSE}])[ \t\-_.·・]{{1,8}}(?=[{_CLOSE}])")
_SPELLED = re.compile(r"(?<![A-Za-z])[A-Za-z](?:[ \-_.·][A-Za-z]){2,}(?![A-Za-z])")


def closed_up(text: str) -> tuple[str, list[int]]:
    """``text`` with the gaps inside spelled-out words removed, and for each character kept its index
    in ``text`` (so a span found on the result is mapped back). The text itself when it has none."""
    cut = [m.span() for m in _CJK_GAP.finditer(text)]
    for m in _SPELLED.finditer(text):
        cut += [(k, k + 1) for k in range(m.start() + 1, m.end(), 2)]
    if not cut:
        return text, list(range(len(text)))
    keep = [True] * len(text)
    for a, b in cut:
        for i in range(a, b):
            keep[i] = False
    index = [i for i, k in enumerate(keep) if k]
    return "".join(text[i] for i in index), index
