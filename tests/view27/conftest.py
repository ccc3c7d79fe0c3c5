"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server) and the
server suite's fixtures (a real SQLite memory, its key store and app, a live uvicorn
server), for the checks of what a caller is shown of a record shared with them: the same
fixtures as caller27's."""

from caller27.conftest import live_server, mem, served, url  # noqa: F401
