"""API keys in PostgreSQL: the ``api_keys`` table of the store's schema (migration 5).

Every ``memstrata serve`` process on one database reads the same table, so a key created or
revoked by ``memstrata keys ... --db postgresql://...`` (or over ``/v1/keys``) counts for
every process: ``authenticate`` is one indexed lookup, made again once the process's memory
of an accepted key (:mod:`memstrata.server.key_cache`, 1 s under ``memstrata serve``)
lapses. The store's own pool is not shared: keys use a small pool of their own (at most 4
connections), opened lazily by the first call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from ..errors import MemstrataError, NotFoundError, StoreError
from ..store.key_rows import pg_registration
from ..store.postgres.connection import (
    connect_failure,
    driver,
    parse_url,
    translate,
)
from ..store.postgres.migrations import check_pgvector, migrate
from ..store.postgres.reach import RECONNECT_S, Reach
from .keys import (
    KEY_COLUMNS,
    NEW_KEY_COLUMNS,
    ApiKey,
    NewKey,
    active_key,
    hash_key,
    key_id_of,
    key_of_row,
    listed_tenant,
    new_key,
    new_key_row,
    parse_key,
)

__all__ = ["PostgresKeyStore"]


def _register(conn: Any, schema: str) -> None:
    """Register ``api_keys`` for users' purges (store/user_tables.py)."""
    from psycopg import sql

    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        for statement, params in pg_registration():
            conn.execute(statement, params)


class PostgresKeyStore:
    """:class:`~memstrata.server.keys.KeyStore` over a ``postgresql://`` store URL."""

    def __init__(self, url: str, *, pool_max: int = 4) -> None:
        options = parse_url(url)
        psycopg = driver()
        from psycopg_pool import ConnectionPool

        from ..store.postgres.coded import CodedConnection

        self._where = options.where
        try:
            first = CodedConnection.connect(options.conninfo, autocommit=True, connect_timeout=10)
        except (psycopg.Error, OSError) as exc:  # OSError: EMFILE (connect_failure)
            raise connect_failure(exc, self._where, " for the API keys") from None
        try:
            with first:  # the same schema steps the store applies (api_keys is step 5)
                check_pgvector(first, self._where)
                migrate(first, options.schema, self._where)
                _register(first, options.schema)
        except MemstrataError:
            raise
        except psycopg.Error as exc:
            raise translate(exc, self._where) from exc
        schema = options.schema

        def configure(conn: Any) -> None:
            conn.execute(f'SET search_path TO "{schema}", public')

        self._pool = ConnectionPool(
            options.conninfo,
            min_size=0,
            max_size=pool_max,
            open=False,
            configure=configure,
            name=f"memstrata-keys-{schema}",
            kwargs={"autocommit": True},
            reconnect_timeout=RECONNECT_S,
            connection_class=CodedConnection,  # a refusal's SQLSTATE (coded.py)
        )
        self._reach = Reach(options.conninfo, self._where)  # fails fast while the server is down
        self._opened = False
        self._lock = threading.Lock()

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        import psycopg

        with self._lock:
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True
        try:
            with self._reach.connection(self._pool, timeout=10) as conn:
                yield conn
        except psycopg.Error as exc:
            raise translate(exc, self._where) from exc
        except Exception as exc:  # the pool's timeout (PoolTimeout) and the like
            if isinstance(exc, MemstrataError):
                raise
            raise StoreError(
                f"the API key table at {self._where} is unavailable: {exc}", retryable=True
            ) from exc

    def _rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with self._conn() as conn:
            rows: list[tuple[object, ...]] = conn.execute(sql, args).fetchall()
            return rows

    def create(
        self,
        tenant: str,
        *,
        role: str = "member",
        name: str = "",
        user: str | None = None,
        roles: Iterable[str] = (),
    ) -> NewKey:
        new = new_key(tenant, role, name, datetime.now(UTC), user, roles)
        with self._conn() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({NEW_KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                new_key_row(new),
            )
        return new

    def authenticate(self, secret: str) -> ApiKey | None:
        key_id = parse_key(secret)
        if key_id is None:
            return None
        rows = self._rows(
            f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = %s AND id = %s",
            (hash_key(secret), key_id),
        )
        return active_key(rows)

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        tenant = listed_tenant(tenant)
        sql = f"SELECT {KEY_COLUMNS} FROM api_keys"
        args: tuple[object, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = %s"
            args = (tenant,)
        return [key_of_row(r) for r in self._rows(sql + " ORDER BY tenant, created_at, id", args)]

    def revoke(self, key_id: str) -> ApiKey:
        key_id = key_id_of(key_id)
        with self._conn() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                (datetime.now(UTC).isoformat(), key_id),
            )
            rows = conn.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %s", (key_id,)
            ).fetchall()
        if not rows:
            raise NotFoundError(f"no API key {key_id!r}; `memstrata keys list` shows them")
        return key_of_row(rows[0])

    def purge_user(self, tenant: str, user: str) -> int:
        # The store's purge_user deletes these rows too, in its own transaction.
        with self._conn() as conn:
            return int(
                conn.execute(
                    'DELETE FROM api_keys WHERE tenant = %s AND "user" = %s', (tenant, user)
                ).rowcount
            )

    def close(self) -> None:
        with self._lock:
            if self._opened:
                self._pool.close()
                self._opened = False
