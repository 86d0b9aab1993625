"""Japanese patterns: a statement clause -> claims.

A clause is Japanese when it has kana (Chinese has none), so this reader is tried before the
Chinese one. Japanese drops the speaker: a clause with no subject of its own is the speaker's
("東京に住んでいます" is "I live in Tokyo"), and "姉は…" / "田中さんは…" name someone else. Values of
the kinds the comparison knows (drinks, food, pets, sports, colours, languages) are mapped to the
English words of the lexicon, so コーヒー and 紅茶 are two drinks and 猫 / 犬 two pets. Past
progressive ("住んでいました", "吸っていました") and 以前は / 昔は mark a state that has ended."""

from __future__ import annotations

import re

from .lexicon import ZH_JOB_SUFFIX, Claim, category_of, consumed, diet_of
from .reader import Reader

_KANA = re.compile(r"[\u3040-\u30ff]")


def _has_kana(clause: str) -> bool:
    return bool(_KANA.search(clause))


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

# fmt: off
_CANON: dict[str, str] = {
    # drinks
    "赤ワイン": "red wine", "白ワイン": "white wine",
    "コーヒー": "coffee", "珈琲": "coffee", "紅茶": "black tea", "緑茶": "green tea", "お茶": "tea", "茶": "tea",
    "抹茶": "matcha", "ビール": "beer", "ワイン": "wine", "お酒": "alcohol", "酒": "alcohol", "牛乳": "milk",
    "ミルク": "milk", "ジュース": "juice", "ラテ": "latte", "コーラ": "coke", "水": "water",
    # food
    "寿司": "sushi", "お寿司": "sushi", "すし": "sushi", "ラーメン": "ramen", "ピザ": "pizza", "カレー": "curry",
    "パスタ": "pasta", "ステーキ": "steak", "チョコレート": "chocolate", "チョコ": "chocolate",
    "アイスクリーム": "ice cream", "アイス": "ice cream", "サラダ": "salad", "ハンバーガー": "burger",
    "ご飯": "rice", "ごはん": "rice", "米": "rice", "麺": "noodles", "うどん": "udon", "そば": "soba", "蕎麦": "soba",
    "納豆": "natto", "パクチー": "coriander", "甘いもの": "sweets", "辛いもの": "spicy food",
    "卵": "egg", "たまご": "egg", "ピーナッツ": "peanut", "落花生": "peanut", "小麦": "wheat", "花粉": "pollen",
    "えび": "shrimp", "エビ": "shrimp", "海老": "shrimp",
    # meat (the lexicon's "meat" kind: not eating it is a vegetarian diet)
    "肉": "meat", "お肉": "meat", "豚肉": "pork", "牛肉": "beef", "鶏肉": "chicken", "魚": "fish",
    "シーフード": "seafood", "海鮮": "seafood", "焼肉": "meat",
    # pets
    "猫": "cat", "ねこ": "cat", "ネコ": "cat", "犬": "dog", "いぬ": "dog", "イヌ": "dog", "ハムスター": "hamster",
    "うさぎ": "rabbit", "ウサギ": "rabbit", "兎": "rabbit", "インコ": "parrot",
    # sports
    "ランニング": "running", "ジョギング": "running", "水泳": "swimming", "テニス": "tennis", "サッカー": "football",
    "バスケ": "basketball", "バスケットボール": "basketball", "ゴルフ": "golf", "ヨガ": "yoga", "登山": "hiking",
    "山登り": "hiking", "ハイキング": "hiking", "スキー": "skiing", "バドミントン": "badminton",
    "サイクリング": "cycling", "野球": "baseball",
    # music
    "ジャズ": "jazz", "ロック": "rock", "ポップ": "pop", "クラシック": "classical", "ヒップホップ": "hip hop",
    # colours
    "赤": "red", "青": "blue", "緑": "green", "黄色": "yellow", "黒": "black", "白": "white", "紫": "purple",
    "ピンク": "pink", "オレンジ": "orange", "灰色": "gray", "グレー": "gray",
    # seasons
    "夏": "summer", "冬": "winter", "春": "spring", "秋": "autumn",
    # languages
    "英語": "english", "日本語": "japanese", "中国語": "chinese", "韓国語": "korean", "フランス語": "french",
    "ドイツ語": "german", "スペイン語": "spanish", "イタリア語": "italian", "タイ語": "thai",
    "ベトナム語": "vietnamese",
    # family: one value for brothers and sisters, one for children ("I have a sister" / "a brother")
    "兄": "sibling", "姉": "sibling", "弟": "sibling", "妹": "sibling", "兄弟": "sibling", "姉妹": "sibling",
    "お兄さん": "sibling", "お姉さん": "sibling", "息子": "child", "娘": "child", "子供": "child", "子ども": "child",
    # tech spelled in kana
    "マック": "mac", "ウィンドウズ": "windows", "リナックス": "linux", "パイソン": "python",
}
# fmt: on
# counters after a noun ("猫を二匹", "二人"), and adverbs of time or degree before one
_COUNTER = re.compile(r"(?:[0-9一二三四五六七八九十何]+(?:匹|頭|羽|人|台|個|つ|本|冊|杯))$")
_LEAD_ADVERB = re.compile(
    r"^(?:今は|今|最近は|最近|もう|まだ|毎日|毎朝|毎晩|毎週|毎年|いつも|よく|時々|ときどき|たまに|今日は|今日|"
    r"現在は|現在|これからは|これから|実は|やっぱり|やはり|とても|すごく|本当に|一番|特に|ずっと|週末は|週末|"
    r"[0-9]{4}年に|[0-9]{4}年から|去年|今年|来週は|来週|来月|先月|先週|昨日|明日)+"
)


