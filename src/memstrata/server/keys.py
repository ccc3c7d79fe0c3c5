"""API keys: who is calling, and which tenant they act for.

A key is ``ms_<id>_<secret>``: ``id`` (12 hex chars) names the key in listings and logs, the
secret is 32 random bytes (256 bits) from :mod:`secrets`. Only ``sha256(key)`` is stored.
A salt or a slow hash (bcrypt, argon2) protects *low-entropy* secrets such as passwords
from offline guessing; a 256-bit random key cannot be guessed, so one SHA-256 is enough and
keeps the per-request check a single indexed lookup.

Keys live in the same database as the memory, in a table of their own (``api_keys``):
one file to back up for SQLite (this module creates the table through its own connection),
and for PostgreSQL the ``api_keys`` table of the store's schema (migration 5), shared by
every server process, so a revocation is seen by every process
(:mod:`memstrata.server.pg_keys`; ``memstrata serve`` remembers an accepted key for a second,
:mod:`memstrata.server.key_cache`, so another process's revocation counts there within that
second). ``memory://`` stores get an
in-process key store (tests).

The tenant a request acts for comes from its key, never from the request. A key may also
be bound to one user of its tenant (``user``) with access-control ``roles``: it then acts
as that user's owner on their own memory and as a *caller* (``Scope(caller=, roles=)``,
seed 003) on any other user's memory, where it reads only what was shared with it and
writes nothing. A key without a user is a service key: it acts for every user of its tenant.

A user's purge deletes the keys bound to that user (:meth:`KeyStore.purge_user`; on SQLite
and PostgreSQL the store's ``purge_user`` deletes those rows in its own transaction, since
the table is in the same database): such a key names the user and acted only as them, so it
can neither stay as it was nor lose its user (it would become a service key of the whole
tenant). It stops authenticating and leaves ``keys list``; audit events keep its id as
their actor (``key:<id>``), which names no user. Service keys and other users' keys stay.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from ..errors import NotFoundError, StoreError, ValidationError
from ..scope import Scope
from ..store.key_rows import KEYS_OF_A_USER, ensure_sqlite_table
from ..store.sqlite.failures import failure, operator_needed
from ..store.sqlite.failures import transient as sqlite_transient
from ..validation import check_text

__all__ = [
    "KEYS_OF_A_USER",
    "KEY_COLUMNS",
    "NEW_KEY_COLUMNS",
    "ApiKey",
    "InMemoryKeyStore",
    "KeyStore",
    "NewKey",
    "Role",
    "SQLiteKeyStore",
    "active_key",
    "check_key_fields",
    "decode_roles",
    "encode_roles",
    "hash_key",
    "key_of_row",
    "new_key",
    "new_key_row",
    "open_key_store",
    "parse_key",
]

_KEY = re.compile(r"^ms_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


class Role(StrEnum):
    """``member`` reads and writes memory; ``admin`` may also purge, import and run jobs."""

    MEMBER = "member"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What the server knows about a key (never the key itself)."""

    id: str
    tenant: str
    role: Role
    name: str
    created_at: datetime
    revoked_at: datetime | None = None
    user: str | None = None  # bound to this user of the tenant (None: a service key)
    roles: frozenset[str] = frozenset()  # access-control roles (records' allowed_roles)

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @property
    def actor(self) -> str:
        """Who this key is in the audit log."""
        return f"key:{self.id}"

    @property
    def access_roles(self) -> frozenset[str]:
        """The roles a record's ``allowed_roles`` is matched against: the key's access
        roles plus its server role (``admin`` is also one of the library's default roles)."""
        return self.roles | {self.role.value}


@dataclass(frozen=True, slots=True)
class NewKey:
    """A freshly created key: ``secret`` is shown once and stored nowhere."""

    secret: str
    key: ApiKey


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_key(secret: str) -> str | None:
    """The key id of a well-formed key, else ``None`` (no lookup for garbage)."""
    m = _KEY.match(secret)
    return m.group(1) if m else None


