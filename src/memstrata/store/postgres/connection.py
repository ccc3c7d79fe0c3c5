"""Connecting to PostgreSQL: URL options, the pool, and mapping driver errors.

A store URL is a libpq URL plus memstrata's own query options, which are removed before the
URL reaches the driver:

- ``schema=NAME`` (default ``memstrata``): the schema holding the tables, so one database
  can hold several stores;
- ``pool_min`` / ``pool_max`` (default 1 / 8): the connection pool's size;
- ``exact_below=N`` (default 100000): dense search scores a user's vectors exactly when the
  user has fewer than N of them, and asks the pgvector HNSW index otherwise.

Errors are mapped at this boundary: a connection that cannot be made or is lost mid-call is
a :class:`~memstrata.errors.StoreError` that says what happened and what to do. A call that
loses its connection before ``COMMIT`` was rolled back by the server, so nothing of it was
written.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from ...errors import (
    ConflictError,
    MissingDependencyError,
    StoreError,
    ValidationError,
    closed_store,
)
from .. import one_model
from ..url import redact_url

__all__ = [
    "PgOptions",
    "connect_failure",
    "driver",
    "mapped",
    "parse_url",
    "refusal",
    "timed_out",
    "transient",
    "translate",
]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class PgOptions:
    conninfo: str
    schema: str = "memstrata"
    pool_min: int = 1
    pool_max: int = 8
    exact_below: int = 100_000

    @property
    def where(self) -> str:
        """The server and database, for messages (no password)."""
        parts = urlsplit(self.conninfo)
        host = parts.hostname or dict(parse_qsl(parts.query)).get("host", "the local socket")
        port = f":{parts.port}" if parts.port else ""
        return f"PostgreSQL at {host}{port}{parts.path or '/'}"


def _int(name: str, value: str, low: int) -> int:
    try:
        n = int(value)
    except ValueError:
        n = low - 1
    if n < low:
        raise ValidationError(f"store URL option {name}={value!r} must be an integer >= {low}")
    return n


def parse_url(url: str) -> PgOptions:
    """Split a ``postgresql://`` URL into the driver's conninfo and memstrata's options."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsed lazily: a bad port raises here, not in the driver
    except ValueError as exc:
        raise ValidationError(
            f"store URL {redact_url(url)!r} is malformed ({exc}); write "
            "postgresql://user:password@host:port/database (an IPv6 host in [brackets], "
            "a port from 1 to 65535)"
        ) from None
    if parts.scheme.lower() not in ("postgresql", "postgres"):
        raise ValidationError(f"{redact_url(url)!r} is not a postgresql:// URL")
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in ("schema", "pool_min", "pool_max", "exact_below"):
            if key in ours:  # which one was meant? (the last won: another schema's store)
                raise ValidationError(
                    f"store URL option {key}= is given twice ({ours[key]!r} and {value!r}); "
                    "keep the one you mean"
                )
            ours[key] = value
        else:
            theirs.append((key, value))
    schema = ours.get("schema", "memstrata")
    if not _IDENT.match(schema):
        raise ValidationError(
            f"store URL option schema={schema!r} is not a plain identifier; use lower-case "
            "letters, digits and underscores (at most 63), starting with a letter"
        )
    pool_min = _int("pool_min", ours.get("pool_min", "1"), 0)
    pool_max = _int("pool_max", ours.get("pool_max", "8"), 1)
    if pool_max < pool_min:
        raise ValidationError(f"store URL: pool_max={pool_max} is below pool_min={pool_min}")
    # Not urlunsplit: it drops the "//" of an empty host ("postgresql:///db?host=/socket",
    # libpq's form for a local socket), which libpq then cannot read.
    # %20 for a space, not urlencode's "+": libpq reads "+" as itself (a URL's
    # options=-c%20statement_timeout%3D5000 became "+statement_timeout", refused)
    query = urlencode(theirs, quote_via=quote)
    conninfo = f"postgresql://{parts.netloc}{parts.path}" + (f"?{query}" if query else "")
    return PgOptions(
        conninfo,
        schema,
        pool_min,
        pool_max,
        _int("exact_below", ours.get("exact_below", "100000"), 0),
    )


def driver() -> Any:
    """The psycopg module, or a clear error naming the extra to install."""
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"postgresql:// stores need psycopg 3 and psycopg_pool ({exc.name} is missing): "
            "pip install 'memstrata[postgres]'"
        ) from None
    return psycopg


