"""Chinese patterns: a statement clause -> claims."""

from __future__ import annotations

import re

from .lexicon import ZH_JOB_SUFFIX, Claim, Rule, category_of, is_han, subject_of, value_items
from .reader import Reader

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
    _zh(r"(?:戒了|戒掉了|戒掉|戒)(?:烟|香烟)(?P<val>)", "smoke", positive=False),
    _zh(r"(?:戒了|戒掉了|戒掉|戒)(?P<val>.+)", "consume", positive=False),
    _zh(rf"{_ZH_NEG}(?:改用|换成了|换成|换用|切换到|切到|迁移到|迁到|转到)(?P<val>.+)", "use", strength="switch"),
    _zh(rf"{_ZH_NEG}(?:使用|采用|选用|用的是|依赖|继续用|用|上(?=\s*[A-Za-z]))(?P<val>.+)", "use", multi=True),
    _zh(r"(?:弃用|放弃了|放弃|抛弃|淘汰了|淘汰)(?P<val>.+)", "use", positive=False),
    _zh(rf"{_ZH_NEG}(?:抽烟|吸烟)(?P<val>)", "smoke"),
    _zh(rf"{_ZH_NEG}(?:喝|吃)(?P<val>.+)", "consume", multi=True),
    _zh(rf"{_ZH_NEG}(?:会说|说|讲)(?P<val>.{{1,6}}语|.{{1,4}}话|英文|中文)", "speaks", multi=True),
    _zh(r"取消了(?:去)?(?P<val>.+?)的(?:行程|旅行|计划|旅游|出差)", "travel", positive=False),
    _zh(rf"{_ZH_NEG}(?:打算|计划|准备|要|想|将|会)?(?:去|到|飞往|飞去)(?P<val>.+?)(?:旅游|旅行|玩|出差|度假|看看)?$",
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
_ZH_NUM = {"一": "1", "两": "2", "二": "2", "三": "3", "四": "4", "五": "5"}


def claims_zh(clause: str, inherited: str) -> list[Claim]:
    trailing_neg = bool(re.search(r"(?:不.{0,6}了$|再也不|不再)", clause))
    m = _ZH_SCHEDULE.search(clause)
    if m:
        return [Claim("", "the:" + m.group("attr"), v) for v in value_items(m.group("val"), False)]
    m = _ZH_POSSESSIVE.match(clause)
    if m and not re.search(r"(?:喜欢|住|用|叫)", m.group("owner")):
        owner = m.group("owner")
        subj = subject_of(owner) or owner
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
        return [Claim(subject_of(clause[: m.start()]) or inherited, "role", m.group("val"), not neg)]

    for rule in _ZH_RULES:
        m = rule.pattern.search(clause)
        if not m:
            continue
        subj = subject_of(clause[: m.start()]) or inherited
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
            if re.match(r"^(?:点|些|时候|空|事|意思|道理|可能|必要|问题|机会|兴趣)", vals[0]):
                continue
            num = gd.get("num")
            if num and num != "一":
                return [Claim(subj, "count:" + vals[0], _ZH_NUM.get(num, num), positive)]
        if attr == "use" and category_of(vals[0]) in ("drink", "food", "meat"):
            attr = "consume"
        if attr == "consume" and category_of(vals[0]) == "meat":
            return [Claim(subj, "diet", "vegetarian", not positive)]
        if attr == "travel" and re.match(r"^(?:上班|上学|工作|睡觉|吃饭|买|看|做|找|学)", vals[0]):
            continue
        return [Claim(subj, attr, v, positive, rule.strength) for v in vals]
    return []


def _has_han(clause: str) -> bool:
    return any(is_han(c) for c in clause)


READER = Reader(
    lang="zh",
    claims=claims_zh,
    detects=_has_han,
    lead=r"^(?:其实|更正|纠正一下|纠正|不对|另外|对了|顺便说一下|说实话|我说错了|刚才说错了|哦|嗯|好吧|那个|告诉你|记住|注意)[，,：:！!]?",
    split=r"[；;。！？!?]|，|但是|但|不过|而且|因为|所以|可是|然后",
    ended=r"(?:以前|之前|曾经|曾經|过去|過去)(?=[住在喜爱愛用做是吃喝养養有工抽吸])",
)
