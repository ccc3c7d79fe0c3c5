"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server) and the
server suite's fixtures, for the checks of what a caller can infer of the owner's unshared
memory: caller27's fixtures."""

from caller27.conftest import live_server, mem, served, url  # noqa: F401
