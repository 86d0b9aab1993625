"""Chinese patterns: a statement clause -> claims, in either script.

Traditional characters are mapped to simplified ones before the patterns read a clause (a
character table of common words, not a converter: words whose traditional form differs in more
than its characters, 軟體 / 软件, stay as written), so 我喜歡貓 reads as 我喜欢猫."""

from __future__ import annotations

import re

from .lexicon import ZH_JOB_SUFFIX, Claim, Rule, consumed, diet_of, is_han, subject_of, value_items
from .reader import Reader

# --------------------------------------------------------------------------------------------
# traditional -> simplified characters (one to one; the pairs line up)
# --------------------------------------------------------------------------------------------

# fmt: off
TRADITIONAL = (
    "歡討厭過煙菸養沒愛經們這個國來時說會對後還開關學習見現發點樣長東車書間問題動電話頭麼嗎為與從將當讓給門兒買賣錢貓隻條雙鳥魚雞豬馬飯麵麪餃湯鹹醬飲紅綠藍黃顏歲歷曆氣隊機場員師醫護禮聽"
    "讀寫語詞識認記計劃畫體運遊戲籃網賽館廳遠離訂單結約紀級線練組織濟業務處辦總監闆職實際驗試準備設視頻號碼資訊絡腦軟術環專應該覺髮臉腳邊週裡裏幾萬億兩參舉樂熱陽陰風雲園圖銀錯難興藝獨親"
    "媽爺孫婦姊陳張劉楊趙吳鄭謝許鄧馮蔣韓葉蘇盧羅鍾華麗龍鳳灣臺島縣區鄉鎮廣陸歐紐倫舊蘭義亞擔憂慮願決換轉遷選擇傾寧惡煩極穩並態戀異絕斷續繼維壞優勝敗負輸贏隨調節課講談論請證據鐘錶鐵鋼錄"
    "鏡聞聲響劇螢鍵盤庫測佈構範圍預價費貴質產農廠藥療診檢針飛郵遞貨倉齊豐鴨鵝蝦貝蠔麥糧蘿蔔蔥薑鹽燒燉嚐嘗餅帶襪褲筆紙簡漢粵廈滬瀋無雖於則須係進達觀確種類數統報導獎戰爭軍團黨勞貸債幣帳賬"
    "額購鋪攤廚廁樓層牆燈傘輛騎駕駛艙颱涼凍霧溫濕乾淨髒亂靜鬧慶壽嬸夥鄰癒傷癢瘋夢齒頸膚鬍鬚膽腎臟腸壓腫減鍛煉壘攝彈輯詩誌雜頁閱覽檔夾鎖鑰牀櫃櫥鍋爐裝載傳讚評餵鬆喫協嶺蘋龜鬥衛鋁銅錫銷鏈"
    "陣險隱韌頓領顧顯飄驚驕鬱齡勵勸喬嚴圓壇奮孿寵寶屆嶼帥幫廢彎徵慣憶懷懶擁擬擴擾攜敵斃昇曬棄榮槍標樹橋櫻歸殺殼汙溝滅滿漁潔潛濱灑爛牠狀獄畢盜盡碩禍稅窮競築簽糾納純紡細終絲綁綜緊編緩績繩"
    "罰羨聯聖聰肅脅膠艱莊薦蟲補製複規觸訓詢誇誠誤謀謙議變貧責貼賀賓賴趕跡蹤躍軌較輕辭迴遲遺釋鈴銳鍊鏽閃閉閒閣闊靈韻頂項順頑頒顛飽餘駐魯鮮鯨"
)
SIMPLIFIED = (
    "欢讨厌过烟烟养没爱经们这个国来时说会对后还开关学习见现发点样长东车书间问题动电话头么吗为与从将当让给门儿买卖钱猫只条双鸟鱼鸡猪马饭面面饺汤咸酱饮红绿蓝黄颜岁历历气队机场员师医护礼听"
    "读写语词识认记计划画体运游戏篮网赛馆厅远离订单结约纪级线练组织济业务处办总监板职实际验试准备设视频号码资讯络脑软术环专应该觉发脸脚边周里里几万亿两参举乐热阳阴风云园图银错难兴艺独亲"
    "妈爷孙妇姐陈张刘杨赵吴郑谢许邓冯蒋韩叶苏卢罗钟华丽龙凤湾台岛县区乡镇广陆欧纽伦旧兰义亚担忧虑愿决换转迁选择倾宁恶烦极稳并态恋异绝断续继维坏优胜败负输赢随调节课讲谈论请证据钟表铁钢录"
    "镜闻声响剧萤键盘库测布构范围预价费贵质产农厂药疗诊检针飞邮递货仓齐丰鸭鹅虾贝蚝麦粮萝卜葱姜盐烧炖尝尝饼带袜裤笔纸简汉粤厦沪沈无虽于则须系进达观确种类数统报导奖战争军团党劳贷债币账账"
    "额购铺摊厨厕楼层墙灯伞辆骑驾驶舱台凉冻雾温湿干净脏乱静闹庆寿婶伙邻愈伤痒疯梦齿颈肤胡须胆肾脏肠压肿减锻炼垒摄弹辑诗志杂页阅览档夹锁钥床柜橱锅炉装载传赞评喂松吃协岭苹龟斗卫铝铜锡销链"
    "阵险隐韧顿领顾显飘惊骄郁龄励劝乔严圆坛奋孪宠宝届屿帅帮废弯征惯忆怀懒拥拟扩扰携敌毙升晒弃荣枪标树桥樱归杀壳污沟灭满渔洁潜滨洒烂它状狱毕盗尽硕祸税穷竞筑签纠纳纯纺细终丝绑综紧编缓绩绳"
    "罚羡联圣聪肃胁胶艰庄荐虫补制复规触训询夸诚误谋谦议变贫责贴贺宾赖赶迹踪跃轨较轻辞回迟遗释铃锐链锈闪闭闲阁阔灵韵顶项顺顽颁颠饱余驻鲁鲜鲸"
)
# fmt: on
_T2S = str.maketrans(TRADITIONAL, SIMPLIFIED)


