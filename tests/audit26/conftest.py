"""The server suite's fixtures (a real SQLite memory, its key store and app, a live
uvicorn server), for the audit's HTTP and MCP checks, and caller27's Memory on each store
(the hashing embedder, the real clock, no background thread; the suite's own ``mem`` runs
on a fixed clock)."""

from caller27.conftest import mem  # noqa: F401
from server.conftest import live_server, served  # noqa: F401
