"""An export costs a page, not the history: it is written (and, with embeddings, embedded
in batches) a page of records at a time, and its format (version 2: the count in an end
line) round-trips every field while version-1 files still import.

Before: ``export_records`` collected every record of the user in a list, embedded all their
texts in one ``embed_batch`` call, then wrote a header counting them and the lines."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from legacy_vectors import another_model
from memstrata import AsyncMemory, FixedClock, Memory, Message, Scope
from memstrata.cli.app import app
from memstrata.codec import record_to_dict
from memstrata.embedder import hashing
from memstrata.embedder.cache_types import LRUEmbeddingCache
from memstrata.errors import ImportFormatError, StoreError
from memstrata.portability import EXPORT_EMBED_BATCH, EXPORT_PAGE
from memstrata.store.sqlite.store import SQLiteStore
from recording_embedder import RecordingEmbedder

SMALL, LARGE = 2_500, 10_000  # both several pages; the large user has 4x the history
ALICE = Scope("acme", "alice")


class Discard:
    """A text sink that keeps nothing (so the peak measured is the export's own)."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        return len(text)


def _fill(mem: Memory, scope: Scope, n: int) -> None:
    for start in range(0, n, 1000):
        mem.add_messages(
            scope,
            [
                Message(role="user", content=f"note {i} about topic {i * 7}, said in passing")
                for i in range(start, min(n, start + 1000))
            ],
        )


@dataclass(frozen=True)
class Users:
    db: Path
    small: Scope
    large: Scope


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Users]:
    db = tmp_path_factory.mktemp("export") / "m.db"
    small, large = Scope("acme", "small"), Scope("acme", "large")
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        _fill(mem, small, SMALL)
        _fill(mem, large, LARGE)
    yield Users(db, small, large)


def _peak(mem: Memory, scope: Scope, *, embeddings: bool) -> tuple[int, int]:
    """(peak bytes traced during the export, records exported)."""
    # The memory's in-process LRU of vectors (10,000 entries, shared by every call) is not
    # the export's: a small one keeps it from growing with the first 10,000 texts.
    mem._embedder._lru = LRUEmbeddingCache(16)
    sink = Discard()
    tracemalloc.start()
    try:
        n = mem.export_records(scope, sink, include_embeddings=embeddings)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sink.chars > 0
    return peak, n


