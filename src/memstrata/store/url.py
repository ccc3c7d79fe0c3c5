"""Pick a store from a URL: ``sqlite:///path``, ``sqlite://:memory:``, ``memory://``,
``postgresql://user@host/db``."""

from __future__ import annotations

import re

from ..errors import MissingDependencyError, ValidationError
from .base import Store
from .vector_bound import VECTOR_CACHE_ROWS, check_vector_cache_rows

__all__ = ["open_store", "redact_url"]

_PASSWORD = re.compile(r"(://[^:/@?#]*):[^@/?#]*@")
# libpq (and redis-py) also take the password as a query parameter: ?password=, &sslpassword=
_QUERY_PASSWORD = re.compile(r"([?&][^=&#]*pass(?:word)?=)[^&#]*", re.IGNORECASE)

_POSTGRES_EXTRA = ("psycopg", "psycopg_pool", "pgvector")  # what `memstrata[postgres]` adds
_SCHEMES = "sqlite:///path/to/file.db, sqlite://:memory:, memory:// or postgresql://user@host/db"


def open_store(url: str, *, vector_cache_rows: int | None = None) -> Store:
    """Open the store a URL names.

    ``sqlite:////abs/path.db`` and ``sqlite:///abs/path.db`` both give an absolute path
    when the remainder starts with ``/``; ``sqlite:///relative.db`` is relative to the
    working directory (SQLAlchemy's convention).

    ``vector_cache_rows`` bounds the SQLite and PostgreSQL stores' vector cache
    (:mod:`memstrata.store.vector_bound`; None: 500,000 rows); ``memory://`` has no such
    cache (it holds every record in the process anyway): the value is checked, then unused.
    """
    rows = VECTOR_CACHE_ROWS if vector_cache_rows is None else vector_cache_rows
    rows = check_vector_cache_rows(rows)  # before any file or connection is opened
    if not isinstance(url, str) or "://" not in url:
        raise ValidationError(f"store URL {url!r} has no scheme; use {_SCHEMES}")
    if "\x00" in url:  # sqlite3 and libpq raise a raw ValueError on one
        raise ValidationError(f"store URL {url!r} holds a NUL character; remove it")
    scheme, rest = url.split("://", 1)
    scheme = scheme.lower()
    if scheme == "sqlite":
        from .sqlite import SQLiteStore

        if rest in (":memory:", "/:memory:", ""):
            return SQLiteStore(":memory:", url=url, vector_cache_rows=rows)
        if not rest.startswith("/"):
            raise ValidationError(
                f"store URL {url!r}: write sqlite:///relative.db or sqlite:////abs/path.db"
            )
        path = rest[1:]
        if not path:
            raise ValidationError(f"store URL {url!r} names no file; use {_SCHEMES}")
        return SQLiteStore(path, url=url, vector_cache_rows=rows)
    if scheme == "memory":
        from .memory import InMemoryStore

        return InMemoryStore(url=url)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres import PostgresStore
        except ModuleNotFoundError as exc:  # several of its modules import psycopg at once
            if (exc.name or "").split(".")[0] not in _POSTGRES_EXTRA:
                raise
            raise MissingDependencyError(
                f"postgresql:// stores need psycopg 3, psycopg_pool and pgvector ({exc.name} "
                "is missing): pip install 'memstrata[postgres]'"
            ) from None

        return PostgresStore(url, vector_cache_rows=rows)
    raise ValidationError(f"unknown store URL scheme {scheme!r} in {url!r}; use {_SCHEMES}")


def redact_url(url: str) -> str:
    """A store URL for reports, logs and messages: the password (in the URL's user part or
    a ``password=`` / ``sslpassword=`` parameter) replaced by ``***``."""
    return _QUERY_PASSWORD.sub(r"\1***", _PASSWORD.sub(r"\1:***@", url))
