"""The PostgreSQL store, async (psycopg's async API): the source of ``memstrata.store.postgres``.

``scripts/unasync.py`` generates ``memstrata/store/postgres/<module>.py`` from each module
here (``store``, ``lexical``, ``vectors``, ``outbox``, ``audit``, ``compact``, ``dump``,
``schema``, ``batches``). The pure modules (``connection``, ``where``,
``behind_types``) are plain modules of ``memstrata.store.postgres`` imported by both. What
the sync store does on threads has a pair of small shells with the same names:
``memstrata/store/postgres/behind.py`` (the write-behind thread, the statistics thread) and
``memstrata/aio/pg_behind.py`` (writes awaited where they are made, an asyncio task).
``memstrata.aio.pg_store`` is the entry point.
"""
