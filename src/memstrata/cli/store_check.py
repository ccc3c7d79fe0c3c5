"""Look at a ``--db`` URL before opening it: a mistyped path must not become an empty store.

Pure standard library (``sqlite3``, ``pathlib``) so the check costs nothing at start-up. Only
``sqlite:///`` URLs name a file; other schemes are left to the library.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["STORE_SUFFIXES", "check_store", "sqlite_path"]

STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".memstrata")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def sqlite_path(url: str) -> Path | None:
    """The file a ``sqlite:///`` URL names (``None`` for in-memory and other schemes).

    Follows :func:`memstrata.store.url.open_store`: ``sqlite:///rel.db`` is relative,
    ``sqlite:////abs.db`` absolute. Malformed URLs return ``None`` so the library's own
    message explains them.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "sqlite" or not rest.startswith("/"):
        return None
    path = rest[1:]
    if not path or path in (":memory:",):
        return None
    return Path(path)


def _looks_like_export(path: Path) -> bool:
    try:
        with path.open("rb") as fp:
            head = fp.read(200)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b"memstrata" in head


def _not_a_store(path: Path) -> str | None:
    """Why the existing file at ``path`` is not a memstrata store, or ``None`` if it is."""
    if path.is_dir():
        return f"{path} is a directory, not a memstrata store file; pass --db sqlite:///FILE.db"
    try:
        size = path.stat().st_size
        with path.open("rb") as fp:
            magic = fp.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        return f"cannot read the store file {path}: {exc.strerror or exc}"
    if size == 0:
        return None  # an empty file: SQLite initialises it like a new one
    import sqlite3

    if magic != _SQLITE_MAGIC:
        hint = (
            (
                " (it looks like a memstrata export: load it with `memstrata import "
                f"{path}` into a .db store)"
            )
            if _looks_like_export(path)
            else ""
        )
        return (
            f"{path} is not a memstrata store: it is not an SQLite database{hint}; "
            "check --db (or MEMSTRATA_URL)"
        )
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        finally:
            conn.close()
    except sqlite3.Error as exc:
        if "locked" in str(exc) or "busy" in str(exc):  # a store, held by another process
            return (
                f"{path} is locked by another process ({exc}); wait for it to finish (or "
                "stop it) and run the command again"
            )
        from memstrata.store.sqlite.failures import unwritable

        why = unwritable(str(path))  # SQLite reads a WAL store only beside its -shm file
        if why is not None:
            return f"{path} cannot be opened: {why[0]} ({exc}); {why[1]}"
        return f"{path} is not a readable memstrata store ({exc}); check --db"
    if not tables:
        return None  # a blank SQLite file: nothing to lose, the store can initialise it
    if version == 0 or not {"meta", "records"} <= tables:
        shown = ", ".join(sorted(tables)[:8])
        return (
            f"{path} is an SQLite database but not a memstrata store (its tables: "
            f"{shown}); refusing to touch it — check --db (or MEMSTRATA_URL)"
        )
    return None


def check_store(url: str, *, create: bool) -> tuple[str | None, Path | None]:
    """``(problem, created)``: why the URL must not be opened, and the file about to be
    created (``None`` when it exists or is not a file URL)."""
    path = sqlite_path(url)
    if path is None:
        return None, None
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long for the file system: was a raw traceback
        shown = str(path) if len(str(path)) <= 200 else f"{str(path)[:200]}..."
        return f"cannot open a store at {shown}: {exc.strerror or exc}; check --db", None
    if exists:
        return _not_a_store(path), None
    if not create:
        return (
            f"no memstrata store at {path} (from --db {url}): check --db or "
            "MEMSTRATA_URL; a store is created by the first write, e.g. `memstrata add`"
        ), None
    if path.suffix.lower() not in STORE_SUFFIXES:
        return (
            f"refusing to create a new store at {path}: store files end in "
            f"{', '.join(STORE_SUFFIXES)} (is --db mistyped?); to load an export use "
            "`memstrata import FILE`"
        ), None
    if not path.parent.is_dir():
        return f"cannot create a store at {path}: the folder {path.parent} does not exist", None
    return None, path