# serialization_failure, deadlock_detected: PostgreSQL rolled the transaction back.
_ROLLED_BACK = frozenset({"40001", "40P01"})
# SQLSTATEs after which the same call may succeed later with nothing changed: connection
# problems (class 08), the server shutting down or starting (57P01-57P03), a statement
# cancelled (57014: statement_timeout, or an operator), a lock not granted in time (55P03)
# or an object in use (55006), resources short for now (class 53: connections, memory; not
# 53100, a full disk, which someone must free), statement completion unknown (40003).
_TRANSIENT_CLASSES = frozenset({"08", "53"})
_TRANSIENT = frozenset({"57P01", "57P02", "57P03", "57014", "55P03", "55006", "40003"})
_DISK_FULL = "53100"


# A connection the server (or libpq) refuses for a reason waiting will not change: an operator
# must act. psycopg gives no SQLSTATE for a failed connection (libpq keeps the fields of the
# startup error to itself: e.sqlstate and e.diag are empty, psycopg 3.2 and 3.3.9), so
# memstrata connects through coded.py, which has libpq put the code in the message and
# raises with it: a refusal is then told by its SQLSTATE (_REFUSED), in whatever language the
# server's lc_messages speaks. Where coded.py cannot (no /proc, another psycopg), or libpq
# itself refused (no SQLSTATE: a password not given, a host name unknown, TLS), the message
# is read: PostgreSQL's own words in English (28P01, 28000, 3D000, 42501, 55000 in the
# server's code) and libpq's. Everything else that fails a connection may pass by itself:
# refused (the server is down or restarting), a timeout, "the database system is starting
# up" / "shutting down" / "in recovery mode" (57P03), "too many clients" / "too many
# connections for role" (53300), a name server that did not answer.
_REFUSED: dict[str, str] = {
    "28P01": "the password was refused (SQLSTATE 28P01): put the role's password in the URL "
    "(postgresql://user:password@host/database)",
    "28000": "the server refused this user (SQLSTATE 28000: an unknown role, a NOLOGIN role, "
    "no pg_hba.conf line letting it reach this database from here, or pg_hba.conf's "
    "authentication refused it): fix the URL's user, create the role or let it log in "
    "(CREATE ROLE name LOGIN, ALTER ROLE name LOGIN), or fix pg_hba.conf and reload the server",
    "3D000": "no such database (SQLSTATE 3D000): fix the URL's database name, or create it "
    "(CREATE DATABASE name)",
    "42501": "the role lacks CONNECT on the database (SQLSTATE 42501): GRANT CONNECT ON "
    "DATABASE name TO role",
    "55000": "the database refuses connections (ALLOW_CONNECTIONS false, SQLSTATE 55000): "
    "ALTER DATABASE name ALLOW_CONNECTIONS true, or use another database",
}
_AT_CONNECT_ONLY = frozenset({"42501", "55000"})  # a statement's are not refusals
_REFUSALS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), fix)
    for pattern, fix in (
        (
            r"password authentication failed for user",
            "the password was refused (SQLSTATE 28P01): put the role's password in the URL "
            "(postgresql://user:password@host/database)",
        ),
        (
            r"no password supplied|password is required|fe_sendauth",
            "the server asks for a password and none was given: put it in the URL "
            "(postgresql://user:password@host/database), PGPASSWORD or ~/.pgpass",
        ),
        (
            r"authentication failed for user",
            "the server's authentication (pg_hba.conf: peer, ident, scram, cert ...) refused "
            "this user (SQLSTATE 28000): connect as a user it accepts, or change pg_hba.conf",
        ),
        (
            r'role "[^"]*" does not exist',
            "no such role (SQLSTATE 28000): fix the URL's user, or create the role "
            "(CREATE ROLE name LOGIN PASSWORD '...')",
        ),
        (
            r'database "[^"]*" does not exist',
            "no such database (SQLSTATE 3D000): fix the URL's database name, or create it "
            "(CREATE DATABASE name)",
        ),
        (
            r"no pg_hba\.conf entry",
            "the server's pg_hba.conf has no line letting this user reach this database from "
            "here (SQLSTATE 28000): add one and reload the server, or connect as a user it lists",
        ),
        (
            r"is not permitted to log in",
            "the role may not log in (NOLOGIN): ALTER ROLE name LOGIN, or use another role",
        ),
        (
            r"permission denied for database",
            "the role lacks CONNECT on the database (SQLSTATE 42501): GRANT CONNECT ON "
            "DATABASE name TO role",
        ),
        (
            r"is not currently accepting connections",
            "the database refuses connections (ALLOW_CONNECTIONS false, SQLSTATE 55000): "
            "ALTER DATABASE name ALLOW_CONNECTIONS true, or use another database",
        ),
        (
            r"does not support SSL|certificate|sslmode value",
            "the server's TLS does not match the URL's sslmode or certificates: fix the "
            "URL's ssl options or the server's TLS setup",
        ),
        (
            r"could not translate host name .*(not known|no address)",
            "no such host name: fix the URL's host",
        ),
    )
)


