"""A PostgreSQL these tests stop and start (ops21's; the session's shared one stays up)."""

from ops21.conftest import OwnPostgres, own_pg  # noqa: F401  (a fixture)
