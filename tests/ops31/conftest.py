from ops21.conftest import OwnPostgres, own_pg  # noqa: F401  (a PostgreSQL these tests cut)
