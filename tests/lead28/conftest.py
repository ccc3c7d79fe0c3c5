"""The server suite's fixtures (a real SQLite memory, its key store and app)."""

from server.conftest import served  # noqa: F401
