"""Validation and hashing of the text memstrata stores."""

from __future__ import annotations

import hashlib
import unicodedata

from .errors import ValidationError

__all__ = ["DEFAULT_MAX_CHARS", "content_hash", "validate_content"]

DEFAULT_MAX_CHARS = 100_000


def validate_content(
    content: object,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    field: str = "content",
    stored: bool = True,
) -> str:
    """Return ``content`` as a clean ``str`` or raise :class:`ValidationError` saying why not.

    Bytes are accepted when they are valid UTF-8. Strings holding lone surrogates (which
    cannot be encoded as UTF-8, typically from a bad decode upstream) are refused, and so
    is a NUL character in text that is ``stored``: PostgreSQL text cannot hold one, and
    every store refuses the same input (a query, not stored, may hold one).
    """
    if isinstance(content, bytes | bytearray):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                f"{field} is not valid UTF-8 (byte {exc.start}): decode it with the right "
                "encoding before storing it"
            ) from None
    if not isinstance(content, str):
        raise ValidationError(f"{field} must be text, got {type(content).__name__}")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"{field} contains characters that are not valid UTF-8 (position {exc.start}, "
            "a lone surrogate): fix the decoding that produced it"
        ) from None
    if not content.strip():
        raise ValidationError(f"{field} is empty or whitespace only; there is nothing to store")
    if stored and "\x00" in content:
        raise ValidationError(
            f"{field} holds a NUL character (position {content.index(chr(0))}), which "
            "PostgreSQL cannot store in text and no store accepts; remove it (it carries no "
            "meaning in text) and write again"
        )
    if len(content) > max_chars:
        raise ValidationError(
            f"{field} has {len(content):,} characters, over the limit of {max_chars:,}: split "
            "it, ingest it as a document (chunked), or raise max_content_chars"
        )
    return content


def content_hash(text: str) -> str:
    """SHA-256 of the NFC-normalised, whitespace-collapsed text (the dedup and cache key)."""
    norm = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()
