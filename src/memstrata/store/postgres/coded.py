"""psycopg connections whose failure to connect carries the server's SQLSTATE.

A connection the server refuses (a wrong password, an unknown database, too many clients,
the server starting up ...) reaches psycopg as libpq's message alone: libpq keeps the
fields of the startup error to itself, so ``e.sqlstate`` and ``e.diag`` are empty (psycopg
3.2 and 3.3.9, libpq 16-18), and the text is in the server's ``lc_messages`` language. With
libpq's verbose error messages (``PQERRORS_VERBOSE``) the code is in the text:
``FATAL:  28P01: Passwort-Authentifizierung für Benutzer »x« fehlgeschlagen``. These
classes connect as psycopg's own do, with that setting for the connection attempt only
(set back to the default once connected, so errors of statements read as before), and
raise the error class of the SQLSTATE (``psycopg.errors.InvalidPassword`` ...) with the
code and the location line taken out of the message.

The setting is libpq's C call, through ``ctypes`` on the libpq this process loaded
(psycopg's, found in ``/proc/self/maps``), and the connect step is psycopg's
``BaseConnection._connect_gen``: where either is missing (another platform, another psycopg)
:func:`connection_classes` gives psycopg's own classes, whose refusals are recognised by
their English text (:func:`memstrata.store.postgres.connection.refusal`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
from collections.abc import Generator
from typing import Any

# and, built on first use (module __getattr__), CodedConnection and AsyncCodedConnection
__all__ = ["coded", "connection_classes"]

_DEFAULT, _VERBOSE = 1, 2  # libpq's PGVerbosity: PQERRORS_DEFAULT, PQERRORS_VERBOSE
# "<severity>:  <SQLSTATE>: <message>": pqBuildErrorMessage3's layout with the code shown
# (the severity is translated too, so it is matched as any word)
_CODE = re.compile(r"(?P<head>[^\s:]+:  )(?P<code>[0-9A-Z]{5}): ")
# the verbose message's location line: "LOCATION:  function, file.c:123" (the label
# translated), after each error libpq reports
_LOCATION = re.compile(r"\n[^\n:]+:  [\w$]+, [\w.]+\.c:\d+[ \t]*(?=\n|$)")


@functools.cache
def _libpq() -> Any | None:
    """The libpq this process loaded (one only), its PQsetErrorVerbosity typed; None when
    it cannot be told (no /proc, none or several loaded)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {
                line.split()[-1]
                for line in maps
                if "libpq" in line and line.split()[-1].startswith("/")
            }
    except OSError:
        return None
    paths = {p for p in paths if re.search(r"/libpq[-.][^/]*so", p)}
    if len(paths) != 1:
        return None
    try:
        lib = ctypes.CDLL(paths.pop())  # already loaded: the same handle
        set_verbosity = lib.PQsetErrorVerbosity
    except (OSError, AttributeError):
        return None
    set_verbosity.argtypes = [ctypes.c_void_p, ctypes.c_int]
    set_verbosity.restype = ctypes.c_int
    return set_verbosity


def _verbosity(pgconn: Any, level: int) -> None:
    set_verbosity = _libpq()
    pointer = getattr(pgconn, "pgconn_ptr", None)
    if set_verbosity is not None and pointer:
        set_verbosity(pointer, level)


def coded(message: str) -> tuple[str | None, str]:
    """The SQLSTATE in a verbose libpq message (None: none there) and the message without
    it and without the location line, as libpq's default verbosity would have said it."""
    codes = [m["code"] for m in _CODE.finditer(message)]
    if not codes:
        return None, message
    plain = _CODE.sub(lambda m: m["head"], message)
    return codes[-1], _LOCATION.sub("", plain.rstrip("\n"))  # the last: the last attempt's


def _failed(prefix: str, pgconn: Any, conninfo: str, finish: bool) -> Any:
    from psycopg import errors as e

    try:
        from psycopg._encodings import conninfo_encoding

        encoding = conninfo_encoding(conninfo)
    except Exception:  # noqa: BLE001 - a private helper moved: libpq's messages are UTF-8
        encoding = "utf-8"
    code, message = coded(pgconn.get_error_message(encoding))
    cls: type[e.Error] = e.OperationalError
    if code is not None:
        with contextlib.suppress(KeyError):
            cls = e.lookup(code)
    exc = cls(f"{prefix}: {message}", pgconn=e.finish_pgconn(pgconn) if finish else pgconn)
    if code is not None and getattr(exc, "sqlstate", None) != code:
        exc.sqlstate = code
    exc.memstrata_connect = True  # type: ignore[attr-defined]  # connection.refusal
    return exc


def _connect(conninfo: str) -> Generator[tuple[int, Any], bool, Any]:
    """psycopg's connection generator (psycopg/generators.py ``_connect``), with libpq's
    verbose messages while it connects."""
    from psycopg import errors as e
    from psycopg import pq
    from psycopg.waiting import Wait

    conn = pq.PGconn.connect_start(conninfo.encode())
    _verbosity(conn, _VERBOSE)
    while True:
        if conn.status == pq.ConnStatus.BAD:
            raise _failed("connection is bad", conn, conninfo, finish=False)
        status = conn.connect_poll()
        if status == pq.PollingStatus.READING or status == pq.PollingStatus.WRITING:
            wait = Wait.R if status == pq.PollingStatus.READING else Wait.W
            while not (yield conn.socket, wait):
                pass
        elif status == pq.PollingStatus.OK:
            break
        elif status == pq.PollingStatus.FAILED:
            raise _failed("connection failed", conn, conninfo, finish=True)
        else:
            raise e.InternalError(f"unexpected poll status: {status}", pgconn=e.finish_pgconn(conn))
    _verbosity(conn, _DEFAULT)
    conn.nonblocking = 1
    return conn


def _same_connect_step(psycopg: Any) -> bool:
    """Whether this psycopg connects as :func:`_connect` replaces: ``_connect_gen(conninfo)``
    yielding psycopg/generators.py's waits (3.2, 3.3)."""
    import inspect

    from psycopg import errors, waiting

    for cls in (psycopg.Connection, psycopg.AsyncConnection):
        step = getattr(cls, "_connect_gen", None)
        if step is None or list(inspect.signature(step).parameters) != ["conninfo"]:
            return False
    return hasattr(errors, "finish_pgconn") and hasattr(waiting, "Wait")


@functools.cache
def connection_classes() -> tuple[type[Any], type[Any]]:
    """``(Connection, AsyncConnection)``: psycopg's, connecting through :func:`_connect`
    when this psycopg and libpq allow it (see the module's docstring)."""
    import psycopg

    if _libpq() is None or not _same_connect_step(psycopg):
        return psycopg.Connection, psycopg.AsyncConnection

    class Coded(psycopg.Connection):
        @classmethod
        def _connect_gen(cls, conninfo: str = "") -> Any:
            pgconn = yield from _connect(conninfo)
            return cls(pgconn)

    class AsyncCoded(psycopg.AsyncConnection):
        @classmethod
        def _connect_gen(cls, conninfo: str = "") -> Any:
            pgconn = yield from _connect(conninfo)
            return cls(pgconn)

    return Coded, AsyncCoded


def __getattr__(name: str) -> type[Any]:
    """``CodedConnection`` / ``AsyncCodedConnection``: :func:`connection_classes`'
    (built on first use: importing this module does not import psycopg)."""
    if name == "CodedConnection":
        return connection_classes()[0]
    if name == "AsyncCodedConnection":
        return connection_classes()[1]
    raise AttributeError(name)
