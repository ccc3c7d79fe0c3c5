"""The pure part of the Redis hot tier, shared by the async source
(``memstrata/_async/store/redis_hot.py``) and its generated sync twin
(:mod:`memstrata.store.redis_hot`, which re-exports the public names): the ``buffer=`` URL's
key prefix, constants, and the async face of the durable store's quota counters.

Nothing here does I/O or imports redis-py, so both trees share one definition of each value.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ValidationError

__all__ = [
    "DEFAULT_PREFIX",
    "INSTALL",
    "MIRROR_SECONDS",
    "buffer_prefix",
    "split_prefix",
]

INSTALL = "pip install 'memstrata[redis]'"

# A quota mirror key lives at most this long: a crash between the Redis and the durable take
# can leave it ahead of the durable counter, for no longer than this.
MIRROR_SECONDS = 60

DEFAULT_PREFIX = "memstrata"
_PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def split_prefix(url: str) -> tuple[str, str]:
    """``(url without ?prefix=, prefix)``: the key prefix is memstrata's, not redis-py's."""
    if not isinstance(url, str) or url.split("://", 1)[0].lower() not in (
        "redis",
        "rediss",
        "unix",
    ):
        raise ValidationError(
            f"buffer={_shown(url)!r} is not a Redis URL; use redis://host:6379/0, "
            "rediss://... (TLS) or unix:///path/to/redis.sock"
        )
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL": an unclosed [
        raise ValidationError(
            f"buffer={_shown(url)!r} is not a valid Redis URL ({exc}); use "
            "redis://host:6379/0, rediss://... (TLS) or unix:///path/to/redis.sock"
        ) from None
    db = parts.path.strip("/") if parts.scheme.lower() != "unix" else ""
    if db and not (db.isascii() and db.isdigit()):  # redis-py would use db 0, silently
        raise ValidationError(
            f"buffer={_shown(url)!r} names database {db!r}: a Redis database is a number "
            "(redis://host:6379/0); write its number, or leave it out for 0"
        )
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [v for k, v in query if k == "prefix"]
    if not prefixes:
        return url, DEFAULT_PREFIX
    if len(prefixes) > 1:  # which one was meant? (the last won: another key space)
        raise ValidationError(
            f"buffer URL option prefix= is given twice ({prefixes[0]!r} and "
            f"{prefixes[1]!r}); keep the one you mean"
        )
    prefix = prefixes[0]
    if not 1 <= len(prefix) <= 64 or not set(prefix) <= _PREFIX_CHARS:
        raise ValidationError(
            f"buffer URL prefix={prefix!r} is not a valid key prefix; use 1-64 letters, "
            "digits, '_', '.' or '-' (it starts every Redis key memstrata writes)"
        )
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


def _shown(url: object) -> object:
    from .url import redact_url

    return redact_url(url) if isinstance(url, str) else url


def buffer_prefix(url: str) -> str:
    """The key prefix a ``buffer=`` URL names (``?prefix=app1``; default ``memstrata``)."""
    return split_prefix(url)[1]
