"""What is not worth storing long-term (seed 002 §8.6): pure, no store, no model.

A text is low value when it is

- an error message or a stack trace (it belongs to the task's working memory, not to the
  user's long-term memory);
- small talk: greetings, thanks, acknowledgements, in English or Chinese;
- shorter than ``max_chars`` (50) characters with no explicit fact in it.

"My name is Li" is short but a fact, so it is kept.
"""

from __future__ import annotations

import re
from enum import StrEnum

from ..llm.fact_patterns import extract_explicit_facts

__all__ = ["LowValueReason", "is_low_value", "low_value_reason"]


class LowValueReason(StrEnum):
    EMPTY = "empty"
    ERROR = "error_message"
    SMALL_TALK = "small_talk"
    SHORT = "short_without_fact"


_ERROR = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+"
    r"|^\s*at [\w$.]+\([\w$.]*:\d+\)"  # Java / JS frames
    r"|^\s*(?:[\w.]+(?:Error|Exception)|error|fatal|panic|segmentation fault)\b\s*[:!]"
    r"|^\s*(?:E|ERROR|FATAL)\s*\|"
    r"|^\s*(?:错误|异常|报错)\s*[:：]",
    re.IGNORECASE | re.MULTILINE,
)
_SMALL_TALK_EN = (
    "ok",
    "okay",
    "ok thanks",
    "okay thanks",
    "ok thank you",
    "thanks",
    "thank you",
    "thank you so much",
    "thanks a lot",
    "many thanks",
    "thx",
    "ty",
    "got it",
    "sure",
    "yes",
    "no",
    "yep",
    "nope",
    "cool",
    "nice",
    "great",
    "awesome",
    "lol",
    "haha",
    "hi",
    "hello",
    "hey",
    "hi there",
    "hello there",
    "bye",
    "goodbye",
    "see you",
    "see you later",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "alright",
    "all right",
    "k",
    "kk",
    "np",
    "no problem",
    "sounds good",
    "how are you",
    "how are you doing",
    "i'm fine",
    "i am fine",
    "fine thanks",
    "what's up",
    "whats up",
    "nice to meet you",
    "you're welcome",
    "you are welcome",
    "perfect",
    "wow",
    "hmm",
    "hm",
    "oh",
    "ah",
    "i see",
)
_SMALL_TALK_ZH = (
    "好",
    "好的",
    "好吧",
    "好呀",
    "好滴",
    "谢谢",
    "谢谢你",
    "多谢",
    "感谢",
    "非常感谢",
    "嗯",
    "嗯嗯",
    "收到",
    "哈哈",
    "哈哈哈",
    "呵呵",
    "知道了",
    "明白了",
    "没问题",
    "你好",
    "您好",
    "嗨",
    "再见",
    "拜拜",
    "晚安",
    "早上好",
    "早安",
    "下午好",
    "晚上好",
    "行",
    "可以",
    "对",
    "是的",
    "好的谢谢",
    "不客气",
    "辛苦了",
    "你好吗",
    "最近怎么样",
    "在吗",
    "哦",
    "噢",
    "啊",
    "了解",
    "明白",
    "懂了",
    "太好了",
    "不错",
)
_SMALL_TALK = frozenset(_SMALL_TALK_EN + _SMALL_TALK_ZH)
_PUNCT = re.compile(r"[\s!.,?;:~'\"…！。，？；：、～]+")


def _is_small_talk(text: str) -> bool:
    """Whether the whole text is a chain of small-talk phrases ("hi there, how are you?")."""
    norm = _PUNCT.sub(" ", text.lower()).strip()
    return _covered(norm, _SMALL_TALK)


def _covered(text: str, phrases: frozenset[str]) -> bool:
    """Whether ``text`` is a concatenation of ``phrases`` with optional spaces between
    (Chinese has none); Latin phrases must end at a word boundary."""
    if not text:
        return False
    longest = max(len(p) for p in phrases)
    reachable = [True] + [False] * len(text)
    for i in range(len(text)):
        if not reachable[i]:
            continue
        if text[i] == " ":
            reachable[i + 1] = True
            continue
        for size in range(1, min(longest, len(text) - i) + 1):
            end = i + size
            if text[i:end] in phrases and (
                end == len(text) or not text[end - 1].isascii() or not text[end].isalnum()
            ):
                reachable[end] = True
    return reachable[-1]


def low_value_reason(text: str, *, max_chars: int = 50) -> LowValueReason | None:
    """Why ``text`` should not be stored long-term, or ``None`` when it should be."""
    stripped = text.strip()
    if not stripped:
        return LowValueReason.EMPTY
    if _ERROR.search(stripped):
        return LowValueReason.ERROR
    if _is_small_talk(stripped):
        return LowValueReason.SMALL_TALK
    if len(stripped) < max_chars and not extract_explicit_facts([stripped]):
        return LowValueReason.SHORT
    return None


def is_low_value(text: str, *, max_chars: int = 50) -> bool:
    return low_value_reason(text, max_chars=max_chars) is not None