def _value(raw: str) -> str:
    """A noun phrase before a particle -> a canonical value (English for the kinds the lexicon knows)."""
    v = raw.strip(" 、。,.・「」『』")
    for _ in range(3):
        v2 = _LEAD_ADVERB.sub("", v)
        v2 = _COUNTER.sub("", v2).strip(" 、")
        if v2 == v:
            break
        v = v2
    v = _CANON.get(v, v)
    if v.startswith("お") and v[1:] in _CANON:
        v = _CANON[v[1:]]
    return v.strip()


def _values(raw: str) -> list[str]:
    items = [_value(x) for x in re.split(r"[、,]|と(?=[^\s])|や", raw)]
    return [i for i in items if i][:5]


# --------------------------------------------------------------------------------------------
# subjects
# --------------------------------------------------------------------------------------------

_SELF = {"私", "わたし", "僕", "ぼく", "俺", "おれ", "あたし", "自分", "うち", "わたくし"}
_WE = {
    "私たち",
    "わたしたち",
    "僕たち",
    "僕ら",
    "我々",
    "うちのチーム",
    "チーム",
    "弊社",
    "うちの会社",
    "私たちのチーム",
}
_PEOPLE = re.compile(
    r"^(?:私の|僕の|俺の|うちの)?(?P<who>父|母|父親|母親|夫|妻|主人|旦那|嫁|兄|姉|弟|妹|息子|娘|彼|彼女|友達|友人|"
    r"同僚|上司|部下|祖父|祖母|子供|子ども|お父さん|お母さん|お兄さん|お姉さん|家族|両親|.{1,8}?(?:さん|くん|ちゃん|様|氏))$"
)
_TOPIC = re.compile(r"(?P<who>[^、はがもをにでの]{1,10}?)(?:は|が|も)")


def _subject(prefix: str, inherited: str) -> str:
    """Who a clause is about, from the words before its value: the speaker unless someone is named."""
    for m in _TOPIC.finditer(prefix):
        who = m.group("who")
        if who in _SELF:
            return "self"
        if who in _WE:
            return "we"
        p = _PEOPLE.match(who)
        if p:
            return p.group("who")
    if re.search(r"(?:私|僕|俺)たち|我々", prefix):
        return "we"
    return inherited or "self"


# --------------------------------------------------------------------------------------------
# predicates
# --------------------------------------------------------------------------------------------

