"""The server suite's fixtures (a real SQLite memory, its key store and app, a live
uvicorn server), for the audit's HTTP and MCP checks."""

from server.conftest import live_server, served  # noqa: F401
