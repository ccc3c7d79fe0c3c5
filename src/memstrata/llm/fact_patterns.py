"""Pattern-based extraction of facts users state explicitly, in English and Chinese.

Only first-person, explicit statements match ("my name is", "我叫"); nothing is inferred.
Keys are stable English identifiers so a profile merges across languages; values keep the
user's own words and language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache

from .base import ExtractedFact

__all__ = ["extract_explicit_facts"]

# English values run to the end of the clause.
_V = r"(?P<value>[^.,;!?\n]{1,80}?)"
_END = r"(?=\s+(?:and|but|because|so|which|though|although|since)\b|\s*[.,;!?\n]|\s*$)"
# Chinese values run to the next punctuation mark.
_ZV = r"(?P<value>[^，。！？、；,.!?;\n]{1,40}?)"
_ZEND = r"(?=[，。！？、；,.!?;\n]|$)"
_I_AM = r"\b(?:I'm|I am|Im)\s+"
# "我要搬到新家了": a new home, this or that place, is no place one names.
_ZH_NO_PLACE = ("新", "这", "那", "一个", "别的", "其他")
# When a planned move happens, as the sentence says it (kept beside the place).
_ZH_WHEN = (
    r"下个?月|下周|下星期|明年|今年\w{0,4}|年底|月底|[一二三四五六七八九十\d]{1,2}月(?:份|底)?"
    r"|很快|马上"
)
_WHEN = re.compile(
    r"\b(?:next\s+(?:week|month|year|spring|summer|autumn|fall|winter)|"
    r"this\s+(?:week|month|year|spring|summer|autumn|fall|winter)|soon|tomorrow|"
    r"in\s+(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|\d{4}|a\s+(?:week|month|year)|\w+\s+(?:weeks|months)))\b",
    re.IGNORECASE,
)

_RELATIONS = {
    "wife": "wife",
    "husband": "husband",
    "partner": "partner",
    "son": "son",
    "daughter": "daughter",
    "mother": "mother",
    "mom": "mother",
    "mum": "mother",
    "father": "father",
    "dad": "father",
    "brother": "brother",
    "sister": "sister",
    "boyfriend": "boyfriend",
    "girlfriend": "girlfriend",
    "boss": "boss",
    "妻子": "wife",
    "老婆": "wife",
    "太太": "wife",
    "丈夫": "husband",
    "老公": "husband",
    "先生": "husband",
    "儿子": "son",
    "女儿": "daughter",
    "妈妈": "mother",
    "母亲": "mother",
    "爸爸": "father",
    "父亲": "father",
    "哥哥": "brother",
    "弟弟": "brother",
    "姐姐": "sister",
    "妹妹": "sister",
    "男朋友": "boyfriend",
    "女朋友": "girlfriend",
    "老板": "boss",
}
_EN_REL = "|".join(k for k in _RELATIONS if k.isascii())
_ZH_REL = "|".join(sorted((k for k in _RELATIONS if not k.isascii()), key=len, reverse=True))
_PETS = r"dog|cat|puppy|kitten|parrot|rabbit|hamster|fish|bird|turtle"
_ZH_PETS = r"猫|狗|小狗|小猫|鹦鹉|兔子|仓鼠|鱼|乌龟|鸟"


# "I left the startup and now work at …", "I now work as …": the same statement of a job
_NOW_WORK = r"(?:(?:have |'ve )?left [^.,;!?\n]{1,60}? and )?(?:now |currently )?"


def _slug(text: str) -> str:
    slug = re.sub(r"[^\w]+", "_", text.lower()).strip("_")
    return slug[:100] or "item"


KeyFn = Callable[[re.Match[str]], str]


@dataclass(frozen=True, slots=True)
class _Pattern:
    source: str
    flags: int
    category: str
    key: KeyFn
    confidence: float

    @property
    def regex(self) -> re.Pattern[str]:
        # Compiled on first use, so importing the library stays cheap; kept here, not in
        # ``re``'s own cache, which other code shares and which recompiled these on misses.
        return _compiled(self.source, self.flags)


@cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)


def _p(
    pattern: str, category: str, key: str | KeyFn, confidence: float, *, english: bool = True
) -> _Pattern:
    flags = re.IGNORECASE if english else 0
    tail = _END if english else _ZEND
    key_fn: KeyFn = (lambda _m, k=key: k) if isinstance(key, str) else key  # type: ignore[misc]
    return _Pattern(pattern + tail, flags, category, key_fn, confidence)


def _rel_key(m: re.Match[str], suffix: str = "") -> str:
    return _RELATIONS.get(m.group("rel").lower(), _slug(m.group("rel"))) + suffix


# Order matters: more specific patterns first; a span matched once is not matched again.
_PATTERNS: tuple[_Pattern, ...] = (
    # --- English ---
    _p(r"\bmy name is\s+" + _V, "identity", "name", 0.9),
    _p(r"\b(?:call me|I'm called|I am called)\s+" + _V, "identity", "name", 0.85),
    _p(
        r"\bmy (?:favou?rite)\s+(?P<what>[\w ]{1,30}?)\s+(?:is|are)\s+" + _V,
        "preference",
        lambda m: "favorite_" + _slug(m.group("what")),
        0.9,
    ),
    # "Olive Tree is my favourite now", "Paris is my favourite city": a named thing first
    _p(
        r"(?:^|(?<=[;:,.!?])\s*|\b(?:but|and|so)\s+)(?P<value>(?-i:[A-Z])[^.,;!?\n]{0,60}?)"
        r"\s+is\s+(?:now\s+)?my\s+(?:new\s+)?favou?rite"
        r"(?:\s+(?!now\b)(?P<what>[a-z][\w ]{0,30}?))?(?:\s+now)?",
        "preference",
        lambda m: "favorite_" + _slug(m.group("what")) if m.group("what") else "favorite",
        0.9,
    ),
    _p(_I_AM + r"allergic to\s+" + _V, "health", "allergy", 0.9),
    _p(r"\b(?:my birthday is(?: on)?|I was born on)\s+" + _V, "identity", "birthday", 0.9),
    _p(
        r"\bI (?:have|own|got) (?:a|an|two|three)\s+(?P<pet>" + _PETS + r")s?\s+"
        r"(?:named|called)\s+" + _V,
        "relation",
        lambda m: "pet_" + m.group("pet").lower(),
        0.85,
    ),
    _p(
        r"\bmy (?P<pet>" + _PETS + r")(?:'s name is| is (?:named|called))\s+" + _V,
        "relation",
        lambda m: "pet_" + m.group("pet").lower(),
        0.85,
    ),
    _p(
        _I_AM + r"(?P<value>\d{1,3})(?: years old| years of age|(?= and\b)|(?=\s*[.,;!?\n]|\s*$))",
        "identity",
        "age",
        0.85,
    ),
    _p(
        r"\bmy (?P<rel>" + _EN_REL + r")(?:'s name is| is (?:named|called))\s+" + _V,
        "relation",
        lambda m: _rel_key(m, "_name"),
        0.85,
    ),
    _p(r"\bmy (?P<rel>" + _EN_REL + r") is\s+" + _V, "relation", _rel_key, 0.8),
    # A move the user plans ("I'm moving to Porto next month"): where they live stays as it
    # is; the plan is a fact of its own, with when the sentence says it happens.
    _p(
        r"\b(?:I'm|I am|we're|we are|I'll|I will|we'll|we will)\s+(?:be\s+)?"
        r"(?:(?:going|planning)\s+to\s+move|moving|relocating|move)\s+to\s+" + _V,
        "plan",
        "moving_to",
        0.8,
    ),
    _p(
        r"我们?(?P<when>" + _ZH_WHEN + r")?(?:要|打算|准备|将要|将|会)搬(?:到|去)" + _ZV,
        "plan",
        "moving_to",
        0.8,
        english=False,
    ),
    _p(r"\bI (?:live|am living|'m living) in\s+" + _V, "identity", "location", 0.85),
    _p(r"\b(?:I'm|I am) (?:based|located) in\s+" + _V, "identity", "location", 0.85),
    # "I moved from Berlin to Rome": Rome, and Berlin is the value left
    _p(
        r"\b(?:I|we) (?:have |'ve )?(?:just |recently |finally )?(?:moved|relocated) (?:away )?"
        r"from\s+[^.,;!?\n]{1,60}?\s+to\s+" + _V,
        "identity",
        "location",
        0.85,
    ),
    _p(
        r"\b(?:I|we) (?:have |'ve )?(?:just |recently |finally )?(?:moved|relocated) to\s+" + _V,
        "identity",
        "location",
        0.85,
    ),
    _p(r"\bwe (?:live|are living|'re living) in\s+" + _V, "identity", "location", 0.8),
    _p(r"\bI (?:come|am|'m) from\s+" + _V, "identity", "hometown", 0.8),
    _p(r"\bI " + _NOW_WORK + r"work as (?:an? )?" + _V, "identity", "occupation", 0.85),
    _p(r"\bI " + _NOW_WORK + r"work (?:at|for)\s+" + _V, "identity", "employer", 0.85),
    # a new job, said with its role ("joined the choir" is no employer)
    _p(
        r"\bI (?:(?:have |'ve )?left [^.,;!?\n]{1,60}? and )?(?:have |'ve )?(?:just |recently )?"
        r"joined\s+(?P<value>[^.,;!?\n]{1,60}?)\s+as\s+an?\s+[\w -]{1,40}?",
        "identity",
        "employer",
        0.85,
    ),
    _p(
        r"\bI (?:have |'ve )?(?:just |recently )?started as an?\s+[\w -]{1,40}?\s+at\s+" + _V,
        "identity",
        "employer",
        0.85,
    ),
    _p(
        _I_AM + r"(?:an? )?(?P<value>vegetarian|vegan|pescatarian|teetotal|gluten[- ]free)",
        "health",
        "diet",
        0.85,
    ),
    _p(
        _I_AM + r"(?:an?\s+)?(?:(?:big|huge|great|massive|total|real)\s+)?fan of\s+" + _V,
        "preference",
        lambda m: "likes_" + _slug(m.group("value")),
        0.8,
    ),
    _p(_I_AM + r"an?\s+" + _V, "identity", "self_description", 0.8),
    _p(
        r"\bI (?:don't|do not|dont|never) (?:like|enjoy|eat|drink)\s+" + _V,
        "preference",
        lambda m: "dislikes_" + _slug(m.group("value")),
        0.85,
    ),
    _p(
        r"\bI (?:really |truly )?(?:hate|dislike|can't stand|cannot stand)\s+" + _V,
        "preference",
        lambda m: "dislikes_" + _slug(m.group("value")),
        0.85,
    ),
    _p(
        r"\bI (?:really |truly |absolutely )?(?:like|love|enjoy|adore)\s+" + _V,
        "preference",
        lambda m: "likes_" + _slug(m.group("value")),
        0.8,
    ),
    _p(
        r"\bI (?:usually |generally |always )?prefer\s+" + _V,
        "preference",
        lambda m: "prefers_" + _slug(m.group("value")),
        0.8,
    ),
    # --- Chinese ---
    _p(r"(?:我的名字是|我名字叫|我的名字叫|我叫)" + _ZV, "identity", "name", 0.9, english=False),
    _p(
        r"我(?:现在|如今|目前)?最喜欢的(?P<what>[^，。！？是]{1,10})是" + _ZV,
        "preference",
        lambda m: "favorite_" + m.group("what"),
        0.9,
        english=False,
    ),
    # "现在最喜欢Y" (what I like best now): a favourite, not one more like
    _p(
        r"(?:我|[，,；;]\s*)(?:现在|如今|目前)最(?:喜欢|爱)(?!的)" + _ZV,
        "preference",
        "favorite",
        0.8,
        english=False,
    ),
    _p(
        r"我对" + r"(?P<value>[^，。！？、；,.!?;\n]{1,30}?)过敏",
        "health",
        "allergy",
        0.9,
        english=False,
    ),
    _p(
        r"(?:我的生日是|我生日是|我出生于|我的生日在)" + _ZV,
        "identity",
        "birthday",
        0.9,
        english=False,
    ),
    _p(
        r"我(?:养了|有)(?:一只|一条|一个|只|条)?(?P<pet>" + _ZH_PETS + r")[，,]?"
        r"(?:名叫|叫做|名字叫|叫)" + _ZV,
        "relation",
        lambda m: "pet_" + m.group("pet"),
        0.85,
        english=False,
    ),
    _p(r"我养了(?:一只|一条|两只|只|条)?" + _ZV, "relation", "pet", 0.8, english=False),
    _p(
        r"我的?(?P<pet>" + _ZH_PETS + r")(?:的名字)?(?:叫做|名叫|叫)" + _ZV,
        "relation",
        lambda m: "pet_" + m.group("pet"),
        0.85,
        english=False,
    ),
    _p(
        r"我(?:今年|现在)?(?P<value>\d{1,3}|[一二三四五六七八九十]{1,3})岁了?",
        "identity",
        "age",
        0.85,
        english=False,
    ),
    _p(
        r"我的?(?P<rel>" + _ZH_REL + r")(?:的名字)?(?:叫做|名叫|叫)" + _ZV,
        "relation",
        lambda m: _rel_key(m, "_name"),
        0.85,
        english=False,
    ),
    _p(r"我的?(?P<rel>" + _ZH_REL + r")是" + _ZV, "relation", _rel_key, 0.8, english=False),
    _p(r"我们?(?:现在)?住在" + _ZV, "identity", "location", 0.85, english=False),
    _p(
        r"我们?(?:刚刚?|最近|已经)?(?:从[^，。！？、；,.!?;\n]{1,30}?)?搬(?:到了?|去了?)" + _ZV,
        "identity",
        "location",
        0.85,
        english=False,
    ),
    _p(r"我来自" + _ZV, "identity", "hometown", 0.8, english=False),
    _p(
        r"我在(?P<value>[^，。！？、；,.!?;\n]{1,30}?)(?:工作|上班)",
        "identity",
        "employer",
        0.85,
        english=False,
    ),
    # a new job, said with its role: "我已经离开A，去B做…了" (I left A for B as …), "我刚在B开始做…"
    _p(
        r"我(?:已经)?离开(?:了)?[^，。！？；\n]{1,30}?[，,]?\s*(?:去|到|加入)(?:了)?"
        r"(?P<value>[^，。！？、；,.!?;\n]{1,30}?)(?:做|当|担任)[^，。！？；,.!?;\n]{1,20}?",
        "identity",
        "employer",
        0.85,
        english=False,
    ),
    _p(
        r"我(?:刚|最近)?在(?!家|家里|厨房|外面|这里|那里)"
        r"(?P<value>[^，。！？、；,.!?;\n]{1,30}?)开始(?:做|当|担任)[^，。！？；,.!?;\n]{1,20}?",
        "identity",
        "employer",
        0.85,
        english=False,
    ),
    _p(
        r"(?:我的工作是|我的职业是|我的工作是做)" + _ZV,
        "identity",
        "occupation",
        0.85,
        english=False,
    ),
    _p(r"我是(?:一名|一个|一位|个|名)" + _ZV, "identity", "occupation", 0.8, english=False),
    _p(r"我是(?P<value>素食者|素食主义者|吃素的)", "health", "diet", 0.85, english=False),
    _p(
        r"我是(?P<value>[^，。！？、；,.!?;\n]{1,12}?)人" + r"(?=[，。！？、；,.!?;\n]|$)",
        "identity",
        "hometown",
        0.8,
        english=False,
    ),
    _p(
        r"(?:我不喜欢|我讨厌|我不爱|我不吃|我受不了)" + _ZV,
        "preference",
        lambda m: "dislikes_" + m.group("value"),
        0.85,
        english=False,
    ),
    _p(
        r"我(?:很|非常|特别|真的|最|超)?(?:喜欢|爱|热爱)(?!的)" + _ZV,
        "preference",
        lambda m: "likes_" + m.group("value"),
        0.8,
        english=False,
    ),
    _p(
        r"我(?:更|比较)?(?:偏好|更喜欢)" + _ZV,
        "preference",
        lambda m: "prefers_" + m.group("value"),
        0.8,
        english=False,
    ),
)

# Pronouns carry no fact on their own ("I like it").
_VAGUE = frozenset(
    {
        "it",
        "that",
        "this",
        "them",
        "you",
        "him",
        "her",
        "those",
        "these",
        "so",
        "too",
        "to",
        "这个",
        "那个",
        "它",
        "你",
        "他",
        "她",
    }
)
# A liked/disliked thing that opens with a clause or a reference to the conversation ("I love
# how you tell it", "I love the colour", "I love their design") is a reaction to what was
# just said, not a standing preference: on LoCoMo 10 such values were ~60% of all extracted
# facts, none of them a profile fact.
_REACTION = re.compile(
    r"^(?:how|that|what|when|where|why|whether|if|it|its|it's|them|this|these|those|the|"
    r"his|her|their|your|you|all|such|so|about|seeing you|hearing)\b|\byou(?:r|rs|'re)?\b"
    r"|^[你您这那它他她]",
    re.IGNORECASE,
)
# "I'm a bit tired", "I'm a little nervous this week": a passing state, not who someone is.
_STATE = re.compile(
    r"^(?:bit|little|lot|tad|kind|sort|big|huge|total|real)\b|\b(?:today|tonight|this week|"
    r"this month|right now|at the moment|lately)\b",
    re.IGNORECASE,
)
_POINTER = re.compile(
    r"(?:this|that|these|those|it|he|she|they|you|one|mine|yours|ours|theirs|his|hers)\b",
    re.IGNORECASE,
)
_PREFERENCE_KEYS = ("likes_", "dislikes_", "prefers_")
_TRAILING = (
    r"\s+(?:too|as well|very much|a lot|so much|now|also|anymore|any more|these days|nowadays|"
    r"recently|yesterday|today|last (?:year|month|week|spring|summer|autumn|fall|winter))$"
)
_PLACES = frozenset({"location", "hometown", "moving_to"})
# Where a place's name ends in "I moved to Lisbon from Berlin for a job", "I live in Paris
# with my wife", "We moved to Kyoto in 2020".
_PLACE_END = re.compile(
    r"\s+(?:from|for|with|since|after|before|until|because|last|next|this|in \d{4})\b",
    re.IGNORECASE,
)
_LEADING = r"^(?:now|currently|actually|nowadays)\s+"  # "my favourite X is now Y"
# A statement that says the value is new is surer of the present than an earlier plain one,
# so the profile's rule (a different value replaces only with a higher confidence) lets the
# update through instead of recording it as a conflict: +0.1 when it says an earlier value
# was left ("we moved to", "I left X and joined Y", 搬到, 已经不), +0.05 when it says "now"
# ("these days", 现在) — a first statement made "these days" must not outrank a later move.
_CHANGE = re.compile(
    r"(?i:\b(?:moved|relocated|switched|changed|left|stopped|quit|no longer|anymore|any more|"
    r"new)\b)"
    r"|搬到|搬去|换成|改成|不再|已经不|离开|新的"
)
# "I've stopped going to X", "I no longer shop at X", "我已经不去X了": a value the sentence says
# the user left; a fact said in the same sentence is linked to the fact that held it.
_LEFT = re.compile(
    r"(?i:\bI(?:'ve| have)?\s+(?:stopped|quit)\s+(?:going|eating|shopping|working)\s+(?:to|at|in)"
    r"\s+|\bI\s+no\s+longer\s+(?:go|eat|shop|work|live)\s+(?:to|at|in)\s+"
    r"|\bI(?:'ve| have)?\s+left\s+(?=[^.;!?\n]{1,60}?\s+and\s+(?:now\s+)?(?:work|joined)\b)"
    r"|\b(?:I|we)(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+"
    r"(?:away\s+)?from\s+(?=[^.,;!?\n]{1,60}?\s+to\s))"
    r"(?P<value>[^.,;!?\n]{1,60}?)"
    r"(?=\s+(?i:anymore|any more|and|but|because|since|to)\b|\s*[.,;!?\n]|\s*$)"
    r"|我(?:已经)?(?:不再|不)去(?P<zvalue>[^，。！？、；,.!?;\n]{1,30}?)了?(?=[，。！？、；,.!?;\n]|$)"
    r"|从(?P<zfrom>[^，。！？、；,.!?;\n]{1,30}?)搬(?:到|去)"
)
# A value the user says no longer holds, with no new one: "I no longer live in Berlin", "I
# quit my job at Acme", 我已经不在谷歌工作了. Each says the value changed (a plain "I don't live
# in Berlin" says nothing about before and matches none). The profile ends the current fact
# that holds the value; a sentence that also gives the new value is a replacement instead.
_EV = r"(?P<value>[^.,;!?\n]{1,60}?)"
_ZEV = r"(?P<value>[^，。！？、；,.!?;\n]{1,30}?)"
_AGAIN = r"\s+(?:anymore|any more)\b"
# Not a place one goes to: "I stopped going to work / to bed" ends no profile fact.
_PLACE_EV = r"(?!(?:work|bed|sleep|school|it|there|that|this)\b)" + _EV
# Keys whose value the profile usually holds under another key, found by the value.
_BY_VALUE = frozenset({"goes_to"})
_ZWORK = r"(?!家|家里|外面|这里|那里)" + _ZEV  # 我不在家工作了 is no employer
_ENDED: tuple[_Pattern, ...] = (
    _p(
        r"\bI\s+(?:(?:have|'ve)\s+)?no\s+longer\s+(?:live|reside)\s+in\s+" + _EV,
        "identity",
        "location",
        0.9,
    ),
    _p(_I_AM + r"no\s+longer\s+(?:living|based)\s+in\s+" + _EV, "identity", "location", 0.9),
    _p(
        r"\bI\s+(?:don't|do not|dont)\s+live\s+in\s+" + _EV + _AGAIN,
        "identity",
        "location",
        0.9,
    ),
    _p(
        r"\b(?:I|we)(?:'ve| have)?\s+(?:just\s+|recently\s+)?moved\s+(?:out\s+of|away\s+from)\s+"
        r"(?P<value>(?:(?!\s+to\s)[^.,;!?\n]){1,60}?)",
        "identity",
        "location",
        0.9,
    ),
    _p(
        r"\bI\s+(?:(?:have|'ve)\s+)?no\s+longer\s+work\s+(?:at|for)\s+" + _EV,
        "identity",
        "employer",
        0.9,
    ),
    _p(
        _I_AM + r"no\s+longer\s+(?:working|employed)\s+(?:at|for|by)\s+" + _EV,
        "identity",
        "employer",
        0.9,
    ),
    _p(
        r"\bI\s+(?:don't|do not|dont)\s+work\s+(?:at|for)\s+" + _EV + _AGAIN,
        "identity",
        "employer",
        0.9,
    ),
    _p(
        r"\bI(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:quit|left)\s+my\s+job\s+"
        r"(?:at|with)\s+" + _EV,
        "identity",
        "employer",
        0.9,
    ),
    # A place the user stopped going to: its fact is often under another key (the profile's
    # "favorite_place_for_falafel"), found by the value (``_BY_VALUE``); else "goes_to".
    _p(
        r"\bI(?:'ve| have)?\s+(?:stopped|quit)\s+(?:going|eating|shopping)\s+(?:to|at)\s+"
        + _PLACE_EV,
        "preference",
        "goes_to",
        0.85,
    ),
    _p(
        r"\bI\s+(?:(?:have|'ve)\s+)?no\s+longer\s+(?:go|eat|shop)\s+(?:to|at)\s+" + _PLACE_EV,
        "preference",
        "goes_to",
        0.85,
    ),
    _p(r"我(?:已经)?不再去" + _ZEV + r"了?", "preference", "goes_to", 0.85, english=False),
    _p(r"我(?:已经)?不去" + _ZEV + r"了", "preference", "goes_to", 0.85, english=False),
    _p(r"我们?(?:已经)?不再住在" + _ZEV, "identity", "location", 0.9, english=False),
    _p(r"我们?(?:已经)?不住在" + _ZEV + r"了", "identity", "location", 0.9, english=False),
    _p(r"我们?(?:已经)?(?:搬离|搬出)了?" + _ZEV, "identity", "location", 0.9, english=False),
    _p(
        r"我们?(?:已经)?从" + _ZEV + r"(?:搬走|搬出来)了?",
        "identity",
        "location",
        0.9,
        english=False,
    ),
    _p(
        r"我(?:已经)?不再在" + _ZWORK + r"(?:工作|上班)了?",
        "identity",
        "employer",
        0.9,
        english=False,
    ),
    _p(
        r"我(?:已经)?不在" + _ZWORK + r"(?:工作|上班)了",
        "identity",
        "employer",
        0.9,
        english=False,
    ),
    _p(r"我(?:已经)?从" + _ZEV + r"辞职了?", "identity", "employer", 0.9, english=False),
)
_JOB_AT = re.compile(r"^my\s+(?:job|position|role)\s+(?:at|with)\s+", re.IGNORECASE)
_NOW = re.compile(r"(?i:\b(?:now|nowadays|these days|currently)\b)|现在|如今|目前")


def _clean(value: str) -> str:
    value = re.split(r"\s[-–—]\s", value, maxsplit=1)[0]  # "pottery - the creativity"
    value = value.strip(" \t\"'“”‘’「」-–—")
    value = re.sub(_TRAILING, "", value, flags=re.IGNORECASE)
    value = re.sub(_LEADING, "", value)
    return value.strip()


def _confidence(base: float, evidence: str, value: str) -> float:
    """``base``, raised when the sentence (outside the value: "New York" is no change)
    says the value is new (see ``_CHANGE``)."""
    around = evidence.replace(value, " ")
    bonus = 0.1 if _CHANGE.search(around) else 0.05 if _NOW.search(around) else 0.0
    return round(min(1.0, base + bonus), 6)


def extract_explicit_facts(texts: Iterable[str]) -> list[ExtractedFact]:
    """Every explicit first-person fact in ``texts``, once per (key, value)."""
    facts: list[ExtractedFact] = []
    seen: set[tuple[str, str]] = set()
    for text in texts:
        taken: list[tuple[int, int]] = []
        for pattern, m, key, value in _candidates(_PATTERNS, text, taken):
            raw = _slug(m.group("value"))
            if key.endswith(raw) and _slug(value) != raw:  # a key named after the value
                key = key[: -len(raw)] + _slug(value)
            key = key[:128]
            if _junk(key, value):
                continue
            if key == "moving_to":
                value = _planned(value, m)
                if not value:
                    continue
            if (key, value) in seen:
                continue
            seen.add((key, value))
            taken.append((m.start(), m.end()))
            evidence = _evidence(text, m)
            facts.append(
                ExtractedFact(
                    category=pattern.category,
                    key=key,
                    value=value,
                    confidence=_confidence(pattern.confidence, evidence, value),
                    evidence=evidence,
                    replaces=_left_value(evidence, value),
                )
            )
        facts.extend(_ended(text, taken, facts, seen))
    return facts


def _candidates(
    patterns: Iterable[_Pattern], text: str, taken: list[tuple[int, int]]
) -> Iterator[tuple[_Pattern, re.Match[str], str, str]]:
    """``(pattern, match, key, value)`` for each match of ``patterns`` in ``text`` outside
    the spans already ``taken`` (read as the caller adds to it), the value cleaned (a place
    cut before "from …", "for …"); none whose value is empty or only a pronoun."""
    for pattern in patterns:
        for m in pattern.regex.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            value = _clean(m.group("value"))
            key = pattern.key(m)
            if key in _PLACES:  # "Lisbon from Berlin for a job ..." is Lisbon; 搬到上海了: 上海
                value = _PLACE_END.split(value, maxsplit=1)[0].strip().removesuffix("了")
            if not value or value.lower() in _VAGUE:
                continue
            yield pattern, m, key, value


def _ended(
    text: str,
    taken: list[tuple[int, int]],
    facts: list[ExtractedFact],
    seen: set[tuple[str, str]],
) -> list[ExtractedFact]:
    """The values ``text`` says no longer hold (``_ENDED``), outside the spans a fact was
    taken from; not one a fact of the text already says it replaced."""
    left = [f.replaces.casefold() for f in facts if f.replaces]
    out: list[ExtractedFact] = []
    for pattern, m, key, value in _candidates(_ENDED, text, taken):
        if value.casefold() in left or (key, "ended:" + value) in seen:
            continue
        seen.add((key, "ended:" + value))
        taken.append((m.start(), m.end()))
        out.append(
            ExtractedFact(
                category=pattern.category,
                key=key,
                value=value,
                confidence=pattern.confidence,
                evidence=_evidence(text, m),
                ended=True,
                replaces=value if key in _BY_VALUE else "",
            )
        )
    return out


def _left_value(evidence: str, value: str) -> str:
    """The value ``evidence`` says the user left, when it is not ``value`` itself."""
    m = _LEFT.search(evidence)
    if m is None:
        return ""
    left = _clean(m.group("value") or m.group("zvalue") or m.group("zfrom") or "")
    left = _JOB_AT.sub("", left)  # "I left my job at Acme and now work at …": Acme
    return "" if not left or left.casefold() in value.casefold() else left


def _junk(key: str, value: str) -> bool:
    """A match that is no profile fact: a reaction ("I love how you ...") or a passing state
    ("I'm a bit tired")."""
    if key.startswith(_PREFERENCE_KEYS):
        return bool(_REACTION.search(value))
    if key == "self_description":
        return bool(_STATE.search(value))
    if key.startswith("favorite") and _POINTER.match(value):  # "this one is my favourite"
        return True
    if key == "name":  # "call me crazy", "call me at the store": a name is capitalised
        return value[:1].isascii() and not value[:1].isupper()
    return False


def _planned(place: str, m: re.Match[str]) -> str:
    """A planned move's value: the place (a name: "a new apartment" is no place one moves
    to), then when, if the sentence says it ("Porto, next month"); "" for no place."""
    place = _WHEN.split(place, maxsplit=1)[0].strip().removesuffix("了")
    if not place or place[:1].islower() or place.startswith(_ZH_NO_PLACE):
        return ""
    when = m.groupdict().get("when") or ""
    if not when:
        found = _WHEN.search(_evidence(m.string, m))
        when = found.group(0) if found else ""
    return f"{place}, {when}" if when else place


def _evidence(text: str, m: re.Match[str]) -> str:
    """The sentence containing the match."""
    start = max(text.rfind(c, 0, m.start()) for c in ".!?。！？\n") + 1
    ends = [i for c in ".!?。！？\n" if (i := text.find(c, m.end())) != -1]
    end = min(ends) + 1 if ends else len(text)
    return text[start:end].strip()[:500]
