"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server), as
caller27..29's checks use."""

from caller27.conftest import live_server, mem, served, url  # noqa: F401
