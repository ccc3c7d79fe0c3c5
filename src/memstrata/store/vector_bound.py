"""The bound of a store's in-process vector cache (SQLite and PostgreSQL): the rows of the
users' vector matrices a process keeps for searches, least recently searched dropped past it.
Settable as ``Memory(vector_cache_rows=)``, ``AsyncMemory(vector_cache_rows=)``,
``memstrata serve --vector-cache-rows`` and ``memstrata mcp --vector-cache-rows``."""

from __future__ import annotations

from ..errors import ValidationError
from ..validation import check_int

__all__ = ["VECTOR_CACHE_ROWS", "check_vector_cache_rows"]

# ~0.75 GB at 384 dimensions (4 bytes a dimension), ~3 GB at 1,536
VECTOR_CACHE_ROWS = 500_000


def check_vector_cache_rows(rows: object) -> int:
    """``rows`` when it is an int >= 1 (not a bool), else a ``ValidationError`` naming the
    option."""
    try:
        return check_int(rows, "vector_cache_rows", low=1)
    except ValidationError as exc:
        raise ValidationError(
            f"{exc} (the vector rows a process keeps for searches, least recently searched "
            f"users dropped past it; default {VECTOR_CACHE_ROWS:,})"
        ) from None
