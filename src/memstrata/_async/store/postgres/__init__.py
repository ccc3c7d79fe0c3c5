"""The PostgreSQL store, async (psycopg's async API): the source of ``memstrata.store.postgres``."""
