"""Getting a JSON value out of what a chat model actually sends back.

Models wrap JSON in code fences, add a sentence before it, leave trailing commas or use
Python quoting. :func:`parse_json_output` undoes those and raises only
:class:`~memstrata.errors.ProviderError` when nothing parseable is left.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ProviderError

__all__ = ["parse_json_output"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\\n]|\\.)*)'")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_PY_LITERAL = re.compile(r"\b(True|False|None)\b")
_MAX_CHARS = 200_000
_MAX_STARTS = 20


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _FAILED


_FAILED = object()


def _balanced(text: str, start: int) -> str | None:
    """The JSON-looking span from the bracket at ``start`` to its partner, if closed."""
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    pairs = {"{": "}", "[": "]"}
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in pairs:
            stack.append(pairs[c])
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return text[start : i + 1]
    return None


def _repairs(candidate: str) -> list[str]:
    """Progressively bolder fixes of common model mistakes."""
    no_commas = _TRAILING_COMMA.sub(r"\1", candidate)
    out = [no_commas]
    if "'" in no_commas:
        double = _SINGLE_QUOTED.sub(lambda m: json.dumps(m.group(1).replace("\\'", "'")), no_commas)
        out.append(_PY_LITERAL.sub(lambda m: _PY_LITERALS[m.group(1)], double))
    return out


def parse_json_output(text: str) -> Any:
    """The first JSON object or array in ``text``, repaired if needed.

    Raises :class:`ProviderError` (and nothing else) when there is none.
    """
    if not isinstance(text, str):
        raise ProviderError(f"LLM returned {type(text).__name__}, not text")
    text = text[:_MAX_CHARS]
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        value = _loads(source.strip())
        if value is not _FAILED and isinstance(value, dict | list):
            return value
        for tries, match in enumerate(re.finditer(r"[{\[]", source)):
            if tries >= _MAX_STARTS:  # bounded work on adversarial text
                break
            candidate = _balanced(source, match.start())
            if candidate is None:
                continue
            for attempt in [candidate, *_repairs(candidate)]:
                value = _loads(attempt)
                if value is not _FAILED:
                    return value
            break  # the first complete object is the answer; later ones are examples
    raise ProviderError(
        "LLM output holds no parseable JSON object or array: "
        f"{text[:120]!r}{'…' if len(text) > 120 else ''}"
    )
