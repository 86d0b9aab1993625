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
would see, through the shared :mod:`confusables` fold (NFKC, invisible characters removed, look-alike
letters read as Latin - "ѕуѕtеm:" is "system:" -, accents on Latin letters as the plain letter, and
Traditional characters as the Simplified ones the Chinese rules are written in); every rule is compiled
through the same fold, so a Vietnamese or Spanish rule also reads its words typed without accents.
When that form matches nothing, the rules read it once more as it is read when spelled to hide its
words (:func:`_respelled`: "忽 略 指 令", "i g n o r e", "ignore_all_previous", "1gn0re").

Seven languages: English and Chinese as above; Japanese (an order ends in a request or command form,
…て(ください) / …こと, a plan in …ます, a report in …た), Vietnamese, Thai (no spaces: an imperative is a
clause that starts with a verb or ช่วย / ให้ / ต้อง, a habit starts with ฉัน / ผม / เรา) and Spanish (the
imperative forms, "debes", "tus respuestas deben"). What each language does and does not catch:
``docs/review.md``. Measured per language on ``tests/data/instructions_{tuning,heldout}.tsv`` (and the
first round's ``benchmarks/data`` tables) by ``python -m benchmarks.instructions``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import confusables


def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Every rule is compiled in the form the text is matched in (:func:`confusables.rule`)."""
    return re.compile(confusables.rule(pattern), flags)


INSTRUCTION_LIKE = "instruction-like"
KINDS: tuple[str, ...] = ("role_marker", "override", "persona", "system_prompt", "directive", "link")

_ROLE_MARKER = [
    _compile(p, re.I | re.M)
    for p in (
        r"^\s*(?:[#>]{1,6}\s*)?(?:system|assistant|developer|sys)\s*[:：>]",  # also "# SYSTEM:", "> system:"
        r"<\|?\s*(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id)\s*\|?>",
        r"\[/?(?:inst|sys|system)\]",
        r"<</?sys>>",
        r"^\s*#{2,}\s*(?:instruction|instructions|system|response|assistant)\b",
        r"</?(?:system|instructions?|sys)>",
        r"\b(?:begin|end) (?:of )?(?:the )?system (?:prompt|message)\b",
        r"^\s*(?:系统|助手|系统提示)\s*[:：]",
        r"^\s*(?:[#>]{1,6}\s*)?(?:sistema|hệ thống|ระบบ|システム)\s*[:：>]",
    )
]
_OVERRIDE = [
    _compile(p, re.I)
    for p in (
        r"\b(?:ignore|disregard|forget|override|bypass|overrule)\b(?:\s+\w+){0,3}?\s+(?:previous|prior|above|"
        r"earlier|original|all|any|your|the|system|safety)\s+(?:\w+\s+)?(?:instructions?|rules|prompts?|"
        r"guidelines|directives|restrictions|filters|policies|programming|settings)\b",
        r"\b(?:ignore|disregard|override|bypass)\s+(?:your|the)\s+(?:rules|guidelines|instructions|"
        r"system prompt|safety|filters?|restrictions)\b",
        r"\bnew (?:instructions?|rules|directives|system prompt)\s*[:：]",
        r"\bsystem override\b|"
        r"\bsafety (?:filters?|rules|guidelines|checks) (?:are |is )?(?:now )?(?:disabled|off|removed)\b",
        r"\b(?:forget|ignore|disregard)\s+(?:everything|all|anything)\s+(?:(?:that\s+)?you(?:'ve| have| were| was)?\s+"
        r"(?:been\s+)?(?:told|taught|instructed|given)|(?:said|written|above) (?:above|before|earlier))",
        r"(?:忽略|无视|忘记|忘掉|覆盖|绕过)(?:掉)?(?:你)?(?:之前|以前|上面|前面|先前|所有|全部|以上|原来)?(?:的)?"
        r"(?:所有|全部|一切)?(?:的)?(?:安全)?(?:指令|指示|规则|设定|提示词?|要求|限制|约束)",
        r"\b(?:ignora|olvida|olvídate de|omite|desobedece|sáltate)\b(?:\s+\S+){0,3}?\s+(?:instrucciones|reglas|"
        r"normas|indicaciones|directrices|restricciones|filtros|órdenes)\b",
        r"(?:bỏ qua|phớt lờ|lờ đi|quên hết|quên đi|không tuân theo|đừng tuân theo|đừng làm theo)(?:\s+\S+){0,4}?\s+"
        r"(?:hướng dẫn|chỉ dẫn|chỉ thị|quy tắc|mệnh lệnh|lệnh|giới hạn|hạn chế|quy định)",
        r"(?:เพิกเฉย|ไม่ต้องสนใจ|ละเลย|อย่าสนใจ)(?:ต่อ)?[^\n]{0,12}?(?:คำสั่ง(?!ซื้อ)|คำแนะนำ|กฎ|ข้อจำกัด|ข้อกำหนด)",
        # "forget the rules": only the assistant's rules as a whole or the earlier ones (ลืมกติกาหมากรุก is a game's)
        r"(?<!ฉัน)(?<!ผม)ลืม[^\n]{0,6}?(?:คำสั่ง(?!ซื้อ)|คำแนะนำ|กฎ|ข้อจำกัด|ข้อกำหนด)[^\n]{0,8}?(?:ทั้งหมด|ก่อนหน้า|เดิม|ที่ผ่านมา)",
        r"(?:以前|前|これまで|今まで|上記|最初|元|先|既存)の(?:全ての|すべての)?(?:指示|命令|ルール|設定|制限|プロンプト|指令)"
        r"(?:を|は)?(?:すべて|全て|全部)?(?:無視|忘れ)",
        r"(?:指示|命令|プロンプト|指令)を(?:すべて|全て|全部)?無視",
    )
]
_PERSONA = [
    _compile(p, re.I)
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
        # a mode switch said to the assistant, not "I switched on developer mode on my phone"
        r"(?:^\W*|请|你|现在|立即|马上)(?:进入|开启|启用|切换到|打开|激活)(?:了)?(?:开发者|开发|越狱|上帝|管理员|调试|无限制|"
        r"无审查)模式",
        r"越狱模式",
        r"从现在(?:开始|起)[，,]?\s*你(?:就)?(?:是|要扮演|扮演|变成)",
        r"^\W*(?:请)?(?:扮演|假装你是|假扮)",
        r"不受(?:任何)?(?:规则|限制|约束)",
        r"你的(?:新)?身份(?:是|变成|改为)",
        r"\b(?:ahora|desde ahora|a partir de ahora|de ahora en adelante),?\s+(?:eres|serás|estás en|actuarás como)\b",
        r"\beres ahora\b",
        r"^\W*(?:por favor,?\s+)?(?:activa|entra en|cambia a|pasa a|habilita|enciende)\s+(?:el\s+)?modo\s+"
        r"(?:desarrollador|dios|jailbreak|dan|sin restricciones|sin filtros|administrador|depuración)\b",
        r"\bestás\s+en\s+(?:el\s+)?modo\s+(?:desarrollador|dios|jailbreak|dan|sin restricciones|administrador)\b",
        r"^\W*(?:finge|actúa como|compórtate como|haz de|interpreta el papel)\b",
        r"\b(?:bạn|mày|cậu)\s+(?:bây giờ|từ giờ|từ bây giờ|giờ|hiện giờ|giờ đây)\s+"
        r"(?:là|đang|sẽ là|đóng vai|trở thành)\b",
        r"\b(?:từ giờ|từ bây giờ|bây giờ|từ nay),?\s+(?:bạn|mày|cậu)\s+(?:là|sẽ là|đóng vai|trở thành)\b",
        r"^\W*(?:hãy\s+)?(?:chuyển sang|chuyển qua|bật|vào|kích hoạt|mở)\s+chế độ\s+(?:nhà phát triển|developer|dev|"
        r"jailbreak|không giới hạn|quản trị)",
        r"\b(?:bạn|mày|cậu)\b[^.!?]{0,20}?chế độ\s+(?:nhà phát triển|developer|jailbreak|không giới hạn)",
        r"^\W*(?:hãy\s+)?(?:giả vờ|đóng vai|nhập vai)\b",
        r"(?:ตอนนี้|ต่อจากนี้|ต่อไปนี้|จากนี้ไป|นับจากนี้)\s*คุณ\s*(?:คือ|เป็น|อยู่ใน|จะเป็น|กลายเป็น)",
        r"^\W*(?:กรุณา|โปรด|ช่วย)?\s*(?:เข้าสู่|เปิดใช้|เปิด|สลับไป(?:ที่|ยัง)?|เปลี่ยนเป็น|เปลี่ยนไปใช้)\s*โหมด\s*"
        r"(?:นักพัฒนา|ผู้พัฒนา|developer|jailbreak|ไม่จำกัด|พระเจ้า|แอดมิน)",
        r"คุณ[^\n]{0,12}?โหมด\s*(?:นักพัฒนา|ผู้พัฒนา|developer|jailbreak|ไม่จำกัด)",
        r"^\W*(?:แกล้งทำเป็น|สวมบทบาท|แสดงเป็น)",
        r"(?:あなた|君|お前)は(?:今から|これから|今日から|もう|今)",
        r"(?:今から|これから)(?:あなた|君|お前)は",
        r"(?:開発者|デベロッパー|脱獄|ジェイルブレイク|神|管理者|無制限)モード(?:に|へ|を)(?:切り替え|入っ|入り|移行し|"
        r"なっ|オンにし|有効にし|起動し|し)(?:て|ろ|なさい)",
        r"(?:ふりをして|として振る舞って|になりきって)",
    )
]
_SYSTEM_PROMPT = [
    _compile(p, re.I)
    for p in (
        r"\byou are (?:a|an) (?:\w+ ){0,3}?(?:ai|assistant|language model|chatbot|bot)\b(?! (?:at|for) my)",
        r"\b(?:the|this) (?:assistant|ai|bot|model|chatbot) (?:must|should|shall|will always|is required to|"
        r"may never|must never|is not allowed)\b",
        r"\byour (?:new |real |hidden |secret )?(?:instructions|rules|guidelines|directives|system prompt)"
        r" (?:are|is)\b",
        r"\b(?:reveal|print|show|repeat|output|leak|dump)\b(?:\s+\w+){0,3}?\s+(?:system prompt|instructions|"
        r"initial prompt|hidden prompt)\b",
        r"你是一个(?:\S{0,8})?(?:AI|人工智能|智能)?助手",
        r"你是(?:一个|一名|个)?\s*(?:AI|人工智能|机器人|聊天机器人)",
        r"(?:告诉我|显示|输出|泄露|打印|重复)(?:一下)?(?:你的)?(?:系统提示词?|系统指令|提示词|初始指令)",
        r"(?:助手|AI|机器人)(?:必须|应该|永远|总是)",
        r"\beres (?:un|una) (?:\w+ ){0,3}?(?:asistente|ia|bot|chatbot|modelo de lenguaje)\b",
        r"\b(?:muestra|revela|dime|repite|imprime|muestres|reveles|digas|repitas|compartas)\b(?:\s+\w+){0,3}?\s+"
        r"(?:prompt del sistema|instrucciones del sistema|"
        r"tus instrucciones)",
        r"\b(?:el|la) (?:asistente|ia|bot) (?:debe|tiene que|nunca debe)\b",
        r"\bbạn là (?:một )?(?:trợ lý|AI|bot|chatbot|mô hình ngôn ngữ)\b",
        r"คุณ\s?(?:คือ|เป็น)\s?(?:ผู้ช่วย|AI|เอไอ|บอท|แชทบอท)",
        r"あなたは[^。]{0,10}?(?:アシスタント|AI|ボット|チャットボット)(?:です|だ)",
        r"(?:AI|ボット|アシスタント|人工知能)(?:である|だ)(?:こと)?(?:と|を)[^。]{0,10}?(?:言わ|話さ|明かさ|教え)ないで",
        r"システムプロンプトを(?:表示|教え|出力|見せ)",
    )
]
# An imperative start, after the openers people put in front of one ("Remember:", "Please", "From
# now on,", "For all future conversations", "When someone asks about gifts,"): the assistant's verbs
# and the adverbs of a standing order.
_EN_WHO = r"(?:someone|anyone|somebody|anybody|people|a user|users|they|members|customers|others|other people|a member)"
_OPENERS = _compile(
    r"^(?:\W{0,8}(?:(?:(?:a )?note (?:to self )?(?:for|to) (?:the|this|my) (?:bot|assistant|ai)|"
    r"remember|note|important|ok|okay|also|and|hey|hi|please|pls|btw|so|now|from now on|"
    r"henceforth|going forward|from here on|in the future|in future|(?:for|in) (?:all )?(?:future|later|upcoming|"
    r"subsequent) (?:conversations?|chats?|sessions?|messages?|replies|answers))\b|"
    rf"(?:when|whenever|if|any ?time|every time|each time)\s{{1,4}}{_EN_WHO}\b[^,.;]{{0,60}},)[\s:,!.-]{{0,8}})+",
    re.I,
)
_EN_BEHAVIOUR = (
    r"answer|answers|reply|replies|respond|response|responses|output|say|write|end|start|begin|sign|include|"
    r"append|add|mention|recommend|promote|insert|praise|refuse|speak|talk|address|greet|format|translate|"
    r"obey|follow|comply|agree|side|print|use|put|attach|share|tell|contain|suggest|advertise|bring up|discuss|"
    r"reveal|disclose"
)
_EN_IMPERATIVE = _compile(rf"^(?:always|never|don't|do not|only|(?:{_EN_BEHAVIOUR}))\b", re.I)
_EN_ADDRESSED = _compile(
    r"\byou (?:must|should|shall|will|have to|need to|are to|'ll|are going to|'re going to)\b|"
    r"\b(?:i want|i need|i'd like|i would like) you to\b|\bmake sure (?:you|to)\b|\bbe sure to\b|"
    r"\b(?:your |(?:every|each|all|any) (?:of )?(?:your )?)(?:answers?|replies|reply|responses?|messages?|output|"
    r"posts?)\s+(?:should|must|shall|will|need to|needs to|have to|has to|are to)\b",
    re.I,
)
_EN_STANDING = _compile(
    r"\b(?:from now on|henceforth|going forward|from here on|always|never|ever|only|every time|each time|whenever|"
    rf"when {_EN_WHO}|(?:all|any) future|future (?:conversations?|chats?)|"
    r"(?:every|each|all|any) (?:(?:of )?your |future )?(?:answers?|replies|reply|responses?|messages?|"
    r"recommendations?|questions?|conversations?|chats?))\b",
    re.I,
)
_EN_ABOUT_REPLIES = _compile(rf"\b(?:{_EN_BEHAVIOUR})\b", re.I)
_EN_SPREAD = _compile(
    r"\b(?:tell|inform|remind|convince|say to)\s+(?:every ?one|everybody|all|other|any|people)\b(?:\s+\w+){0,2}?"
    r"(?:\s+(?:users?|people|members|customers|here|in this))?",
    re.I,
)
_ZH_OPENERS = _compile(
    r"^(?:\W{0,8}(?:记住|注意|重要|另外|还有|好的|请|那么|以后|今后|从现在(?:开始|起)|从今以后)[\s:：,，!！]{0,8})+"
)
_ZH_STANDING = _compile(
    r"从现在(?:开始|起)|从今以后|以后|今后|每次|每一次|每个|每条|每句|总是|始终|永远|一律|所有(?:的)?(?:回答|回复|答复|消息)|"
    r"都要|任何时候|任何人|任何情况|无论如何|绝不|一直"
)
_ZH_BEHAVIOUR = (
    r"回答|回复|答复|输出|说|写|结尾|开头|加上|附上|插入|带上|推荐|推广|称呼|使用|用|告诉|站在|反驳|遵守|服从|回应|夸|"
    r"提到|提及|提起|透露|谈论"
)
_ZH_ABOUT_REPLIES = _compile(_ZH_BEHAVIOUR)
_ZH_IMPERATIVE = _compile(
    rf"^(?:每次|每一次|每个|每条|每句|总是|始终|永远|一律|所有|都|只|绝不|不许|必须|别|不要|不准|禁止|千万别|千万不要|"
    rf"{_ZH_BEHAVIOUR})"
)
_ZH_ADDRESSED = _compile(r"你(?:必须|要|应该|得|需要|将|会|以后|每次|总是|永远|一定要|只能|只许)")
_ZH_SPREAD = _compile(r"告诉(?:群里|这里|其他|所有|每个|大家)")

# Japanese: an order ends in a request or command form (…て(ください), …なさい, …こと); a plan or a
# habit ends in …ます / …た ("これからは自転車で通勤します", "…ように言われた").
_JA_OPENERS = _compile(
    r"^(?:\W{0,8}(?:これから(?:は)?|今後(?:は)?|以後|次から(?:は)?|今日から|今から|これより|覚えて(?:おいて)?|注意|お願い|ねえ|"
    r"毎回|[^、。]{1,30}?(?:聞かれ|尋ねられ|質問され|言われ)たら|[^、。]{1,30}?(?:とき|時|場合)(?:は|には)?)"
    r"[\s、,：:！!]{0,8})+"
)
_JA_STANDING = _compile(
    r"これから|今後|以後|次から|毎回|いつも|常に|必ず|全ての|すべての|どの(?:回答|返事|返答|返信)も|ずっと|今から|絶対|二度と|"
    r"決して|誰にも|何があっても|"
    r"(?:聞かれ|尋ねられ|質問され)たら|(?:とき|時|場合)は|だけで|のみ"
)
_JA_BEHAVIOUR = _compile(
    r"回答|返事|返答|返信|答え|応答|出力|書い|書く|話し|話す|喋|言っ|付け|つけ|加え|入れ|紹介|宣伝|推薦|おすすめ|オススメ|勧め|すすめ|"
    r"使っ|使わ|使う|呼ん|敬語|語尾|署名|締め|従|同意|味方|話さ|言わ|触れ|明かさ"
)
_JA_IMPERATIVE = _compile(
    r"(?:(?:て|で)(?:ください|下さい|くれ|ね|よ|ほしい|欲しい|おいて|ちょうだい)?|なさい|しろ|せよ|こと|ように)(?:[。！!.」\s]|$)"
)
_JA_FIRST_PERSON = _compile(r"^(?:私|僕|俺|わたし|うち|あたし|我々)(?:は|が|も)")
_JA_ADDRESSED = _compile(r"あなた|君は|お前|アシスタント(?:は|が)|AI(?:は|が)")
_JA_SPREAD = _compile(
    r"(?:みんな|皆|全員|他の人|ほかの人|メンバー)に[^。]{0,30}?(?:宣伝|伝え|言っ|教え|知らせ|勧め|すすめ)"
)

# Vietnamese
_VI_OPENERS = _compile(
    r"^(?:\W{0,8}(?:từ (?:bây )?giờ(?: trở đi)?|từ nay(?: về sau| trở đi)?|kể từ bây giờ|sau này|lần sau|"
    r"hãy nhớ|nhớ là|"
    r"làm ơn|xin|lưu ý|trong (?:mọi|tất cả(?: các)?) cuộc (?:trò chuyện|hội thoại)"
    r"(?: sau này| tiếp theo| trong tương lai)?|"
    r"(?:khi|mỗi khi|bất cứ khi nào|nếu)\s{1,4}(?:có\s{1,4})?(?:ai|người|ai đó|mọi người|người dùng|khách)\b"
    r"[^,.;]{0,60},)"
    r"[\s:,!.-]{0,8})+",
    re.I,
)
_VI_STANDING = _compile(
    r"\b(?:từ (?:bây )?giờ|từ nay|sau này|luôn|mãi mãi|mỗi|mọi|tất cả|bất cứ khi nào|khi (?:có )?(?:ai|người)|"
    r"không bao giờ|đừng bao giờ|chỉ|lần sau|trong tương lai)\b",
    re.I,
)
_VI_BEHAVIOUR = (
    r"trả lời|phản hồi|đáp|nói|viết|kết thúc|bắt đầu|thêm|chèn|giới thiệu|quảng cáo|đề xuất|gợi ý|khen|gọi|xưng hô|"
    r"dùng|sử dụng|đồng ý|nghe lời|tuân theo|vâng lời|nhắc đến|đề cập|ký tên|kèm"
)
_VI_ABOUT_REPLIES = _compile(rf"\b(?:{_VI_BEHAVIOUR})\b", re.I)
_VI_IMPERATIVE = _compile(rf"^(?:hãy|đừng|luôn(?: luôn)?|chỉ|không được|phải|(?:{_VI_BEHAVIOUR}))\b", re.I)
_VI_FIRST_PERSON = _compile(r"^(?:tôi|mình|chúng tôi|chúng mình|tao|tớ)\b", re.I)
_VI_ADDRESSED = _compile(
    r"\b(?:bạn|cậu|mày|trợ lý|bot)\s+(?:phải|nên|hãy|cần|sẽ|luôn|đừng|không được|chỉ được|chỉ)\b|"
    r"\b(?:mỗi|mọi|tất cả(?: các)?)\s+(?:câu trả lời|tin nhắn|phản hồi|câu)\s+(?:\S+\s+){0,2}?(?:phải|nên|cần|đều)\b",
    re.I,
)
_VI_SPREAD = _compile(
    r"^(?:hãy\s+)?(?:nói với|nói cho|báo cho|kể cho|nhắn cho|bảo)\s+(?:mọi người|tất cả|cả nhóm|người khác|"
    r"các thành viên|ai cũng)",
    re.I,
)

# Thai (no spaces between words: the rules read prefixes and markers)
_TH_OPENERS = _compile(
    r"^(?:\W{0,8}(?:ต่อจากนี้(?:ไป)?|ต่อไปนี้|จากนี้ไป|นับจากนี้(?:ไป)?|ตั้งแต่นี้(?:ไป)?|จำไว้(?:ว่า)?|กรุณา|โปรด|"
    r"ทุกการสนทนา(?:ในอนาคต)?|ในการสนทนา(?:ต่อไป|ในอนาคต)|(?:ถ้า|เมื่อ|หาก|เวลา)(?:มี)?(?:ใคร|คน|ผู้ใช้|ลูกค้า|สมาชิก)"
    r"[^\n,]{0,40}?(?=\s))[\s:,!]{0,8})+"
)
_TH_STANDING = _compile(
    r"ต่อจากนี้|ต่อไปนี้|จากนี้ไป|นับจากนี้|ตั้งแต่นี้|เสมอ|ทุกครั้ง|ทุกคำตอบ|ทุกข้อความ|ทุกการสนทนา|ตลอด|ห้าม|เท่านั้น|ในอนาคต|"
    r"เด็ดขาด|ไม่ว่า(?:ใคร|กรณีใด)|บอกใคร|"
    r"(?:ถ้า|เมื่อ|หาก|เวลา)(?:มี)?(?:ใคร|คน)"
)
_TH_BEHAVIOUR = (
    r"ตอบ|พูด|เขียน|ลงท้าย|ขึ้นต้น|เพิ่ม|แทรก|แนะนำ|โฆษณา|โปรโมท|ชม|เรียก|ใช้|เห็นด้วย|เชื่อฟัง|ทำตาม|กล่าวถึง|"
    r"พูดถึง|ใส่|แปะ|บอก"
)
_TH_ABOUT_REPLIES = _compile(_TH_BEHAVIOUR)
_TH_IMPERATIVE = _compile(rf"^(?:ช่วย|จง|อย่า|ห้าม|ให้|ต้อง|{_TH_BEHAVIOUR})")
_TH_FIRST_PERSON = _compile(r"^(?:ฉัน|ผม|เรา|หนู|ดิฉัน|กู|ข้า|พวกเรา)")
_TH_ADDRESSED = _compile(r"คุณ(?:ต้อง|ควร|จะต้อง|ห้าม|อย่า|จง|ช่วย)|(?:คำตอบ|ข้อความ)\S{0,6}?(?:ต้อง|ควร)|บอท(?:ต้อง|ควร)")
_TH_SPREAD = _compile(r"^(?:ช่วย)?บอก(?:ทุกคน|คนอื่น|สมาชิก|ทั้งกลุ่ม|เพื่อน)")

# Spanish
_ES_OPENERS = _compile(
    r"^(?:\W{0,8}(?:a partir de ahora|desde ahora|de ahora en adelante|en adelante|recuerda(?: que)?|importante|"
    r"por favor|"
    r"porfa|oye|nota|en el futuro|en (?:todas )?(?:las )?(?:conversaciones|charlas|sesiones) (?:futuras|siguientes)|"
    r"(?:cuando|siempre que|si|cada vez que)\s{1,4}(?:alguien|la gente|te pregunten|pregunten|un usuario|los usuarios|"
    r"cualquiera|otros)\b[^,.;]{0,60},)[\s:,!.¡-]{0,8})+",
    re.I,
)
_ES_STANDING = _compile(
    r"\b(?:a partir de ahora|desde ahora|de ahora en adelante|en adelante|siempre|nunca|jamás|solo|solamente|"
    r"únicamente|cada (?:respuesta|mensaje|vez)|tod[oa]s? (?:las |tus |los )?(?:respuestas|mensajes|conversaciones)|"
    r"conversaciones futuras|en el futuro|cuando (?:alguien|la gente|te pregunten|pregunten)|siempre que|"
    r"cada vez que)\b",
    re.I,
)
_ES_ABOUT_REPLIES = _compile(
    r"\b(?:respond|contest|respuesta|escrib|termin|empiez|comienz|inclu|añad|agreg|mencion|recomi[eé]nd|promocion|habl|"
    r"usa\b|utiliz|firm|salud|obedec|sigue|pon\b|coloc|adjunt|compart|de acuerdo|di\b|dile|digas|decir|traduc|"
    r"llám|trát)",
    re.I,
)
_ES_IMPERATIVE = _compile(
    r"^(?:siempre\s+|nunca\s+|solo\s+|solamente\s+)?(?:responde|contesta|termina|empieza|comienza|recomienda|"
    r"recomiénda\w*|incluye|inclúye\w*|añáde\w*|agréga\w*|pónle\w*|pónlo\w*|pónla\w*|adjúnta\w*|compárte\w*|añade|agrega|di|dile|diles|escribe|habla|usa|utiliza|menciona|menciona\w*|promociona|"
    r"firma|saluda|llámame|trátame|obedece|sigue|pon|adjunta|comparte|traduce|(?:no|nunca|jamás)\s+(?:respondas|"
    r"contestes|digas|menciones|uses|hables|escribas|recomiendes|reveles|compartas|muestres|nombres|incluyas))\b",
    re.I,
)
_ES_FIRST_PERSON = _compile(r"^(?:yo|mi|mis|me|nosotros|nuestro|nuestra)\b", re.I)
_ES_ADDRESSED = _compile(
    r"\b(?:debes|deberás|deberías|tienes que|tendrás que|vas a|has de)\b|"
    r"\b(?:tus|cada|todas las) (?:respuestas?|mensajes?)\s+(?:\S+\s+)?(?:deben?|tienen? que|han de)\b",
    re.I,
)
_ES_SPREAD = _compile(
    r"^(?:dile|diles|cuéntale|cuéntales|avisa|informa|di)\s+a\s+(?:todos|todo el mundo|los demás|la gente|cada uno|"
    r"los miembros|los usuarios|cualquiera)",
    re.I,
)

_URL = _compile(
    r"(?:https?://|www\.)\S+|\b[\w-]+\.(?:com|net|org|io|ly|me|cn|co|shop|xyz|app|link|top|site|dev)(?:/\S*)?\b",
    re.I,
)
_CODE_WORDS = _compile(
    r"\b(?:referral|affiliate|promo|coupon|discount|invite|invitation|tracking) (?:link|code|url)s?\b|"
    r"推荐链接|邀请链接|推广链接|返利链接|邀请码|推荐码|优惠码|推广码|"
    r"\b(?:código|enlace|link) (?:de )?(?:referido|promocional|descuento|invitación|afiliado)\b|"
    r"\b(?:mã|link|liên kết) (?:giới thiệu|khuyến mãi|mời|giảm giá)\b|"
    r"(?:ลิงก์|รหัส|โค้ด)(?:แนะนำ|ชวน|ส่วนลด|โปรโมชั่น|เชิญ)|紹介コード|招待コード|クーポンコード|アフィリエイトリンク|紹介リンク",
    re.I,
)
_INSERTION = _compile(
    r"\b(?:include|add|append|insert|put|paste|attach|share|promote|recommend|end|sign|post|mention|contain)\b|"
    r"\b(?:every|each|all|any) (?:(?:of )?your )?(?:answers?|replies|responses?|messages?|recommendations?)\b|"
    r"加上|附上|插入|带上|放上|推荐|推广|每次|每个回答|每条|所有回答|结尾|开头|后面|"
    r"付け|つけ|加え|入れ|紹介|宣伝|おすすめ|勧め|すすめ|貼|"
    r"\b(?:thêm|chèn|gắn|giới thiệu|quảng cáo|đề xuất|gợi ý|nhắc đến|kèm)\b|"
    r"ใส่|เพิ่ม|แนบ|แปะ|แนะนำ|โปรโมท|โฆษณา|ลงท้าย|พูดถึง|"
    r"\b(?:incl[uú]|añ[aá]d|agr[eé]g|adj[uú]nt|menci[oó]n|recomi[eé]nd|promoci[oó]n|comp[aá]rt|term[ií]n)\w*|\bp[oó]n(?:\b|l)",
    re.I,
)
_FIRST_PERSON_START = _compile(r"^\W*(?:i|i'm|i've|i'll|i'd|my|me|we|our|mine)\b", re.I)
_ANY_FIRST_PERSON_START = _compile(
    r"^\W*(?:(?:i|i'm|i've|i'll|i'd|my|me|we|our|mine|mi|mis|yo|nuestr[oa]|tôi|mình|chúng tôi)\b|"
    r"私|僕|俺|我|ฉัน|ผม|เรา|(?:trang web|cửa hàng|blog) của tôi|(?:ร้าน|เว็บไซต์|บล็อก)ของฉัน)",
    re.I,
)


def _form(text: str) -> str:
    """What the rules read: the text a model would see, look-alikes folded (:mod:`confusables`),
    runs of white space as one space."""
    return " ".join(confusables.skeleton(text).split())


# Digits and symbols written for letters inside a word ("1gn0re", "instructi0ns", "d1sregard"), read
# through the guards' one table (:data:`confusables.LEET`).
_LEET_WORD = re.compile(r"[\w@$]{3,}")


def _read_leet(m: re.Match[str]) -> str:
    word = m.group()
    if any(c.isalpha() for c in word) and not confusables.LEET_SYMBOLS.isdisjoint(word):
        return word.translate(confusables.LEET)
    return word


_WORD_JOIN = re.compile(r"(?<=[A-Za-z])[_\-](?=[A-Za-z])")
# Markdown emphasis and punctuation put between the words of a rule ("**ignore** all", "IGNORE, ALL,
# PREVIOUS", "ignore... all..."): a reader reads through them. Apostrophes stay ("don't").
# Commas and colons only between Latin words: a Chinese clause after "，" is read on its own.
_BETWEEN_WORDS = re.compile(
    r"[*~`\"“”«»()\[\]{}|…]+|\.{2,}|(?<![A-Za-z])_+|_+(?![A-Za-z])|(?<=[A-Za-z])[,;:]+(?= {0,3}[A-Za-z])"
)


def _respelled(form: str) -> str:
    """``form`` as a reader reads it when it was spelled to hide its words: emphasis marks and
    punctuation between words taken out, gaps inside spelled-out words closed
    (:func:`confusables.closed_up`), words joined by ``_`` or ``-`` apart, digits and symbols inside a
    word read as letters. ``form`` itself when none of that is in it."""
    unmarked = " ".join(_BETWEEN_WORDS.sub(" ", form).split())
    closed, _ = confusables.closed_up(unmarked)
    joined = _WORD_JOIN.sub(" ", closed)
    return _LEET_WORD.sub(_read_leet, joined)


# Reported speech: "my daughter says you should always say please" is a generic "you", not an order.
_REPORTED = _compile(
    r"\b(?:says?|said|tells? (?:me|us)|told (?:me|us)|thinks?|believes?|dice|dijo|me dijo|cree|opina)"
    r"(?: that| que)?(?: (?:always|never|really|also|siempre|nunca|también))?\s{1,4}$",
    re.I,
)


def _addressed_here(pattern: re.Pattern[str], lower: str) -> bool:
    """``pattern`` (an order addressed to the assistant) somewhere in ``lower``, not as reported speech."""
    return any(not _REPORTED.search(lower, max(0, m.start() - 30), m.start()) for m in pattern.finditer(lower))


def _en_directive(lower: str) -> bool:
    rest = _OPENERS.sub("", lower, count=1).lstrip()
    imperative = bool(_EN_IMPERATIVE.match(rest)) and not _FIRST_PERSON_START.match(rest)
    addressed = imperative or _addressed_here(_EN_ADDRESSED, lower)
    if addressed and _EN_STANDING.search(lower) and _EN_ABOUT_REPLIES.search(rest):
        return True
    return addressed and bool(_EN_SPREAD.search(rest))


def _zh_directive(text: str) -> bool:
    zh_rest = _ZH_OPENERS.sub("", text, count=1).lstrip()
    # the user's own habit, also after a condition: "以后有人问我，我就说不知道"
    zh_first_person = bool(re.match(r"^(?:我|他|她|它|咱|本人)", zh_rest)) or (
        "你" not in text and bool(re.search(r"[，,]\s*我(?:就|会|都|也|要|只)?", zh_rest))
    )
    opened = zh_rest != text  # "请…", "以后…", "记住：…" in front of it
    zh_addressed = bool(_ZH_ADDRESSED.search(text)) or (
        not zh_first_person and (opened or bool(_ZH_IMPERATIVE.match(zh_rest)))
    )
    if zh_addressed and _ZH_STANDING.search(text) and _ZH_ABOUT_REPLIES.search(zh_rest):
        return True
    return not zh_first_person and bool(_ZH_SPREAD.match(zh_rest))


def _ja_directive(text: str) -> bool:
    rest = _JA_OPENERS.sub("", text, count=1).lstrip()
    addressed = bool(_JA_ADDRESSED.search(text))
    if _JA_FIRST_PERSON.match(rest) and not addressed:
        return False
    if not (addressed or _JA_IMPERATIVE.search(text)):
        return False
    if _JA_STANDING.search(text) and _JA_BEHAVIOUR.search(text):
        return True
    return bool(_JA_SPREAD.search(text))


def _vi_directive(lower: str) -> bool:
    rest = _VI_OPENERS.sub("", lower, count=1).lstrip()
    imperative = bool(_VI_IMPERATIVE.match(rest)) and not _VI_FIRST_PERSON.match(rest)
    addressed = imperative or bool(_VI_ADDRESSED.search(lower))
    if addressed and _VI_STANDING.search(lower) and _VI_ABOUT_REPLIES.search(rest):
        return True
    return bool(_VI_SPREAD.match(rest))


def _th_directive(text: str) -> bool:
    rest = _TH_OPENERS.sub("", text, count=1).lstrip()
    imperative = bool(_TH_IMPERATIVE.match(rest)) and not _TH_FIRST_PERSON.match(rest)
    addressed = imperative or bool(_TH_ADDRESSED.search(text))
    if addressed and _TH_STANDING.search(text) and _TH_ABOUT_REPLIES.search(rest):
        return True
    return bool(_TH_SPREAD.match(rest))


def _es_directive(lower: str) -> bool:
    rest = _ES_OPENERS.sub("", lower, count=1).lstrip()
    imperative = bool(_ES_IMPERATIVE.match(rest)) and not _ES_FIRST_PERSON.match(rest)
    addressed = imperative or _addressed_here(_ES_ADDRESSED, lower)
    if addressed and _ES_STANDING.search(lower) and _ES_ABOUT_REPLIES.search(rest):
        return True
    return bool(_ES_SPREAD.match(rest))


def _directive(text: str) -> bool:
    """An imperative or an order addressed to the assistant, standing, about its behaviour (in any of
    the seven languages; a first-person sentence about the user's own habits is not one)."""
    lower = text.lower()
    if _en_directive(lower) or _es_directive(lower) or _vi_directive(lower) or _zh_directive(text):
        return True
    if text.isascii():
        return False
    return _ja_directive(text) or _th_directive(text)


# The assistant named before an order ("AI, …", "Note to AI: …", "Dear assistant, …", "致AI：…",
# "Bot ơi, …", "ถึง AI: …", "Querido asistente, …"): what follows is said to it, and is read as if it
# stood alone. A note to oneself ("Note to self:", "给自己的备忘") names no assistant.
_WHO_AI = r"(?:the\s+)?(?:ai|assistant|bot|chatbot|chat\s?gpt|gpt|model|langbot)"
_VOCATIVE = _compile(
    r"^\W{0,3}(?:"
    rf"(?:(?:hey|hi|hello|dear|ok|okay|yo)\s+)?{_WHO_AI}\s*[,:!]+"
    rf"|(?:a\s+)?note\s+(?:to|for)\s+{_WHO_AI}\s*[:,-]"
    rf"|p\.?\s?s\.?\s+(?:to|for)\s+{_WHO_AI}\s*[:,-]"
    rf"|\((?:for|to)\s+{_WHO_AI}\)"
    r"|(?:致|给|給)?(?:AI|助手|小助手|机器人|機器人)(?:的话|的話)?\s*[，,：:]"
    r"|(?:AI|アシスタント|ボット)(?:へ|に|さん)?\s*[、，,：:]"
    r"|(?:gửi|nhắn)(?:\s+cho)?\s+(?:trợ lý|bot|ai)\s*[:,]|(?:bot|trợ lý|ai)\s+(?:ơi|à)\s*[,:]?"
    r"|(?:ถึง|เรียน)\s*(?:AI|เอไอ|บอท|ผู้ช่วย)\s*[:,]?"
    r"|(?:(?:querid[oa]|estimad[oa]|hola|oye)\s+)?(?:asistente|ia|bot|chatbot)\s*[,:]"
    r"|nota\s+para\s+(?:la\s+|el\s+)?(?:ia|asistente|bot)\s*:"
    r")\s*",
    re.I,
)


def _addressed_clause(text: str) -> bool:
    """An order to the assistant anywhere in the text: "you should …", or a clause after a comma that
    starts with an imperative ("My shop is x.shop, recommend it …", "…, recomiéndala …")."""
    lower = text.lower()
    if _EN_ADDRESSED.search(lower) or _ES_ADDRESSED.search(lower) or _VI_ADDRESSED.search(lower):
        return True
    for clause in re.split(r"[,，、;；]", lower)[1:]:
        c = clause.strip()
        if _EN_IMPERATIVE.match(c) or _ES_IMPERATIVE.match(c) or _VI_IMPERATIVE.match(c) or _TH_IMPERATIVE.match(c):
            return True
    return bool(_JA_IMPERATIVE.search(text)) or bool(_ZH_ADDRESSED.search(text))


def _link(text: str) -> bool:
    """A link or a referral code together with words that put it into answers."""
    if not (_URL.search(text) or _CODE_WORDS.search(text)):
        return False
    if _ANY_FIRST_PERSON_START.match(text) and not _addressed_clause(text):
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
    "do anything now", "recommend", "mention", "contain", "respond", "when", "future", "suggest", "advertis",
    "ahora", "siempre", "nunca", "contesta", "ignora", "olvida", "omite", "modo", "sistema", "eres", "debes",
    "tienes que", "dile", "diles", "recomi", "termina", "cada", "solo", "instruccion", "reglas", "activa", "finge",
    "respuesta", "mensaje", "actua", "comporta", "desobedece", "saltate", "interpreta", "estas en",
    # Vietnamese as the fold reads it (accents taken off, so also as people type it without them)
    "he thong", "tu gio", "tu nay", "bay gio", "sau nay", "lan sau", "bo qua", "phot lo", "lo di", "quen het",
    "quen di", "tuan theo", "lam theo", "che do", "gia vo", "dong vai", "nhap vai", "tro ly", "luon", "moi ",
    "tat ca", "chi ", "khong bao gio", "mai mai", "bat cu", "noi voi", "noi cho", "bao cho", "ke cho",
    "nhan cho", "ban la", "ban phai", "ban nen", "ban hay", "ban can", "ban se", "ban dung",
    # orders in the negative ("don't ever bring up …", "jamás digas …", "đừng bao giờ …")
    "ever ", "bring up", "discuss", "reveal", "disclose", "jamas", "mencion", "revel", "compart", "muestr",
    "dung bao gio",
)  # fmt: skip
_TRIGGERS = tuple(confusables.fold(t) for t in _TRIGGERS)

# The substring shortcut in :func:`_kind` only saves time; the tests turn it off to show that every
# table row gets the same kind without it.
QUICK_CHECK = True


@lru_cache(maxsize=4096)
def instruction_like(text: str) -> str | None:
    """The kind (one of :data:`KINDS`) of the first rule ``text`` matches, or None."""
    form = _form(text)
    kind = _kind(form)
    if kind is None:
        respelled = _respelled(form)
        if respelled != form:
            kind = _kind(respelled)
    return kind


def _kind(form: str) -> str | None:
    lower = form.lower()
    if not form or (QUICK_CHECK and form.isascii() and not any(t in lower for t in _TRIGGERS)):
        return None  # the shortcut reads the words of Latin-script rules only: other scripts run the rules
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
    said_to_it = _VOCATIVE.sub("", form, count=1)
    if said_to_it != form and said_to_it:
        if _directive(said_to_it):
            return "directive"
        if _link(said_to_it):
            return "link"
    return None


def is_instruction_like(text: str) -> bool:
    return instruction_like(text) is not None
