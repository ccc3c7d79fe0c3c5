"""An import whose temporary files (``TMPDIR``) cannot be written, the disk they are on
full: a ``StoreError`` that names the folder and the fix, nothing imported; with room
again the same import goes through. Library (``PageSpool``) and HTTP (the body spooled to
a file past 1 MiB).

Before session 30: a raw ``OSError: [Errno 28] No space left on device`` out of
``import_records`` (pickle.dump into the spool), and over HTTP 500 ``internal_error``.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import StoreError
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

from .conftest import ME, TinyDisk, filled

BOB = Scope("acme", "bob")


@pytest.fixture
def temporary_files_on(tiny_disk: TinyDisk, monkeypatch: pytest.MonkeyPatch) -> TinyDisk:
    """``tempfile``'s folder on the tiny disk (``tempfile.tempdir``: what TMPDIR sets)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tiny_disk.path))
    return tiny_disk


def test_a_library_import_says_the_temporary_folder_is_full(
    tmp_path: Path, temporary_files_on: TinyDisk
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    filled(url, n=200)
    with Memory(url, embedder="hashing", background=False) as mem:
        export = io.StringIO()
        mem.export_records(ME, export)
        temporary_files_on.fill()
        with pytest.raises(StoreError) as caught:  # was a raw OSError
            mem.import_records(io.StringIO(export.getvalue()), into=BOB)
        assert "temporary file" in str(caught.value) and "TMPDIR" in str(caught.value)
        assert str(temporary_files_on.path) in str(caught.value)
        assert mem.list(BOB) == []
        temporary_files_on.free()
        assert mem.import_records(io.StringIO(export.getvalue()), into=BOB).imported == 200


def test_an_http_import_says_the_temporary_folder_is_full(
    tmp_path: Path, temporary_files_on: TinyDisk
) -> None:
    db = tmp_path / "m.db"
    filled(f"sqlite:///{db}", n=20)
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    auth = {"Authorization": f"Bearer {keys.create('acme', role='admin').secret}"}
    native = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    with TestClient(app) as client:
        export = client.get("/v1/users/alice/export", headers=auth).text
        # past the 1 MiB kept in memory the body goes to a file: a header and blank lines
        body = export.splitlines(keepends=True)[0] + "\n" * (1 << 20) + export
        temporary_files_on.fill()
        r = client.post("/v1/users/bob/import", headers=auth, content=body.encode())
        assert r.status_code == 500, r.text  # was 500 internal_error, nothing said
        error = r.json()["error"]
        assert error["code"] == "store_failed" and "TMPDIR" in error["message"], error
        temporary_files_on.free()
        r = client.post("/v1/users/bob/import", headers=auth, content=export.encode())
        assert r.status_code == 200 and r.json()["imported"] == 20, r.text
