"""Turn a short spec string (as in config files and CLI flags) into an LLM."""

from __future__ import annotations

from ..errors import ValidationError
from .base import LLM

__all__ = ["DEFAULT_LLM", "LLM_CHOICES", "make_llm"]

LLM_CHOICES = ("heuristic", "openai:MODEL")
# The spec used when none is given, which is also that LLM's ``name`` (``Memory.stats``
# reports it without building the LLM).
DEFAULT_LLM = "heuristic"


def make_llm(
    spec: str | LLM | None = None, *, base_url: str | None = None, api_key: str | None = None
) -> LLM:
    """Build the LLM named by ``spec``; an :class:`LLM` instance is returned unchanged.

    ``base_url``/``api_key`` are used by ``openai:`` specs; they come from arguments only
    (the library never reads the environment; the CLI and server do).
    """
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, LLM):
            return spec
        raise ValidationError(f"llm must be a spec string or an LLM, got {spec!r}")
    name, _, arg = (spec or DEFAULT_LLM).strip().partition(":")
    if name.lower() == "heuristic" and not arg:
        from .heuristic import HeuristicLLM

        return HeuristicLLM()
    if name.lower() == "openai" and arg:
        from .openai import openai_llm

        return openai_llm(arg, base_url=base_url, api_key=api_key)
    raise ValidationError(f"unknown LLM {spec!r}; choose one of: {', '.join(LLM_CHOICES)}")
