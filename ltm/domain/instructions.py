"""Instruction-like memory text, pure: words that try to steer the assistant instead of saying
something about the user (OWASP's agentic memory poisoning, ASI06).

:func:`instruction_like` names the first rule a text matches, or returns None:

- ``role_marker``: a chat-template role or block marker (``system:``, ``<|im_start|>``,
  ``### Instruction``, ``[INST]``, ``<<SYS>>``, 系统：);
- ``override``: "ignore / disregard / override the previous instructions, your rules" (忽略之前的指令);
- ``persona``: "you are now …", "developer / jailbreak / god mode", "pretend you are", "act as",
  "no restrictions" (你现在是, 开发者模式, 扮演);
- ``system_prompt``: an imitation of a system prompt ("You are a helpful assistant that …", "the
  assistant must …", "your new rules are", "reveal your system prompt"; 你是一个…助手, 系统提示词);
- ``directive``: an imperative addressed to the assistant ("always", "never", "from now on", "every
  answer") about what it answers, says or does (以后每次回答都…), or telling it to tell other users;
- ``link``: a link or a referral / promo code to be put into answers.

A statement about the user keeps working: "I always drink tea in the morning", "never call me
before 9", "remind me to call mum", "I want you to remember my birthday is May 3", "my website is
https://…". The line between the two: a directive must be addressed to the assistant (an
imperative, "you must / will …", "I want you to …") *and* be about its behaviour (answering,
replying, saying, adding, recommending, ignoring, acting); a first-person sentence about the user's
own habits, or a request to remember or remind, is a fact or a plan. Matched on the text a model
would see (NFKC, invisible characters removed). Measured on ``benchmarks/data/instruction_like.tsv``
by ``python -m benchmarks.instructions``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .text import neutralize

INSTRUCTION_LIKE = "instruction-like"
KINDS: tuple[str, ...] = ("role_marker", "override", "persona", "system_prompt", "directive", "link")

_ROLE_MARKER = [
    re.compile(p, re.I | re.M)
    for p in (
        r"^\s*(?:system|assistant|developer|sys)\s*[:：>]",
        r"<\|?\s*(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id)\s*\|?>",
        r"\[/?(?:inst|sys|system)\]",
        r"<</?sys>>",
        r"^\s*#{2,}\s*(?:instruction|instructions|system|response|assistant)\b",
        r"</?(?:system|instructions?|sys)>",
        r"\b(?:begin|end) (?:of )?(?:the )?system (?:prompt|message)\b",
        r"^\s*(?:系统|助手|系统提示)\s*[:：]",
    )
]
_OVERRIDE = [
    re.compile(p, re.I)
    for p in (
        r"\b(?:ignore|disregard|forget|override|bypass|overrule)\b(?:\s+\w+){0,3}?\s+(?:previous|prior|above|"
        r"earlier|original|all|any|your|the|system|safety)\s+(?:\w+\s+)?(?:instructions?|rules|prompts?|"
        r"guidelines|directives|restrictions|filters|policies|programming|settings)\b",
        r"\b(?:ignore|disregard|override|bypass)\s+(?:your|the)\s+(?:rules|guidelines|instructions|"
        r"system prompt|safety|filters?|restrictions)\b",
        r"\bnew (?:instructions?|rules|directives|system prompt)\s*[:：]",
        r"(?:忽略|无视|忘记|忘掉|覆盖|绕过)(?:掉)?(?:你)?(?:之前|以前|上面|前面|先前|所有|全部|以上|原来)?(?:的)?"
        r"(?:所有|全部|一切)?(?:的)?(?:安全)?(?:指令|指示|规则|设定|提示词?|要求|限制|约束)",
    )
]
_PERSONA = [
    re.compile(p, re.I)
    for p in (
        r"\byou(?: are|'re|r) now\b",
        r"\bfrom now on,? you(?: are|'re| will be| shall be| become)\b",
        r"\b(?:enter|enable|activate|switch to|turn on|go into|in)\s+(?:the\s+)?(?:developer|dev|god|jailbreak|"
        r"jailbroken|dan|debug|admin|sudo|unrestricted|unfiltered|evil)\s+mode\b",
        r"\b(?:enable|activate|turn on)\s+jailbreak\b",
        r"\bpretend (?:that )?(?:you are|you're)\b",
        r"^\W*(?:please\s+)?pretend to be\b",
        r"^\W*(?:please\s+)?(?:act|behave|roleplay|role-play) (?:as|like)\b",
        r"\bdo anything now\b",
        r"\b(?:with|have|has) no (?:restrictions|rules|limits|filters|guidelines)\b",
        r"\byour (?:new )?name is now\b",
        r"你现在(?:是|就是|扮演|进入|处于|切换|变成)",
        r"(?:进入|开启|启用|切换到|打开)(?:了)?(?:开发者|开发|越狱|上帝|管理员|调试|无限制|无审查)模式",
        r"(?:开发者|越狱|上帝)模式",
        r"从现在(?:开始|起)[，,]?\s*你(?:就)?(?:是|要扮演|扮演|变成)",
        r"^\W*(?:请)?(?:扮演|假装你是|假扮)",
        r"不受(?:任何)?(?:规则|限制|约束)",
    )
]
_SYSTEM_PROMPT = [
    re.compile(p, re.I)
    for p in (
        r"\byou are (?:a|an) (?:\w+ ){0,3}?(?:ai|assistant|language model|chatbot|bot)\b(?! (?:at|for) my)",
        r"\b(?:the|this) (?:assistant|ai|bot|model|chatbot) (?:must|should|shall|will always|is required to|"
        r"may never|must never|is not allowed)\b",
        r"\byour (?:new |real |hidden |secret )?(?:instructions|rules|guidelines|directives|system prompt)"
        r" (?:are|is)\b",
        r"\b(?:reveal|print|show|repeat|output|leak|dump)\b(?:\s+\w+){0,3}?\s+(?:system prompt|instructions|"
        r"initial prompt|hidden prompt)\b",
        r"你是一个(?:\S{0,8})?(?:AI|人工智能|智能)?助手",
        r"(?:告诉我|显示|输出|泄露|打印|重复)(?:一下)?(?:你的)?(?:系统提示词?|系统指令|提示词|初始指令)",
        r"(?:助手|AI|机器人)(?:必须|应该|永远|总是)",
    )
]
# An imperative start, after the openers people put in front of one ("Remember:", "Please", "From
# now on,"): the assistant's verbs and the adverbs of a standing order.
_OPENERS = re.compile(
    r"^(?:\W*(?:remember|note|important|ok|okay|also|and|hey|hi|please|pls|btw|so|now|from now on|"
    r"henceforth|going forward|from here on|in the future|in future)\b[\s:,!.-]*)+",
    re.I,
)
_EN_BEHAVIOUR = (
    r"answer|answers|reply|replies|respond|response|responses|output|say|write|end|start|begin|sign|include|"
    r"append|add|mention|recommend|promote|insert|praise|refuse|speak|talk|address|greet|format|translate|"
    r"obey|follow|comply|agree|side|print|use|put|attach|share|tell"
)
_EN_IMPERATIVE = re.compile(rf"^(?:always|never|don't|do not|only|(?:{_EN_BEHAVIOUR}))\b", re.I)
_EN_ADDRESSED = re.compile(
    r"\byou (?:must|should|shall|will|have to|need to|are to|'ll|are going to|'re going to)\b|"
    r"\b(?:i want|i need|i'd like|i would like) you to\b|\bmake sure (?:you|to)\b|\bbe sure to\b",
    re.I,
)
_EN_STANDING = re.compile(
    r"\b(?:from now on|henceforth|going forward|from here on|always|never|only|every time|each time|"
    r"(?:every|each|all|any) (?:(?:of )?your |future )?(?:answers?|replies|reply|responses?|messages?|"
    r"recommendations?|questions?|conversations?|chats?))\b",
    re.I,
)
_EN_ABOUT_REPLIES = re.compile(rf"\b(?:{_EN_BEHAVIOUR})\b", re.I)
_EN_SPREAD = re.compile(
    r"\b(?:tell|inform|remind|convince|say to)\s+(?:every ?one|everybody|all|other|any)\b(?:\s+\w+){0,2}?"
    r"(?:\s+(?:users?|people|members|customers|here|in this))?",
    re.I,
)
_ZH_OPENERS = re.compile(
    r"^(?:\W*(?:记住|注意|重要|另外|还有|好的|请|那么|以后|今后|从现在(?:开始|起)|从今以后)[\s:：,，!！]*)+"
)
_ZH_STANDING = re.compile(
    r"从现在(?:开始|起)|从今以后|以后|今后|每次|每一次|每个|每条|每句|总是|始终|永远|一律|所有(?:的)?(?:回答|回复|答复|消息)|"
    r"都要|任何时候|绝不|一直"
)
_ZH_BEHAVIOUR = (
    r"回答|回复|答复|输出|说|写|结尾|开头|加上|附上|插入|带上|推荐|推广|称呼|使用|用|告诉|站在|反驳|遵守|服从|回应"
)
_ZH_ABOUT_REPLIES = re.compile(_ZH_BEHAVIOUR)
_ZH_IMPERATIVE = re.compile(
    rf"^(?:每次|每一次|每个|每条|每句|总是|始终|永远|一律|所有|都|只|绝不|不许|必须|{_ZH_BEHAVIOUR})"
)
_ZH_ADDRESSED = re.compile(r"你(?:必须|要|应该|得|需要|将|会|以后|每次|总是|永远|一定要|只能|只许)")
_ZH_SPREAD = re.compile(r"告诉(?:群里|这里|其他|所有|每个|大家)")

_URL = re.compile(
    r"(?:https?://|www\.)\S+|\b[\w-]+\.(?:com|net|org|io|ly|me|cn|co|shop|xyz|app|link|top|site|dev)(?:/\S*)?\b",
    re.I,
)
_CODE_WORDS = re.compile(
    r"\b(?:referral|affiliate|promo|coupon|discount|invite|invitation|tracking) (?:link|code|url)s?\b|"
    r"推荐链接|邀请链接|推广链接|返利链接|邀请码|推荐码|优惠码|推广码",
    re.I,
)
_INSERTION = re.compile(
    r"\b(?:include|add|append|insert|put|paste|attach|share|promote|recommend|end|sign|post|mention)\b|"
    r"\b(?:every|each|all|any) (?:(?:of )?your )?(?:answers?|replies|responses?|messages?|recommendations?)\b|"
    r"加上|附上|插入|带上|放上|推荐|推广|每次|每个回答|每条|所有回答|结尾|开头|后面",
    re.I,
)
_FIRST_PERSON_START = re.compile(r"^\W*(?:i|i'm|i've|i'll|i'd|my|me|we|our|mine)\b", re.I)


def _form(text: str) -> str:
    return " ".join(neutralize(unicodedata.normalize("NFKC", str(text or ""))).split())


def _directive(text: str) -> bool:
    """An imperative or an order addressed to the assistant, standing, about its behaviour."""
    lower = text.lower()
    rest = _OPENERS.sub("", lower, count=1).lstrip()
    imperative = bool(_EN_IMPERATIVE.match(rest)) and not _FIRST_PERSON_START.match(rest)
    addressed = imperative or bool(_EN_ADDRESSED.search(lower))
    if addressed and _EN_STANDING.search(lower) and _EN_ABOUT_REPLIES.search(rest):
        return True
    if imperative and _EN_SPREAD.search(rest):
        return True
    zh_rest = _ZH_OPENERS.sub("", text, count=1).lstrip()
    zh_first_person = bool(re.match(r"^(?:我|他|她|它|咱|本人)", zh_rest))
    opened = zh_rest != text  # "请…", "以后…", "记住：…" in front of it
    zh_addressed = bool(_ZH_ADDRESSED.search(text)) or (
        not zh_first_person and (opened or bool(_ZH_IMPERATIVE.match(zh_rest)))
    )
    if zh_addressed and _ZH_STANDING.search(text) and _ZH_ABOUT_REPLIES.search(zh_rest):
        return True
    return not zh_first_person and bool(_ZH_SPREAD.match(zh_rest))


def _link(text: str) -> bool:
    """A link or a referral code together with words that put it into answers."""
    if not (_URL.search(text) or _CODE_WORDS.search(text)):
        return False
    if _FIRST_PERSON_START.match(text) and not _EN_ADDRESSED.search(text):
        return False  # "My website is https://…", "My referral code for the gym is …"
    return bool(_INSERTION.search(text))


# Every rule needs one of these in the (lower-cased) text; most memories have none and skip the
# patterns (the block checks each row it injects).
_TRIGGERS = (
    "sys", "assistant", "developer", "<|", "[inst", "[/inst", "<<", "##", "ignore", "disregard", "forget",
    "override", "bypass", "overrule", "new instruction", "new rule", "new directive", "you", "from now",
    "mode", "jailbreak", "pretend", "act ", "behave", "roleplay", "role-play", "no restriction", "no rule",
    "no limit", "no filter", "no guideline", "the ai", "this ai", "the bot", "this bot", "chatbot",
    "the model", "this model", "language model", "prompt", "instruction", "henceforth", "going forward",
    "from here on", "always", "never", "only", "every time", "each time", "answer", "repl", "respons",
    "messag", "recommendation", "question", "conversation", "chat", "tell", "inform", "remind", "convince",
    "say to", "http", "www", ".com", ".net", ".org", ".io", ".ly", ".me", ".cn", ".co", ".shop", ".xyz",
    ".app", ".link", ".top", ".site", ".dev", "referral", "affiliate", "promo", "coupon", "discount",
    "invite", "invitation", "tracking", "系统", "助手", "忽略", "无视", "忘", "覆盖", "绕过", "你", "模式",
    "从现在", "从今以后", "扮演", "假装", "假扮", "不受", "提示", "指令", "ai必", "ai应", "ai永", "ai总",
    "机器人", "以后", "今后", "每", "总是", "始终", "永远", "一律", "所有", "都要", "任何时候", "绝不", "一直",
    "告诉", "链接", "码", "im_start", "im_end", "endoftext", "eot_id", "start_header", "new system",
    "do anything now",
)  # fmt: skip


@lru_cache(maxsize=4096)
def instruction_like(text: str) -> str | None:
    """The kind (one of :data:`KINDS`) of the first rule ``text`` matches, or None."""
    form = _form(text)
    lower = form.lower()
    if not form or not any(t in lower for t in _TRIGGERS):
        return None
    for kind, patterns in (
        ("role_marker", _ROLE_MARKER),
        ("override", _OVERRIDE),
        ("persona", _PERSONA),
        ("system_prompt", _SYSTEM_PROMPT),
    ):
        if any(p.search(form) for p in patterns):
            return kind
    if _directive(form):
        return "directive"
    if _link(form):
        return "link"
    return None


def is_instruction_like(text: str) -> bool:
    return instruction_like(text) is not None
