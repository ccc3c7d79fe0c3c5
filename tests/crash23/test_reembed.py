"""kill -9 in the middle of a re-embedding (``Memory(url, embedder=new, reembed=True)``,
``memstrata reembed``), on SQLite and PostgreSQL. Vectors are replaced batch by batch and
the store's model switched at the end, so a killed run left records of both models under
the old model's name: opened again with the old embedder, the store opened and a vector
search silently missed every record already moved (it compares vectors of its own dims
only). Now the run marks the store first (``reembed_to``), and until the run is finished
every open without ``reembed=True`` is refused, naming the model to finish with; with it,
either embedder finishes (or takes back) the move."""

from __future__ import annotations

import signal

import pytest

from memstrata import Memory
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import EmbeddingMismatchError
from memstrata.filters import Filters

from .child import VICTIM
from .kill import run

N = 600  # three batches of 256


def _fill(url: str) -> None:
    with Memory(url, embedder=HashingEmbedder(256), background=False) as mem:
        mem.add_messages(
            VICTIM,
            [
                {"role": "user", "content": f"entry {i}: the {w} of tram number {i}"}
                for i, w in enumerate(["colour", "route", "driver", "timetable"] * (N // 4))
            ],
        )


def _models(mem: Memory) -> set[tuple[str | None, int | None]]:
    every = mem.list(VICTIM.user_scope, filters=Filters(include_deleted=True), limit=10_000)
    assert len(every) == N
    return {(r.embedding_model, r.embedding_dims) for r in every}


def _finds_all(mem: Memory) -> None:
    """A vector search sees every record: each probe's own record comes first."""
    for i in (0, 300, 599):
        text = f"entry {i}: the {['colour', 'route', 'driver', 'timetable'][i % 4]} of tram "
        hits = mem.search(VICTIM.user_scope, f"{text}number {i}", mode="dense", top_k=1)
        assert hits and hits[0].record.text.startswith(f"entry {i}:"), (i, hits)


# between batches (the first one committed), and inside a batch's transaction
GATES = ["embed@2", "embed@3", "update records set embedding_model@1"]


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("back", [False, True], ids=["finish", "go-back"])
def test_a_killed_reembed_is_refused_until_finished(url: str, gate: str, back: bool) -> None:
    _fill(url)
    assert run(url, gate, "reembed", "64") == -signal.SIGKILL
    for dims in (256, 64):  # neither embedder may open it as if nothing happened
        with pytest.raises(EmbeddingMismatchError, match="interrupted"):
            Memory(url, embedder=HashingEmbedder(dims), background=False)
    dims = 256 if back else 64
    with Memory(url, embedder=HashingEmbedder(dims), background=False, reembed=True) as mem:
        assert _models(mem) == {(f"hashing-{dims}", dims)}
        _finds_all(mem)
    with Memory(url, embedder=HashingEmbedder(dims), background=False) as mem:  # plain again
        _finds_all(mem)
    with pytest.raises(EmbeddingMismatchError, match="was built with"):
        Memory(url, embedder=HashingEmbedder(64 if back else 256), background=False)
