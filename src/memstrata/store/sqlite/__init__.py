"""The SQLite backend: one WAL file with FTS5 lexical search and a numpy vector cache."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
