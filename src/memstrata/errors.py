"""The exceptions memstrata raises.

Every error derives from :class:`MemstrataError` and its message says what was wrong and
what to do about it. Third-party errors (sqlite3, HTTP clients, model engines) are mapped to
this tree at the boundary where they occur::

    MemstrataError
    ├── ValidationError            bad input: empty content, missing tenant, bad filter ...
    │   ├── BudgetError            a token budget too small for what must fit
    │   └── ImportFormatError      a corrupt or foreign export line
    ├── NotFoundError              no such record *in this scope* (other tenants' ids too)
    ├── ConflictError              optimistic-locking version mismatch
    ├── QuotaExceededError         a tenant/user quota would be exceeded
    ├── ExportWriteError           writing an export to the caller's file failed (also
    │                              an ``OSError``: a full disk, a closed file ...)
    ├── StoreError                 the store failed or is unusable; ``retryable`` says
    │   │                          whether the same call may succeed later by itself
    │   ├── SchemaVersionError     the database was written by a newer memstrata
    │   └── EmbeddingMismatchError the store was built with another embedding model
    └── ProviderError              an embedder or LLM provider failed or returned garbage
        └── MissingDependencyError an optional extra is not installed
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "BudgetError",
    "ConflictError",
    "EmbeddingMismatchError",
    "ExportWriteError",
    "ImportFormatError",
    "MemstrataError",
    "MissingDependencyError",
    "NotFoundError",
    "ProviderError",
    "QuotaExceededError",
    "SchemaVersionError",
    "StoreError",
    "ValidationError",
]


class MemstrataError(Exception):
    """Base class of every error memstrata raises on purpose."""


class ValidationError(MemstrataError, ValueError):
    """The caller passed something memstrata cannot accept."""


class ArgumentError(ValidationError, TypeError):
    """A public call's arguments do not fit its signature (a missing argument, a keyword it
    does not take): what Python says with a bare ``TypeError`` (still an instance of one)."""


class BudgetError(ValidationError):
    """A token budget cannot hold what must always fit (e.g. the system prompt)."""


class NotFoundError(MemstrataError, LookupError):
    """No such record in the caller's scope.

    Raised for records that exist under another tenant or user too: isolation means a
    foreign id is indistinguishable from a missing one.
    """


class ConflictError(MemstrataError):
    """An update named a version that is no longer current (optimistic locking)."""


class QuotaExceededError(MemstrataError):
    """The write would exceed a configured quota. ``retry_after``: seconds until the quota
    resets (a daily one), or None when waiting does not help (records, per request)."""

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StoreError(MemstrataError):
    """The storage backend failed or cannot be used as asked.

    ``retryable``: whether the same call may succeed later with nothing changed: a lock
    another process held past the busy timeout, a PostgreSQL that is restarting or out of
    connections, a lost connection, a store being closed (a server shutting down). False
    (the default) when someone must act first: a damaged or read-only file, a full disk, a
    schema this memstrata cannot use, a trigger or constraint that refused the write.
    ``memstrata serve`` answers the first 503 with ``Retry-After`` and the second 500
    ``store_failed`` without it.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def closed_store(store: object) -> StoreError:
    """The error of any call on a store after its ``close()``: every backend says the same.
    ``store``: the store, or a text naming it. Retryable: a server answers it while it
    shuts down, and the same request succeeds on the server that replaces it (a library
    caller's closed object stays closed: the message says to open a new Memory)."""
    what = store if isinstance(store, str) else repr(store)
    return StoreError(
        f"{what} is closed (close() was called): nothing of this call was written; open "
        "a new Memory to keep using the store",
        retryable=True,
    )


class SchemaVersionError(StoreError):
    """The database file was written by a newer memstrata than this one."""


class EmbeddingMismatchError(StoreError):
    """The store holds vectors of another embedding model or dimension."""


class ProviderError(MemstrataError):
    """An embedding or LLM provider failed or returned unusable output."""


class MissingDependencyError(ProviderError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class ImportFormatError(ValidationError):
    """An export/import line is corrupt, foreign or of an unsupported version."""


class ExportWriteError(MemstrataError, OSError):
    """Writing an export to the file object the caller gave failed: its disk is full, it
    was closed, its encoding cannot hold a record's text ... (the caller's file, not the
    store). ``written``: how many records (audit events) were written whole before the
    failure; the file holds them and no end line, so an import refuses it as incomplete.
    ``errno`` is the failed write's (``None`` when it raised no ``OSError``). Also an
    ``OSError``, as the failed write's error was before session 30."""

    def __init__(self, message: str, *, written: int, errno: int | None = None) -> None:
        super().__init__(message)
        self.written = written
        self.errno = errno


def export_write_failed(exc: Exception, written: int, what: str = "records") -> ExportWriteError:
    """The :class:`ExportWriteError` of ``exc``, raised by the caller's file's ``write``
    after ``written`` ``what`` were written whole."""
    why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__
    if isinstance(exc, BrokenPipeError):  # ``memstrata export - | head``: no disk is full
        return ExportWriteError(
            f"writing the export failed after {written:,} {what} were written whole: the "
            f"program reading it stopped before its end ({why}); what it read is an "
            "incomplete export, with no end line, that an import refuses: let the reader "
            "read to the end, or export to a file",
            written=written,
            errno=exc.errno,
        )
    if isinstance(exc, UnicodeError):
        fix = "open the file with encoding='utf-8'"
    elif isinstance(exc, OSError):
        fix = "free disk space on the file's disk (or fix what the reason names)"
    else:  # a closed file, or one that no longer takes writes
        fix = "keep the file open for writing until the export returns"
    return ExportWriteError(
        f"writing the export to the file given failed after {written:,} {what} were "
        f"written whole ({why}): the file holds those and no end line, an incomplete "
        f"export that an import refuses; {fix} and export again",
        written=written,
        errno=exc.errno if isinstance(exc, OSError) else None,
    )
