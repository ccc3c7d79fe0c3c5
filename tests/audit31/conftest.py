"""audit26's fixtures: the server suite's (a real SQLite memory, its key store and app, a
live uvicorn server) and a Memory on each store."""

from audit26.conftest import live_server, mem, served  # noqa: F401