def simplified(text: str) -> str:
    """``text`` with the traditional characters of the table replaced by their simplified forms."""
    return text.translate(_T2S)


# --------------------------------------------------------------------------------------------
# Chinese patterns
# --------------------------------------------------------------------------------------------

_ZH_NEG = r"(?P<neg>不再|再也不|已经不|从来不|从不|不要|别再|不会再|不会|不想|不打算|不|没有|没|别|未|无需|不用再)?"


def _zh(pattern: str, attribute: str, **kw: object) -> Rule:
    return Rule(re.compile(pattern), attribute, **kw)  # type: ignore[arg-type]


# fmt: off
_ZH_RULES: tuple[Rule, ...] = (
    _zh(r"(?:我叫|我的名字(?:是|叫)|叫我|名字(?:是|叫))(?P<val>.+)", "name"),
    _zh(r"(?:以前|之前|曾经|小时候)(?:住在|住|生活在)(?P<val>.+)", "past_location"),
    _zh(rf"{_ZH_NEG}(?:住在|住|生活在|定居在|定居|常驻|搬到了|搬到|搬去了|搬去|搬回了|搬回|移居到|移居|落户)"
        r"(?P<val>.+)", "location"),
    _zh(r"(?:来自|老家是|老家在|出生在|出生于|祖籍)(?P<val>.+)", "origin"),
    _zh(r"是(?P<val>[\u4e00-\u9fff]{1,6})人$", "origin"),
    _zh(rf"{_ZH_NEG}(?:就职于|任职于|入职了|入职|跳槽到了|跳槽到|加入了|加入)(?P<val>.+)", "employer"),
    _zh(rf"{_ZH_NEG}在(?P<val>[^，。；]{{1,15}}?)(?:工作|上班|任职|实习)", "employer"),
    _zh(r"(?P<num>\d{1,3})岁", "age"),
    _zh(r"(?P<val>已婚|单身|结婚了|离婚了|订婚了)", "marital"),
    _zh(rf"{_ZH_NEG}(?:吃素|素食)", "diet_veg"),
    _zh(rf"{_ZH_NEG}(?:吃|爱吃|喜欢吃)(?P<val>肉|猪肉|牛肉|鸡肉|鱼|海鲜|荤)", "diet_meat"),
    _zh(rf"{_ZH_NEG}对(?P<val>.+?)过敏", "allergy"),
    _zh(r"最喜欢的(?P<attr>[^是]{1,6})是(?P<val>.+)", "favorite"),
    _zh(rf"{_ZH_NEG}(?:更喜欢|更爱|比较喜欢|偏好|偏爱|倾向于|宁愿|宁可|更倾向于|最喜欢|最爱)(?P<val>.+)", "affinity",
        strength="prefer"),
    _zh(rf"{_ZH_NEG}(?:讨厌|受不了|反感|厌恶)(?P<val>.+)", "affinity", multi=True, positive=False),
    _zh(rf"{_ZH_NEG}(?:喜欢|喜爱|热爱|爱喝|爱吃|爱看|爱玩|爱|迷上了|钟爱)(?P<val>.+)", "affinity", multi=True),
    _zh(r"(?:(?:戒了|戒掉了|戒掉|戒)(?:烟|香烟)|把(?:烟|香烟)戒(?:掉了|掉|了)?)(?P<val>)", "smoke", positive=False),
    _zh(r"(?:戒了|戒掉了|戒掉|戒)(?P<val>.+)", "consume", positive=False),
    _zh(rf"{_ZH_NEG}(?:改用|换成了|换成|换用|切换到|切到|迁移到|迁到|转到)(?P<val>.+)", "use", strength="switch"),
    _zh(rf"{_ZH_NEG}(?:使用|采用|选用|用的是|依赖|继续用|用|上(?=\s*[A-Za-z]))(?P<val>.+)", "use", multi=True),
    _zh(r"(?:弃用|放弃了|放弃|抛弃|淘汰了|淘汰)(?P<val>.+)", "use", positive=False),
    _zh(rf"{_ZH_NEG}(?:抽|吸)(?:[一两二三四五六七八九十半\d]{{1,3}}(?:包|根|支))?(?:烟|香烟)(?P<val>)", "smoke"),
    _zh(rf"{_ZH_NEG}(?:喝|吃)(?P<val>.+)", "consume", multi=True),
    _zh(rf"{_ZH_NEG}(?:会说|说|讲)(?P<val>.{{1,6}}语|.{{1,4}}话|英文|中文)", "speaks", multi=True),
    _zh(r"取消了(?:去)?(?P<val>.+?)的(?:行程|旅行|计划|旅游|出差)", "travel", positive=False),
    _zh(r"(?:去|到|飞)(?P<val>.+?)的(?:行程|旅行|计划|旅游|出差|机票)(?:被)?(?:取消了|取消|泡汤了|黄了|推迟了)",
        "travel", positive=False),
    _zh(rf"{_ZH_NEG}(?:打算|计划|准备|要|想|将|会)?(?:去|到|飞往|飞去|飞(?!机))(?P<val>.+?)(?:旅游|旅行|玩|出差|度假|看看)?$",
        "travel"),
    _zh(rf"{_ZH_NEG}(?:打算|计划|准备|想要|想|要)(?P<verb>学|买|考|开始|换|卖|养)(?P<val>.+)", "plan"),
    _zh(rf"{_ZH_NEG}(?:有|养了|养着|养)(?P<num>一|两|二|三|四|五|\d+)?(?:个|只|条|辆|套|位|台)?(?P<val>.+)", "has",
        multi=True),
)
# fmt: on
_ZH_POSSESSIVE = re.compile(
    r"^(?P<owner>[^的]{1,6})的(?P<attr>[^是为]{1,8}?)(?P<neg>不是|不再是)?(?:是|为|改成了|改成|变成了|变成|换成了|换成)(?P<val>.+)$"
)
_ZH_SCHEDULE = re.compile(
    r"(?P<attr>会议|周会|例会|会|面试|聚会|航班|考试|约会|活动|婚礼|晚饭|聚餐|截止日期|截止时间|deadline|演出|比赛|上线|发布)"
    r"(?:时间)?(?:改到了|改到|改在|改成了|改成|推迟到了|推迟到|提前到了|提前到|定在了|定在|安排在|挪到|在|是)(?P<val>.+)"
)
# "我爸爸喜欢钓鱼" is about the father, not the speaker (subject_of reads any prefix with 我 as "self")
_ZH_KIN = re.compile(
    r"^(?:我|我的)(?P<who>爸爸|妈妈|爸|妈|父亲|母亲|哥哥|姐姐|弟弟|妹妹|哥|姐|弟|妹|老公|老婆|丈夫|妻子|太太|先生|儿子|女儿|孩子|"
    r"男朋友|女朋友|男友|女友|朋友|同事|老板|爷爷|奶奶|外公|外婆|家人|室友|邻居)"
)
# brothers and sisters are one thing to have ("我有一个姐姐" / "我有一个弟弟" both hold), children another
_ZH_KIN_VALUE = {
    **dict.fromkeys(("哥哥", "姐姐", "弟弟", "妹妹", "兄弟", "姐妹", "兄弟姐妹", "哥", "姐", "弟", "妹"), "兄弟姐妹"),
    **dict.fromkeys(("儿子", "女儿", "孩子", "小孩"), "孩子"),
}


