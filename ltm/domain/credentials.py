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
invisible characters removed, look-alike letters, accents on Latin letters and Traditional characters
folded by the shared :mod:`confusables` fold (one character for one, so spans found on the folded text
are the text's; "mat khau" and "contrasena" meet the rules written "mật khẩu" and "contraseña"),
leetspeak keywords folded (``p@ssw0rd``), and spelled-out keywords read with their gaps closed
("密 码 是 x", "p a s s w o r d is x": :func:`confusables.closed_up` maps the value's span back).

Seven languages (en, zh_Hans, zh_Hant through the fold, ja, vi, th, es): keyword then value
(with a question mark between: "My Netflix password? It's x"), value then keyword ("marigold42 is
my wifi password"), a change ("cambié mi contraseña a x", "パスワードを x に変更"), spaced digits
("4 7 2 9"), a bare "code" before three or more digits unless it names what is not secret (postal,
zip, promo …), seed phrases after their name, and card numbers (Luhn and a card network's prefix).
What each language does and does not catch: ``docs/review.md``. Measured per language on
``tests/data/credentials_{tuning,heldout}.tsv`` (and the first round's ``benchmarks/data`` tables)
by ``python -m benchmarks.credentials``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from . import confusables


def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Every rule is compiled in the form the text is matched in (:func:`confusables.rule`)."""
    return re.compile(confusables.rule(pattern), flags)


REDACTED = "[redacted]"

_SECRET_PATTERNS = [
    _compile(p, re.I)
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
_TOKEN_RUN = _compile(r"[A-Za-z0-9_\-+/=]{24,}")

_KW_EN = (
    r"pass(?: ?word|wd|phrase|code|key)?s?|pw|pwd|pins?(?: ?codes?| numbers?)?|secrets?|tokens?|"
    r"api[ _-]?keys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?|wi-?fi keys?|credentials?|"
    r"otp|one[- ]time (?:codes?|passwords?|pins?)|cvv2?|cvc2?|"
    r"(?:verification|auth(?:entication)?|security|login|2fa|mfa|sms|confirmation|recovery|backup|unlock|"
    r"access|door|alarm|safe|lock|garage|gate|locker|keypad|key ?pad|building|entry|padlock|house|gym) "
    r"(?:codes?|pins?|combinations?|combos?)"
)
_KW_ZH = (
    r"密码|口令|验证码|校验码|动态码|短信码|令牌|密钥|秘钥|私钥|安全码|取件码|支付码|激活码|提取码|授权码|"
    r"PIN码|pin码|识别码|暗号|门禁码"
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
    r"(?:\s*[:：])?|[:：=]|->|=>|(?:set|changed|reset|updated)\s+to|to|as|"
    r"[?？](?:\s*(?:it's|it is|its|that's|that is|it was|is)\b)?)\s*"  # "My Netflix password? It's …"
)
_CONN_ZH = (
    r"\s*(?:是|为|：|:|=|就是|都是|设为|设置为|设成了?|设置成了?|改成了?|改为|换成了?|叫|[？?]\s*(?:是|就是)?)"
    r"\s*[:：]?\s*"
)
_QUOTE_OPEN = "\"'“‘「『(（<"
_VALUE_END = "\"'”’」』)）>。，,;；、"
# A value: a run of non-space characters, or single digits spaced out ("4 7 2 9").
_SPACED_DIGITS = r"\d(?: \d){2,11}(?![ ]?\d)"
# A value in quotes may hold spaces (a passphrase: "my password is 'blue moon rising'"): all of it
# up to the closing quote.
_QUOTED = r"(?<=[\"'“‘「『])[^\"'”’」』\n]{2,60}(?=[\"'”’」』])"
_VALUE = rf"[{re.escape(_QUOTE_OPEN)}]?(?P<v>{_QUOTED}|{_SPACED_DIGITS}|[^\s{re.escape(_VALUE_END)}]{{2,80}})"
# A keyword may close a quote before its connector: a JSON key ({"password": "x"}).
_KEY_QUOTE = r"[\"'”’」]?"
_KW_SEP_EN = _compile(rf"{_EN}{_GAP_EN}{_KEY_QUOTE}{_CONN_EN}{_VALUE}", re.I)
_GAP_ZH = r"[^\s，。,；;！？!?]{0,4}?"
_KW_SEP_ZH = _compile(rf"(?:{_KW_ZH}){_GAP_ZH}{_CONN_ZH}{_VALUE}", re.I)
# A keyword right before a value holding a digit ("PIN 4821", "验证码583920").
_KW_DIGITS = _compile(
    rf"(?:{_EN}|{_KW_ZH})\s*[#:：]?\s*[\"'“‘「]?(?P<v>(?=[^\s]{{0,80}}\d)[A-Za-z0-9][\w\-.#@!$%^&*+=/]{{2,79}})", re.I
)
_KW_ONLY = _compile(rf"(?:{_KW_EN})", re.I)

# Japanese, Vietnamese, Thai and Spanish: the words for a password, a PIN and the codes that open
# something (Chinese above: Traditional text is read through the shared fold, 密碼 -> 密码).
_KW_JA = (
    r"パスワード|ぱすわーど|パスコード|暗証番号|暗証コード|認証コード|確認コード|セキュリティコード|ワンタイムパスワード|キーコード|"
    r"(?:(?<![A-Za-z])PIN(?![A-Za-z])|ピン)(?:コード|番号)?|(?:ドア|玄関|ガレージ|金庫|ロッカー|オートロック|門)の?(?:コード|暗証番号)"
)
_KW_VI = (
    r"mật khẩu|mk|pass(?:word)?|mật mã|mã pin|mã otp|"
    r"mã (?:xác nhận|xác minh|xác thực|bảo mật|mở khóa|truy cập|két(?: sắt)?|"
    r"cửa(?: nhà)?|cổng|gara|tủ(?: đồ)?|khóa|báo động)"
)
_KW_TH = (
    r"รหัสผ่าน|พาสเวิร์ด|รหัส\s?(?:PIN|ATM|OTP)|รหัสพิน|รหัส(?:ประตู|โรงรถ|ล็อกเกอร์|ล็อคเกอร์|ตู้เซฟ|เซฟ|ยืนยัน|"
    r"ความปลอดภัย|ปลดล็อก|เข้าบ้าน|ไวไฟ|wifi|บัตร)"
)
_KW_ES = (
    # a bare "clave" only as someone's and then said ("mi clave es x"): "la clave es la paciencia" is not one
    r"contraseñas?|pin|(?:(?<=mi )|(?<=tu )|(?<=su )|(?<=nuestra ))claves?(?= {0,3}[:=]| {1,3}es\b)|"
    r"claves? (?:del? (?:wifi|wi-fi|acceso|red|internet|correo|banco|cajero|tarjeta)|secretas?|"
    r"de mi [a-zñ]+)|código (?:de |del )(?:mi |la |el |tu |su )?(?:puerta|portal|garaje|alarma|caja fuerte|"
    r"taquilla|candado|casillero|edificio|entrada|verificación|seguridad|acceso|desbloqueo|confirmación)"
)
# Vietnamese and Spanish words stand between spaces: not "pin" in "spin" or "opinion" (Unicode letters).
_LB, _RB = r"(?<![^\W\d_])", r"(?![^\W\d_])"
_KW_VI = rf"{_LB}(?:{_KW_VI}){_RB}"
_KW_ES = rf"{_LB}(?:{_KW_ES}){_RB}"
# A value in these languages: a token in Latin letters and digits, or spaced single digits.
_ML_VALUE = (
    rf"[{re.escape(_QUOTE_OPEN)}]?(?P<v>{_QUOTED}|{_SPACED_DIGITS}|[A-Za-z0-9][^\s{re.escape(_VALUE_END)}]{{1,79}})"
)
_ML_TOKEN = r"(?<![\w@.])(?P<v>(?=[^\s]{0,80}\d)[A-Za-z0-9][\w\-.#@!$%^&*+=/]{2,60})"  # value-first: holds a digit
_WORDS = r"(?:\s+[^\s,.;:?!¿¡]+){0,4}?"  # a short qualifier between keyword and connector
_ML_PATTERNS = [
    _compile(p, re.I)
    for p in (
        # keyword, qualifier, connector, value ("Wi-Fiのパスワードは sakura2024", "mật khẩu wifi là x")
        rf"(?:{_KW_JA})[^\s。！？!?]{{0,6}}?\s*(?:は|:|：|=|って|[？?])\s*{_ML_VALUE}",
        # a word connector ends its word: "password la|nguage" is no "là" (là folds to "la")
        rf"(?:{_KW_VI}){_WORDS}\s*(?:là{_RB}|:|=|[?？]\s*(?:là{_RB})?)\s*{_ML_VALUE}",
        rf"(?:{_KW_TH})[^\n?？!.]{{0,20}}?\s*(?:คือ|เป็น|:|=|[?？]\s*(?:คือ)?)\s*{_ML_VALUE}",
        rf"(?:{_KW_ES}){_WORDS}{_KEY_QUOTE}\s*(?:(?:es|era|será){_RB}|:|=|[?？]\s*(?:es{_RB})?)\s*{_ML_VALUE}",
        # keyword right before a value ("認証コード 804512", "รหัส OTP 662913")
        rf"(?:{_KW_JA}|{_KW_VI}|{_KW_TH}|{_KW_ES})\s*[#:：]?\s*(?P<v>{_SPACED_DIGITS}|(?=[^\s]{{0,80}}\d)[A-Za-z0-9][\w\-.#@!$%^&*+=/]{{2,79}})",
        # a change of it ("パスワードを x に変えた", "đổi mật khẩu thành x", "cambié mi contraseña a x")
        rf"(?:{_KW_JA})を\s*{_ML_VALUE}\s*に",
        rf"(?:đổi|thay|đặt)\s+(?:{_KW_VI}){_WORDS}\s+thành\s+{_ML_VALUE}",
        rf"(?:cambi[ée]|cambiado|puse|puesto|establec[íi]|configur[ée])\s+(?:[^\s]+\s+){{0,2}}?(?:{_KW_ES}){_WORDS}"
        rf"\s+(?:a|por)\s+{_ML_VALUE}",
        # value first ("marigold42 is my wifi password", "qwe123456是我QQ的密码", "x là mật khẩu …")
        rf"{_ML_TOKEN}\s*(?:(?:is|was|=|-|–|—|:)\s*(?:(?:that's|that is|it's|it is)\s+)?|(?:that's|that is|it's)\s+)"
        rf"(?:my|the|our|his|her|your|mum's|mom's|dad's)\s+(?:[\w'-]+\s+){{0,3}}?(?:{_KW_EN})(?![A-Za-z])",
        rf"{_ML_TOKEN}\s*(?:是|就是)\s*(?:[^\s，。,]{{0,8}}?\s*){{0,3}}?(?:{_KW_ZH})",
        rf"{_ML_TOKEN}\s*(?:が|は)\s*[^\s。]{{0,10}}?(?:{_KW_JA})",
        rf"{_ML_TOKEN}\s+là\s+(?:{_KW_VI})",
        rf"{_ML_TOKEN}\s*(?:คือ|เป็น)\s*(?:{_KW_TH})",
        rf"{_ML_TOKEN}\s+(?:es|era)\s+(?:mi|la|el|tu|su|nuestra)\s+(?:{_KW_ES})",
    )
]
# A bare "code" (code, código, mã, รหัส, コード) before a value of three or more digits: a door or
# locker code, unless it names what is not secret ("postal code", "código postal", "mã bưu điện").
_WEAK_CODE = _compile(
    rf"(?:{_LB}(?P<k>code|código|clave|mã){_RB}|(?P<k2>รหัส|コード))(?:\s+(?:for|of|to|de|del|của)\s+(?:[\w'-]+\s+){{0,2}}?[\w'-]+)?"
    rf"\s*(?:is|was|es|era|là|คือ|は|[#:：=,])?\s*(?P<v>{_SPACED_DIGITS}|(?=(?:[^\s]{{0,30}}?\d){{3}})[A-Za-z0-9][\w\-]{{2,30}})",
    re.I,
)
_NOT_SECRET_BEFORE = _compile(
    r"(?:postal|zip|post|area|country|dial(?:ling)?|dress|promo(?:tional)?|discount|coupon|voucher|gift|"
    r"referral|invite|invitation|product|item|bar|qr|error|status|exit|tracking|booking|reservation|reference|"
    r"flight|order|customer|client|member|employee|student|course|class|tax|sort|swift|bank|branch|routing|meeting|zoom|"
    r"airport|source|machine|morse|colou?r|zone|region|style|sku|ean|upc|language|city|station|school|"
    r"郵便|商品|バー|エラー|割引|クーポン|招待|紹介|国|市外|ソース|ドレス|プロモ|カラー|色)[\s\-]*の?$",
    re.I,
)
_NOT_SECRET_AFTER = _compile(
    r"\s*(?:postal|de (?:barras|descuento|vestimenta|producto|área|país|error|promoción|referido|invitación|"
    r"cupón|reserva|pedido|seguimiento)|promocional|bưu|giảm giá|khuyến mãi|sản phẩm|vạch|qr|đơn hàng|số thuế|"
    r"vùng|lỗi|nhân viên|sinh viên|giới thiệu|mời|màu|chuyến bay|đặt chỗ|hàng|tỉnh|quốc gia|"
    r"ไปรษณีย์|สินค้า|นักศึกษา|นักเรียน|พนักงาน|ส่วนลด|โปรโมชั่น|ประจำตัว|บัตรประชาชน|ข้อผิดพลาด|สี|วิชา|"
    r"เที่ยวบิน|จอง|สาขา|ประเทศ|พื้นที่|แนะนำ|เชิญ|คูปอง|พัสดุ|review|of conduct|name)",
    re.I,
)
_UNIT_AFTER = _compile(
    r"\s*(?:lines?|times?|characters?|chars|digits?|letters?|words?|%|percent|ms|seconds?|minutes?|hours?|days?|"
    r"years?|kb|mb|gb|caracteres|dígitos|ký tự|chữ số|ตัว|หลัก|文字|桁|位)\b",
    re.I,
)
# A wallet seed phrase: after its name, a run of 12 to 24 short lower-case words.
_SEED = _compile(
    r"(?:(?:seed|recovery|backup|mnemonic|secret|wallet)\s(?:phrase|words|sentence)|mnemonic|助记词|"
    r"シードフレーズ|リカバリーフレーズ|復元フレーズ|ニーモニック|cụm từ (?:hạt giống|khôi phục|bí mật)|"
    r"วลี(?:กู้คืน|ลับ)|frase (?:semilla|de recuperación|secreta)|palabras (?:de recuperación|semilla))"
    r"[^\n]{0,24}?(?<![A-Za-z])(?P<v>[a-z]{3,8}(?:[ ,]+[a-z]{3,8}){11,23})(?![A-Za-z])",
    re.I,
)
# "no password", "without a code", 没有密码: a keyword said to be absent has no value after it.
_NEGATED = _compile(
    r"(?:\bno|\bwithout(?: a)?|\b(?:doesn't|does not|don't|do not) (?:need|have|require) a|\bsin|không có|"
    r"không cần|ไม่มี|没有|不需要|无|不用)\s*$",
    re.I,
)

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
    open free none unlocked maybe yes sure nope idk
    muy demasiado la el mi tu su un una lo sí si correcta incorrecta segura fácil difícil corta larga nueva
    vieja secreta igual misma otra abierto abierta libre
    quá rất không sai đúng mới cũ ngắn dài gì đâu của một cái vẫn đã
    """.split()
)
_NOT_VALUES = frozenset(confusables.fold(w) for w in _NOT_VALUES)  # matched on the folded text
_NOT_VALUES_ZH = _compile(
    r"^(?:什么|多少|啥|哪|几|怎么|如何|不|没|错|对|正确|空|很|太|挺|真|忘|丢|被|要|需要|已经|还|也|都|"
    r"我的生日吗|吗|呢|了|的|一样|相同|同样|一个|这个|那个|多|少|长|短|复杂|简单|安全|弱|强)"
)
# After a plain-word value: the end of a clause, a word that starts the next one, or the particle a
# language ends a sentence with (ja です/だよ/ね, th ครับ/ค่ะ/นะ, zh 哦/吧/呢, vi đó/nhé/ạ, es eh/vale).
# Vietnamese ạ folds to "a": read only at the very end, where English puts no article.
# A password's rule given as a count ("8位数字", "10文字以上", "4桁"): a length, not a value.
_COUNT_ZH_JA = _compile(r"^\d{1,3}\s*(?:位|個|个|字|字符|文字|桁|ケタ|けた|码|碼)")

# An account written as a login pair, "user / password": after an account word ("spotify login:
# mark@mail.com / blue-river7", 微信账号 x / y, アカウント: x / y, "tài khoản: x / y") or after an email
# address alone. The second half is the value when it mixes letters with digits or symbols (a pair
# of names, "ann / bob", a year, "savings / 2024", or a second address is no password).
_ACCOUNT = (
    r"log ?in|sign ?in|account|acct|user(?:name)?|usuario|cuenta|tài khoản|账号|帐号|賬號|帳號|账户|帳戶|"
    r"アカウント|ログイン|ユーザー|บัญชี|ล็อกอิน"
)
_LOGIN_PAIR = _compile(
    rf"(?:(?:{_ACCOUNT})[^\n/]{{0,40}}?[:：\s]\s*(?P<u>[^\s/]{{2,64}})|(?P<e>[\w.+\-]{{1,64}}@[\w\-]{{1,64}}\.[\w.]{{2,24}}))"
    r"\s+/\s+(?P<v>[^\s/@]{4,64}?)(?=$|\s|[,;!?，。！？]|\.(?:\s|$))",
    re.I,
)
# A first half that names a login: an address, a handle with a digit or a separator ("wang88",
# "amy_lin"), or a device's default user. Only after one is a password of letters alone or digits
# alone read as the second half ("admin / kettle"; "savings / checking" and "1200 / 1500" are no login).
_DEFAULT_USERS = frozenset("admin administrator root user guest pi ubnt sa test demo support".split())


# A plain-word password said first ("sunshine is my password", "girasol es mi contraseña",
# "sunflower 是我的密码") or as what one uses ("I use mangotree as my password", 我用 x 当密码,
# "パスワードに x を使っています"): a single word in Latin letters, at the start of its clause, then
# the copula and a password word; in English and Spanish the clause must end after the keyword (so
# "Bitwarden is my password manager" and "love is my password to happiness" stay text).
_WORD = r"(?<![\w@.\-])(?P<v>[A-Za-z][A-Za-z0-9_\-]{2,40})(?![\w@])"
_PW_EN = r"pass(?: ?word|code|phrase)|pin"
_PW_ANY = rf"{_PW_EN}|contraseña|mật khẩu|mk|密码|パスワード|รหัสผ่าน|รหัส"
_START = r"(?:^|[.!?。！？;；:：,，]\s*|\b(?:and|but|so|y|pero|và|nhưng)\s+)"
# The clause ends after the keyword (English, Spanish): punctuation, the end, or a word that starts
# the next clause or closes this one.
_ENDS_EN = r"(?=\s{0,3}(?:$|[.,!?;:)]|\s(?:and|but|so|lol|btw|fyi|now|too|again|everywhere|for)\b))"
_ENDS_ES = r"(?=\s{0,3}(?:$|[.,!?;:)]|\s(?:y|pero|eh|vale|para)\b|\s(?:del?|para)\s))"
_VALUE_FIRST = [
    _compile(p, re.I)
    for p in (
        rf"{_START}{_WORD}\s+(?:is|was)\s+(?:my|our|the|his|her|their)\s+(?:[\w'-]+\s+){{0,2}}?(?:{_PW_EN})s?\b{_ENDS_EN}",
        rf"{_START}{_WORD}\s+(?:es|era)\s+(?:mi|la|tu|su|nuestra)\s+(?:[\w-]+\s+){{0,2}}?contraseña\b{_ENDS_ES}",
        rf"{_START}{_WORD}\s+là\s+(?:mật khẩu|mk|pass)\b",
        rf"{_WORD}\s*(?:是|就是)\s*(?:我|我们|你|他|她)?(?:的)?[^\s，。,]{{0,6}}?密码(?:\s*$|[，。,.!！?？])",
        rf"{_WORD}\s*(?:が|は)\s*[^\s、。]{{0,6}}?パスワード(?:です|だ|だよ)?(?:\s*$|[、。！!.])",
        rf"{_WORD}\s*(?:คือ|เป็น)\s*รหัส(?:ผ่าน)?",
        rf"\b(?:use|used|using)\s+{_WORD}\s+as\s+(?:my|our|the|a|his|her)\s+(?:[\w'-]+\s+){{0,2}}?(?:{_PW_EN})s?\b{_ENDS_EN}",
        rf"\b(?:uso|usamos|usé|utilizo)\s+{_WORD}\s+como\s+(?:mi\s+|la\s+)?contraseña{_ENDS_ES}",
        rf"(?:dùng|sử dụng|lấy)\s+{_WORD}\s+(?:làm|là)\s+(?:mật khẩu|mk|pass)",
        rf"用\s*{_WORD}\s*(?:当|做|作为|来当)\s*[^\s，。,]{{0,6}}?密码",
        rf"パスワード(?:に|として)\s*{_WORD}\s*を",
        rf"ใช้\s*{_WORD}\s*เป็นรหัส(?:ผ่าน)?",
    )
]


_PW_PRESENT = _compile(rf"(?:{_PW_ANY})", re.I)


def _value_first_spans(text: str) -> list[tuple[int, int]]:
    if QUICK_CHECKS and not _PW_PRESENT.search(text):
        return []
    return [
        m.span("v")
        for p in _VALUE_FIRST
        for m in p.finditer(text)
        if m.group("v").lower() not in _NOT_VALUES and m.group("v").lower() not in _PW_WORDS
    ]


# The words a value-first sentence starts with when it says no password: the keyword's own words,
# pronouns, and the abstract nouns of a saying ("patience is the password", "music is my password").
_PW_WORDS = frozenset(
    "password passwords passcode pin pins wifi mk pass code mine yours ours theirs hers "
    "love patience music courage trust respect kindness hope faith family friendship knowledge time money "
    "honesty silence humor humour".split()
)


def _names_login(user: str) -> bool:
    if "@" in user or user.lower() in _DEFAULT_USERS:
        return True
    return any(c.isalpha() for c in user) and any(c.isdigit() or c in "_.-" for c in user)


def _pair_value(text: str, m: re.Match[str]) -> bool:
    v = "".join(c for c in m.group("v") if not unicodedata.category(c).startswith("M"))  # Thai vowel marks
    if not v.isalpha() and not v.isdigit():
        return any(c.isalpha() for c in v)  # letters with digits or symbols: a password whatever leads it
    if (v.isalpha() and not v.isascii()) or v.lower() in _NOT_VALUES:
        return False  # a word of the sentence's own script ("ออมทรัพย์ / กระแสรายวัน")
    if not _names_login(m.group("e") or m.group("u") or ""):
        return False
    return bool(_CLAUSE_END.match(text, m.end("v")))  # the pair ends its clause: no "… / phone number"


def _pair_spans(text: str) -> list[tuple[int, int]]:
    if QUICK_CHECKS and "/" not in text:
        return []
    return [m.span("v") for m in _LOGIN_PAIR.finditer(text) if _pair_value(text, m)]


_CLAUSE_END = _compile(
    r"\s*(?:$|[.!?。！？,，;；:：)）\"'”’」』]|\s(?:and|but|so|or|ok|okay|please|thanks|yesterday|today|tonight|"
    r"last|this morning|again|lol|haha|btw|fyi|now|ayer|hoy|jaja|jeje|y|pero|eh|vale|pues|"
    r"hôm qua|hôm nay|nhé|nha|nhe|rồi|đó|đấy|nè|"
    r"です|でした|だよ|だね|だ|よね|よ|ね|って|かな|ครับ|ค่ะ|คะ|นะ|จ้ะ|จ้า|哦|喔|噢|啊|吧|呢|啦|呀|嘛|哈|咯)\b"
    r"|\sạ\s*(?:$|[.!?]))",
    re.I,
)

# Payment card numbers: 12-19 digits, optionally grouped by one kind of separator (space, dash, dot).
_CARD = _compile(r"(?<![\d.,\-])\d{1,6}(?:(?P<sep>[ .\-])\d{1,6}(?:(?P=sep)\d{1,6}){1,5}|\d{8,18})(?![\d])")
_CARD_WORDS = _compile(
    r"(?<![A-Za-z])(?:card|cc|visa|master ?card|amex|discover|maestro|unionpay|iban|account(?: number)?)"
    r"(?![A-Za-z])|卡号|银行卡|信用卡|借记卡|储蓄卡|账号|帐号",
    re.I,
)
# A word that may hold symbols and digits written for letters ("p@ssw0rd": :data:`confusables.LEET`).
_LEET_WORD = _compile(r"[A-Za-z0-9@$!|]+")
_INNER_SEP = _compile(r"(?<=[A-Za-z])[-_.*·](?=[A-Za-z])")


def canonical(text: str) -> str:
    """What a model would see of ``text``: NFKC, invisible and direction characters removed."""
    return confusables.canonical(text)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _issuer_ok(digits: str) -> bool:
    """A card network's number prefix and length (Visa, Mastercard, Amex, Discover, UnionPay, JCB,
    Diners, Maestro, Mir): a Luhn-valid tracking or order number with another prefix is not a card."""
    n, p2, p3, p4 = len(digits), int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16  # Mastercard
    if p2 in (34, 37):
        return n == 15  # Amex
    if p4 == 6011 or 644 <= p3 <= 649 or p2 in (62, 65) or 2200 <= p4 <= 2204 or 3528 <= p4 <= 3589:
        return 16 <= n <= 19  # Discover, UnionPay, Mir, JCB
    if 300 <= p3 <= 305 or p2 in (36, 38, 39):
        return 14 <= n <= 19  # Diners
    if p2 in (50, 56, 57, 58, 63, 67):
        return 12 <= n <= 19  # Maestro
    return False


def _card_spans(text: str) -> list[tuple[int, int]]:
    """Runs of 12-19 digits that are card numbers: Luhn-valid with a card network's prefix and
    length (:func:`_issuer_ok`), or next to a card word ("card number", 卡号) whatever their checksum."""
    named = bool(_CARD_WORDS.search(text))
    out = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if len(set(digits)) < 2:
            continue
        luhn = 12 <= len(digits) <= 19 and _issuer_ok(digits) and _luhn_ok(digits)
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
    if _COUNT_ZH_JA.match(v):
        return False
    if re.search(r"[\u3400-\u9fff]", v):
        return not _NOT_VALUES_ZH.match(v)
    if re.match(r"[\u0e00-\u0e7f\u3040-\u30ff]", v):
        return False  # Thai or kana: a word of the sentence, not a value
    if v.lower() in _NOT_VALUES:
        return False
    if not v.isalpha():  # a digit or a symbol: "bluebird77", "tiger-lily", "4321"
        return len(v) >= 3
    return len(v) >= 3 and bool(_CLAUSE_END.match(text, _value_end(m)))


# A password word that leads to something abstract is a saying ("love is my password to happiness",
# "la contraseña para la felicidad es sonreír"): these nouns between keyword and value, or a bare
# "to" with no change before it ("set my password to x" is one), and a plain word after it.
_SAYING_NOUNS = frozenset(
    confusables.fold(w)
    for w in "happiness success heart life love freedom peace joy wisdom heaven paradise fame wealth "
    "felicidad éxito corazón vida amor paz alegría sabiduría libertad cielo".split()
)
_CHANGE_VERB = re.compile(
    r"\b(?:set|sets|setting|chang(?:e|ed|es|ing)|reset|updat(?:e|ed|es|ing)|switch(?:ed)?|ma(?:de|ke))\b", re.I
)
_BARE_TO = re.compile(r"\bto\s*$", re.I)


def _a_saying(text: str, m: re.Match[str]) -> bool:
    between = text[m.start() : m.start("v")]
    if _SAYING_NOUNS.intersection(re.findall(r"[^\W\d_]+", between.lower())):
        return True
    return (
        text[m.start("v") : _value_end(m)].isalpha()
        and bool(_BARE_TO.search(between))
        and not _CHANGE_VERB.search(text, max(0, m.start() - 40), m.start("v"))
    )


def _value_spans(text: str) -> list[tuple[int, int]]:
    out = []
    for pattern in (_KW_SEP_EN, _KW_SEP_ZH, _KW_DIGITS, *_ML_PATTERNS):
        pos = 0
        while (m := pattern.search(text, pos)) is not None:
            if (
                _is_value(text, m)
                and not _NEGATED.search(text, max(0, m.start() - 24), m.start())
                and not _a_saying(text, m)
            ):
                out.append((m.start("v"), _value_end(m)))
            pos = m.start() + 1
    for m in _WEAK_CODE.finditer(text):
        if (
            not _NOT_SECRET_BEFORE.search(text, max(0, m.start() - 16), m.start())
            and not _NOT_SECRET_AFTER.match(text, m.end("k") if m.group("k") else m.end("k2"))
            and not _UNIT_AFTER.match(text, m.end())
        ):
            out.append(m.span("v"))
    out += [m.span("v") for m in _SEED.finditer(text)]
    return out


def _fold_same_length(text: str) -> str:
    """Look-alike letters read as Latin, and each word that then reads as a keyword once its symbols
    and digits are read as letters folded to it (same length, so spans stay valid)."""

    def fold(m: re.Match[str]) -> str:
        word = m.group()
        folded = word.translate(confusables.LEET)
        return folded if folded != word and _KW_ONLY.fullmatch(folded) else word

    return _LEET_WORD.sub(fold, confusables.fold(text))


def _folded_keywords(text: str) -> str:
    """As :func:`_fold_same_length`, after inner separators are dropped (``pass-word``)."""
    return _fold_same_length(_INNER_SEP.sub("", confusables.fold(text)))


_EMPHASIS = re.compile(r"[*~`]+")


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
    "begin", "://", "@", "$", "|", "!", " /", "码", "令", "钥", "暗号", REDACTED, "sk-", "sk_", "pk_", "rk_",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat",
    "xox", "akia", "aiza", "hf_", "eyj", "glpat", "combination", "combo", "contraseña", "clave", "código", "mật",
    "รหัส", "พาสเวิร์ด", "パス", "暗証", "コード", "seed", "phrase", "words", "mnemonic", "フレーズ",
    "ニーモニック", "cụm từ", "วลี", "frase", "palabras", "助记", "ぱすわーど",
    # Vietnamese as the fold reads it (and as people type it without accents)
    "mat khau", "mat ma", "mk", "ma pin", "ma otp", "ma xac", "ma bao", "ma mo", "ma truy", "ma ket", "ma cua",
    "ma cong", "ma khoa", "ma tu", "ma gara",
)  # fmt: skip
_TRIGGERS = tuple(confusables.fold(t) for t in _TRIGGERS)

# The quick checks (the keyword check above, the gates of the login-pair and value-first passes)
# only save time; the tests turn them off to show that every table row is redacted the same.
QUICK_CHECKS = True


def _may_hold(text: str) -> bool:
    lower = confusables.fold(text).lower()
    if not QUICK_CHECKS or any(c.isdigit() for c in text) or any(t in lower for t in _TRIGGERS):
        return True
    closed, _ = confusables.closed_up(lower)  # "p a s s w o r d is sunflower"
    return closed != lower and any(t in closed for t in _TRIGGERS)


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
    lookalikes = confusables.fold(text)  # one character for one: its spans are the text's
    spans += _value_spans(lookalikes) + _pair_spans(lookalikes) + _value_first_spans(lookalikes)
    # Markdown emphasis around the words ("my **password** is x"), one character for one
    unmarked = _EMPHASIS.sub(lambda m: " " * len(m.group()), lookalikes)
    if unmarked != lookalikes:
        spans += _value_spans(unmarked)
    closed, index = confusables.closed_up(unmarked)  # "密 码 是 x", "p a s s w o r d is x"
    if closed != unmarked:
        spans += [(index[a], index[b - 1] + 1) for a, b in _value_spans(closed)]
    if _has_leet(text):
        folded = _fold_same_length(text)
        if folded != lookalikes:
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
        if not looks_like_credential(clean.replace(REDACTED, " ")):
            return text, 0  # nothing to redact, or only what was redacted before (redacting is idempotent)
        return REDACTED, 1  # "pass-w0rd is x": the keyword was split, the value is not placed
    out, last = [], 0
    for a, b in spans:
        out.append(clean[last:a])
        out.append(REDACTED)
        last = b
    out.append(clean[last:])
    return "".join(out), len(spans)
