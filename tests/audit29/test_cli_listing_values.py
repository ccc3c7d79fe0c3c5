"""Values the CLI's listings passed on unchecked (session 29's audit, a fuzz of every
option of every command with -1, 0, NaN, 10^22, NUL, a lone surrogate, odd dates):

- ``memstrata layers --limit 99999999999999999999999``: a raw ``OverflowError`` traceback
  (the store's own ``list``, which ``Memory.list`` guards); ``--limit -1`` showed nothing
  without a word.
- ``memstrata keys list --tenant $'caf\\xe9'`` (argv bytes that are not UTF-8): a raw
  ``UnicodeEncodeError`` traceback from the key store; a NUL, a driver's error on PostgreSQL.
  Every key store now checks the tenant as every tenant id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope, ValidationError
from memstrata.cli.app import app
from memstrata.server.keys import InMemoryKeyStore, KeyStore, SQLiteKeyStore, open_key_store


@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees")
    return ["--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing"]


def _usage_error(args: list[str], says: str) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert says in res.output, res.output


@pytest.mark.parametrize("limit", ["99999999999999999999999", "-1"])
def test_layers_refuses_a_limit_out_of_range(base: list[str], limit: str) -> None:
    _usage_error([*base, "layers", "--limit", limit], "Invalid value for '--limit'")


@pytest.mark.parametrize("tenant", ["caf\udce9", "a\x00b"])
def test_keys_list_refuses_a_tenant_no_store_holds(base: list[str], tenant: str) -> None:
    CliRunner().invoke(app, [*base, "keys", "create", "--tenant", "t"])
    res = CliRunner().invoke(app, [*base, "keys", "list", "--tenant", tenant])
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "scope.tenant" in res.output and "Traceback" not in res.output, res.output


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def key_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyStore]:
    if request.param == "memory":
        store: KeyStore = InMemoryKeyStore()
    elif request.param == "sqlite":
        store = SQLiteKeyStore(str(tmp_path / "k.db"))
    else:
        store = open_key_store(request.getfixturevalue("pg_server").url())
    store.create("acme")
    yield store
    store.close()


@pytest.mark.parametrize("tenant", ["caf\udce9", "a\x00b", ""])
def test_every_key_store_refuses_such_a_tenant_filter(key_store: KeyStore, tenant: str) -> None:
    with pytest.raises(ValidationError, match="scope.tenant"):
        key_store.list(tenant)
    assert [k.tenant for k in key_store.list("acme")] == ["acme"]
