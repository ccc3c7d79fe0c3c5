"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server): caller27's."""

from caller27.conftest import mem, url  # noqa: F401
