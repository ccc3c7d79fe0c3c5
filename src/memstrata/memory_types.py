"""``Memory``'s values: one definition for ``memstrata.memory`` and ``memstrata._async.memory``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .records import MemoryRecord

if TYPE_CHECKING:
    from .layers.router import RouteInput

__all__ = ["DEFAULT_ROLES", "MAX_TOKEN_BUDGET", "Remembered"]

DEFAULT_ROLES = ("admin", "editor", "viewer")
MAX_TOKEN_BUDGET = 10_000_000  # far above any model's window; bounds the arithmetic


@dataclass(frozen=True, slots=True)
class Remembered:
    """Where :meth:`Memory.remember` put something, and why (the router's scores)."""

    layer: str
    record: MemoryRecord | None
    scores: RouteInput
