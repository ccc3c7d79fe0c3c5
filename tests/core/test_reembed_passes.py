"""Re-embedding embeds only what another model made, and walks the store until nothing is left.

Before, a re-embed embedded every record it walked past once: a run interrupted after most
of a large store started over from the first record, and on PostgreSQL a row committed after
a later one (its ``seq`` taken first) was behind the walk when it appeared and kept the old
model's vector — a vector the new model's queries do not match.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import EmbeddingMismatchError
from memstrata.filters import Filters
from memstrata.records import MemoryRecord
from memstrata.reembed import reembed_store
from memstrata.store.base import Store

SCOPE = Scope("acme", "alice", session="s1")
EVERYTHING = Filters(include_deleted=True, include_superseded=True)


class Counting:
    """The new model, counting what it embeds; it fails after ``fail_after`` calls."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.inner = HashingEmbedder(dims=64)
        self.texts = 0
        self.calls = 0
        self.fail_after = fail_after

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("the embedding endpoint went away")
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed_batch(texts, query=query)


class Unseen:
    """A store whose first walk misses one record, as a PostgreSQL walk misses a row
    committed behind the page it has reached."""

    def __init__(self, store: Store, hidden: str) -> None:
        self._store = store
        self._hidden: str | None = hidden

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def scan(self, batch_size: int = 500) -> Iterator[list[MemoryRecord]]:
        hidden, self._hidden = self._hidden, None
        for batch in self._store.scan(batch_size):
            yield [r for r in batch if r.id != hidden]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as m:
        for i in range(40):
            m.add(SCOPE, f"record number {i} about violin lesson {i * 7}", dedup=False)
        yield m


def _models(mem: Memory) -> set[tuple[str | None, int | None]]:
    records = mem.store.list(SCOPE.user_scope, EVERYTHING, limit=1000)
    return {(r.embedding_model, r.embedding_dims) for r in records}


def test_an_interrupted_reembed_resumes_where_it_stopped(mem: Memory) -> None:
    broken = Counting(fail_after=2)
    with pytest.raises(RuntimeError, match="went away"):
        reembed_store(mem.store, broken, batch_size=8)
    assert broken.texts == 16
    again = Counting()
    assert reembed_store(mem.store, again, batch_size=8) == 24
    assert again.texts == 24  # not the 16 already done
    assert _models(mem) == {(again.model_id, 64)}


def test_a_record_the_first_walk_missed_is_reembedded(mem: Memory) -> None:
    hidden = mem.store.list(SCOPE.user_scope, EVERYTHING, limit=1000)[5].id
    new = Counting()
    assert reembed_store(Unseen(mem.store, hidden), new, batch_size=8) == 40  # type: ignore[arg-type]
    assert _models(mem) == {(new.model_id, 64)}
    assert new.texts == 40


def test_a_finished_store_is_walked_once_and_embeds_nothing(mem: Memory) -> None:
    reembed_store(mem.store, Counting(), batch_size=8)
    idle = Counting()
    assert reembed_store(mem.store, idle, batch_size=8) == 0
    assert idle.calls == 0


def test_the_cli_run_again_reembeds_what_an_old_model_wrote_since(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memstrata.cli.app import app

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with Memory(url, embedder="hashing", background=False) as m:
        old = [m.add(SCOPE, f"bees and honey {i}", dedup=False) for i in range(3)]
    migrate = ["--db", url, "reembed", "--embedder", "hashing:64", "--json"]
    first = CliRunner().invoke(app, migrate)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["other_models_found"] == 0
    with Memory(url, embedder=HashingEmbedder(dims=64), background=False) as m:
        stale = m.store.get(SCOPE, old[1].id)
        vector = HashingEmbedder().embed_batch([stale.text])[0]
        # a process still on the old model writing after the switch is refused
        # (store/one_model.py) ...
        with pytest.raises(EmbeddingMismatchError, match="nothing of this call was written"):
            m.store.set_vectors([(stale, vector)], HashingEmbedder().model_id, 256)
        # ... but one that wrote while a migration ran, after its last walk, is not
        m.store.set_meta("reembed_to", "hashing-256\t256")
        m.store.set_vectors([(stale, vector)], HashingEmbedder().model_id, 256)
        m.store.set_meta("reembed_to", "")
    again = CliRunner().invoke(app, migrate)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["other_models_found"] == 1
    with Memory(url, embedder=HashingEmbedder(dims=64), background=False) as m:
        assert _models(m) == {("hashing-64", 64)}
