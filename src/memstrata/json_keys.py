"""JSON objects that name a key once: ``json`` keeps the last value of a key given twice and
drops the first without a word, which would lose what a user sent. The export's lines and
the service's request bodies are read with :func:`loads`, which refuses such an object."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DuplicateKeyError", "loads"]


class DuplicateKeyError(ValueError):
    """A JSON object names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"an object has the key {key!r} twice (JSON would keep only the last value)"
        )
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise DuplicateKeyError(key)
        seen.add(key)
    return d  # not reached: a shorter dict means a key came twice


def loads(text: str | bytes) -> Any:
    """``json.loads`` that raises :class:`DuplicateKeyError` for an object naming a key
    twice (and ``ValueError`` / ``RecursionError`` as ``json.loads`` does)."""
    return json.loads(text, object_pairs_hook=_object)
