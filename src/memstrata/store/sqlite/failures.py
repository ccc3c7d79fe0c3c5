"""SQLite's errors as :class:`~memstrata.errors.StoreError`: what happened, what to do, and
whether retrying can help (``retryable``).

Classified by SQLite's result code (``sqlite3.Error.sqlite_errorcode``; the low byte is the
primary code), the message's words when there is none. Transient: a lock held past the
busy timeout (``SQLITE_BUSY``, ``SQLITE_LOCKED``), a WAL lock race (``SQLITE_PROTOCOL``), a
statement prepared against a schema another connection just changed (``SQLITE_SCHEMA``),
no memory. Not: a damaged file (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``), a read-only file, a
full disk, a failing disk (``SQLITE_IOERR``), a file that cannot be opened, a constraint or
trigger that refused the write, a table or column this memstrata does not find
(``SQLITE_ERROR``) — someone must act before the same call can succeed.
"""

from __future__ import annotations

import errno
import os
import sqlite3

from ...errors import StoreError

__all__ = [
    "BUSY_TIMEOUT_S",
    "duplicate",
    "failure",
    "out_of_descriptors",
    "operator_needed",
    "transient",
    "unwritable",
]

BUSY_TIMEOUT_S = 10.0  # how long a connection waits for another process's lock

_BUSY, _LOCKED, _NOMEM, _READONLY, _IOERR, _CORRUPT = 5, 6, 7, 8, 10, 11
_FULL, _CANTOPEN, _PROTOCOL, _SCHEMA, _CONSTRAINT, _NOTADB = 13, 14, 15, 17, 19, 26
_CONSTRAINT_PRIMARYKEY, _CONSTRAINT_UNIQUE = 1555, 2067  # extended codes
_IOERR_SHMSIZE = 4874  # the -shm file could not grow (a full disk)
_DESCRIPTORS_SPARE = 4  # open descriptors below the limit that still count as none left
_NEARLY_FULL = 64 * 1024  # free bytes below which a failed write is put down to a full disk
_ROOMY = 1 << 20  # free bytes above which a "full" store's own disk is not what is full
_TRANSIENT = frozenset({_BUSY, _LOCKED, _NOMEM, _PROTOCOL, _SCHEMA})


def _code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc``, or None (an error of the module's own,
    e.g. a closed connection, or a Python before 3.11)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def _locked(exc: sqlite3.Error) -> bool:
    code, text = _code(exc), str(exc)
    if code is not None:
        return code in (_BUSY, _LOCKED)
    return "locked" in text or "busy" in text


def transient(exc: sqlite3.Error) -> bool:
    """Whether the same call may succeed later with nothing changed (see the module)."""
    code = _code(exc)
    if code is not None:
        return code in _TRANSIENT
    return _locked(exc)


