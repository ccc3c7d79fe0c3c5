"""The server suite's fixtures (a real SQLite memory, its key store and app), for the
audit's HTTP checks."""

from server.conftest import served  # noqa: F401
