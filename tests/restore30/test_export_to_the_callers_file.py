"""``export_records`` (and ``audit.export``) when the caller's own file fails.

Before session 30 an ``OSError`` of the file object the caller gave (its disk full: here
``/dev/full``, which refuses every write with ENOSPC), a file closed mid-export (a
``ValueError``) or one whose encoding cannot hold a record's text (``UnicodeEncodeError``)
came through as it was, saying nothing of the export. Now each is an ``ExportWriteError``
(a ``MemstrataError``, and an ``OSError`` as before) that says what failed (writing the
export to the file given), how many records were written whole (``written``: the file
holds them and no end line, which an import refuses) and what to do. A file closed before
the call is a ``ValidationError`` before anything is read. Each test fails before."""

from __future__ import annotations

import asyncio
import errno
import io
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, ExportWriteError, Memory, MemstrataError, Scope, ValidationError
from memstrata.portability import EXPORT_PAGE
from memstrata.records import Message, Role

ANN = Scope("acme", "ann", session="s1")


def _turns(n: int) -> list[Message]:
    return [Message(Role.USER, f"note number {i}") for i in range(n)]


needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")


class ClosedAfterFirstWrite(io.StringIO):
    """A caller's file that its owner closes after the export's first page."""

    def write(self, text: str) -> int:
        n = super().write(text)
        self.taken = self.getvalue()
        self.close()
        return n


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as m:
        yield m


@needs_dev_full
def test_a_full_disk_is_an_export_write_error_saying_what_was_written(mem: Memory) -> None:
    mem.add(ANN, "the ferry to Cacilhas leaves at nine")
    with open("/dev/full", "w", encoding="utf-8", buffering=1) as fp:  # noqa: SIM117
        with pytest.raises(ExportWriteError) as caught:
            mem.export_records(ANN, fp)
        with pytest.raises(OSError):  # its buffer is still not written: flushed at close
            fp.close()
    err = caught.value
    assert isinstance(err, MemstrataError) and isinstance(err, OSError)
    assert err.errno == errno.ENOSPC and err.written == 0
    text = str(err)
    assert "writing the export to the file given failed after 0 records" in text
    assert "No space left on device" in text and "no end line" in text
    assert "free disk space" in text and "export again" in text


def test_a_file_closed_mid_export_says_how_many_records_it_holds(mem: Memory) -> None:
    mem.add_messages(ANN, _turns(EXPORT_PAGE + 5))
    fp = ClosedAfterFirstWrite()
    with pytest.raises(ExportWriteError) as caught:
        mem.export_records(ANN, fp)
    assert caught.value.written == EXPORT_PAGE and caught.value.errno is None
    assert f"after {EXPORT_PAGE:,} records were written whole" in str(caught.value)
    assert "keep the file open for writing" in str(caught.value)
    # what the file holds: the header and the first page, no end line
    assert len(fp.taken.splitlines()) == 1 + EXPORT_PAGE


def test_a_file_that_cannot_hold_the_text_names_the_encoding(mem: Memory, tmp_path: Path) -> None:
    mem.add(ANN, "the café by the ferry opens at nine")
    with (
        open(tmp_path / "out.jsonl", "w", encoding="ascii") as fp,
        pytest.raises(ExportWriteError) as caught,
    ):
        mem.export_records(ANN, fp)
    assert "encoding='utf-8'" in str(caught.value)


def test_a_closed_file_is_refused_before_anything_is_read(mem: Memory) -> None:
    fp = io.StringIO()
    fp.close()
    with pytest.raises(ValidationError, match="fp is closed: give a file open for writing"):
        mem.export_records(ANN, fp)
    with pytest.raises(ValidationError, match="fp is closed"):
        mem.audit.export("acme", fp)


@needs_dev_full
def test_the_audit_export_to_a_full_disk_is_an_export_write_error(mem: Memory) -> None:
    record = mem.add(ANN, "the ferry to Cacilhas leaves at nine")
    mem.delete(ANN, record.id)
    with open("/dev/full", "w", encoding="utf-8", buffering=1) as fp:  # noqa: SIM117
        with pytest.raises(ExportWriteError, match="after 0 events were written whole"):
            mem.audit.export("acme", fp)
        with pytest.raises(OSError):
            fp.close()


@needs_dev_full
def test_the_async_api_says_the_same(tmp_path: Path) -> None:
    async def main() -> None:
        url = f"sqlite:///{tmp_path / 'm.db'}"
        async with AsyncMemory(url, embedder="hashing", background=False) as am:
            await am.add(ANN, "the ferry to Cacilhas leaves at nine")
            with open("/dev/full", "w", encoding="utf-8", buffering=1) as fp:  # noqa: SIM117
                with pytest.raises(ExportWriteError) as caught:
                    await am.export_records(ANN, fp)
                with pytest.raises(OSError):
                    fp.close()
            assert caught.value.errno == errno.ENOSPC
            fp2 = ClosedAfterFirstWrite()
            await am.add_messages(ANN, _turns(EXPORT_PAGE + 1))
            with pytest.raises(ExportWriteError) as caught:
                await am.export_records(ANN, fp2)
            assert caught.value.written == EXPORT_PAGE

    asyncio.run(main())
