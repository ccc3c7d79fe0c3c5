"""The PostgreSQL store's schema migrations, by the name other modules import them.

The code is :mod:`memstrata.store.postgres.schema`, the sync twin generated from the async
source ``memstrata/_async/store/postgres/schema.py`` (the async store migrates with it too).
"""

from memstrata.store.postgres.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Step,
    check_pgvector,
    migrate,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Step", "check_pgvector", "migrate"]