_NEG = re.compile(
    r"ません|ない|なかった|ず(?:に)?$|ではありません|じゃありません|じゃない|ではない|なくなり|なくなっ|やめ|辞め|止め"
)
# a value: the noun phrase right before a particle (the last one of the clause's head)
_V = r"(?:もう|まだ|もっと)?(?P<val>[^、。はがもをにでへ]+?)"
# adverbs between the particle and the verb ("猫はもう飼っていません")
_A = r"(?:もう|まだ|今は|今|あまり|全然|ぜんぜん|ずっと|毎日|毎朝|毎晩|よく|いつも|時々|とても|すごく|本当に)*"
_PAST_STATE = re.compile(r"(?:てい|でい)ました$|(?:てい|でい)た$")


# a wish, a plan, a condition or a question says nothing of now ("大阪に引っ越したい": wants to move)
_NOT_A_STATE = re.compile(
    r"たい|たく|たかった|つもり|予定|かも|かな|たら|れば|なら|ようと|よう$|(?:ます|です|の|る)か$"
)


def _negated(tail: str) -> bool:
    return bool(_NEG.search(tail))


def _claims(
    attr: str, vals: list[str], subj: str, positive: bool, strength: str = "", ended: bool = False
) -> list[Claim]:
    return [Claim(subj, attr, v, positive, strength, ended) for v in vals if v]


_JOB_WORDS = (
    "エンジニア",
    "デザイナー",
    "プログラマー",
    "医者",
    "先生",
    "教師",
    "学生",
    "会社員",
    "公務員",
    "主婦",
    "主夫",
    "看護師",
    "弁護士",
    "店員",
    "社長",
    "マネージャー",
    "研究者",
    "記者",
    "作家",
    "歌手",
    "フリーランス",
    "コンサルタント",
    "シェフ",
    "料理人",
    "大学生",
    "高校生",
    "院生",
)
_JA_JOB_SUFFIX = ("師", "者", "員", "士", "家", "手", "医", "官", "生")


def _is_job(v: str) -> bool:
    return v in _JOB_WORDS or v.endswith(_JA_JOB_SUFFIX) or v.endswith(ZH_JOB_SUFFIX)


_SCHEDULE = re.compile(
    r"(?P<attr>[^、。はがを]{0,6}?(?:会議|ミーティング|打ち合わせ|定例|面接|予約|フライト|試験|テスト|リリース|発表|"
    r"パーティー|飲み会|イベント|締め切り|締切|納期|発売|出発|授業|レッスン|デート|結婚式))は(?P<val>.+?)"
    r"(?:に変更になりました|に変更されました|に変更|に変わりました|に変わった|になりました|になった|に延期になりました|"
    r"に延期されました|に延期|に移りました|に移動しました|に決まりました|です|でした|だ)$"
)
_MARITAL = (
    (re.compile(r"離婚"), "divorced"),
    (re.compile(r"婚約"), "engaged"),
    (re.compile(r"独身|未婚|シングル"), "single"),
    (re.compile(r"既婚|結婚して(?:い|る)|結婚しました|結婚した"), "married"),
)
_FAVORITE = re.compile(r"(?:一番|いちばん|最も)?好きな(?P<attr>[^はがを]{1,8})は(?P<val>.+?)(?:です|だ|でした)?$")
_NAME = re.compile(
    r"(?:名前は|名前が)(?P<val>.+?)(?:です|だ|といいます|と申します|に変わりました)?$"
    r"|^(?:私は|僕は|俺は)?(?P<val2>[^はがを]{1,10})(?:と申します|といいます)$"
)
_AGE = re.compile(r"(?P<num>[0-9]{1,3})(?:歳|才)")
_COPULA = re.compile(
    r"^(?P<head>.*?)(?P<val>[^、。はがもをにで]+?)"
    r"(?:です|だ|でした|になりました|になった|をしています|として働いています)$"
)
_GENERIC = re.compile(
    r"^(?:(?P<owner>私|僕|俺|うち|[^、。はがをの]{1,6})の)?(?P<attr>[^、。はがをの]{1,10})は(?P<val>[^、。]+?)(?:です|だ|でした)$"
)


def _r(particle: str, verbs: str) -> re.Pattern[str]:
    """A value, its particle(s), adverbs, then the verb (group ``p``, where the predicate starts)."""
    return re.compile(_V + particle + _A + "(?P<p>" + verbs + ")")


