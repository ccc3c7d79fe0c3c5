"""A deadlock (or a serialization failure) is PostgreSQL rolling one writer back so another
can go on: a ConflictError the layers retry, not "lost the connection" (a StoreError nobody
retries). Two real transactions that lock two rows in opposite orders make one."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest

from memstrata.errors import ConflictError, StoreError
from memstrata.store.postgres.connection import translate


def test_a_real_deadlock_is_a_conflict(pg_server: Any) -> None:
    url = pg_server.admin_url
    table = f"dl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v int)")
        setup.execute(f"INSERT INTO {table} VALUES (1, 0), (2, 0)")
    both = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(first: int, second: int) -> None:
        with psycopg.connect(url) as conn:
            try:
                conn.execute(f"UPDATE {table} SET v = v + 1 WHERE id = %s", (first,))
                both.wait(10)
                conn.execute(f"UPDATE {table} SET v = v + 1 WHERE id = %s", (second,))
                conn.commit()
            except psycopg.Error as exc:
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=p) for p in ((1, 2), (2, 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with psycopg.connect(url, autocommit=True) as done:
        done.execute(f"DROP TABLE {table}")
    assert len(errors) == 1 and isinstance(errors[0], psycopg.errors.DeadlockDetected)
    mapped = translate(errors[0], "the test database")
    assert isinstance(mapped, ConflictError) and not isinstance(mapped, StoreError)
    assert "nothing of it was written: retry" in str(mapped)


@pytest.mark.parametrize("committing", [False, True])
def test_a_lost_connection_is_still_a_store_error(committing: bool) -> None:
    mapped = translate(
        psycopg.OperationalError("server closed the connection"), "db", committing=committing
    )
    assert isinstance(mapped, StoreError)
    assert "lost the connection" in str(mapped)