@pytest.mark.parametrize("embeddings", [False, True], ids=["plain", "embeddings"])
def test_peak_memory_does_not_grow_with_the_history(
    users: Users, embeddings: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hashing embedder's word cache (bounded at 20,000 words) is not the export's: the
    # large user's 4x distinct words grew it by ~3 MB, which made this flaky in CI.
    monkeypatch.setattr(hashing, "_WORD_CACHE_MAX", 0)
    with Memory(f"sqlite:///{users.db}", embedder="hashing", background=False) as mem:
        small, n_small = _peak(mem, users.small, embeddings=embeddings)
        large, n_large = _peak(mem, users.large, embeddings=embeddings)
    assert (n_small, n_large) == (SMALL, LARGE)
    # Before: the peak held every record (and every vector): 4x the history, ~3x the peak.
    assert large < 1.25 * small, f"peak {small / 1e6:.1f} MB -> {large / 1e6:.1f} MB"


def test_the_embedder_is_called_in_bounded_batches(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    n = 3 * EXPORT_EMBED_BATCH + 10
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as src:
        _fill(src, ALICE, n)
        # Stored by another model (an older one): an export must embed them again.
        old = [(r, np.ones(8, np.float32)) for page in src.store.scan() for r in page]
        with another_model(src.store, "older-model", 8):
            src.store.set_vectors(old, "older-model", 8)
    counting = RecordingEmbedder()
    with Memory(f"sqlite:///{db}", embedder=counting, background=False) as mem:
        out = io.StringIO()
        assert mem.export_records(ALICE, out, include_embeddings=True) == n
    assert sum(counting.sizes) == n, counting.sizes
    assert max(counting.sizes) <= EXPORT_EMBED_BATCH, counting.sizes  # before: one call of n
    lines = out.getvalue().splitlines()
    assert all(json.loads(x)["embedding"] for x in lines[1:-1])


def test_the_export_is_produced_a_page_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first chunk (header and first page) is produced before the walk reads on."""
    n = 2 * EXPORT_PAGE + 5
    with Memory(f"sqlite:///{tmp_path / 'p.db'}", embedder="hashing", background=False) as mem:
        _fill(mem, ALICE, n)
        reads: list[int] = []
        pages = mem.store.list_pages

        def counted(*args: Any, **kwargs: Any) -> Iterator[list[Any]]:
            for page in pages(*args, **kwargs):
                reads.append(len(page))
                yield page

        monkeypatch.setattr(mem.store, "list_pages", counted)
        chunks = mem.export_chunks(ALICE)
        first = next(chunks)
        assert reads == [EXPORT_PAGE]  # before the change there was no chunk to take
        assert first.count("\n") == 1 + EXPORT_PAGE  # the header and the first page
        rest = list(chunks)
    assert reads == [EXPORT_PAGE, EXPORT_PAGE, 5]
    assert json.loads(rest[-1]) == {"end": "complete", "count": n, "past_versions": 0}


def _scripted(mem: Memory) -> None:
    """Records of many kinds and states: turns, a fact with its source, an edited note (two
    versions), a deleted one, key memory, a task."""
    s1 = Scope("acme", "alice", session="s1")
    turns = mem.add_messages(
        s1,
        [
            Message(role="user", content="I moved to Lyon in March"),
            Message(role="assistant", content="Lyon is lovely in spring"),
        ],
    )
    mem.add(s1, "Alice lives in Lyon", type="fact", source_ids=[turns[0].id], importance=0.8)
    note = mem.add(ALICE, "Alice likes green tea", tags=["drinks"], metadata={"k": [1, 2]})
    mem.update(ALICE, note.id, expected_version=note.version, content="Alice likes jasmine tea")
    gone = mem.add(ALICE, "a note about nothing", dedup=False)
    mem.delete(ALICE, gone.id)
    mem.key.set(ALICE, "Call her Ali", 5)
    mem.tasks.start(s1, "plan the trip", ["book train", "book hotel"])


def _vectors_of(text: str) -> dict[str, np.ndarray]:
    out = {}
    for line in text.splitlines()[1:-1]:
        item = json.loads(line)
        blob = base64.b64decode(item["embedding"])
        out[item["record"]["id"]] = np.frombuffer(blob, dtype="<f4")
    return out


def _all(mem: Memory) -> dict[str, dict[str, object]]:
    every = {"include_deleted": True, "include_superseded": True}
    return {r.id: record_to_dict(r) for r in mem.list(ALICE, filters=every, limit=1000)}


def test_a_version_2_export_round_trips_every_field_and_embedding(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False) as src:
        _scripted(src)
        originals = _all(src)
        buf = io.StringIO()
        n = src.export_records(ALICE, buf, include_embeddings=True, include_history=False)
    text = buf.getvalue()
    lines = text.splitlines()
    head, end = json.loads(lines[0]), json.loads(lines[-1])
    assert head["version"] == 2 and "count" not in head
    assert end == {"end": "complete", "count": n} and len(lines) == n + 2
    assert {json.loads(x)["record"]["id"]: json.loads(x)["record"] for x in lines[1:-1]} == (
        originals
    )
    assert {o["type"] for o in originals.values()} >= {"message", "fact", "note", "key", "task"}
    assert any(o["status"] == "deleted" for o in originals.values())
    with Memory(f"sqlite:///{tmp_path / 'b.db'}", embedder="hashing", background=False) as dst:
        report = dst.import_records(io.StringIO(text))
        assert (report.imported, report.skipped, report.reembedded) == (n, 0, 0)
        assert _all(dst) == originals
        stored = {d.versions[-1].id: d.vector for page in dst.store.dump_records() for d in page}
    in_file = _vectors_of(text)
    assert in_file.keys() == stored.keys() == originals.keys()
    assert all(np.array_equal(in_file[k], np.asarray(stored[k])) for k in in_file)


V1 = Path(__file__).with_name("test_export_v1.jsonl")  # written by memstrata at 7212970


def test_a_version_1_export_still_imports(tmp_path: Path) -> None:
    head, *rows = V1.read_text(encoding="utf-8").splitlines()
    assert json.loads(head)["version"] == 1 and json.loads(head)["count"] == len(rows) == 2
    with Memory(f"sqlite:///{tmp_path / 'v1.db'}", embedder="hashing", background=False) as mem:
        with V1.open(encoding="utf-8") as fp:
            report = mem.import_records(fp, into=Scope("acme", "carol"))
        assert (report.imported, report.skipped) == (2, 0)
        texts = {r.text for r in mem.list(Scope("acme", "carol"))}
        assert texts == {"I moved to Lyon in March", "Alice lives in Lyon"}


def _export(mem: Memory, scope: Scope) -> list[str]:
    buf = io.StringIO()
    mem.export_records(scope, buf)
    return buf.getvalue().splitlines(keepends=True)


@pytest.fixture
def three(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 't.db'}", embedder="hashing", background=False) as mem:
        for i in range(3):
            mem.add(ALICE, f"note {i} of three", dedup=False)
        yield mem


@pytest.mark.parametrize(
    ("cut", "match"),
    [
        (lambda ls: ls[:-1], "does not end with its end line"),  # cut after a record line
        (lambda ls: ls[:1], "does not end with its end line"),  # only the header arrived
        (lambda ls: [*ls[:-1], ls[-1][:-5]], "line 5: not valid export JSON"),  # mid-line
        (lambda ls: [*ls[:2], ls[-1]], "counts 3 records but the export holds 1"),
        (
            lambda ls: [
                *ls[:2],
                '{"end": "failed", "error": {"code": "store_unavailable", '
                '"message": "the store became unavailable"}}\n',
            ],
            "export failed while it was written \\(the store became unavailable\\)",
        ),
        (  # a record line after an end line (which counts the one line before it)
            lambda ls: [*ls[:2], '{"end": "complete", "count": 1}\n', ls[2]],
            "does not end with its end line",
        ),
    ],
    ids=["no-end", "header-only", "mid-line", "lines-missing", "failed", "after-end"],
)
def test_an_incomplete_version_2_export_is_refused_whole(
    three: Memory, cut: object, match: str
) -> None:
    lines = _export(three, ALICE)
    text = "".join(cut(lines))  # type: ignore[operator]
    carol = Scope("acme", "carol")
    with pytest.raises(ImportFormatError, match=match):
        three.import_records(io.StringIO(text), into=carol)
    assert three.list(carol) == []


def test_exports_joined_after_their_headers_import_as_one(three: Memory) -> None:
    bob = Scope("acme", "bob")
    three.add(bob, "a note of bob's", dedup=False)
    joined = "".join(_export(three, ALICE) + _export(three, bob)[1:])
    three.purge(ALICE)
    three.purge(bob)
    report = three.import_records(io.StringIO(joined))
    assert (report.imported, report.skipped) == (4, 0)


def _cli(tmp_path: Path) -> list[str]:
    return ["--db", f"sqlite:///{tmp_path / 'cli.db'}", "--tenant", "acme", "--user", "alice",
            "--embedder", "hashing"]  # fmt: skip


@pytest.fixture
def cli_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", 2)
    with Memory(f"sqlite:///{tmp_path / 'cli.db'}", embedder="hashing", background=False) as mem:
        for i in range(5):
            mem.add(ALICE, f"note {i} for the command line", dedup=False)
    return _cli(tmp_path)


def test_the_cli_export_writes_a_whole_file_or_none(
    cli_user: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    out = tmp_path / "x.jsonl"
    res = runner.invoke(app, [*cli_user, "export", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["exported"] == 5
    end = {"end": "complete", "count": 5, "past_versions": 0}
    assert json.loads(out.read_text().splitlines()[-1]) == end
    res = runner.invoke(app, [*cli_user, "export", "-"])
    assert res.exit_code == 0
    assert res.stdout.splitlines()[1:] == out.read_text().splitlines()[1:]  # (exported_at)

    pages = SQLiteStore.list_pages

    def failing(self: SQLiteStore, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for page in pages(self, *args, **kwargs):
            yield page
            raise StoreError("the disk went away")

    monkeypatch.setattr(SQLiteStore, "list_pages", failing)
    broken = tmp_path / "y.jsonl"
    res = runner.invoke(app, [*cli_user, "export", str(broken)])
    assert res.exit_code != 0 and "the disk went away" in res.output
    # Before: an empty y.jsonl was left behind (the file was opened before the walk).
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".db") == ["x.jsonl"]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_async_memory_streams_the_same_export_a_page_at_a_time(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over PostgreSQL the walk is natively async (psycopg), over SQLite on a store thread."""
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", 10)
    url = (
        request.getfixturevalue("pg_url") if kind == "postgresql" else f"sqlite:///{tmp_path}/a.db"
    )
    clock = FixedClock(datetime(2026, 11, 26, 12, 0, tzinfo=UTC))
    with Memory(url, embedder="hashing", background=False, clock=clock) as mem:
        for i in range(25):
            mem.add(ALICE, f"note {i} of an async export", dedup=False)
        whole = io.StringIO()
        mem.export_records(ALICE, whole, include_embeddings=True)

    async def chunks() -> list[str]:
        async with AsyncMemory(url, embedder="hashing", background=False, clock=clock) as amem:
            return [c async for c in amem.export_chunks(ALICE, include_embeddings=True)]

    got = asyncio.run(chunks())
    assert [c.count("\n") for c in got] == [1 + 10, 10, 5, 1]  # header+page, pages, end
    assert "".join(got) == whole.getvalue()