_PREFER = {"strength": "prefer"}
_SWITCH = {"strength": "switch"}
# (pattern, attribute, options); a pattern names ``val`` and its predicate starts at group ``p``.
# fmt: off
_RULES: tuple[tuple[re.Pattern[str], str, dict[str, object]], ...] = (
    (_r("(?:には|に|で)", "住んで|暮らして|住む|住ん|在住"), "location", {}),
    (_r("(?:へ|に)", "引っ越し|引越し|引っ越す|移住|転居|戻り|戻って"), "location", {}),
    (_r("(?:で|に)", "働いて|働く|働き|勤めて|勤務|勤める"), "employer", {}),
    (_r("(?:に|へ)", "転職|入社|就職"), "employer", {}),
    (re.compile(r"(?P<val>)(?:タバコ|たばこ|煙草)?(?:を|は|も)?" + _A + r"(?P<p>吸|喫煙|禁煙)"), "smoke", {}),
    (re.compile(r"(?P<val>)" + _A + r"(?P<p>ベジタリアン|ヴィーガン|ビーガン|菜食)"), "diet", {}),
    (_r("(?:の|に|が|)?", "アレルギー"), "allergy", {}),
    (_r("(?:の方|のほう)(?:が|を)", "好き|いい|好み|好む"), "affinity", _PREFER),
    (_r("(?:より)?(?:が|は|も|を)", "大嫌い|嫌い|苦手"), "affinity", {"positive": False}),
    (_r("(?:が|は|も|を)", "大好き|好き|愛して|気に入って|好む"), "affinity", {}),
    (_r("(?:に|へ)", "乗り換え|切り替え|移行|変更|切り替わ"), "use", _SWITCH),
    (_r("(?:を|は|も)", "使って|使い|使う|使用|利用"), "use", {}),
    (_r("(?:を|は|も)", "飲|食べ|いただ"), "consume", {}),
    (_r("(?:を|は|も)", "やめ|辞め|止め"), "quit", {}),
    (_r("(?:を|は|も)", "飼って|飼い|飼う|飼っ"), "has", {}),
    (_r("(?:が|は|も)", "話せ|できます|出来ます"), "speaks", {}),
    (_r("(?:を|は|も)", "話し|話す"), "speaks", {}),
    (_r("(?:を|は|も)", "勉強|習って|学んで|学び"), "plan:learn", {}),
    (_r("(?:に|へ)", "行き|行く|行っ|旅行|出張|遊びに"), "travel", {}),
    (_r("(?:が|は|も)", "い(?:ます|る|ません|ない)|あり(?:ます|ません)|ある$|ない$"), "has", {}),
)
# fmt: on
# "来週のオスロ旅行は中止になりました": a trip called off (the trip's place, its time words dropped)
_CALLED_OFF = re.compile(
    r"(?P<val>[^、。はがをにへで]+?)(?:への|の)?(?:旅行|出張|旅|訪問|フライト)(?:の予定)?(?:は|が|を)?"
    r"(?:中止|キャンセル|取りやめ|とりやめ|取り消し|延期|なくなり|無くなり)"
)
_TIME_OF = re.compile(r"^(?:次の|今度の|来週の|今週の|来月の|今月の|明日の|週末の|年末の|夏の|冬の)")
# nouns that are had without being possessions ("予定があります": a plan, not a thing)
_NOT_HAD = ("予定", "時間", "用事", "興味", "自信", "必要", "問題", "打ち合わせ", "会議")
_MOVED = ("引っ越し", "引越し", "引っ越す", "移住", "転居")


