"""Token budget allocation (seed 000 §7, ``TokenBudgetAllocator``), pure.

Shares of the total by task complexity::

    simple   system 0.15  memory 0.15  history 0.45  reserve 0.25
    medium   system 0.20  memory 0.30  history 0.30  reserve 0.20   (default)
    complex  system 0.15  memory 0.40  history 0.25  reserve 0.20

then ``knowledge need`` moves 0.10 from history to memory, and a conversation longer than
30 turns moves 0.05 from reserve to history. The reserve (tool schemas + the response) is
never used by the context. The system prompt and the current input are never cut: what
they do not use of the system share flows to memory and history, and they may borrow from
memory and history, but not from the reserve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..errors import BudgetError

__all__ = ["BudgetPlan", "Complexity", "allocate", "asks_overview", "estimate_task"]

Complexity = Literal["simple", "medium", "complex"]

_SHARES: dict[str, dict[str, float]] = {
    "simple": {"system": 0.15, "memory": 0.15, "history": 0.45, "reserve": 0.25},
    "medium": {"system": 0.20, "memory": 0.30, "history": 0.30, "reserve": 0.20},
    "complex": {"system": 0.15, "memory": 0.40, "history": 0.25, "reserve": 0.20},
}
_RECALL = re.compile(
    r"\b(what|when|where|who|whom|which|how|why|remember|recall|did|does|do|is|was|were)\b"
    r"|[什么哪谁何几吗呢记得]",
    re.IGNORECASE,
)

# A request for the gist of what was said (not for one detail of it): summaries are its answer.
_OVERVIEW = re.compile(
    r"\b(summari[sz]e|summary|summaries|overview|recap|gist|catch me up|so far|in short|"
    r"(what|everything) (have|has|did) (we|you|i) (talk|discuss|cover|chat|say)\w*)\b"
    r"|总结|概括|概述|回顾|摘要|要点|聊了什么|聊过什么|谈了什么|讨论了什么|说了什么|到目前为止",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    total: int
    system: int
    memory: int
    history: int
    reserve: int
    complexity: Complexity
    knowledge_need: bool

    @property
    def usable(self) -> int:
        """What the assembled context may use at most: everything but the reserve."""
        return self.total - self.reserve


def allocate(
    total: int,
    *,
    complexity: Complexity = "medium",
    knowledge_need: bool = False,
    conversation_length: int = 0,
    reserve_ratio: float | None = None,
) -> BudgetPlan:
    """Split ``total`` tokens. ``reserve_ratio`` overrides the reserve share (e.g. 0 when the
    caller accounts for the response elsewhere); the others scale to fill the rest."""
    if not isinstance(total, int) or total <= 0:
        raise BudgetError(f"token_budget must be a positive integer, got {total!r}")
    if complexity not in _SHARES:
        raise BudgetError(f"complexity must be simple, medium or complex, not {complexity!r}")
    s = dict(_SHARES[complexity])
    if knowledge_need:
        s["memory"] += 0.10
        s["history"] -= 0.10
    if conversation_length > 30:
        s["history"] += 0.05
        s["reserve"] -= 0.05
    if reserve_ratio is not None:
        if not 0.0 <= reserve_ratio < 1.0:
            raise BudgetError("reserve_ratio must be in [0, 1)")
        rest = 1.0 - s["reserve"]
        scale = (1.0 - reserve_ratio) / rest
        s = {k: (v * scale if k != "reserve" else reserve_ratio) for k, v in s.items()}
    reserve = int(total * s["reserve"])
    system = int(total * s["system"])
    memory = int(total * s["memory"])
    history = total - reserve - system - memory
    return BudgetPlan(total, system, memory, history, reserve, complexity, knowledge_need)


def estimate_task(query: str) -> tuple[Complexity, bool]:
    """A cheap guess at the task: (complexity, whether it needs recalled knowledge)."""
    words = len(query.split()) + sum(1 for ch in query if "\u4e00" <= ch <= "\u9fff") // 2
    questions = query.count("?") + query.count("？")
    if words > 60 or questions > 1:
        complexity: Complexity = "complex"
    elif words < 6 and not questions:
        complexity = "simple"
    else:
        complexity = "medium"
    return complexity, bool(_RECALL.search(query)) or questions > 0


def asks_overview(query: str) -> bool:
    """Whether ``query`` asks for an overview of the conversation (a summary, a recap, what
    was discussed) rather than about one detail of it."""
    return bool(_OVERVIEW.search(query))
