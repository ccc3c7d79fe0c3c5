"""The store layer never imports the server (issue 10, closing note): a user's purge deletes
the API keys bound to them through the ``user_tables`` registry the key stores fill in the
database (store/user_tables.py), not by importing ``server.keys``. Checked on the source:
no module under ``memstrata/store`` imports ``memstrata.server`` (or ``..server``), at the
top or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import memstrata.store

STORE = Path(memstrata.store.__file__).parent


def _server_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            absolute = module.startswith("memstrata.server")
            # a relative import climbing out of store/ into server/ (from ...server.keys)
            relative = node.level > 0 and (module == "server" or module.startswith("server."))
            if absolute or relative:
                found.append(f"{path.relative_to(STORE)}:{node.lineno} {'.' * node.level}{module}")
        elif isinstance(node, ast.Import):
            found += [
                f"{path.relative_to(STORE)}:{node.lineno} {a.name}"
                for a in node.names
                if a.name.startswith("memstrata.server")
            ]
    return found


def test_no_store_module_imports_the_server() -> None:
    modules = sorted(STORE.rglob("*.py"))
    assert len(modules) > 20
    assert [hit for m in modules for hit in _server_imports(m)] == []


def test_a_purge_without_any_key_store_still_works(tmp_path: Path) -> None:
    """A file no key store ever opened has no ``user_tables``: nothing to delete there."""
    from memstrata import Memory, Scope

    with Memory(f"sqlite:///{tmp_path / 'k.db'}", embedder="hashing", background=False) as mem:
        s = Scope("acme", "u1", session="s")
        mem.add_message(s, "user", "hello")
        assert mem.purge(s.user_scope).remaining == 0


def test_the_registry_is_read_as_data_not_sql(tmp_path: Path) -> None:
    """A registered table dropped since is skipped; a row that is not a plain identifier
    refuses the purge (StoreError) and the transaction leaves everything as it was."""
    import sqlite3

    import pytest

    from memstrata import Memory, Scope
    from memstrata.errors import StoreError
    from memstrata.server.keys import SQLiteKeyStore

    path = tmp_path / "k.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        s = Scope("acme", "u1", session="s")
        mem.add_message(s, "user", "hello")
        SQLiteKeyStore(str(path)).close()  # registers api_keys
        raw = sqlite3.connect(path)
        raw.execute("INSERT INTO user_tables VALUES ('gone_table', 'tenant', 'user')")
        raw.commit()
        mem.add_message(s, "user", "hello again")
        assert mem.purge(s.user_scope).remaining == 0  # the dropped table is skipped
        mem.add_message(s, "user", "a third")
        raw.execute("""INSERT INTO user_tables VALUES ('x"; DROP TABLE records; --', 'a', 'b')""")
        raw.commit()
        raw.close()
        with pytest.raises(StoreError, match="not a plain table"):
            mem.purge(s.user_scope)
        assert len(mem.list(s.user_scope)) == 1  # nothing purged, nothing dropped