def claims_ja(clause: str, inherited: str) -> list[Claim]:
    """The claims of one Japanese clause (kana present), or ``[]``."""
    ended = bool(_PAST_STATE.search(clause))

    m = _SCHEDULE.search(clause)
    if m:
        attr = re.sub(r"^(?:次の|今度の|来週の|今週の|明日の)", "", m.group("attr"))
        return _claims("the:" + attr, _values(m.group("val")), "", True)
    m = _AGE.search(clause)
    if m:
        subj = _subject(clause[: m.start()], inherited)
        return [Claim(subj, "age", m.group("num"), not _negated(clause[m.end() :]))]
    for pattern, value in _MARITAL:
        m = pattern.search(clause)
        if m:
            subj = _subject(clause[: m.start()], inherited)
            return [Claim(subj, "marital", value, not _negated(clause[m.end() :]), ended=ended)]
    m = _NAME.search(clause)
    if m:
        val = _value(m.group("val") or m.group("val2") or "")
        subj = _subject(clause[: m.start()], inherited)
        return [Claim(subj, "name", val)] if val else []
    m = _FAVORITE.search(clause)
    if m:
        subj = _subject(clause[: m.start()], inherited)
        return _claims("attr:favorite " + m.group("attr"), _values(m.group("val")), subj, True)

    m = _CALLED_OFF.search(clause)
    if m and (vals := _values(_TIME_OF.sub("", m.group("val")))):
        return _claims("travel", vals, _subject("", inherited), False)
    for pattern, attribute, opts in _RULES:
        m = pattern.search(clause)
        if not m:
            continue
        tail = clause[m.start("p") :]
        if attribute not in ("travel", "plan:learn") and _NOT_A_STATE.search(tail):
            return []
        positive = bool(opts.get("positive", True)) != _negated(tail)
        strength = str(opts.get("strength", ""))
        subj = _subject(clause[: m.start()], inherited)
        vals = _values(m.group("val"))
        if attribute == "smoke":
            if m.group("p") == "禁煙":
                positive = False
            if "タバコ" not in clause and "たばこ" not in clause and "煙草" not in clause and m.group("p") == "吸":
                continue
            return [Claim(subj, "smoke", "smoking", positive, ended=ended)]
        if attribute == "diet":
            return [Claim(subj, "diet", "vegetarian", positive, ended=ended)]
        if not vals:
            continue
        if attribute == "quit":  # "タバコをやめました": stopped smoking / drinking / using
            v = vals[0]
            if v in ("タバコ", "たばこ", "煙草", "喫煙"):
                return [Claim(subj, "smoke", "smoking", False)]
            cat = category_of(v)
            if cat == "meat":
                return [Claim(subj, "diet", "vegetarian", True)]
            if cat in ("drink", "food") or v == "alcohol":
                return _claims("consume", vals, subj, False)
            if v in ("仕事", "会社"):
                return []
            return _claims("use", vals, subj, False)
        attribute = consumed(attribute, vals[0])
        if (diet := diet_of(subj, attribute, vals[0], positive, ended=ended)) is not None:
            return [diet]
        if attribute == "has" and vals[0] in _NOT_HAD:
            continue
        if attribute == "location" and m.group("p") in _MOVED:
            ended = False  # "moved to": lives there now
        if attribute == "employer" and m.group("p") in ("転職", "入社", "就職"):
            strength = "switch"
        return _claims(attribute, vals, subj, positive, strength, ended)

    m = _COPULA.match(clause)
    if m and _is_job(m.group("val")):
        subj = _subject(m.group("head"), inherited)
        return [Claim(subj, "role", m.group("val"), not _negated(clause[m.end("val") :]), ended=ended)]
    m = _GENERIC.match(clause)
    if m:
        owner, attr = m.group("owner"), m.group("attr")
        if attr in _SELF or attr in _WE or _PEOPLE.match(attr):
            return []
        subj = _subject((owner or "") + "は", inherited) if owner else "self"
        return _claims("attr:" + attr, _values(m.group("val")), subj, True)
    return []


def _tokens(text: str) -> set[str]:
    """Katakana words (the kanji are already the fallback's tokens)."""
    return set(re.findall(r"[\u30a1-\u30ff]{2,}", text))


READER = Reader(
    lang="ja",
    claims=claims_ja,
    detects=_has_kana,
    lead=r"^(?:えっと|えーと|あの|実は|ちなみに|訂正(?:です|すると)?|そういえば|ところで|やっぱり|すみません)[、，,：:！!]?",
    split=r"けれども|けれど|けど|しかし|ので、|から、|(?<=[てで])、|そして",
    ended=r"(?:以前|昔|(?<![名午手事目直])前|かつて|元々|もともと)(?:は|には)、?|かつて",
    negations=r"ません|ない",
    tokens=_tokens,
)
