"""A file system of a few MiB that a test fills to the last byte and empties again: a tmpfs
mounted under the test's folder (root only; CI runs as root), unmounted when the test ends,
passed or failed. Not a skip when it cannot be mounted: a failure that says why."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from ops21.conftest import OwnPostgres, own_pg  # noqa: F401  (a PostgreSQL these tests kill)

ME = Scope("acme", "alice", session="s1")


class TinyDisk:
    """A mounted tmpfs at ``path``: :meth:`fill` takes every free byte (a file of zeros,
    written: a sparse file would take nothing), :meth:`free` gives it all back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def fill(self, leave: int = 0) -> None:
        """Take every free byte of the file system, then give back ``leave`` of them."""
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for chunk in (1 << 20, 4096, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * chunk)
                except OSError:
                    pass
            if leave:
                os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
        finally:
            os.close(fd)

    def free(self) -> None:
        self._filler.unlink(missing_ok=True)

    def available(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize


def _mount(path: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.fail("tests/audit30 mounts a small tmpfs to fill a disk: run them as root (CI does)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs at {path}: {done.stderr.strip()}")


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[TinyDisk]:
    """An 8 MiB file system of the test's own (see :class:`TinyDisk`)."""
    path = tmp_path / "tiny"
    path.mkdir()
    _mount(path, "8m")
    try:
        yield TinyDisk(path)
    finally:
        # lazy: a file a failed test left open must not keep the mount (and the next run)
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """``(folder, view)``: a folder of the test's and a read-only bind mount of it (what a
    store on a file system mounted read-only sees), unmounted afterwards."""
    folder, view = tmp_path / "rw", tmp_path / "ro"
    folder.mkdir()
    view.mkdir()
    if os.geteuid() != 0:
        pytest.fail("tests/audit30 bind-mounts a folder read-only: run them as root (CI does)")
    for args in (["--bind", str(folder), str(view)], ["-o", "remount,bind,ro", str(view)]):
        done = subprocess.run(["mount", *args], capture_output=True, text=True)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(view)], check=False)
            pytest.fail(f"cannot bind-mount {folder} read-only: {done.stderr.strip()}")
    try:
        yield folder, view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


@contextmanager
def immutable(*paths: Path) -> Iterator[None]:
    """``chattr +i`` on ``paths`` (root is not stopped by a mode of 444; a process that has
    them open cannot write them either), undone afterwards."""
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.fail("tests/audit30 needs root and chattr to make a live store read-only")
    names = [str(p) for p in paths]
    subprocess.run(["chattr", "+i", *names], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *names], check=False)


def filled(url: str, n: int = 50) -> list[str]:
    """``n`` notes of alice's in the store at ``url``, closed: their ids."""
    with Memory(url, embedder="hashing", background=False) as mem:
        return [
            mem.add(ME, f"fact number {i} about herons and lakes " * 5, dedup=False).id
            for i in range(n)
        ]
