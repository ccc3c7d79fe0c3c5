"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server) and the
server suite's fixtures: caller27's."""

from caller27.conftest import live_server, mem, served, url  # noqa: F401
