"""The server suite's fixtures (a real SQLite memory, its key store, app and live server)."""

from server.conftest import live_server, served  # noqa: F401
