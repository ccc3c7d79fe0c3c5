"""Which layer a piece of information belongs to: the decision tree of seed 000 §9.

:func:`route` is pure and takes typed scores; :func:`estimate` fills those scores from text
with transparent heuristics when the caller has nothing better (an LLM classifier may
replace it; the tree stays the same).

The tree, in order::

    direct message (a turn of the conversation)        → short-term buffer
    task execution state                               → working memory
    not worth keeping across sessions                  → discard
    generalisable and stable, applicable, important    → semantic
        (stability > 0.7, applicability > 0.6, importance > 0.6)
    otherwise                                          → episodic
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from ..llm.fact_patterns import extract_explicit_facts
from ..llm.heuristic import HeuristicLLM
from ..policies.low_value import low_value_reason

__all__ = ["Layer", "RouteInput", "estimate", "route"]

STABILITY_MIN = 0.7
APPLICABILITY_MIN = 0.6
IMPORTANCE_MIN = 0.6


class Layer(StrEnum):
    SHORT_TERM = "short_term"
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    DISCARD = "discard"


@dataclass(frozen=True, slots=True)
class RouteInput:
    """What the tree looks at; scores are in [0, 1] and default to the seed's 0.5."""

    content: str = ""
    is_direct_message: bool = False
    is_task_state: bool = False
    is_cross_session: bool = False
    is_generalizable: bool = False
    stability: float = 0.5
    applicability: float = 0.5
    importance: float = 0.5
    is_user_feedback: bool = False


def route(item: RouteInput) -> Layer:
    if item.is_direct_message:
        return Layer.SHORT_TERM
    if item.is_task_state:
        return Layer.WORKING
    if not item.is_cross_session:
        return Layer.DISCARD
    if (
        item.is_generalizable
        and item.stability > STABILITY_MIN
        and item.applicability > APPLICABILITY_MIN
        and item.importance > IMPORTANCE_MIN
    ):
        return Layer.SEMANTIC
    return Layer.EPISODIC


# Rules, habits and stable truths generalise; one-off events do not.
_GENERAL = re.compile(
    r"\b(?:always|never|usually|every time|in general|generally|rule|must|should|prefer|"
    r"before|lesson|best practice)\b|总是|从不|通常|每次|一般|规则|必须|应该|喜欢|偏好|之前|教训",
    re.IGNORECASE,
)
_EPHEMERAL = re.compile(
    r"\b(?:today|tonight|right now|now|currently|this morning|at the moment|just now)\b"
    r"|今天|今晚|现在|刚才|此刻",
    re.IGNORECASE,
)
_FEEDBACK = re.compile(
    r"\b(?:wrong|not right|incorrect|you should have|next time|instead|that's not)\b"
    r"|不对|错了|应该用|下次|换一种",
    re.IGNORECASE,
)
_SCOPE_WIDE = re.compile(
    r"\b(?:all|any|every|whenever|projects?|tasks?|data|code)\b|所有|任何|每个|项目|数据|代码",
    re.IGNORECASE,
)

_HEURISTIC = HeuristicLLM()


def estimate(
    content: str, *, is_direct_message: bool = False, is_task_state: bool = False
) -> RouteInput:
    """Scores for :func:`route` from text alone (deterministic, offline).

    cross-session: user feedback (always kept, seed 001), or not low value (seed 002's
    filter); generalisable: an explicit fact or a
    rule-like word; stability: 0.8 for facts and rules, minus 0.4 for words of "now";
    applicability: 0.5, +0.3 for a fact, +0.2 for words of wide scope; importance: the
    heuristic LLM's score.
    """
    facts = bool(extract_explicit_facts([content]))
    feedback = bool(_FEEDBACK.search(content))
    # Feedback on one task is an experience (seed 000 §9 example 4), not general knowledge.
    general = bool(_GENERAL.search(content)) and not feedback
    ephemeral = bool(_EPHEMERAL.search(content))
    stability = (0.8 if facts or general else 0.5) - (0.4 if ephemeral else 0.0)
    applicability = 0.5 + (0.3 if facts else 0.0) + (0.2 if _SCOPE_WIDE.search(content) else 0.0)
    importance = _HEURISTIC.score_importance(content)
    if general or facts:
        importance = max(importance, 0.65)
    return RouteInput(
        content=content,
        is_direct_message=is_direct_message,
        is_task_state=is_task_state,
        is_cross_session=feedback or low_value_reason(content) is None,
        is_generalizable=facts or general,
        stability=round(max(0.0, min(1.0, stability)), 4),
        applicability=round(min(1.0, applicability), 4),
        importance=round(min(1.0, importance), 4),
        is_user_feedback=feedback,
    )