def _role(value: str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise ValidationError(
            f"role {value!r} is not one of: {', '.join(r.value for r in Role)}"
        ) from None


_ROLE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def check_key_fields(
    tenant: str, user: str | None, roles: Iterable[str]
) -> tuple[str | None, frozenset[str]]:
    """Validate a key's tenant, user and access roles (ValidationError naming the fix)."""
    Scope(tenant, user or "_")  # the same id rules as every other tenant and user id
    if isinstance(roles, str):
        raise ValidationError("roles must be a list of role names, not one string")
    found = frozenset(roles)
    bad = sorted(r for r in found if not isinstance(r, str) or not _ROLE_NAME.match(r))
    if bad:
        raise ValidationError(
            f"access roles {bad!r} are not role names: use 1-64 letters, digits or . _ : -"
        )
    return user, found


def listed_tenant(tenant: str | None) -> str | None:
    """The tenant a key listing is filtered by, checked as every tenant id (a lone surrogate
    was a raw UnicodeEncodeError from SQLite, a NUL a driver's error on PostgreSQL)."""
    if tenant is not None:
        Scope(tenant, "_")
    return tenant


def key_id_of(key_id: object) -> str:
    """``key_id`` if it could name a key (printable ASCII text), else the unknown key's
    NotFoundError: every key store answers the same, and none sends a NUL to its database."""
    if not isinstance(key_id, str) or not key_id.isascii() or not key_id.isprintable():
        raise NotFoundError(f"no API key {key_id!r}; `memstrata keys list` shows them")
    return key_id


def new_key(
    tenant: str, role: str, name: str, now: datetime, user: str | None, roles: Iterable[str]
) -> NewKey:
    user, access = check_key_fields(tenant, user, roles)
    name = check_text(name, "name", allow_empty=True, max_chars=1000)  # no NUL, valid UTF-8
    key_id = secrets.token_hex(6)
    secret = f"ms_{key_id}_{secrets.token_urlsafe(32)}"
    return NewKey(secret, ApiKey(key_id, tenant, _role(role), name, now, None, user, access))


def encode_roles(roles: frozenset[str]) -> str:
    return ",".join(sorted(roles))


def decode_roles(text: str | None) -> frozenset[str]:
    return frozenset(r for r in (text or "").split(",") if r)


class KeyStore(Protocol):
    def create(
        self,
        tenant: str,
        *,
        role: str = "member",
        name: str = "",
        user: str | None = None,
        roles: Iterable[str] = (),
    ) -> NewKey: ...
    def authenticate(self, secret: str) -> ApiKey | None:
        """The active key this secret belongs to, or ``None`` (unknown, malformed, revoked)."""
        ...

    def list(self, tenant: str | None = None) -> list[ApiKey]: ...
    def revoke(self, key_id: str) -> ApiKey: ...
    def purge_user(self, tenant: str, user: str) -> int:
        """Delete every key bound to this user of this tenant (a user's purge); returns
        how many were deleted."""
        ...

    def close(self) -> None: ...


class InMemoryKeyStore:
    """Keys in a dict (``memory://`` stores and tests)."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[str, ApiKey]] = {}
        self._lock = threading.Lock()

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
        with self._lock:
            self._keys[new.key.id] = (hash_key(new.secret), new.key)
        return new

    def authenticate(self, secret: str) -> ApiKey | None:
        key_id = parse_key(secret)
        if key_id is None:
            return None
        with self._lock:
            found = self._keys.get(key_id)
        if found is None or not secrets.compare_digest(found[0], hash_key(secret)):
            return None
        return found[1] if found[1].active else None

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        tenant = listed_tenant(tenant)
        with self._lock:
            keys = [k for _, k in self._keys.values()]
        return sorted(
            (k for k in keys if tenant is None or k.tenant == tenant),
            key=lambda k: (k.tenant, k.created_at, k.id),
        )

    def revoke(self, key_id: str) -> ApiKey:
        key_id = key_id_of(key_id)
        with self._lock:
            if key_id not in self._keys:
                raise NotFoundError(f"no API key {key_id!r}; `memstrata keys list` shows them")
            digest, key = self._keys[key_id]
            if key.active:
                key = replace(key, revoked_at=datetime.now(UTC))
                self._keys[key_id] = (digest, key)
            return key

    def purge_user(self, tenant: str, user: str) -> int:
        with self._lock:
            gone = [i for i, (_, k) in self._keys.items() if (k.tenant, k.user) == (tenant, user)]
            for key_id in gone:
                del self._keys[key_id]
        return len(gone)

    def close(self) -> None:
        pass


KEY_COLUMNS = 'id, tenant, role, name, created_at, revoked_at, "user", roles'


def key_of_row(row: Sequence[object]) -> ApiKey:
    """An :class:`ApiKey` from a row of :data:`KEY_COLUMNS` (SQLite and PostgreSQL)."""
    key_id, tenant, role, name, created, revoked, user, roles = row
    return ApiKey(
        str(key_id),
        str(tenant),
        Role(str(role)),
        str(name),
        datetime.fromisoformat(str(created)),
        datetime.fromisoformat(str(revoked)) if revoked else None,
        str(user) if user else None,
        decode_roles(str(roles) if roles else ""),
    )


def active_key(rows: Sequence[Sequence[object]]) -> ApiKey | None:
    """The key the first of ``rows`` (of :data:`KEY_COLUMNS`) holds, if there is one and it
    is not revoked: what a lookup by secret answers (SQLite and PostgreSQL)."""
    if not rows:
        return None
    key = key_of_row(rows[0])
    return key if key.active else None


NEW_KEY_COLUMNS = 'id, key_hash, tenant, role, name, created_at, "user", roles'


def new_key_row(new: NewKey) -> tuple[object, ...]:
    """A new key as a row of :data:`NEW_KEY_COLUMNS` (SQLite and PostgreSQL)."""
    k = new.key
    return (
        k.id,
        hash_key(new.secret),
        k.tenant,
        k.role.value,
        k.name,
        k.created_at.isoformat(),
        k.user,
        encode_roles(k.roles),
    )


class SQLiteKeyStore:
    """The ``api_keys`` table of a SQLite memory file, through a connection of its own."""

    def __init__(self, path: str) -> None:
        try:
            self._conn = sqlite3.connect(
                path, timeout=10.0, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA busy_timeout = 10000")
            # one transaction: two processes opening an old file together would both see a
            # column missing, and the second one's ALTER TABLE would fail
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                # A user's purge deletes the keys bound to them in its own transaction: the
                # table is registered for it in the database (store/user_tables.py).
                ensure_sqlite_table(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # not when SQLite rolled back (a full disk)
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            if getattr(self, "_conn", None) is not None:
                self._conn.close()
            if operator_needed(exc) or sqlite_transient(exc):  # read-only, full, locked
                where = f"the API key table in {path!r}"
                raise failure(exc, where, "cannot be opened", writing=True, path=path) from exc
            raise StoreError(f"cannot open the API key table in {path!r}: {exc}") from exc
        self._lock = threading.Lock()

    @staticmethod
    def _key(row: tuple[object, ...]) -> ApiKey:
        return key_of_row(row)

    def _run(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            with self._lock:
                return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(
                f"API key table unavailable: {exc}", retryable=sqlite_transient(exc)
            ) from exc

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
        self._run(
            f"INSERT INTO api_keys ({NEW_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            new_key_row(new),
        )
        return new

    _COLS = KEY_COLUMNS

    def authenticate(self, secret: str) -> ApiKey | None:
        key_id = parse_key(secret)
        if key_id is None:
            return None
        rows = self._run(
            f"SELECT {self._COLS} FROM api_keys WHERE key_hash = ? AND id = ?",
            (hash_key(secret), key_id),
        )
        return active_key(rows)

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        tenant = listed_tenant(tenant)
        sql = f"SELECT {self._COLS} FROM api_keys"
        args: tuple[object, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant,)
        rows = self._run(sql + " ORDER BY tenant, created_at, id", args)
        return [self._key(r) for r in rows]

    def revoke(self, key_id: str) -> ApiKey:
        key_id = key_id_of(key_id)
        self._run(
            "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (datetime.now(UTC).isoformat(), key_id),
        )
        rows = self._run(f"SELECT {self._COLS} FROM api_keys WHERE id = ?", (key_id,))
        if not rows:
            raise NotFoundError(f"no API key {key_id!r}; `memstrata keys list` shows them")
        return self._key(rows[0])

    def purge_user(self, tenant: str, user: str) -> int:
        # The store's purge_user deletes these rows too (same file), then VACUUMs.
        try:
            with self._lock:
                return self._conn.execute(
                    'DELETE FROM api_keys WHERE tenant = ? AND "user" = ?', (tenant, user)
                ).rowcount
        except sqlite3.Error as exc:
            raise StoreError(
                f"API key table unavailable: {exc}", retryable=sqlite_transient(exc)
            ) from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` URL (None for other schemes and ``:memory:``)."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() != "sqlite" or rest in (":memory:", "/:memory:", ""):
        return None
    return rest[1:] if rest.startswith("/") else None


def open_key_store(url: str) -> KeyStore:
    """The key store that lives beside the memory store ``url`` names."""
    if "\x00" in url:  # as open_store: sqlite3 and libpq raise a raw ValueError on one
        raise ValidationError(f"store URL {url!r} holds a NUL character; remove it")
    path = sqlite_path(url)
    if path:
        return SQLiteKeyStore(path)
    scheme = url.partition("://")[0].lower()
    if scheme in ("memory", "sqlite"):
        return InMemoryKeyStore()
    if scheme in ("postgresql", "postgres"):
        from .pg_keys import PostgresKeyStore

        return PostgresKeyStore(url)
    raise ValidationError(
        f"API keys for {scheme}:// stores are not supported; serve a sqlite:/// or "
        "postgresql:// store"
    )
