"""Token counting: a real tokenizer when one is configured, else a calibrated estimate.

The estimate counts CJK characters at 1.5 per token and other text at 4 characters per
token (DESIGN §3), rounding up, so it errs towards over-counting and a context built with
it stays inside the budget for common BPE tokenizers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Protocol

__all__ = ["TokenCounter", "count_tokens", "estimate_tokens", "tiktoken_counter"]

_CJK = re.compile(
    r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
    r"\u3040-\u30ff\uac00-\ud7af]"
)


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    if text.isascii():  # no CJK character: one C scan instead of the pattern's
        return math.ceil(len(text) / 4.0)
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return math.ceil(cjk / 1.5 + other / 4.0)


def count_tokens(text: str, counter: TokenCounter | None = None) -> int:
    return (counter or estimate_tokens)(text)


def tiktoken_counter(encoding: str = "cl100k_base") -> Callable[[str], int]:
    """A counter backed by ``tiktoken`` (needs the package and its encoding files)."""
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError:
        from .errors import MissingDependencyError

        raise MissingDependencyError(
            "tiktoken is not installed: pip install tiktoken, or use the built-in estimate"
        ) from None
    enc = tiktoken.get_encoding(encoding)
    return lambda text: len(enc.encode(text, disallowed_special=()))