def duplicate(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is a UNIQUE or PRIMARY KEY violation (an id stored already), not
    another constraint's or a trigger's refusal (also ``sqlite3.IntegrityError``)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "UNIQUE" in str(exc)
    return int(code) in (_CONSTRAINT_UNIQUE, _CONSTRAINT_PRIMARYKEY)


def out_of_descriptors() -> str | None:
    """Why SQLite's "unable to open database file" (or "disk I/O error") happened when this
    process holds (nearly) every file descriptor its limit allows, or ``None`` (also where
    ``/proc/self/fd`` cannot say). Descriptors come back as files and connections close:
    a call failing for this may succeed later."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    try:
        held = len(os.listdir("/proc/self/fd"))
    except OSError as exc:  # listing it takes a descriptor too: none left is EMFILE
        if exc.errno != errno.EMFILE:
            return None
        held = soft
    if soft == resource.RLIM_INFINITY or held < soft - _DESCRIPTORS_SPARE:
        return None
    return f"this process has run out of file descriptors ({held} open, its limit is {soft})"


def unwritable(path: str) -> tuple[str, str] | None:
    """Why this process cannot write the store at ``path`` (the file, its ``-wal`` and
    ``-shm`` files, its folder) and what to do, or ``None`` when nothing says so: what
    SQLite's "disk I/O error" or "unable to open database file" meant when one of these
    holds. A few ``stat`` calls, made only once SQLite has failed."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fs = os.statvfs(folder)
    except OSError:
        return None
    elsewhere = "or copy the store to a writable folder"
    if fs.f_flag & os.ST_RDONLY:
        return (
            f"the file system of {folder} is mounted read-only",
            f"remount it read-write, {elsewhere}",
        )
    if fs.f_bavail * fs.f_frsize < _NEARLY_FULL:
        free = fs.f_bavail * fs.f_frsize
        return f"its disk is full ({free:,} bytes free in {folder})", "free disk space"
    for name in (path, f"{path}-wal", f"{path}-shm"):
        if os.path.exists(name) and not os.access(name, os.W_OK):
            return (
                f"{name} is not writable by this process (read-only or immutable)",
                f"make it writable (chmod, chattr -i), {elsewhere}",
            )
    if not os.access(folder, os.W_OK):
        return (
            f"its folder {folder} is not writable by this process (SQLite makes the -wal "
            "and -shm files there)",
            f"make the folder writable, {elsewhere}",
        )
    return None


def _temporary_files(path: str | None) -> str:
    """When the store's own disk has room (a MiB or more), where else SQLite writes: its
    temporary files (an index built, a sort, a VACUUM), in ``SQLITE_TMPDIR`` or ``TMPDIR``
    (else /var/tmp, /tmp); "" otherwise."""
    if path is None or path in ("", ":memory:") or path.startswith("file:"):
        return ""
    try:
        fs = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return ""
    room = fs.f_bavail * fs.f_frsize
    if room < _ROOMY:
        return ""
    folder = os.environ.get("SQLITE_TMPDIR") or os.environ.get("TMPDIR") or "/var/tmp or /tmp"
    return (
        f"; its own disk has {room:,} bytes free: SQLite's temporary files, in {folder} "
        "(SQLITE_TMPDIR, TMPDIR), may be what is full"
    )


def operator_needed(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file or its disk is damaged, read-only, full or failing,
    or that SQLite cannot open it (a folder it may not write: not merely not a memstrata
    store)."""
    return _code(exc) in (_CORRUPT, _READONLY, _IOERR, _FULL, _CANTOPEN)


def failure(
    exc: sqlite3.Error,
    where: str,
    doing: str,
    *,
    writing: bool,
    undone: str | None = None,
    path: str | None = None,
) -> StoreError:
    """SQLite's error ``exc`` as a :class:`StoreError` that says what happened and what to
    do; ``where`` names the store, ``doing`` what failed ("could not commit"); ``writing``:
    in a write transaction (rolled back: the message says nothing of it was written);
    ``undone``: what became of the call, when neither says it; ``path``: the store's file,
    looked at (:func:`unwritable`) when SQLite's words ("disk I/O error", "unable to open
    database file") do not say why."""
    text = str(exc)
    code = _code(exc)
    if undone is None:
        undone = "nothing of this call was written" if writing else "nothing was changed"
    again = transient(exc)
    if _locked(exc):  # the busy timeout ran out
        return StoreError(
            f"{where} {doing}: it is locked ({text}) — another process (a server, a "
            f"worker, an import) held its write lock for over {BUSY_TIMEOUT_S:g} s; "
            f"{undone}: retry once that process is done, or stop it",
            retryable=True,
        )
    if again:
        return StoreError(
            f"{where} {doing}: {text} ({type(exc).__name__}); {undone}: retry in a moment",
            retryable=True,
        )
    if code == _FULL or (code is None and "full" in text):  # the disk, or max_page_count
        return StoreError(
            f"{where} {doing}: the database or its disk is full ({text}"
            f"{_temporary_files(path)}); {undone}: free disk space (or raise PRAGMA "
            "max_page_count), then retry"
        )
    if code == _READONLY or (code is None and ("readonly" in text or "read-only" in text)):
        if not writing and getattr(exc, "sqlite_errorcode", None) == _READONLY:
            # plain SQLITE_READONLY on a read connection: PRAGMA query_only refused a write
            # memstrata's own read path attempted
            return StoreError(
                f"{where} {doing}: a read tried to write, which the read connection refused "
                f"({text}); {undone}: this is a memstrata bug, please report it"
            )
        return StoreError(
            f"{where} {doing}: it cannot be written ({text}); {undone}: make the file, "
            "its -wal and -shm files and its folder writable by this process"
        )
    if getattr(exc, "sqlite_errorcode", None) == _IOERR_SHMSIZE:
        # the -shm file beside the database could not grow: no room left on its disk
        return StoreError(
            f"{where} {doing}: its disk is full (SQLite could not grow the file's -shm "
            f"index: {text}); {undone}: free disk space, then retry"
        )
    if code in (_IOERR, _CANTOPEN) and (spent := out_of_descriptors()) is not None:
        return StoreError(
            f"{where} {doing}: {spent} ({text}); {undone}: close stores, files or connections "
            "it does not need, or raise its limit (ulimit -n, systemd's LimitNOFILE=), then "
            "retry",
            retryable=True,
        )
    why = unwritable(path) if path is not None and code in (_IOERR, _CANTOPEN) else None
    if why is not None:
        return StoreError(f"{where} {doing}: {why[0]} ({text}); {undone}: {why[1]}, then retry")
    if code == _IOERR or (code is None and "disk I/O" in text):
        return StoreError(
            f"{where} {doing}: the disk failed a read or a write ({text}); {undone}: "
            "free disk space if it is full, else check the disk and the file system it "
            "is on, then retry"
        )
    if code in (_CORRUPT, _NOTADB) or (
        code is None and ("malformed" in text or "not a database" in text)
    ):
        return StoreError(
            f"{where} {doing}: the file is damaged ({text}); {undone}: stop the processes "
            "using it and restore the store from a backup or an export (memstrata import); "
            "retrying will not repair it"
        )
    if code == _CANTOPEN:
        return StoreError(
            f"{where} {doing}: SQLite cannot open the file ({text}); {undone}: check that "
            "it and its folder exist and that this process may read and write them"
        )
    if code == _CONSTRAINT:
        return StoreError(
            f"{where} {doing}: a constraint or trigger of the database refused it "
            f"({text}); {undone}: a trigger or constraint memstrata did not make must be "
            "dropped (or let this write through) before the call can succeed"
        )
    return StoreError(
        f"{where} {doing}: SQLite refused this call ({type(exc).__name__}: {text}); {undone}"
        + (" (rolled back)" if writing else "")
    )
