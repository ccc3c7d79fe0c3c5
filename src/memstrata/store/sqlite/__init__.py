"""The SQLite backend: one WAL file with a lexical index of postings and a numpy vector cache."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
