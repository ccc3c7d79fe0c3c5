"""Whose turn can answer a question, pure.

In a user's chat with an assistant, what the memory is asked about the user ("What is my
dog's name?", "Which city do I live in now?") was said by the user; the assistant's replies
are long, generic and share the question's words ("Ask other pet owners nearby which clinic
they trust"), so they rank high and fill the budget without holding the answer.
``build_context`` lowers an assistant turn's score by ``ContextConfig.assistant_penalty``
unless the question speaks to the assistant ("Which novel did you recommend?", "你建议我住在
哪一片？"): then what the assistant said is what is asked about. Turns stored as the user's
(every turn of a chat between two people, as LoCoMo is stored) are never affected.
"""

from __future__ import annotations

import re

__all__ = ["addresses_assistant"]

# "you", "your", ... (English) and 你 / 您 (Chinese): the question asks about what the one
# it is put to said or did.
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you'd|you've|you're)\b|[你您]", re.I)
# ... unless "you" only makes the question a request: "Can you remind me what my dog is
# called?", "Do you remember where I work?", "你还记得我住在哪吗？", "你能告诉我……吗".
_REQUEST = re.compile(
    r"\b(?:can|could|would|will)\s+you\b(?:\s+(?:please\s+)?(?:remind|tell)\s+me\b)?"
    r"|\bdo\s+you\s+(?:remember|recall|know)\b"
    r"|[你您](?:还)?(?:记得|能不能|能|可以|可不可以)(?:(?:再)?(?:告诉|提醒)我)?",
    re.I,
)


# Asked about the assistant without "you": "What did the assistant suggest ...?", "Which
# novel was recommended to me?", 助手推荐了哪本书, 推荐给我的是哪本小说. Taken for one put to the
# assistant, a question about something else (a doctor's advice) only loses the penalty:
# the assistant's turns compete as they did without one.
_ABOUT_ASSISTANT = re.compile(
    r"\b(?:the|my|this)\s+(?:AI\s+)?(?:assistant|chatbot|bot)\b"
    r"(?!\s+(?:manager|director|coach|professor|principal|editor|teacher|chef|referee))"
    r"|\b(?:the|my)\s+AI\b"
    r"|\b(?:recommended|suggested|advised|proposed)\s+(?:to\s+|for\s+)?me\b"
    r"|\bwas\s+I\s+(?:told|advised|recommended|given)\b"
    r"|助手|助理|机器人|推荐给我|建议给我|给我推荐|给我建议|推荐我|建议我",
    re.I,
)


def addresses_assistant(question: str) -> bool:
    """Whether ``question`` speaks to the assistant: a second-person word that is not only
    the form of a request ("Can you remind me ...", "你还记得 ... 吗"), or a question about
    what the assistant said that names no one ("Which novel was recommended to me?")."""
    return bool(
        _SECOND_PERSON.search(_REQUEST.sub(" ", question)) or _ABOUT_ASSISTANT.search(question)
    )