def refusal(exc: BaseException) -> str | None:
    """What an operator must do when ``exc`` is a connection refused for good (a wrong
    password, an unknown role or database ...), else ``None``: by its SQLSTATE when it has
    one (:data:`_REFUSED`; the English text, where it names the case more precisely), else
    by its English text (:data:`_REFUSALS`)."""
    state = getattr(exc, "sqlstate", None)
    if state is not None:
        if state not in _REFUSED:
            return None
        if state in _AT_CONNECT_ONLY and not getattr(exc, "memstrata_connect", False):
            return None
    message = str(exc)
    for pattern, fix in _REFUSALS:
        if pattern.search(message):
            return fix
    return _REFUSED.get(state) if state is not None else None


def _no_descriptors(exc: BaseException, where: str, doing: str, undone: str) -> StoreError | None:
    """The error for ``exc`` when it is this process running out of file descriptors
    (``EMFILE``; the system's table full, ``ENFILE``), else ``None``: a connection attempt
    raises the operating system's ``OSError`` besides psycopg's errors (its wait makes an
    epoll selector). Retryable: descriptors come back as connections and files close."""
    if not isinstance(exc, OSError) or exc.errno not in (errno.EMFILE, errno.ENFILE):
        return None
    return StoreError(
        f"{doing} {where}: this process has run out of file descriptors ({exc}); {undone}: "
        "close stores, files or connections it does not need, or raise its limit "
        "(ulimit -n, systemd's LimitNOFILE=), then retry",
        retryable=True,
    )


def connect_failure(exc: BaseException, where: str, what: str = "") -> StoreError:
    """A connection to ``where`` that could not be made (opening a store, the API keys):
    not retryable when :func:`refusal` names what an operator must do, else retryable
    (:func:`transient`). ``what``: what the connection was for (" for the API keys")."""
    spent = _no_descriptors(exc, f"{where}{what}", "cannot connect to", "nothing was written")
    if spent is not None:
        return spent
    from ..sqlite.failures import out_of_descriptors

    if refusal(exc) is None and (at_limit := out_of_descriptors()) is not None:
        # libpq's socket() failing says only "connection is bad: no error details"
        return StoreError(
            f"cannot connect to {where}{what}: {at_limit} ({str(exc).strip()}); nothing was "
            "written: close stores, files or connections it does not need, or raise its "
            "limit (ulimit -n, systemd's LimitNOFILE=), then retry",
            retryable=True,
        )
    said = str(exc).strip()
    fix = refusal(exc)
    if fix is not None:
        return StoreError(
            f"cannot connect to {where}{what}: {said}; {fix}; nothing was written "
            "(retrying will not help until this is done)"
        )
    return StoreError(
        f"cannot connect to {where}{what}: {said}; check the URL "
        "(postgresql://user:password@host:port/database), that the server is running "
        "and that the database exists",
        retryable=transient(exc),
    )


def transient(exc: BaseException) -> bool:
    """Whether a driver error may pass by itself (see the SQLSTATEs above): a connection
    error the driver raised without one (a lost socket, psycopg_pool's timeout) too, unless
    it is a :func:`refusal` (a wrong password, an unknown role or database ...)."""
    import psycopg

    state = getattr(exc, "sqlstate", None)
    if isinstance(exc, OSError):  # no descriptor left: they come back (_no_descriptors)
        return exc.errno in (errno.EMFILE, errno.ENFILE)
    if state is None:
        if refusal(exc) is not None:
            return False
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    if state == _DISK_FULL:
        return False
    return state in _TRANSIENT or state[:2] in _TRANSIENT_CLASSES or state in _ROLLED_BACK


def timed_out(exc: BaseException, where: str, setting: str | None, doing: str) -> StoreError | None:
    """The error for a statement of opening the store (``doing``) that the server cancelled
    by its ``statement_timeout`` (SQLSTATE 57014 while the session's ``setting`` is not
    ``0``; ``None``: it could not be read, itself cancelled), else ``None``. Not retryable:
    a timeout shorter than opening takes fails every open the same way (``options=-c
    statement_timeout=1`` in the URL: the pool's set-up failed and was retried until
    "pool initialization incomplete after 15 sec", naming neither cause nor fix)."""
    if getattr(exc, "sqlstate", None) != "57014" or setting in ("0", ""):
        return None
    diag = getattr(exc, "diag", None)
    message = getattr(diag, "message_primary", None) or str(exc).strip()
    value = f"statement_timeout is {setting}" if setting else "statement_timeout"
    return StoreError(
        f"cannot open the store at {where}: the server cancelled {doing} ({message}; "
        f"SQLSTATE 57014): this session's {value}, shorter than memstrata's statements "
        "take; raise it (a few seconds or more) or remove it where it is set (the URL's "
        "options=-c statement_timeout=..., PGOPTIONS, ALTER ROLE ... SET or ALTER DATABASE "
        "... SET statement_timeout), then open the store again; no record was written "
        "(retrying as it is will not help)"
    )


