"""A Memory on each store (memory://, SQLite, PostgreSQL on the suite's real server), for the
checks of what a caller can infer of the owner's unshared memory: caller27's fixtures."""

from caller27.conftest import mem, url  # noqa: F401