# a time said before who ("最近我哥住在杭州"): not part of who
_ZH_TIME_LEAD = re.compile(r"^(?:最近|这阵子|这段时间|这几年|现在|目前|如今|今年|去年|上个月|这个月)")


def _subject(prefix: str) -> str:
    m = _ZH_KIN.match(_ZH_TIME_LEAD.sub("", prefix.strip(" ,.:;，。：；!！")))
    return m.group("who") if m else subject_of(prefix)


_ZH_NUM = {"一": "1", "两": "2", "二": "2", "三": "3", "四": "4", "五": "5"}


def claims_zh(clause: str, inherited: str) -> list[Claim]:
    clause = simplified(clause)
    trailing_neg = bool(re.search(r"(?:不.{0,6}了$|再也不|不再)", clause))
    m = _ZH_SCHEDULE.search(clause)
    if m:
        return [Claim("", "the:" + m.group("attr"), v) for v in value_items(m.group("val"), False)]
    m = _ZH_POSSESSIVE.match(clause)
    if m and not re.search(r"(?:喜欢|住|用|叫)", m.group("owner")):
        owner = m.group("owner")
        subj = _subject(owner) or owner
        attr = m.group("attr")
        vals = value_items(m.group("val"), False)
        positive = not m.group("neg")
        if attr in ("名字", "姓名", "名"):
            return [Claim(subj, "name", v, positive) for v in vals]
        if attr in ("工作", "职业"):
            return [Claim(subj, "role", v, positive) for v in vals]
        if attr in ("家", "住址", "地址"):
            return [Claim(subj, "location", v, positive) for v in vals]
        return [Claim(subj, "attr:" + attr, v, positive) for v in vals]
    m = re.search(r"是(?:一名|一个|一位|个|名)?(?P<val>[\u4e00-\u9fffA-Za-z]{1,10})$", clause)
    if m and (m.group("val").endswith(ZH_JOB_SUFFIX) or m.group("val") in ("学生", "程序员")):
        neg = bool(re.search(r"不是$|不再是$", clause[: m.start() + 1])) or "不是" in clause
        return [Claim(_subject(clause[: m.start()]) or inherited, "role", m.group("val"), not neg)]

    for rule in _ZH_RULES:
        m = rule.pattern.search(clause)
        if not m:
            continue
        subj = _subject(clause[: m.start()]) or inherited
        gd = m.groupdict()
        negated = bool(gd.get("neg"))
        positive = rule.positive != negated
        attr = rule.attribute
        if attr == "age":
            return [Claim(subj, "age", m.group("num"), positive)]
        if attr == "marital":
            return [Claim(subj, "marital", m.group("val").rstrip("了"), positive)]
        if attr == "diet_veg":
            return [Claim(subj, "diet", "vegetarian", positive and not trailing_neg)]
        if attr == "diet_meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "smoke":
            return [Claim(subj, "smoke", "smoking", positive)]
        if attr == "favorite":
            vals = value_items(m.group("val"), False)
            return [Claim(subj or "self", "attr:favorite " + m.group("attr"), v) for v in vals]
        if attr == "plan":
            return [Claim(subj, "plan:" + m.group("verb"), v, positive) for v in value_items(m.group("val"), True)]
        vals = value_items(m.group("val"), rule.multi)
        if not vals:
            continue
        if attr == "has":
            vals = [_ZH_KIN_VALUE.get(v, v) for v in vals]
            if re.match(r"^(?:点|些|时候|空|事|意思|道理|可能|必要|问题|机会|兴趣)", vals[0]):
                continue
            num = gd.get("num")
            if num and num != "一":
                return [Claim(subj, "count:" + vals[0], _ZH_NUM.get(num, num), positive)]
        attr = consumed(attr, vals[0])
        if (diet := diet_of(subj, attr, vals[0], positive)) is not None:
            return [diet]
        if attr == "travel" and re.match(r"^(?:上班|上学|工作|睡觉|吃饭|买|看|做|找|学)", vals[0]):
            continue
        return [Claim(subj, attr, v, positive, rule.strength) for v in vals]
    return []


_KANA = re.compile(r"[\u3040-\u30ff]")


def _has_han(clause: str) -> bool:
    """Chinese characters and no kana (a clause with kana is Japanese: its reader decides alone)."""
    return any(is_han(c) for c in clause) and not _KANA.search(clause)


READER = Reader(
    lang="zh",
    claims=claims_zh,
    detects=_has_han,
    lead=(
        r"^(?:其实|其實|更正|纠正一下|糾正一下|纠正|糾正|不对|不對|另外|对了|對了|顺便说一下|順便說一下|说实话|說實話|"
        r"我说错了|我說錯了|刚才说错了|剛才說錯了|哦|嗯|好吧|那个|那個|告诉你|告訴你|记住|記住|注意)[，,：:！!]?"
    ),
    split=r"[；;。！？!?]|，|但是|但|不过|不過|而且|因为|因為|所以|可是|然后|然後",
    ended=r"(?:以前|之前|曾经|曾經|过去|過去)(?=[住在喜爱愛用做是吃喝养養有工抽吸])",
)