def translate(
    exc: BaseException, where: str, *, committing: bool = False
) -> StoreError | ConflictError:
    """A driver error as a :class:`StoreError` naming the problem and the fix, and whether
    retrying helps (``retryable``: :func:`transient`); a deadlock or a serialization
    failure (PostgreSQL rolled the transaction back, class 40) as a
    :class:`ConflictError`, which the layers' writers retry like any other writer's race."""
    import psycopg
    from psycopg_pool import PoolClosed

    if isinstance(exc, PoolClosed):  # close() was called: no lost connection to report
        return closed_store(where)
    spent = _no_descriptors(exc, where, "cannot reach", "nothing of this call was written")
    if spent is not None:
        return spent
    diag = getattr(exc, "diag", None)
    message = getattr(diag, "message_primary", None) or str(exc).strip()
    state: str | None = getattr(exc, "sqlstate", None)
    if state == one_model.SQLSTATE:  # the trigger's: the store's model
        detail = getattr(diag, "message_detail", None) or ""
        model, _, dims = detail.partition("\t")
        return one_model.refused(where, model, dims)
    if state in _ROLLED_BACK:  # OperationalErrors too: checked first
        return ConflictError(
            f"{where} rolled this call back ({message}): another writer's transaction held "
            "rows it needed at the same moment; nothing of it was written: retry"
        )
    undone = (
        "the write may or may not have been applied: re-read before retrying"
        if committing
        else "nothing of this call was written"
    )
    fix = refusal(exc)
    if fix is not None:  # a new connection of the pool's, or the LISTEN one
        return StoreError(f"{where} refused the connection ({message}): {fix}; {undone}")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(
            f"{where} refused this user: {message}; connect as a role that holds that "
            "privilege, or have the database owner grant it (memstrata creates its schema "
            "and tables on first use: GRANT CREATE ON DATABASE ... TO ...); nothing of this "
            "call was written"
        )
    if state == _DISK_FULL:
        return StoreError(
            f"{where} is out of disk space ({message}); {undone}: free space on the "
            "server's disk, then retry"
        )
    if transient(exc):
        if state is None or state[:2] == "08" or state.startswith("57P"):
            if committing:
                return StoreError(
                    f"lost the connection to {where} while committing ({message}); the "
                    "write may or may not have been applied: re-read before retrying",
                    retryable=True,
                )
            return StoreError(
                f"lost the connection to {where} ({message}); the call was rolled back and "
                "nothing of it was written: check that the server is up and retry",
                retryable=True,
            )
        hint = (
            "; if calls are cancelled so again and again, the session's statement_timeout "
            "is shorter than they take: raise it (the URL's options=-c statement_timeout=..., "
            "ALTER ROLE ... SET statement_timeout)"
            if state == "57014"
            else ""
        )
        return StoreError(
            f"{where} could not do this call now ({message}; SQLSTATE {state}); {undone}: "
            f"retry in a few seconds{hint}",
            retryable=True,
        )
    cls = (state or "")[:2]
    if state in ("XX001", "XX002"):
        fix = (
            "rebuild the index (REINDEX) or restore the database from a backup"
            if state == "XX002"
            else "restore the database from a backup (or an export: memstrata import)"
        )
        return StoreError(
            f"{where} found damaged data ({message}); {undone}: {fix}; retrying will not repair it"
        )
    if cls == "58":
        return StoreError(
            f"{where}'s disk or file system failed ({message}); {undone}: check the "
            "server's disk and its log"
        )
    if cls == "42":
        return StoreError(
            f"{where}'s memstrata schema is not what this memstrata expects ({message}); "
            f"{undone}: a table, column or function was changed or dropped by hand, or the "
            "URL's schema= names another program's tables; restore the schema (a backup, "
            "or an export into a new schema)"
        )
    if cls == "23" or (cls == "P0"):
        return StoreError(
            f"{where} refused the write: a constraint or trigger said {message!r}; {undone}: "
            "a trigger or constraint memstrata did not make must be dropped (or let this "
            "write through) before the call can succeed"
        )
    if state == "25006":
        return StoreError(
            f"{where} is read-only ({message}: a standby, or default_transaction_read_only);"
            f" {undone}: point the URL at the primary server"
        )
    what = f"; SQLSTATE {state}" if state else ""
    return StoreError(f"{where} failed: {message}{what}; {undone}")


@contextmanager
def mapped(where: str) -> Iterator[None]:
    """Run a block with driver errors mapped to :class:`StoreError`."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc, where) from exc
