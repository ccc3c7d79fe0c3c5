"""The PostgreSQL backend: pgvector, a BM25 index that ranks as SQLite's, a shared job queue."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
